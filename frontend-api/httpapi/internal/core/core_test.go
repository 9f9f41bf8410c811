package core

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/tbhub/tbhub/frontend-api/httpapi/internal/route"
	"github.com/tbhub/tbhub/frontend-api/httpapi/internal/route/routetest"
	datapb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/data"
)

// table is an experiment with a scalar series in run "train", a histogram
// in "train", images in "eval" and a run graph in "eval".
func table(t *testing.T) Plugin {
	t.Helper()
	return Plugin{Env: routetest.Env(t, &routetest.Provider{
		Experiment: &datapb.GetExperimentResponse{Name: "mnist", Description: "a *small* net", DataLocation: "gs://bucket/logs",
			CreationTime: timestamppb.New(time.Unix(1700000000, 500_000_000))},
		Series: []routetest.Series{
			{Plugin: "scalars", Run: "train", Tag: "loss", Steps: []int64{1, 2}, Scalars: []float32{0.5, 0.25}},
			{Plugin: "histograms", Run: "train", Tag: "weights", Steps: []int64{1}}, // tensors (none needed)
			{Plugin: "images", Run: "eval", Tag: "digits", Steps: []int64{1}, Blobs: [][][]byte{{[]byte("8"), []byte("8"), []byte("png")}}},
			{Plugin: "graphs", Run: "eval", Tag: "__run_graph__", Steps: []int64{0}, Blobs: [][][]byte{{[]byte("graph")}}},
		},
	})}
}

func TestRoutes(t *testing.T) {
	t.Parallel()
	h := table(t)
	routetest.Run(t, []routetest.Case{
		{Name: "environment", Fn: h.Environment, Target: "/experiment/e1/data/environment",
			Want: fmt.Sprintf(`{"version": %q, "data_location": "gs://bucket/logs", "window_title": "mnist",
				"experiment_name": "mnist", "experiment_description": "a *small* net", "creation_time": 1700000000.5}`, route.Version)},
		{Name: "logdir", Fn: h.Logdir, Target: "/experiment/e1/data/logdir", Want: `{"logdir": "gs://bucket/logs"}`},
		{Name: "window properties", Fn: h.WindowProperties, Target: "/experiment/e1/data/window_properties", Want: `{"window_title": "mnist"}`},
		{Name: "experiments", Fn: h.EmptyList, Target: "/experiment/e1/data/experiments", Want: `[]`},
		{Name: "notifications", Fn: h.Notifications, Target: "/experiment/e1/data/notifications", Want: `{"notifications": []}`},
		{Name: "runs", Fn: h.Runs, Target: "/experiment/e1/data/runs", Want: `["train", "eval"]`},
		{Name: "runs as a list", Fn: h.Runs, Target: "/experiment/e1/data/runs?format=list", Want: `["train", "eval"]`},
		{Name: "run index", Fn: h.Runs, Target: "/experiment/e1/data/runs?format=index", Want: `{
			"train": {"histograms": ["weights"], "compressedHistograms": ["weights"], "scalars": ["loss"], "images": [], "audio": [],
				"graph": false, "firstEventTimestamp": 1000, "run_metadata": []},
			"eval": {"histograms": [], "compressedHistograms": [], "scalars": [], "images": ["digits"], "audio": [],
				"graph": true, "firstEventTimestamp": 1000, "run_metadata": []}}`},
		{Name: "runs in an unknown format", Fn: h.Runs, Target: "/experiment/e1/data/runs?format=csv", Code: http.StatusBadRequest},
	})
}

// Every route checks the experiment: one that is not there (or private)
// is a 404, never an empty answer.
func TestMissingExperimentIsNotFound(t *testing.T) {
	t.Parallel()
	h := table(t)
	for name, fn := range map[string]route.Func{
		"environment": h.Environment, "logdir": h.Logdir, "window_properties": h.WindowProperties, "experiments": h.EmptyList,
		"notifications": h.Notifications, "runs": h.Runs, "plugins_listing": h.PluginsListing,
	} {
		rec := routetest.CallIn(t, "other", fn, http.MethodGet, "/experiment/other/data/"+name, "")
		if rec.Code != http.StatusNotFound {
			t.Errorf("%s of a missing experiment: status %d, want 404: %s", name, rec.Code, rec.Body)
		}
	}
}

// plugins_listing names every dashboard in TensorBoard's order, enabled
// when the experiment has data of one of its plugins.
func TestPluginsListing(t *testing.T) {
	t.Parallel()
	rec := routetest.Call(t, table(t).PluginsListing, http.MethodGet, "/experiment/e1/data/plugins_listing", "")
	var listing map[string]pluginEntry
	if err := json.Unmarshal(routetest.Body(t, rec), &listing); err != nil {
		t.Fatal(err)
	}
	var order []string
	dec := json.NewDecoder(rec.Body)
	dec.Token() // {
	for dec.More() {
		key, _ := dec.Token()
		order = append(order, key.(string))
		var skip json.RawMessage
		dec.Decode(&skip)
	}
	var want []string
	for _, d := range dashboards {
		want = append(want, d.name)
	}
	if !slices.Equal(order, want) {
		t.Errorf("dashboards in the order %v, want %v", order, want)
	}
	enabled := map[string]bool{"timeseries": true, "scalars": true, "images": true, "graphs": true, "distributions": true, "histograms": true}
	for name, e := range listing {
		if e.Enabled != enabled[name] {
			t.Errorf("%s enabled: %v, want %v", name, e.Enabled, enabled[name])
		}
	}
	if e := listing["scalars"]; e.TabName != "scalars" || e.LoadingMechanism["type"] != "CUSTOM_ELEMENT" || e.LoadingMechanism["element_name"] != "tf-scalar-dashboard" {
		t.Errorf("scalars entry: %+v", e)
	}
	if e := listing["timeseries"]; e.LoadingMechanism["type"] != "NG_COMPONENT" || e.TabName != "Time Series" {
		t.Errorf("timeseries entry: %+v", e)
	}
	if !listing["graphs"].DisableReload {
		t.Error("graphs entry: reload not disabled")
	}
}
