// Package routetest tests a plugin's routes without a store or a server:
// Provider is a data provider answering from a table of series, served on
// an in-memory gRPC connection (bufconn), and Call runs one route handler
// on a request and answers as the HTTP API does, errors included.
package routetest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"

	"github.com/tbhub/tbhub/frontend-api/httpapi/internal/markdown"
	"github.com/tbhub/tbhub/frontend-api/httpapi/internal/route"
	"github.com/tbhub/tbhub/frontend-api/httperr"
	tbpb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard"
	datapb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/data"
	"github.com/tbhub/tbhub/schemas/readhint"
)

// Series is one time series of the table: scalars if Scalars is set, blob
// sequences if Blobs (the blobs of each step) is, tensors otherwise.
type Series struct {
	Plugin, Run, Tag string
	Content          []byte // the plugin data's content
	DisplayName      string
	Description      string // markdown
	Steps            []int64
	Scalars          []float32
	Tensors          []*tbpb.TensorProto
	Blobs            [][][]byte
}

// WallTime is the wall time of step in every series: 1000 + step.
func WallTime(step int64) float64 { return 1000 + float64(step) }

// BlobKey is the key the table gives blob index of step of s.
func BlobKey(s Series, step, index int64) string {
	return fmt.Sprintf("%s/%s/%s/%d/%d", s.Plugin, s.Run, s.Tag, step, index)
}

// Histogram is a [k, 3] histogram tensor of buckets (left, right, count),
// as the histograms plugin stores one.
func Histogram(buckets ...[3]float64) *tbpb.TensorProto {
	t := &tbpb.TensorProto{Dtype: tbpb.DataType_DT_DOUBLE, TensorShape: &tbpb.TensorShapeProto{Dim: []*tbpb.TensorShapeProto_Dim{{Size: int64(len(buckets))}, {Size: 3}}}}
	for _, b := range buckets {
		t.DoubleVal = append(t.DoubleVal, b[:]...)
	}
	return t
}

// Provider is a data provider serving Series. Experiment answers
// GetExperiment (its name "table" if nil); no other experiment exists
// than EID.
type Provider struct {
	datapb.UnimplementedTensorBoardDataProviderServer
	Series     []Series
	Experiment *datapb.GetExperimentResponse

	mu          sync.Mutex
	scalarReads []ScalarRead
}

// ScalarRead is one ReadScalars call: its num_points and the bucketed
// min/max hint it carried (readhint.BucketsKey; "" if none).
type ScalarRead struct {
	NumPoints int64
	Buckets   string
}

// ScalarReads are the ReadScalars calls p answered, in order.
func (p *Provider) ScalarReads() []ScalarRead {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.scalarReads)
}

// EID is the experiment the table holds.
const EID = "e1"

func (p *Provider) check(eid string) error {
	if eid != EID {
		return status.Errorf(codes.NotFound, "experiment %q not found", eid)
	}
	return nil
}

func (s Series) class() string {
	switch {
	case s.Scalars != nil:
		return "scalars"
	case s.Blobs != nil:
		return "blobs"
	}
	return "tensors"
}

// match is the series of class of plugin that f selects.
func (p *Provider) match(class, plugin string, f *datapb.RunTagFilter) []Series {
	var out []Series
	for _, s := range p.Series {
		if s.class() != class || s.Plugin != plugin {
			continue
		}
		if f.GetRuns() != nil && !slices.Contains(f.GetRuns().GetNames(), s.Run) {
			continue
		}
		if f.GetTags() != nil && !slices.Contains(f.GetTags().GetNames(), s.Tag) {
			continue
		}
		out = append(out, s)
	}
	return out
}

func (s Series) metadata() *tbpb.SummaryMetadata {
	return &tbpb.SummaryMetadata{DisplayName: s.DisplayName, SummaryDescription: s.Description,
		PluginData: &tbpb.SummaryMetadata_PluginData{PluginName: s.Plugin, Content: s.Content}}
}

func (s Series) wallTimes() []float64 {
	w := make([]float64, len(s.Steps))
	for i, step := range s.Steps {
		w[i] = WallTime(step)
	}
	return w
}

func (s Series) maxStep() int64 {
	if len(s.Steps) == 0 {
		return 0
	}
	return slices.Max(s.Steps)
}

