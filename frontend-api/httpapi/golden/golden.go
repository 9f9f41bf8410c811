// Package golden pins the JSON shape of every JSON route of the HTTP API
// on the shared corpus (Routes, Shape, Check), and records and replays the
// answers of the services behind them (Recorder, Replay), so the goldens
// run in frontend-api against a data provider that needs no store. The
// recording is made where the real stack is wired
// (services/allinone/readpath, TestGoldenShapes -update), which also runs
// the same goldens end to end.
package golden

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// Route is one request whose answer's shape is pinned in
// testdata/<Name>.shape.json.
type Route struct {
	Name, Method, Path string
	Form               url.Values // POST form; nil for GET
}

// Routes are the pinned requests on the corpus uploaded as experiment eid.
func Routes(eid string) []Route {
	d := "/experiment/" + eid + "/data/"
	p := d + "plugin/"
	hparamsReq := `{"startIndex":0,"sliceSize":10,"allowedStatuses":["STATUS_UNKNOWN","STATUS_SUCCESS","STATUS_FAILURE","STATUS_RUNNING"]}`
	tsReq, _ := json.Marshal([]map[string]any{
		{"plugin": "scalars", "tag": "loss"},
		{"plugin": "histograms", "tag": "normal/moving_mean", "run": "generated/histograms"},
		{"plugin": "images", "tag": "gradient/image_summary", "run": "generated/images", "sample": 0},
	})
	return []Route{
		{"environment", "GET", d + "environment", nil},
		{"plugins_listing", "GET", d + "plugins_listing", nil},
		{"runs_index", "GET", d + "runs?format=index", nil},
		{"runs_list", "GET", d + "runs?format=list", nil},
		{"logdir", "GET", d + "logdir", nil},
		{"window_properties", "GET", d + "window_properties", nil},
		{"legacy_scalars", "GET", d + "scalars" + Query("run", "generated/scalars/train", "tag", "loss"), nil},
		{"legacy_scalars_sampled", "GET", d + "scalars" + Query("sample_count", "3"), nil},
		{"legacy_histograms", "GET", d + "histograms" + Query("run", "generated/histograms", "tag", "normal/moving_mean"), nil},
		{"legacy_compressed_histograms", "GET", d + "compressedHistograms" + Query("run", "generated/histograms", "tag", "normal/moving_mean"), nil},
		{"legacy_images", "GET", d + "images" + Query("run", "generated/images", "tag", "gradient/image_summary"), nil},
		{"legacy_audio", "GET", d + "audio" + Query("run", "generated/audio", "tag", "sine/audio_summary"), nil},
		{"scalars_tags", "GET", p + "scalars/tags", nil},
		{"scalars_scalars", "GET", p + "scalars/scalars" + Query("run", "generated/scalars/train", "tag", "loss"), nil},
		{"scalars_multirun", "POST", p + "scalars/scalars_multirun", url.Values{"tag": {"loss"}, "runs": {"generated/scalars/train", "generated/scalars/eval"}}},
		{"histograms_tags", "GET", p + "histograms/tags", nil},
		{"histograms_histograms", "GET", p + "histograms/histograms" + Query("run", "generated/histograms", "tag", "normal/moving_mean"), nil},
		{"distributions", "GET", p + "distributions/distributions" + Query("run", "generated/histograms", "tag", "normal/moving_mean"), nil},
		{"images_tags", "GET", p + "images/tags", nil},
		{"images_images", "GET", p + "images/images" + Query("run", "generated/images", "tag", "gradient/image_summary"), nil},
		{"audio_tags", "GET", p + "audio/tags", nil},
		{"audio_audio", "GET", p + "audio/audio" + Query("run", "generated/audio", "tag", "sine/audio_summary"), nil},
		{"text_tags", "GET", p + "text/tags", nil},
		{"text_text", "GET", p + "text/text" + Query("run", "generated/text", "tag", "table"), nil},
		{"graphs_info", "GET", p + "graphs/info", nil},
		{"pr_curves_tags", "GET", p + "pr_curves/tags", nil},
		{"pr_curves", "GET", p + "pr_curves/pr_curves" + Query("run", "generated/pr_curves", "tag", "classifier/pr_curves"), nil},
		{"custom_scalars_layout", "GET", p + "custom_scalars/layout", nil},
		{"custom_scalars_scalars", "GET", p + "custom_scalars/scalars" + Query("run", "generated/custom_scalars", "tag", "loss/.*"), nil},
		{"hparams_experiment", "GET", p + "hparams/experiment" + Query("request", "{}"), nil},
		{"hparams_session_groups", "GET", p + "hparams/session_groups" + Query("request", hparamsReq), nil},
		{"hparams_metric_evals", "GET", p + "hparams/metric_evals" + Query("request", `{"sessionName":"generated/hparams/trial-0","metricName":{"tag":"accuracy"}}`), nil},
		{"mesh_tags", "GET", p + "mesh/tags", nil},
		{"timeseries_tags", "GET", p + "timeseries/tags", nil},
		{"timeseries_timeseries", "POST", p + "timeseries/timeSeries", url.Values{"requests": {string(tsReq)}}},
		{"api_experiment", "GET", "/api/experiments/" + eid, nil},
	}
}

