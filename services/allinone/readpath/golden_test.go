package readpath_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden response shapes in testdata/")

// shape reduces a JSON value to its structure: scalars become their type,
// an array the shape of its first element, an object whose values all
// share one shape (mergeShapes) {"*": that shape} (runs, tags), any other
// object its keys with their shapes. TensorBoard's "NaN"/"Infinity" strings count as
// numbers. Goldens of shapes stay stable while data and blob keys vary.
func shape(v any) any {
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
		return []any{shape(v[0])}
	case map[string]any:
		out := map[string]any{}
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
			out[k] = shape(v[k])
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

// TestGoldenShapes pins the JSON shape of every JSON route on the corpus.
// Regenerate with: go test ./readpath -run TestGoldenShapes -update (in services/allinone)
func TestGoldenShapes(t *testing.T) {
	onBackends(t, func(t *testing.T, s *server, eid string) {
		d := "/experiment/" + eid + "/data/"
		p := d + "plugin/"
		hparamsReq := `{"startIndex":0,"sliceSize":10,"allowedStatuses":["STATUS_UNKNOWN","STATUS_SUCCESS","STATUS_FAILURE","STATUS_RUNNING"]}`
		tsReq, _ := json.Marshal([]map[string]any{
			{"plugin": "scalars", "tag": "loss"},
			{"plugin": "histograms", "tag": "normal/moving_mean", "run": "generated/histograms"},
			{"plugin": "images", "tag": "gradient/image_summary", "run": "generated/images", "sample": 0},
		})
		routes := []struct {
			name, method, path string
			form               url.Values
		}{
			{"environment", "GET", d + "environment", nil},
			{"plugins_listing", "GET", d + "plugins_listing", nil},
			{"runs_index", "GET", d + "runs?format=index", nil},
			{"runs_list", "GET", d + "runs?format=list", nil},
			{"logdir", "GET", d + "logdir", nil},
			{"window_properties", "GET", d + "window_properties", nil},
			{"legacy_scalars", "GET", d + "scalars" + q("run", "generated/scalars/train", "tag", "loss"), nil},
			{"legacy_scalars_sampled", "GET", d + "scalars" + q("sample_count", "3"), nil},
			{"legacy_histograms", "GET", d + "histograms" + q("run", "generated/histograms", "tag", "normal/moving_mean"), nil},
			{"legacy_compressed_histograms", "GET", d + "compressedHistograms" + q("run", "generated/histograms", "tag", "normal/moving_mean"), nil},
			{"legacy_images", "GET", d + "images" + q("run", "generated/images", "tag", "gradient/image_summary"), nil},
			{"legacy_audio", "GET", d + "audio" + q("run", "generated/audio", "tag", "sine/audio_summary"), nil},
			{"scalars_tags", "GET", p + "scalars/tags", nil},
			{"scalars_scalars", "GET", p + "scalars/scalars" + q("run", "generated/scalars/train", "tag", "loss"), nil},
			{"scalars_multirun", "POST", p + "scalars/scalars_multirun", url.Values{"tag": {"loss"}, "runs": {"generated/scalars/train", "generated/scalars/eval"}}},
			{"histograms_tags", "GET", p + "histograms/tags", nil},
			{"histograms_histograms", "GET", p + "histograms/histograms" + q("run", "generated/histograms", "tag", "normal/moving_mean"), nil},
			{"distributions", "GET", p + "distributions/distributions" + q("run", "generated/histograms", "tag", "normal/moving_mean"), nil},
			{"images_tags", "GET", p + "images/tags", nil},
			{"images_images", "GET", p + "images/images" + q("run", "generated/images", "tag", "gradient/image_summary"), nil},
			{"audio_tags", "GET", p + "audio/tags", nil},
			{"audio_audio", "GET", p + "audio/audio" + q("run", "generated/audio", "tag", "sine/audio_summary"), nil},
			{"text_tags", "GET", p + "text/tags", nil},
			{"text_text", "GET", p + "text/text" + q("run", "generated/text", "tag", "table"), nil},
			{"graphs_info", "GET", p + "graphs/info", nil},
			{"pr_curves_tags", "GET", p + "pr_curves/tags", nil},
			{"pr_curves", "GET", p + "pr_curves/pr_curves" + q("run", "generated/pr_curves", "tag", "classifier/pr_curves"), nil},
			{"custom_scalars_layout", "GET", p + "custom_scalars/layout", nil},
			{"custom_scalars_scalars", "GET", p + "custom_scalars/scalars" + q("run", "generated/custom_scalars", "tag", "loss/.*"), nil},
			{"hparams_experiment", "GET", p + "hparams/experiment" + q("request", "{}"), nil},
			{"hparams_session_groups", "GET", p + "hparams/session_groups" + q("request", hparamsReq), nil},
			{"hparams_metric_evals", "GET", p + "hparams/metric_evals" + q("request", `{"sessionName":"generated/hparams/trial-0","metricName":{"tag":"accuracy"}}`), nil},
			{"mesh_tags", "GET", p + "mesh/tags", nil},
			{"timeseries_tags", "GET", p + "timeseries/tags", nil},
			{"timeseries_timeseries", "POST", p + "timeseries/timeSeries", url.Values{"requests": {string(tsReq)}}},
			{"api_experiment", "GET", "/api/experiments/" + eid, nil},
		}
		for _, rt := range routes {
			t.Run(rt.name, func(t *testing.T) {
				r := s.do(t, rt.method, rt.path, s.token, rt.form)
				if r.status != http.StatusOK {
					t.Fatalf("%s %s: %d %s", rt.method, rt.path, r.status, r.body)
				}
				var v any
				if err := json.Unmarshal(r.body, &v); err != nil {
					t.Fatalf("not JSON: %v: %.200s", err, r.body)
				}
				got, _ := json.MarshalIndent(shape(v), "", "  ")
				got = append(got, '\n')
				file := filepath.Join("testdata", rt.name+".shape.json")
				if *update {
					if err := os.WriteFile(file, got, 0o644); err != nil {
						t.Fatal(err)
					}
					return
				}
				want, err := os.ReadFile(file)
				if err != nil {
					t.Fatalf("%v (run with -update to create it)", err)
				}
				if !bytes.Equal(got, want) {
					t.Errorf("shape of %s changed:\n got %s\nwant %s", rt.path, got, strings.TrimSpace(string(want)))
				}
			})
		}
	})
}