// last keeps the last k of n points (all if k <= 0), as a downsample that
// keeps the newest would; the table is small, so this is enough.
func last(n int, k int64) int {
	if k <= 0 || int64(n) <= k {
		return 0
	}
	return n - int(k)
}

func (p *Provider) GetExperiment(_ context.Context, req *datapb.GetExperimentRequest) (*datapb.GetExperimentResponse, error) {
	if err := p.check(req.GetExperimentId()); err != nil {
		return nil, err
	}
	if p.Experiment != nil {
		return p.Experiment, nil
	}
	return &datapb.GetExperimentResponse{Name: "table"}, nil
}

func (p *Provider) ListPlugins(_ context.Context, req *datapb.ListPluginsRequest) (*datapb.ListPluginsResponse, error) {
	if err := p.check(req.GetExperimentId()); err != nil {
		return nil, err
	}
	resp := &datapb.ListPluginsResponse{}
	for _, s := range p.Series {
		if !slices.ContainsFunc(resp.Plugins, func(pl *datapb.Plugin) bool { return pl.GetName() == s.Plugin }) {
			resp.Plugins = append(resp.Plugins, &datapb.Plugin{Name: s.Plugin})
		}
	}
	return resp, nil
}

func (p *Provider) ListRuns(_ context.Context, req *datapb.ListRunsRequest) (*datapb.ListRunsResponse, error) {
	if err := p.check(req.GetExperimentId()); err != nil {
		return nil, err
	}
	resp := &datapb.ListRunsResponse{}
	for _, s := range p.Series {
		if !slices.ContainsFunc(resp.Runs, func(r *datapb.Run) bool { return r.GetName() == s.Run }) {
			resp.Runs = append(resp.Runs, &datapb.Run{Name: s.Run, StartTime: WallTime(0)})
		}
	}
	return resp, nil
}

func (p *Provider) ListScalars(_ context.Context, req *datapb.ListScalarsRequest) (*datapb.ListScalarsResponse, error) {
	if err := p.check(req.GetExperimentId()); err != nil {
		return nil, err
	}
	resp := &datapb.ListScalarsResponse{}
	for _, s := range p.match("scalars", req.GetPluginFilter().GetPluginName(), req.GetRunTagFilter()) {
		resp.Runs = append(resp.Runs, &datapb.ListScalarsResponse_RunEntry{RunName: s.Run, Tags: []*datapb.ListScalarsResponse_TagEntry{{
			TagName: s.Tag, Metadata: &datapb.ScalarMetadata{MaxStep: s.maxStep(), MaxWallTime: WallTime(s.maxStep()), SummaryMetadata: s.metadata()}}}})
	}
	return resp, nil
}

func (p *Provider) ReadScalars(ctx context.Context, req *datapb.ReadScalarsRequest) (*datapb.ReadScalarsResponse, error) {
	if err := p.check(req.GetExperimentId()); err != nil {
		return nil, err
	}
	p.mu.Lock()
	p.scalarReads = append(p.scalarReads, ScalarRead{req.GetDownsample().GetNumPoints(), strings.Join(metadata.ValueFromIncomingContext(ctx, readhint.BucketsKey), ",")})
	p.mu.Unlock()
	resp := &datapb.ReadScalarsResponse{}
	for _, s := range p.match("scalars", req.GetPluginFilter().GetPluginName(), req.GetRunTagFilter()) {
		i := last(len(s.Steps), req.GetDownsample().GetNumPoints())
		resp.Runs = append(resp.Runs, &datapb.ReadScalarsResponse_RunEntry{RunName: s.Run, Tags: []*datapb.ReadScalarsResponse_TagEntry{{
			TagName: s.Tag, Data: &datapb.ScalarData{Step: s.Steps[i:], WallTime: s.wallTimes()[i:], Value: s.Scalars[i:]}}}})
	}
	return resp, nil
}

