package compare

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/tbhub/tbhub/frontend-api/httperr"
	tbpb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard"
	datapb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/data"
	hparamspb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/hparams"
)

// fakeProvider is a read service holding experiments by ID, of which the
// caller may read those in readable; it records each call's experiment
// and run filter.
type fakeProvider struct {
	datapb.TensorBoardDataProviderClient                     // calls not faked panic
	names                                map[string]string   // experiment ID → name
	runs                                 map[string][]string // experiment ID → its runs
	readable                             map[string]bool

	mu    sync.Mutex
	calls []string // "eid:run,run" of each ReadScalars ("eid:*" with no run filter)
	// inFlight and maxInFlight count member calls running at once; the
	// first `gate` calls wait until gate are running (then all go on).
	inFlight, maxInFlight, gate int
	opened                      chan struct{}
}

func (p *fakeProvider) see(eid string) error {
	if _, ok := p.names[eid]; !ok || !p.readable[eid] {
		return status.Error(codes.NotFound, "experiment not found")
	}
	return nil
}

func (p *fakeProvider) GetExperiment(_ context.Context, in *datapb.GetExperimentRequest, _ ...grpc.CallOption) (*datapb.GetExperimentResponse, error) {
	if err := p.see(in.GetExperimentId()); err != nil {
		return nil, err
	}
	return &datapb.GetExperimentResponse{Name: p.names[in.GetExperimentId()]}, nil
}

func (p *fakeProvider) ListRuns(_ context.Context, in *datapb.ListRunsRequest, _ ...grpc.CallOption) (*datapb.ListRunsResponse, error) {
	if err := p.see(in.GetExperimentId()); err != nil {
		return nil, err
	}
	p.enter()
	defer p.leave()
	out := &datapb.ListRunsResponse{}
	for _, r := range p.runs[in.GetExperimentId()] {
		out.Runs = append(out.Runs, &datapb.Run{Name: r})
	}
	return out, nil
}

func (p *fakeProvider) enter() {
	p.mu.Lock()
	p.inFlight++
	p.maxInFlight = max(p.maxInFlight, p.inFlight)
	wait := p.gate > 0 && p.opened != nil
	if wait && p.inFlight >= p.gate {
		select {
		case <-p.opened:
		default:
			close(p.opened)
		}
	}
	p.mu.Unlock()
	if wait {
		<-p.opened
	}
}

func (p *fakeProvider) leave() {
	p.mu.Lock()
	p.inFlight--
	p.mu.Unlock()
}

func (p *fakeProvider) ReadScalars(_ context.Context, in *datapb.ReadScalarsRequest, _ ...grpc.CallOption) (*datapb.ReadScalarsResponse, error) {
	eid := in.GetExperimentId()
	if err := p.see(eid); err != nil {
		return nil, err
	}
	want := in.GetRunTagFilter().GetRuns()
	p.mu.Lock()
	if want == nil {
		p.calls = append(p.calls, eid+":*")
	} else {
		p.calls = append(p.calls, eid+":"+strings.Join(want.GetNames(), ","))
	}
	p.mu.Unlock()
	out := &datapb.ReadScalarsResponse{}
	for _, r := range p.runs[eid] {
		if want == nil || slices.Contains(want.GetNames(), r) {
			out.Runs = append(out.Runs, &datapb.ReadScalarsResponse_RunEntry{RunName: r, Tags: []*datapb.ReadScalarsResponse_TagEntry{
				{TagName: "loss", Data: &datapb.ScalarData{Step: []int64{1}, Value: []float32{0.5}}}}})
		}
	}
	return out, nil
}

func (p *fakeProvider) ReadBlob(_ context.Context, in *datapb.ReadBlobRequest, _ ...grpc.CallOption) (grpc.ServerStreamingClient[datapb.ReadBlobResponse], error) {
	eid, _, _ := strings.Cut(in.GetBlobKey(), ".")
	if err := p.see(eid); err != nil {
		return nil, err
	}
	return nil, nil // read: the tests look only at whether it was let through
}

// threeExperiments: alice's "rl-sweep" and "baseline", bob's
// "baseline-bob"; the caller may read the first and the third.
func threeExperiments() *fakeProvider {
	return &fakeProvider{
		names:    map[string]string{"e1": "rl-sweep", "e2": "secret-baseline", "e3": "bob-run"},
		runs:     map[string][]string{"e1": {"seed_1", "seed_2"}, "e2": {"hidden_run"}, "e3": {"seed_1"}},
		readable: map[string]bool{"e1": true, "e3": true},
	}
}

// in returns a context carrying comparison id as the caller of p sees it.
func in(t *testing.T, c *Client, id string) context.Context {
	t.Helper()
	cmp, err := c.Resolve(context.Background(), id)
	if err != nil {
		t.Fatalf("Resolve(%q): %v", id, err)
	}
	return With(context.Background(), cmp)
}

