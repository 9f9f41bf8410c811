package runstable

import (
	"math"
	"net/http"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/tbhub/tbhub/frontend-api/httpapi/internal/route/routetest"
	hparamspb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/hparams"
)

// The runs table: every run, with its session's hparams (a run below a
// session, "a/eval", has the session's; a NaN as TensorBoard writes it),
// and per tag asked for the last value and its step and the minimum and
// maximum of every point; a run without the tag has no entry for it.
func TestRunsTable(t *testing.T) {
	t.Parallel()
	start, err := proto.Marshal(&hparamspb.HParamsPluginData{Data: &hparamspb.HParamsPluginData_SessionStartInfo{SessionStartInfo: &hparamspb.SessionStartInfo{
		Hparams: map[string]*structpb.Value{"lr": structpb.NewNumberValue(0.1), "opt": structpb.NewStringValue("adam"), "wd": structpb.NewNumberValue(math.NaN())}}}})
	if err != nil {
		t.Fatal(err)
	}
	p := &routetest.Provider{Series: []routetest.Series{
		{Plugin: "hparams", Run: "a", Tag: "_hparams_/session_start_info", Content: start, Steps: []int64{0}},
		{Plugin: "scalars", Run: "a/eval", Tag: "loss", Steps: []int64{0, 10, 20, 30}, Scalars: []float32{2, -1, 5, 0.5}},
		{Plugin: "scalars", Run: "a/eval", Tag: "acc", Steps: []int64{0, 10}, Scalars: []float32{0.25, 0.75}},
		{Plugin: "scalars", Run: "b", Tag: "loss", Steps: []int64{5}, Scalars: []float32{3}},
	}}
	h := Plugin{Env: routetest.Env(t, p), Limits: DefaultLimits()}
	routetest.Check(t, routetest.Case{Fn: h.RunsTable, Target: "/experiment/e1/data/runs_table?tag=loss&tag=acc&tag=missing", Want: `{"runs": [
			{"run": "a", "hparams": {"lr": 0.1, "opt": "adam", "wd": "NaN"}},
			{"run": "a/eval", "hparams": {"lr": 0.1, "opt": "adam", "wd": "NaN"}, "metrics": {
				"loss": {"last": 0.5, "step": 30, "min": -1, "max": 5},
				"acc": {"last": 0.75, "step": 10, "min": 0.25, "max": 0.75}}},
			{"run": "b", "metrics": {"loss": {"last": 3, "step": 5, "min": 3, "max": 3}}}]}`})
	// The last points are a 1-point read; the extremes a bucketed one
	// (tbhub-buckets: 1), which gives every bucket's min and max.
	reads := map[int64]string{}
	for _, r := range p.ScalarReads() {
		reads[r.NumPoints] = r.Buckets
	}
	if len(reads) != 2 || reads[1] != "" || reads[100] != "1" {
		t.Errorf("ReadScalars calls (num_points → tbhub-buckets): %v; want 1 → none, 100 → 1", reads)
	}

	// Without tags: the runs and their hparams only, no scalars read.
	before := len(p.ScalarReads())
	routetest.Check(t, routetest.Case{Fn: h.RunsTable, Target: "/experiment/e1/data/runs_table", Want: `{"runs": [
		{"run": "a", "hparams": {"lr": 0.1, "opt": "adam", "wd": "NaN"}},
		{"run": "a/eval", "hparams": {"lr": 0.1, "opt": "adam", "wd": "NaN"}},
		{"run": "b"}]}`})
	if n := len(p.ScalarReads()); n != before {
		t.Errorf("without tags, %d scalar reads", n-before)
	}
}

// More runs × tags than --runs-table-max-series is a 400 that says how
// many and what to do, not a read of them all.
func TestRunsTableBounded(t *testing.T) {
	t.Parallel()
	p := &routetest.Provider{Series: []routetest.Series{
		{Plugin: "scalars", Run: "a", Tag: "loss", Steps: []int64{0}, Scalars: []float32{1}},
		{Plugin: "scalars", Run: "b", Tag: "loss", Steps: []int64{0}, Scalars: []float32{1}},
		{Plugin: "scalars", Run: "c", Tag: "loss", Steps: []int64{0}, Scalars: []float32{1}},
	}}
	h := Plugin{Env: routetest.Env(t, p), Limits: Limits{MaxSeries: 5}}
	rec := routetest.Call(t, h.RunsTable, http.MethodGet, "/experiment/e1/data/runs_table?tag=loss&tag=acc", "")
	if body := rec.Body.String(); rec.Code != http.StatusBadRequest || !strings.Contains(body, "3 runs × 2 tags is 6 series") || !strings.Contains(body, "at most 5") {
		t.Errorf("3 runs × 2 tags with at most 5 series: %d %q; want 400 saying so", rec.Code, body)
	}
	if reads := p.ScalarReads(); len(reads) != 0 {
		t.Errorf("the refused request read scalars: %v", reads)
	}
	if rec := routetest.Call(t, h.RunsTable, http.MethodGet, "/experiment/e1/data/runs_table?tag=loss", ""); rec.Code != http.StatusOK {
		t.Errorf("3 runs × 1 tag: %d %s", rec.Code, rec.Body)
	}
}