func (p *Provider) ListTensors(_ context.Context, req *datapb.ListTensorsRequest) (*datapb.ListTensorsResponse, error) {
	if err := p.check(req.GetExperimentId()); err != nil {
		return nil, err
	}
	resp := &datapb.ListTensorsResponse{}
	for _, s := range p.match("tensors", req.GetPluginFilter().GetPluginName(), req.GetRunTagFilter()) {
		resp.Runs = append(resp.Runs, &datapb.ListTensorsResponse_RunEntry{RunName: s.Run, Tags: []*datapb.ListTensorsResponse_TagEntry{{
			TagName: s.Tag, Metadata: &datapb.TensorMetadata{MaxStep: s.maxStep(), MaxWallTime: WallTime(s.maxStep()), SummaryMetadata: s.metadata()}}}})
	}
	return resp, nil
}

func (p *Provider) ReadTensors(_ context.Context, req *datapb.ReadTensorsRequest) (*datapb.ReadTensorsResponse, error) {
	if err := p.check(req.GetExperimentId()); err != nil {
		return nil, err
	}
	resp := &datapb.ReadTensorsResponse{}
	for _, s := range p.match("tensors", req.GetPluginFilter().GetPluginName(), req.GetRunTagFilter()) {
		i := last(len(s.Steps), req.GetDownsample().GetNumPoints())
		resp.Runs = append(resp.Runs, &datapb.ReadTensorsResponse_RunEntry{RunName: s.Run, Tags: []*datapb.ReadTensorsResponse_TagEntry{{
			TagName: s.Tag, Data: &datapb.TensorData{Step: s.Steps[i:], WallTime: s.wallTimes()[i:], Value: s.Tensors[i:]}}}})
	}
	return resp, nil
}

func (p *Provider) ListBlobSequences(_ context.Context, req *datapb.ListBlobSequencesRequest) (*datapb.ListBlobSequencesResponse, error) {
	if err := p.check(req.GetExperimentId()); err != nil {
		return nil, err
	}
	resp := &datapb.ListBlobSequencesResponse{}
	for _, s := range p.match("blobs", req.GetPluginFilter().GetPluginName(), req.GetRunTagFilter()) {
		var longest int64
		for _, b := range s.Blobs {
			longest = max(longest, int64(len(b)))
		}
		resp.Runs = append(resp.Runs, &datapb.ListBlobSequencesResponse_RunEntry{RunName: s.Run, Tags: []*datapb.ListBlobSequencesResponse_TagEntry{{
			TagName: s.Tag, Metadata: &datapb.BlobSequenceMetadata{MaxStep: s.maxStep(), MaxWallTime: WallTime(s.maxStep()), MaxLength: longest, SummaryMetadata: s.metadata()}}}})
	}
	return resp, nil
}

func (p *Provider) ReadBlobSequences(_ context.Context, req *datapb.ReadBlobSequencesRequest) (*datapb.ReadBlobSequencesResponse, error) {
	if err := p.check(req.GetExperimentId()); err != nil {
		return nil, err
	}
	resp := &datapb.ReadBlobSequencesResponse{}
	for _, s := range p.match("blobs", req.GetPluginFilter().GetPluginName(), req.GetRunTagFilter()) {
		d := &datapb.BlobSequenceData{}
		for i := last(len(s.Steps), req.GetDownsample().GetNumPoints()); i < len(s.Steps); i++ {
			var refs []*datapb.BlobReference
			for j := range s.Blobs[i] {
				refs = append(refs, &datapb.BlobReference{BlobKey: BlobKey(s, s.Steps[i], int64(j))})
			}
			d.Step = append(d.Step, s.Steps[i])
			d.WallTime = append(d.WallTime, WallTime(s.Steps[i]))
			d.Values = append(d.Values, &datapb.BlobReferenceSequence{BlobRefs: refs})
		}
		resp.Runs = append(resp.Runs, &datapb.ReadBlobSequencesResponse_RunEntry{RunName: s.Run, Tags: []*datapb.ReadBlobSequencesResponse_TagEntry{{
			TagName: s.Tag, Data: d}}})
	}
	return resp, nil
}

// ReadBlob sends the blob in chunks of 7 bytes, so readers join them.
func (p *Provider) ReadBlob(req *datapb.ReadBlobRequest, stream grpc.ServerStreamingServer[datapb.ReadBlobResponse]) error {
	for _, s := range p.Series {
		for i, step := range s.Steps {
			if i >= len(s.Blobs) {
				break
			}
			for j, b := range s.Blobs[i] {
				if BlobKey(s, step, int64(j)) != req.GetBlobKey() {
					continue
				}
				for len(b) > 0 {
					n := min(7, len(b))
					if err := stream.Send(&datapb.ReadBlobResponse{Data: b[:n]}); err != nil {
						return err
					}
					b = b[n:]
				}
				return nil
			}
		}
	}
	return status.Errorf(codes.NotFound, "blob %q not found", req.GetBlobKey())
}