func runNames(resp *datapb.ListRunsResponse) []string {
	var out []string
	for _, r := range resp.GetRuns() {
		out = append(out, r.GetName())
	}
	return out
}

func TestRunsAreNamedExperimentSlashRun(t *testing.T) {
	p := threeExperiments()
	c := New(p, Limits{})
	resp, err := c.ListRuns(in(t, c, "e1+e3"), &datapb.ListRunsRequest{ExperimentId: "e1+e3"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := runNames(resp), []string{"rl-sweep/seed_1", "rl-sweep/seed_2", "bob-run/seed_1"}; !slices.Equal(got, want) {
		t.Errorf("runs = %q, want %q", got, want)
	}
	// A call about one experiment (no comparison in its context) is the
	// read service's own.
	resp, err = c.ListRuns(context.Background(), &datapb.ListRunsRequest{ExperimentId: "e1"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := runNames(resp), []string{"seed_1", "seed_2"}; !slices.Equal(got, want) {
		t.Errorf("one experiment's runs = %q, want %q", got, want)
	}
}

func TestHiddenMemberIsLeftOutAndCounted(t *testing.T) {
	p := threeExperiments()
	c := New(p, Limits{})
	ctx := context.Background()
	cmp, err := c.Resolve(ctx, "e1+e2+e3")
	if err != nil {
		t.Fatal(err)
	}
	if cmp.Hidden != 1 || len(cmp.Members) != 2 {
		t.Fatalf("Resolve = %d members, %d hidden; want 2 and 1", len(cmp.Members), cmp.Hidden)
	}
	runs, err := c.ListRuns(With(ctx, cmp), &datapb.ListRunsRequest{ExperimentId: "e1+e2+e3"})
	if err != nil {
		t.Fatal(err)
	}
	exp, err := c.GetExperiment(With(ctx, cmp), &datapb.GetExperimentRequest{ExperimentId: "e1+e2+e3"})
	if err != nil {
		t.Fatal(err)
	}
	all := strings.Join(runNames(runs), " ") + " " + exp.GetName()
	for _, leak := range []string{"secret-baseline", "hidden_run"} {
		if strings.Contains(all, leak) {
			t.Errorf("answers name the hidden experiment (%q): %s", leak, all)
		}
	}
	if exp.GetName() != "rl-sweep + bob-run" {
		t.Errorf("name = %q, want %q", exp.GetName(), "rl-sweep + bob-run")
	}
}

func TestNoneVisibleIsNotFound(t *testing.T) {
	c := New(threeExperiments(), Limits{})
	_, err := c.Resolve(context.Background(), "e2+nope")
	if status.Code(err) != codes.NotFound {
		t.Fatalf("err = %v, want NotFound", err)
	}
	// The same answer as for one experiment the caller may not read.
	if code, _, _ := httperr.Of(err); code != 404 {
		t.Errorf("HTTP status %d, want 404", code)
	}
}

func TestRunFilterIsSplitByLabel(t *testing.T) {
	p := threeExperiments()
	c := New(p, Limits{})
	f := &datapb.RunTagFilter{Runs: &datapb.RunFilter{Names: []string{"bob-run/seed_1", "rl-sweep/seed_2", "nobody/seed_1", "seed_1"}}}
	ctx := in(t, c, "e1+e3")
	resp, err := c.ReadScalars(ctx, &datapb.ReadScalarsRequest{ExperimentId: "e1+e3", RunTagFilter: f})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(p.calls)
	if want := []string{"e1:seed_2", "e3:seed_1"}; !slices.Equal(p.calls, want) {
		t.Errorf("member calls = %q, want %q", p.calls, want)
	}
	var got []string
	for _, r := range resp.GetRuns() {
		got = append(got, r.GetRunName())
	}
	if want := []string{"rl-sweep/seed_2", "bob-run/seed_1"}; !slices.Equal(got, want) {
		t.Errorf("runs = %q, want %q", got, want)
	}
	// The caller's filter is left as it was.
	if f.GetRuns().GetNames()[0] != "bob-run/seed_1" {
		t.Errorf("the request's filter was changed: %q", f.GetRuns().GetNames())
	}

	// A filter naming runs of one member only does not read the other.
	p.calls = nil
	f = &datapb.RunTagFilter{Runs: &datapb.RunFilter{Names: []string{"bob-run/seed_1"}}}
	if _, err := c.ReadScalars(ctx, &datapb.ReadScalarsRequest{ExperimentId: "e1+e3", RunTagFilter: f}); err != nil {
		t.Fatal(err)
	}
	if want := []string{"e3:seed_1"}; !slices.Equal(p.calls, want) {
		t.Errorf("member calls = %q, want %q", p.calls, want)
	}
	// No run filter: every member, unfiltered.
	p.calls = nil
	if _, err := c.ReadScalars(ctx, &datapb.ReadScalarsRequest{ExperimentId: "e1+e3"}); err != nil {
		t.Fatal(err)
	}
	slices.Sort(p.calls)
	if want := []string{"e1:*", "e3:*"}; !slices.Equal(p.calls, want) {
		t.Errorf("member calls = %q, want %q", p.calls, want)
	}
}

func TestMemberCap(t *testing.T) {
	p := &fakeProvider{names: map[string]string{}, runs: map[string][]string{}, readable: map[string]bool{}}
	var ids []string
	for i := range 11 {
		id := string(rune('a'+i)) + "x"
		ids = append(ids, id)
		p.names[id], p.readable[id] = id, true
	}
	c := New(p, Limits{MaxMembers: 10})
	_, err := c.Resolve(context.Background(), strings.Join(ids, "+"))
	var he *httperr.Error
	if !errors.As(err, &he) || he.Code != 400 || !strings.Contains(he.Msg, "at most 10") {
		t.Fatalf("11 members: err = %v, want a 400 saying at most 10", err)
	}
	if _, err := c.Resolve(context.Background(), strings.Join(ids[:10], "+")); err != nil {
		t.Errorf("10 members: %v", err)
	}
	for _, bad := range []string{"ax++bx", "ax+ax", "+ax"} {
		if _, err := c.Resolve(context.Background(), bad); !errors.As(err, &he) || he.Code != 400 {
			t.Errorf("Resolve(%q) = %v, want a 400", bad, err)
		}
	}
}

func TestMembersAreReadAtMostMaxParallelAtOnce(t *testing.T) {
	p := &fakeProvider{names: map[string]string{}, runs: map[string][]string{}, readable: map[string]bool{}, gate: 3, opened: make(chan struct{})}
	var ids []string
	for i := range 8 {
		id := string(rune('a'+i)) + "x"
		ids = append(ids, id)
		p.names[id], p.readable[id], p.runs[id] = id, true, []string{"r"}
	}
	c := New(p, Limits{MaxParallel: 3})
	resp, err := c.ListRuns(in(t, c, strings.Join(ids, "+")), &datapb.ListRunsRequest{ExperimentId: strings.Join(ids, "+")})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.GetRuns()) != 8 {
		t.Errorf("%d runs, want 8", len(resp.GetRuns()))
	}
	// The first three calls waited for each other: three ran at once,
	// never more.
	if p.maxInFlight != 3 {
		t.Errorf("at most %d member calls at once, want 3", p.maxInFlight)
	}
}

func TestLabelsTellSameNamesApart(t *testing.T) {
	ms := []Member{
		{ID: "AAAAAAAA1", Name: "mnist"},
		{ID: "AAAAAAAA2", Name: "mnist"},
		{ID: "BBBBBBBB1", Name: "cifar"},
		{ID: "CCCCCCCC1", Name: "cifar/lr"},
		{ID: "DDDDDDDD1", Name: ""},
	}
	labels(ms)
	want := []string{"mnist [AAAAAAAA1]", "mnist [AAAAAAAA2]", "cifar [BBBBBB]", "cifar/lr [CCCCCC]", "DDDDDDDD1"}
	for i, m := range ms {
		if m.Label != want[i] {
			t.Errorf("label of %s %q = %q, want %q", m.ID, m.Name, m.Label, want[i])
		}
	}
	cmp := &Comparison{Members: ms}
	for run, want := range map[string]string{"cifar [BBBBBB]/lr/x": "BBBBBBBB1 lr/x", "cifar/lr [CCCCCC]/x": "CCCCCCCC1 x", "DDDDDDDD1/": "DDDDDDDD1 "} {
		m, name, ok := cmp.Split(run)
		if got := m.ID + " " + name; !ok || got != want {
			t.Errorf("Split(%q) = %q, %v; want %q", run, got, ok, want)
		}
	}
}

func TestReadBlobOnlyOfVisibleMembers(t *testing.T) {
	p := threeExperiments()
	c := New(p, Limits{})
	ctx := context.Background()
	cmp, err := c.Resolve(ctx, "e1+e2")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.ReadBlob(With(ctx, cmp), &datapb.ReadBlobRequest{BlobKey: "e1.abc"}); err != nil {
		t.Errorf("blob of a member: %v", err)
	}
	for _, key := range []string{"e2.abc", "e3.abc", "nokey"} {
		if _, err := c.ReadBlob(With(ctx, cmp), &datapb.ReadBlobRequest{BlobKey: key}); status.Code(err) != codes.NotFound {
			t.Errorf("ReadBlob(%q) = %v, want NotFound", key, err)
		}
	}
}

// ListTensors: each experiment has one hparams session in group "trial-0".
func (p *fakeProvider) ListTensors(_ context.Context, in *datapb.ListTensorsRequest, _ ...grpc.CallOption) (*datapb.ListTensorsResponse, error) {
	if err := p.see(in.GetExperimentId()); err != nil {
		return nil, err
	}
	content, err := proto.Marshal(&hparamspb.HParamsPluginData{Data: &hparamspb.HParamsPluginData_SessionStartInfo{
		SessionStartInfo: &hparamspb.SessionStartInfo{GroupName: "trial-0"}}})
	if err != nil {
		return nil, err
	}
	// Its config: e1 declares lr and the metric loss, the others lr,
	// batch and acc.
	exp := &hparamspb.Experiment{HparamInfos: []*hparamspb.HParamInfo{{Name: "lr"}}, MetricInfos: []*hparamspb.MetricInfo{{Name: &hparamspb.MetricName{Tag: "loss"}}}}
	if in.GetExperimentId() != "e1" {
		exp = &hparamspb.Experiment{HparamInfos: []*hparamspb.HParamInfo{{Name: "lr"}, {Name: "batch"}}, MetricInfos: []*hparamspb.MetricInfo{{Name: &hparamspb.MetricName{Tag: "acc"}}}}
	}
	config, err := proto.Marshal(&hparamspb.HParamsPluginData{Data: &hparamspb.HParamsPluginData_Experiment{Experiment: exp}})
	if err != nil {
		return nil, err
	}
	entry := func(run, tag string, content []byte) *datapb.ListTensorsResponse_RunEntry {
		return &datapb.ListTensorsResponse_RunEntry{RunName: run, Tags: []*datapb.ListTensorsResponse_TagEntry{{
			TagName: tag, Metadata: &datapb.TensorMetadata{SummaryMetadata: &tbpb.SummaryMetadata{
				PluginData: &tbpb.SummaryMetadata_PluginData{PluginName: "hparams", Content: content}}}}}}
	}
	return &datapb.ListTensorsResponse{Runs: []*datapb.ListTensorsResponse_RunEntry{entry("", hparamsExperimentTag, config), entry("trial-0/1", hparamsStartTag, content)}}, nil
}

// hparamsOf decodes the hparams plugin data of a run's first tag.
func hparamsOf(t *testing.T, r *datapb.ListTensorsResponse_RunEntry) *hparamspb.HParamsPluginData {
	t.Helper()
	var hp hparamspb.HParamsPluginData
	if err := proto.Unmarshal(r.GetTags()[0].GetMetadata().GetSummaryMetadata().GetPluginData().GetContent(), &hp); err != nil {
		t.Fatal(err)
	}
	return &hp
}

// listHParams lists the hparams series of the comparison of e1 and e3.
func listHParams(t *testing.T) *datapb.ListTensorsResponse {
	t.Helper()
	c := New(threeExperiments(), Limits{})
	resp, err := c.ListTensors(in(t, c, "e1+e3"), &datapb.ListTensorsRequest{ExperimentId: "e1+e3", PluginFilter: &datapb.PluginFilter{PluginName: "hparams"}})
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// The hparams plugin reads the first config it finds: in a comparison it
// declares every member's hparams and metrics.
func TestHParamsConfigsOfTwoExperimentsMerge(t *testing.T) {
	resp := listHParams(t)
	var got []string
	for _, r := range resp.GetRuns() {
		if r.GetTags()[0].GetTagName() != hparamsExperimentTag {
			continue
		}
		var names []string
		exp := hparamsOf(t, r).GetExperiment()
		for _, h := range exp.GetHparamInfos() {
			names = append(names, h.GetName())
		}
		for _, m := range exp.GetMetricInfos() {
			names = append(names, "metric "+m.GetName().GetTag())
		}
		got = append(got, r.GetRunName()+": "+strings.Join(names, ","))
	}
	if want := []string{"rl-sweep/: lr,batch,metric loss,metric acc", "bob-run/: lr,batch,metric acc"}; !slices.Equal(got, want) {
		t.Errorf("configs = %q, want %q", got, want)
	}
}

func TestHParamsGroupsOfTwoExperimentsStayApart(t *testing.T) {
	resp := listHParams(t)
	var groups []string
	for _, r := range resp.GetRuns() {
		if r.GetTags()[0].GetTagName() == hparamsStartTag {
			groups = append(groups, r.GetRunName()+" in "+hparamsOf(t, r).GetSessionStartInfo().GetGroupName())
		}
	}
	if want := []string{"rl-sweep/trial-0/1 in rl-sweep/trial-0", "bob-run/trial-0/1 in bob-run/trial-0"}; !slices.Equal(groups, want) {
		t.Errorf("sessions = %q, want %q", groups, want)
	}
}
