package readpath_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	experimentsv1 "github.com/tbhub/tbhub/schemas/gen/go/tbhub/experiments/v1"
	servicepb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/service"
	"github.com/tbhub/tbhub/services/allinone/readpath"
	"github.com/tbhub/tbhub/services/internal/api/reader"
	"github.com/tbhub/tbhub/services/internal/storage/store"
)

// PutRuns creates runs with no data, which data/runs lists in start-time
// order (a run with none last) and GetExperiment returns; a bad run name is
// INVALID_ARGUMENT and stores nothing of the request.
func TestPutRuns(t *testing.T) {
	s, ctx, x, eid := newExperiment(t, "runs")
	_, err := x.PutRuns(ctx, &experimentsv1.PutRunsRequest{ExperimentId: eid, Runs: []*experimentsv1.RunStart{
		{Name: "hparams/1", StartTime: 1.7e9 + 5}, {Name: "starting"}, {Name: "first", StartTime: 1.7e9}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"", strings.Repeat("r", 1025)} {
		_, err = x.PutRuns(ctx, &experimentsv1.PutRunsRequest{ExperimentId: eid, Runs: []*experimentsv1.RunStart{{Name: "ok"}, {Name: bad}}})
		if status.Code(err) != codes.InvalidArgument {
			t.Errorf("PutRuns with run name %.20q: %v, want INVALID_ARGUMENT", bad, err)
		}
	}
	var list []string
	s.getJSON(t, "/experiment/"+eid+"/data/runs", &list)
	if want := []string{"first", "hparams/1", "starting"}; !slices.Equal(list, want) {
		t.Errorf("data/runs = %v, want %v", list, want)
	}
	got, err := x.GetExperiment(ctx, &experimentsv1.GetExperimentRequest{ExperimentId: eid})
	if err != nil {
		t.Fatal(err)
	}
	var runs []string
	for _, r := range got.GetRuns() {
		runs = append(runs, r.GetName())
	}
	if !slices.Equal(runs, []string{"first", "hparams/1", "starting"}) || got.GetExperiment().GetCounts().GetNumRuns() != 3 {
		t.Errorf("GetExperiment runs = %v, counts %v", got.GetRuns(), got.GetExperiment().GetCounts())
	}
}

// newExperiment starts a server and creates an experiment named name
// there, returning the owner's context and an ExperimentService client.
func newExperiment(t *testing.T, name string) (*server, context.Context, experimentsv1.ExperimentServiceClient, string) {
	t.Helper()
	s := startServer(t)
	conn, err := grpc.NewClient(s.srv.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	ctx := metadata.AppendToOutgoingContext(t.Context(), "authorization", "Bearer "+s.token)
	created, err := servicepb.NewTensorBoardWriterServiceClient(conn).CreateExperiment(ctx, &servicepb.CreateExperimentRequest{Name: name})
	if err != nil {
		t.Fatal(err)
	}
	return s, ctx, experimentsv1.NewExperimentServiceClient(conn), created.GetExperimentId()
}

// runListCounter is a store that counts its ListRuns calls.
type runListCounter struct {
	store.Store
	lists atomic.Int64
}

func (c *runListCounter) ListRuns(ctx context.Context, eid string) ([]store.Run, error) {
	c.lists.Add(1)
	return c.Store.ListRuns(ctx, eid)
}

// GET /api/experiments/{eid} listed every run to answer 341 bytes (issue
// 20 #1: 1.57 s for 100,000 runs), and live pages poll it. It reads no
// run list now, signed in or not; the run count it shows is still there,
// and GetExperiment still answers the runs to whoever asks (tbup verify).
func TestExperimentPageListsNoRuns(t *testing.T) {
	base, blobs := openEmbedded(t)
	st := &runListCounter{Store: base}
	s := startOn(t, st, blobs, readpath.Config{})
	ctx := context.Background()
	owner, err := st.GetUserByName(ctx, "researcher")
	if err != nil {
		t.Fatal(err)
	}
	eid := store.NewExperimentID()
	if err := st.CreateExperiment(ctx, store.Experiment{ID: eid, Name: "page", Owner: owner.ID, Visibility: store.VisibilityPublic}); err != nil {
		t.Fatal(err)
	}
	if err := st.PutRuns(ctx, eid, []store.Run{{Name: "a"}, {Name: "b"}, {Name: "c"}}); err != nil {
		t.Fatal(err)
	}
	for _, token := range []string{s.token, ""} {
		before := st.lists.Load()
		r := s.do(t, http.MethodGet, "/api/experiments/"+eid, token, nil)
		if r.status != http.StatusOK {
			t.Fatalf("GET /api/experiments/%s: %d %s", eid, r.status, r.body)
		}
		if n := st.lists.Load() - before; n != 0 {
			t.Errorf("GET /api/experiments/{eid} (signed in: %v) listed the runs %d times", token != "", n)
		}
		if !strings.Contains(string(r.body), `"numRuns":"3"`) {
			t.Errorf("the page's experiment lacks its run count: %s", r.body)
		}
	}
	conn, err := grpc.NewClient(s.srv.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	exp, err := experimentsv1.NewExperimentServiceClient(conn).GetExperiment(
		metadata.AppendToOutgoingContext(t.Context(), "authorization", "Bearer "+s.token), &experimentsv1.GetExperimentRequest{ExperimentId: eid})
	if err != nil || len(exp.GetRuns()) != 3 {
		t.Errorf("GetExperiment = %d runs, %v; want 3", len(exp.GetRuns()), err)
	}
}

// TensorBoard's data/runs (and the DataProvider's ListRuns under it) has
// no paging, and answered every run: 103 MB for an experiment of 100,000
// runs, to anonymous readers of a public one. The write service now caps
// runs per experiment; an experiment holding more (made before the cap,
// or under a larger one) is refused with a clear error before its runs
// are read, in both shapes of data/runs, and one within the bound is
// listed whole.
func TestRunListsAreBounded(t *testing.T) {
	const max = 10
	s := startServerWith(t, readpath.Config{Reader: reader.Config{MaxListedRuns: max}})
	ctx := context.Background()
	owner, err := s.st.GetUserByName(ctx, "researcher")
	if err != nil {
		t.Fatal(err)
	}
	experiment := func(runs int) string {
		eid := store.NewExperimentID()
		if err := s.st.CreateExperiment(ctx, store.Experiment{ID: eid, Name: "sweep", Owner: owner.ID, Visibility: store.VisibilityPublic}); err != nil {
			t.Fatal(err)
		}
		var list []store.Run
		for i := range runs {
			list = append(list, store.Run{Name: fmt.Sprintf("trial-%03d", i)})
		}
		if err := s.st.PutRuns(ctx, eid, list); err != nil {
			t.Fatal(err)
		}
		return eid
	}
	over, within := experiment(max+1), experiment(max)
	for _, path := range []string{"/data/runs", "/data/runs?format=index"} {
		r := s.do(t, http.MethodGet, "/experiment/"+over+path, "", nil)
		if r.status != http.StatusBadRequest || !strings.Contains(string(r.body), fmt.Sprintf("has %d runs; at most %d are listed", max+1, max)) {
			t.Errorf("%s of %d runs: %d %s, want 400 naming the bound", path, max+1, r.status, r.body)
		}
	}
	var names []string
	s.getJSON(t, "/experiment/"+within+"/data/runs", &names)
	if len(names) != max {
		t.Errorf("data/runs of %d runs listed %d", max, len(names))
	}
}

// What tbup skipped as damaged rides PutRuns (PutRunsRequest.damaged): it
// is kept with the experiment, answered by GetExperiment and the web UI's
// /api/experiments/{eid}, replaced by the next report and left alone by a
// PutRuns without one. A report out of bounds is INVALID_ARGUMENT and
// changes nothing.
func TestPutRunsDamagedRecords(t *testing.T) {
	s, ctx, x, eid := newExperiment(t, "damaged")
	damaged := func() *experimentsv1.DamagedRecords {
		t.Helper()
		got, err := x.GetExperiment(ctx, &experimentsv1.GetExperimentRequest{ExperimentId: eid, OmitRuns: true})
		if err != nil {
			t.Fatal(err)
		}
		return got.GetExperiment().GetDamaged()
	}
	if d := damaged(); d != nil {
		t.Errorf("new experiment: damaged %v, want none", d)
	}
	report := &experimentsv1.DamagedRecords{Records: 4, NumFiles: 2, Files: []string{"damaged/bad_crc/events.out.tfevents.1", "damaged/truncated/events.out.tfevents.2"}}
	if _, err := x.PutRuns(ctx, &experimentsv1.PutRunsRequest{ExperimentId: eid, Runs: []*experimentsv1.RunStart{{Name: "damaged/bad_crc"}}, Damaged: report}); err != nil {
		t.Fatal(err)
	}
	if d := damaged(); d.GetRecords() != 4 || d.GetNumFiles() != 2 || !slices.Equal(d.GetFiles(), report.Files) {
		t.Errorf("after PutRuns: damaged %v, want %v", d, report)
	}
	var page struct {
		Damaged struct {
			Records  string   `json:"records"`
			NumFiles string   `json:"numFiles"`
			Files    []string `json:"files"`
		} `json:"damaged"`
	}
	s.getJSON(t, "/api/experiments/"+eid, &page)
	if page.Damaged.Records != "4" || page.Damaged.NumFiles != "2" || !slices.Equal(page.Damaged.Files, report.Files) {
		t.Errorf("/api/experiments/%s damaged = %+v, want %v", eid, page.Damaged, report)
	}
	// Others see how many records, not the files: an event file's name
	// carries the host that wrote it.
	if r := s.send(t, http.MethodPatch, "/api/experiments/"+eid, s.token, `{"visibility":"public"}`); r.status != http.StatusOK {
		t.Fatalf("making it public: %d %s", r.status, r.body)
	}
	var public struct {
		Damaged map[string]any `json:"damaged"`
	}
	if r := s.do(t, http.MethodGet, "/api/experiments/"+eid, "", nil); r.status != http.StatusOK || json.Unmarshal(r.body, &public) != nil {
		t.Fatalf("GET as anyone: %d %s", r.status, r.body)
	}
	if public.Damaged["records"] != "4" || public.Damaged["numFiles"] != "2" || public.Damaged["files"] != nil {
		t.Errorf("damaged as anyone sees it: %v, want the counts without the files", public.Damaged)
	}
	// A PutRuns without a report keeps it.
	if _, err := x.PutRuns(ctx, &experimentsv1.PutRunsRequest{ExperimentId: eid, Runs: []*experimentsv1.RunStart{{Name: "more"}}}); err != nil {
		t.Fatal(err)
	}
	if d := damaged(); d.GetRecords() != 4 {
		t.Errorf("after a PutRuns without damage: %v, want the earlier report kept", d)
	}
	many := make([]string, 101)
	for i := range many {
		many[i] = fmt.Sprintf("run/events.%d", i)
	}
	for name, bad := range map[string]*experimentsv1.DamagedRecords{
		"101 files":              {Records: 101, NumFiles: 101, Files: many},
		"negative records":       {Records: -1},
		"records beyond the cap": {Records: 1e12 + 1, NumFiles: 1},
		"fewer files than named": {Records: 2, NumFiles: 1, Files: many[:2]},
		"an empty file name":     {Records: 1, NumFiles: 1, Files: []string{""}},
		"a long file name":       {Records: 1, NumFiles: 1, Files: []string{strings.Repeat("f", 1025)}},
	} {
		_, err := x.PutRuns(ctx, &experimentsv1.PutRunsRequest{ExperimentId: eid, Runs: []*experimentsv1.RunStart{{Name: "bad-" + name}}, Damaged: bad})
		if status.Code(err) != codes.InvalidArgument {
			t.Errorf("PutRuns with %s: %v, want INVALID_ARGUMENT", name, err)
		}
	}
	if d := damaged(); d.GetRecords() != 4 || !slices.Equal(d.GetFiles(), report.Files) {
		t.Errorf("after bad reports: damaged %v, want %v kept", d, report)
	}
	var list []string
	s.getJSON(t, "/experiment/"+eid+"/data/runs", &list)
	if slices.ContainsFunc(list, func(r string) bool { return strings.HasPrefix(r, "bad-") }) {
		t.Errorf("a refused PutRuns created runs: %v", list)
	}
}