// Dial serves srv on an in-memory connection and returns its client; both
// stop when tb ends.
func Dial(tb testing.TB, srv datapb.TensorBoardDataProviderServer) datapb.TensorBoardDataProviderClient {
	tb.Helper()
	gs := grpc.NewServer()
	datapb.RegisterTensorBoardDataProviderServer(gs, srv)
	lis := bufconn.Listen(1 << 20)
	go gs.Serve(lis)
	conn, err := grpc.NewClient("passthrough:///table", grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		conn.Close()
		gs.Stop()
	})
	return datapb.NewTensorBoardDataProviderClient(conn)
}

// Env is a route.Env reading p.
func Env(tb testing.TB, p *Provider) *route.Env {
	tb.Helper()
	md, err := markdown.New(markdown.DefaultLimits())
	if err != nil {
		tb.Fatal(err)
	}
	return &route.Env{Data: Dial(tb, p), Markdown: md}
}

// Call runs fn on a request of method for target (a path and query; the
// experiment is EID unless the path's {eid} says otherwise, which callers
// set with eid) with body as a form if not empty, and answers as the HTTP
// API does: an error becomes its status and message.
func Call(tb testing.TB, fn route.Func, method, target, body string) *httptest.ResponseRecorder {
	tb.Helper()
	return CallIn(tb, EID, fn, method, target, body)
}

// CallIn is Call for experiment eid.
func CallIn(tb testing.TB, eid string, fn route.Func, method, target, body string) *httptest.ResponseRecorder {
	tb.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req := httptest.NewRequestWithContext(tb.Context(), method, target, rd)
	if body != "" {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	rec := httptest.NewRecorder()
	if err := fn(rec, &route.Request{Request: req, EID: eid, Ctx: tb.Context()}); err != nil {
		code, msg, _ := httperr.Of(err)
		httperr.Write(rec, code, msg)
	}
	return rec
}

// Case is one call of a route table test: fn on method and target (body
// a form if not empty) answers status Code and, if Want is set, a JSON
// body equal to Want (compared as decoded values, so key order and
// spacing do not matter).
type Case struct {
	Name           string
	Fn             route.Func
	Method, Target string
	Body           string
	Code           int
	Want           string
}

// Run runs the cases, each as a parallel subtest (so they run after the
// calling test function returns).
func Run(t *testing.T, cases []Case) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			t.Parallel()
			Check(t, c)
		})
	}
}

// Check runs one case now.
func Check(t *testing.T, c Case) {
	t.Helper()
	method := c.Method
	if method == "" {
		method = http.MethodGet
	}
	rec := Call(t, c.Fn, method, c.Target, c.Body)
	code := c.Code
	if code == 0 {
		code = http.StatusOK
	}
	if rec.Code != code {
		t.Fatalf("%s %s: status %d, want %d: %s", method, c.Target, rec.Code, code, rec.Body)
	}
	if c.Want == "" {
		return
	}
	var got, want any
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
		t.Fatalf("%s %s: %v: %s", method, c.Target, err, rec.Body)
	}
	if err := json.Unmarshal([]byte(c.Want), &want); err != nil {
		t.Fatalf("the case's Want: %v", err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s %s:\n got %s\nwant %s", method, c.Target, rec.Body, c.Want)
	}
}

// Body is rec's body, failing tb unless rec answered 200; rec's body is
// left to be read again.
func Body(tb testing.TB, rec *httptest.ResponseRecorder) []byte {
	tb.Helper()
	if rec.Code != http.StatusOK {
		tb.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	return bytes.Clone(rec.Body.Bytes())
}

// JSON decodes rec's body, failing tb unless rec answered 200.
func JSON(tb testing.TB, rec *httptest.ResponseRecorder) any {
	tb.Helper()
	if rec.Code != http.StatusOK {
		tb.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	var v any
	if err := json.Unmarshal(rec.Body.Bytes(), &v); err != nil {
		tb.Fatalf("%v: %s", err, rec.Body)
	}
	return v
}
