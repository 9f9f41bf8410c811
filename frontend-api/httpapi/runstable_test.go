package httpapi_test

import (
	"context"
	"encoding/json"
	"math"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/tbhub/tbhub/frontend-api/httpapi"
	datapb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/data"
	hparamspb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/hparams"
)

// ListRuns lists the runs of the table's series, each once.
func (p *tableProvider) ListRuns(context.Context, *datapb.ListRunsRequest) (*datapb.ListRunsResponse, error) {
	resp := &datapb.ListRunsResponse{}
	var seen []string
	for _, s := range p.series {
		if !slices.Contains(seen, s.run) {
			seen = append(seen, s.run)
			resp.Runs = append(resp.Runs, &datapb.Run{Name: s.run})
		}
	}
	return resp, nil
}

// The runs table: every run, with its session's hparams (a run below a
// session, "a/eval", has the session's; a NaN as TensorBoard writes it), and per tag asked for the last
// value and its step and the minimum and maximum of every point; a run
// without the tag has no entry for it.
func TestRunsTable(t *testing.T) {
	start := func(lr float64, opt string) []byte {
		return mustMarshal(t, &hparamspb.HParamsPluginData{Data: &hparamspb.HParamsPluginData_SessionStartInfo{SessionStartInfo: &hparamspb.SessionStartInfo{
			Hparams: map[string]*structpb.Value{"lr": structpb.NewNumberValue(lr), "opt": structpb.NewStringValue(opt), "wd": structpb.NewNumberValue(math.NaN())}}}})
	}
	p, srv := serveTable(t, httpapi.Config{},
		series{plugin: "hparams", run: "a", tag: "_hparams_/session_start_info", content: start(0.1, "adam"), steps: []int64{0}, tensors: nil},
		series{plugin: "scalars", run: "a/eval", tag: "loss", steps: []int64{0, 10, 20, 30}, scalars: []float32{2, -1, 5, 0.5}},
		series{plugin: "scalars", run: "a/eval", tag: "acc", steps: []int64{0, 10}, scalars: []float32{0.25, 0.75}},
		series{plugin: "scalars", run: "b", tag: "loss", steps: []int64{5}, scalars: []float32{3}},
	)
	resp, body := get(t, srv.URL+"/experiment/e1/data/runs_table?tag=loss&tag=acc&tag=missing")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("runs_table: %d %s", resp.StatusCode, body)
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatal(err)
	}
	var want map[string]any
	if err := json.Unmarshal([]byte(`{"runs": [
		{"run": "a", "hparams": {"lr": 0.1, "opt": "adam", "wd": "NaN"}},
		{"run": "a/eval", "hparams": {"lr": 0.1, "opt": "adam", "wd": "NaN"}, "metrics": {
			"loss": {"last": 0.5, "step": 30, "min": -1, "max": 5},
			"acc": {"last": 0.75, "step": 10, "min": 0.25, "max": 0.75}}},
		{"run": "b", "metrics": {"loss": {"last": 3, "step": 5, "min": 3, "max": 3}}}
	]}`), &want); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("runs_table (-want +got):\n%s", d)
	}

	// The last points are a 1-point read; the extremes a bucketed one
	// (tbhub-buckets: 1), which gives every bucket's min and max.
	reads := map[int64]string{}
	for _, r := range p.scalarReads {
		reads[r.numPoints] = r.buckets
	}
	if len(reads) != 2 || reads[1] != "" || reads[100] != "1" {
		t.Errorf("ReadScalars calls (num_points → tbhub-buckets): %v; want 1 → none, 100 → 1", reads)
	}

	// Without tags: the runs and their hparams only.
	if resp, body := get(t, srv.URL+"/experiment/e1/data/runs_table"); resp.StatusCode != http.StatusOK || strings.Contains(body, "metrics") {
		t.Errorf("runs_table without tags: %d %s", resp.StatusCode, body)
	}
}

// More runs × tags than --runs-table-max-series is a 400 that says how
// many and what to do, not a read of them all.
func TestRunsTableBounded(t *testing.T) {
	p, srv := serveTable(t, httpapi.Config{RunsTable: httpapi.RunsTableLimits{MaxSeries: 5}},
		series{plugin: "scalars", run: "a", tag: "loss", steps: []int64{0}, scalars: []float32{1}},
		series{plugin: "scalars", run: "b", tag: "loss", steps: []int64{0}, scalars: []float32{1}},
		series{plugin: "scalars", run: "c", tag: "loss", steps: []int64{0}, scalars: []float32{1}},
	)
	resp, body := get(t, srv.URL+"/experiment/e1/data/runs_table?tag=loss&tag=acc")
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, "3 runs × 2 tags is 6 series") || !strings.Contains(body, "at most 5") {
		t.Errorf("3 runs × 2 tags with at most 5 series: %d %q; want 400 saying so", resp.StatusCode, body)
	}
	if n := p.numPoints("scalars"); n != 0 {
		t.Errorf("the refused request read scalars (%d points per series)", n)
	}
	if resp, body := get(t, srv.URL+"/experiment/e1/data/runs_table?tag=loss"); resp.StatusCode != http.StatusOK {
		t.Errorf("3 runs × 1 tag: %d %s", resp.StatusCode, body)
	}
}