// Query is a URL query ("?k=v&...") of the key, value pairs kv.
func Query(kv ...string) string {
	v := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		v.Add(kv[i], kv[i+1])
	}
	return "?" + v.Encode()
}

// Check compares the shape of body, a JSON answer to rt, with
// dir/<rt.Name>.shape.json, or writes it there if update.
func Check(t testing.TB, dir string, rt Route, body []byte, update bool) {
	t.Helper()
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatalf("not JSON: %v: %.200s", err, body)
	}
	got, _ := json.MarshalIndent(Shape(v), "", "  ")
	got = append(got, '\n')
	file := filepath.Join(dir, rt.Name+".shape.json")
	if update {
		if err := os.WriteFile(file, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("%v (run services/allinone/readpath's TestGoldenShapes with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("shape of %s changed:\n got %s\nwant %s", rt.Path, got, strings.TrimSpace(string(want)))
	}
}

// Shape reduces a JSON value to its structure: scalars become their type,
// an array the shape of its first element, an object whose values all
// share one shape (mergeShapes) {"*": that shape} (runs, tags), any other
// object its keys with their shapes. TensorBoard's "NaN"/"Infinity"
// strings count as numbers. Goldens of shapes stay stable while data and
// blob keys vary.
func Shape(v any) any {
	switch v := v.(type) {
	case nil:
		return "null"
	case bool:
		return "bool"
	case float64:
		return "number"
	case string:
		if v == "NaN" || v == "Infinity" || v == "-Infinity" {
			return "number"
		}
		return "string"
	case []any:
		if len(v) == 0 {
			return []any{}
		}
		return []any{Shape(v[0])}
	case map[string]any:
		out := map[string]any{}
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
			out[k] = Shape(v[k])
		}
		sort.Strings(keys)
		if len(keys) < 2 {
			return out
		}
		merged := out[keys[0]]
		for _, k := range keys[1:] {
			var ok bool
			if merged, ok = mergeShapes(merged, out[k]); !ok {
				return out
			}
		}
		return map[string]any{"*": merged}
	}
	return fmt.Sprintf("%T", v)
}

// mergeShapes unifies two shapes: an empty array matches any array, null
// matches anything (a value not known yet, such as the start time of a run
// with no event), and objects with the same keys merge key by key.
func mergeShapes(a, b any) (any, bool) {
	switch {
	case a == "null":
		return b, true
	case b == "null":
		return a, true
	}
	switch a := a.(type) {
	case string:
		return a, a == b
	case []any:
		bl, ok := b.([]any)
		switch {
		case !ok:
			return nil, false
		case len(a) == 0:
			return bl, true
		case len(bl) == 0:
			return a, true
		}
		m, ok := mergeShapes(a[0], bl[0])
		return []any{m}, ok
	case map[string]any:
		bm, ok := b.(map[string]any)
		if !ok || len(a) != len(bm) {
			return nil, false
		}
		out := map[string]any{}
		for k, av := range a {
			bv, ok := bm[k]
			if !ok {
				return nil, false
			}
			if out[k], ok = mergeShapes(av, bv); !ok {
				return nil, false
			}
		}
		return out, true
	}
	return nil, false
}
