package readpath_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/tbhub/tbhub/frontend-api/httpapi/golden"
	"github.com/tbhub/tbhub/services/internal/storage/store"
	"github.com/tbhub/tbhub/services/internal/testenv/corpus"
)

// The read path against ../shared/corpus: tbup uploads the corpus into
// `tbhub serve` (with the read path mounted as in production), and every
// HTTP route's answer is checked against EXPECTED.json, computed
// independently of tbhub: runs, tags, plugin listings, point counts after
// each route's downsampling, last values and blob bytes.

type expSeries struct {
	Plugin    string `json:"plugin"`
	DataClass string `json:"data_class"`
	Points    int64  `json:"points"`
	MaxStep   int64  `json:"max_step"`
	Last      any    `json:"last"`
	MaxLength int64  `json:"max_length"`
	Blobs     int64  `json:"blobs"`
	BlobBytes int64  `json:"blob_bytes"`
}

type expected struct {
	Runs   map[string]map[string]expSeries `json:"runs"`
	Totals map[string]int64                `json:"totals"`
}

func loadExpected(t *testing.T) *expected {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(corpus.Dir(t), "EXPECTED.json"))
	if err != nil {
		t.Fatal(err)
	}
	var e expected
	if err := json.Unmarshal(b, &e); err != nil {
		t.Fatal(err)
	}
	return &e
}

// seriesOf returns run → sorted tags of the series of plugin (and class,
// if non-empty).
func (e *expected) seriesOf(plugin, class string) map[string][]string {
	out := map[string][]string{}
	for run, tags := range e.Runs {
		for tag, s := range tags {
			if s.Plugin == plugin && (class == "" || s.DataClass == class) {
				out[run] = append(out[run], tag)
			}
		}
	}
	for _, tags := range out {
		sort.Strings(tags)
	}
	return out
}

func (e *expected) hasPlugin(plugin string) bool { return len(e.seriesOf(plugin, "")) > 0 }

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// q is a URL query ("?k=v&...") of the key, value pairs kv.
func q(kv ...string) string { return golden.Query(kv...) }

// sameValue compares a JSON value TensorBoard-style (number, or "NaN",
// "Infinity", "-Infinity") with EXPECTED's, at float32 precision (the data
// provider's scalar type).
func sameValue(got, want any) bool {
	gs, gIsStr := got.(string)
	ws, wIsStr := want.(string)
	if gIsStr || wIsStr {
		return gIsStr && wIsStr && gs == ws
	}
	g, ok1 := got.(float64)
	w, ok2 := want.(float64)
	return ok1 && ok2 && float32(g) == float32(w)
}

func TestCorpusCoreRoutes(t *testing.T) {
	onBackends(t, func(t *testing.T, s *server, eid string) {
		exp := loadExpected(t)
		base := "/experiment/" + eid + "/data/"

		var list []string
		s.getJSON(t, base+"runs?format=list", &list)
		got := slices.Clone(list)
		sort.Strings(got)
		if want := sortedKeys(exp.Runs); !slices.Equal(got, want) {
			t.Errorf("data/runs?format=list: %d runs %v\nwant %d %v", len(got), got, len(want), want)
		}

		var index map[string]struct {
			Histograms           []string `json:"histograms"`
			CompressedHistograms []string `json:"compressedHistograms"`
			Scalars              []string `json:"scalars"`
			Images               []string `json:"images"`
			Audio                []string `json:"audio"`
			Graph                bool     `json:"graph"`
			FirstEventTimestamp  *float64 `json:"firstEventTimestamp"`
			RunMetadata          []string `json:"run_metadata"`
		}
		s.getJSON(t, base+"runs?format=index", &index)
		if !slices.Equal(sortedKeys(index), sortedKeys(exp.Runs)) {
			t.Errorf("data/runs index runs = %v", sortedKeys(index))
		}
		scalars, hists := exp.seriesOf("scalars", "scalar"), exp.seriesOf("histograms", "tensor")
		images, audio := exp.seriesOf("images", "blob_sequence"), exp.seriesOf("audio", "blob_sequence")
		graphs := exp.seriesOf("graphs", "blob_sequence")
		runMD := exp.seriesOf("graph_tagged_run_metadata", "")
		for run, e := range index {
			for name, pair := range map[string][2][]string{
				"scalars":              {e.Scalars, scalars[run]},
				"histograms":           {e.Histograms, hists[run]},
				"compressedHistograms": {e.CompressedHistograms, hists[run]},
				"images":               {e.Images, images[run]},
				"audio":                {e.Audio, audio[run]},
				"run_metadata":         {e.RunMetadata, runMD[run]},
			} {
				g := slices.Clone(pair[0])
				sort.Strings(g)
				if !slices.Equal(g, pair[1]) && len(g)+len(pair[1]) > 0 {
					t.Errorf("data/runs[%q].%s = %v, want %v", run, name, g, pair[1])
				}
			}
			if want := slices.Contains(graphs[run], "__run_graph__"); e.Graph != want {
				t.Errorf("data/runs[%q].graph = %v, want %v", run, e.Graph, want)
			}
			// Every run has a first event but the one whose only file is
			// empty; a run whose files hold no data is listed all the same.
			if noEvent := run == "generated/damaged/empty"; (e.FirstEventTimestamp == nil) != noEvent || (!noEvent && *e.FirstEventTimestamp <= 0) {
				t.Errorf("data/runs[%q].firstEventTimestamp = %v", run, e.FirstEventTimestamp)
			}
		}
		// The list is in start-time order, runs with no start time last.
		startOf := func(run string) float64 {
			if p := index[run].FirstEventTimestamp; p != nil {
				return *p
			}
			return math.Inf(1)
		}
		for i := 1; i < len(list); i++ {
			if startOf(list[i-1]) > startOf(list[i]) {
				t.Errorf("data/runs?format=list: %q (%v) before %q (%v)", list[i-1], startOf(list[i-1]), list[i], startOf(list[i]))
			}
		}

		var listing map[string]struct {
			Enabled bool `json:"enabled"`
		}
		s.getJSON(t, base+"plugins_listing", &listing)
		for dashboard, plugins := range map[string][]string{
			"scalars": {"scalars"}, "histograms": {"histograms"}, "distributions": {"histograms"},
			"images": {"images"}, "audio": {"audio"}, "text": {"text"}, "pr_curves": {"pr_curves"},
			"hparams": {"hparams"}, "mesh": {"mesh"}, "custom_scalars": {"custom_scalars"},
			"graphs": {"graphs", "graph_tagged_run_metadata"},
		} {
			want := slices.ContainsFunc(plugins, exp.hasPlugin)
			if listing[dashboard].Enabled != want {
				t.Errorf("plugins_listing[%s].enabled = %v, want %v", dashboard, listing[dashboard].Enabled, want)
			}
		}

		var env map[string]any
		s.getJSON(t, base+"environment", &env)
		if env["experiment_name"] != "corpus" || env["data_location"] == "" {
			t.Errorf("data/environment = %v", env)
		}
		var logdir map[string]string
		s.getJSON(t, base+"logdir", &logdir)
		if !strings.Contains(logdir["logdir"], eid) {
			t.Errorf("data/logdir = %v", logdir)
		}
		var empty []any
		s.getJSON(t, base+"experiments", &empty)
		if len(empty) != 0 {
			t.Errorf("data/experiments = %v", empty)
		}
	})
}

// tagsOf flattens a TensorBoard tags answer ({run: {tag: ...}} or {run:
// [tag]}) to run → sorted tags.
func tagsOf(t *testing.T, raw map[string]json.RawMessage) map[string][]string {
	out := map[string][]string{}
	for run, v := range raw {
		var asMap map[string]json.RawMessage
		var asList []string
		switch {
		case json.Unmarshal(v, &asMap) == nil:
			out[run] = sortedKeys(asMap)
		case json.Unmarshal(v, &asList) == nil:
			sort.Strings(asList)
			out[run] = asList
		default:
			t.Fatalf("tags of run %q: %s", run, v)
		}
	}
	return out
}

func checkTags(t *testing.T, s *server, path string, want map[string][]string) {
	t.Helper()
	var raw map[string]json.RawMessage
	s.getJSON(t, path, &raw)
	got := tagsOf(t, raw)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("%s:\n got %v\nwant %v", path, got, want)
	}
}

func TestCorpusScalars(t *testing.T) {
	onBackends(t, func(t *testing.T, s *server, eid string) {
		exp := loadExpected(t)
		p := "/experiment/" + eid + "/data/plugin/scalars/"
		want := exp.seriesOf("scalars", "scalar")
		checkTags(t, s, p+"tags", want)
		for run, tags := range want {
			for _, tag := range tags {
				e := exp.Runs[run][tag]
				var points [][3]any
				s.getJSON(t, p+"scalars"+q("run", run, "tag", tag), &points)
				if n := int64(len(points)); n != min(e.Points, 1000) {
					t.Errorf("scalars %s/%s: %d points, want %d", run, tag, n, min(e.Points, 1000))
					continue
				}
				last := points[len(points)-1]
				if step := int64(last[1].(float64)); step != e.MaxStep || !sameValue(last[2], e.Last) {
					t.Errorf("scalars %s/%s: last point (step %d, %v), want (%d, %v)", run, tag, step, last[2], e.MaxStep, e.Last)
				}
				// The legacy route gives the same series.
				var legacy [][3]any
				s.getJSON(t, "/experiment/"+eid+"/data/scalars"+q("run", run, "tag", tag), &legacy)
				if fmt.Sprint(legacy) != fmt.Sprint(points) {
					t.Errorf("data/scalars %s/%s differs from the plugin route", run, tag)
				}
				// Full resolution: every point.
				r := s.do(t, http.MethodGet, "/api/experiments/"+eid+"/scalars"+q("run", run, "tag", tag, "format", "csv"), s.token, nil)
				if lines := strings.Count(string(r.body), "\n"); r.status != http.StatusOK || int64(lines) != e.Points+1 {
					t.Errorf("download %s/%s: status %d, %d lines, want %d", run, tag, r.status, lines, e.Points+1)
				}
			}
		}
		// CSV of one series with many points.
		run, tag := "generated/long_run", sortedKeys(exp.Runs["generated/long_run"])[0]
		r := s.do(t, http.MethodGet, p+"scalars"+q("run", run, "tag", tag, "format", "csv"), s.token, nil)
		lines := strings.Split(strings.TrimSpace(string(r.body)), "\r\n")
		if r.status != http.StatusOK || lines[0] != "Wall time,Step,Value" || int64(len(lines)-1) != min(exp.Runs[run][tag].Points, 1000) {
			t.Errorf("scalars CSV: %d, %d lines, header %q", r.status, len(lines), lines[0])
		}
		if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "text/csv") {
			t.Errorf("scalars CSV content type %q", ct)
		}
		// scalars_multirun: every run with the tag.
		var runsWith []string
		for r, tags := range want {
			if slices.Contains(tags, "loss") {
				runsWith = append(runsWith, r)
			}
		}
		form := url.Values{"tag": {"loss"}, "runs": runsWith}
		mr := s.do(t, http.MethodPost, p+"scalars_multirun", s.token, form)
		var multi map[string][][3]any
		if err := json.Unmarshal(mr.body, &multi); err != nil || mr.status != 200 {
			t.Fatalf("scalars_multirun: %d %v", mr.status, err)
		}
		if len(runsWith) == 0 || len(multi) != len(runsWith) {
			t.Errorf("scalars_multirun for %d runs answered %d", len(runsWith), len(multi))
		}
		// The sample_count form: every scalar series, sampled.
		var sampled map[string]map[string][][3]any
		s.getJSON(t, "/experiment/"+eid+"/data/scalars"+q("sample_count", "5"), &sampled)
		for run, tags := range want {
			for _, tag := range tags {
				if n := int64(len(sampled[run][tag])); n != min(exp.Runs[run][tag].Points, 5) {
					t.Errorf("data/scalars?sample_count=5 %s/%s: %d points", run, tag, n)
				}
			}
		}
	})
}

func TestCorpusHistograms(t *testing.T) {
	onBackends(t, func(t *testing.T, s *server, eid string) {
		exp := loadExpected(t)
		base := "/experiment/" + eid + "/data/"
		want := exp.seriesOf("histograms", "tensor")
		checkTags(t, s, base+"plugin/histograms/tags", want)
		checkTags(t, s, base+"plugin/distributions/tags", want)
		for run, tags := range want {
			for _, tag := range tags {
				e := exp.Runs[run][tag]
				n := min(e.Points, 500)
				var hist, dist, legacy, compressed [][]json.RawMessage
				s.getJSON(t, base+"plugin/histograms/histograms"+q("run", run, "tag", tag), &hist)
				s.getJSON(t, base+"plugin/distributions/distributions"+q("run", run, "tag", tag), &dist)
				s.getJSON(t, base+"histograms"+q("run", run, "tag", tag), &legacy)
				s.getJSON(t, base+"compressedHistograms"+q("run", run, "tag", tag), &compressed)
				for name, got := range map[string][][]json.RawMessage{"histograms": hist, "distributions": dist, "data/histograms": legacy, "data/compressedHistograms": compressed} {
					if int64(len(got)) != n {
						t.Errorf("%s %s/%s: %d points, want %d", name, run, tag, len(got), n)
					} else if step, _ := strconv.ParseInt(string(got[len(got)-1][1]), 10, 64); step != e.MaxStep {
						t.Errorf("%s %s/%s: last step %d, want %d", name, run, tag, step, e.MaxStep)
					}
				}
				var bps [][2]any
				if len(dist) > 0 {
					if err := json.Unmarshal(dist[0][2], &bps); err != nil || len(bps) != 9 {
						t.Errorf("distributions %s/%s: %d basis points (%v)", run, tag, len(bps), err)
					}
				}
			}
		}
	})
}

func TestCorpusImagesAndAudio(t *testing.T) {
	onBackends(t, func(t *testing.T, s *server, eid string) {
		exp := loadExpected(t)
		base := "/experiment/" + eid + "/data/"
		images := exp.seriesOf("images", "blob_sequence")
		var imageTags map[string]map[string]struct {
			Samples int64 `json:"samples"`
		}
		s.getJSON(t, base+"plugin/images/tags", &imageTags)
		for run, tags := range images {
			for _, tag := range tags {
				e := exp.Runs[run][tag]
				if got := imageTags[run][tag].Samples; got != e.MaxLength-2 {
					t.Errorf("images/tags %s/%s: samples %d, want %d", run, tag, got, e.MaxLength-2)
				}
				var entries []struct {
					Step  int64  `json:"step"`
					Query string `json:"query"`
				}
				s.getJSON(t, base+"plugin/images/images"+q("run", run, "tag", tag), &entries)
				if int64(len(entries)) != min(e.Points, 10) || entries[len(entries)-1].Step != e.MaxStep {
					t.Errorf("images %s/%s: %d entries, want %d ending at step %d", run, tag, len(entries), min(e.Points, 10), e.MaxStep)
					continue
				}
				// Blob bytes: when every point is served and each holds one
				// image, the sizes (from the legacy route) and the image bytes
				// add up to EXPECTED's blob_bytes.
				var legacy []struct {
					Width, Height int
					Query         string
				}
				s.getJSON(t, base+"images"+q("run", run, "tag", tag), &legacy)
				if e.Points > 10 || e.MaxLength != 3 {
					continue
				}
				var total int64
				for i, en := range entries {
					r := s.do(t, http.MethodGet, base+"plugin/images/individualImage?"+en.Query, s.token, nil)
					if r.status != http.StatusOK || !strings.HasPrefix(r.header.Get("Content-Type"), "image/") ||
						!strings.Contains(r.header.Get("Cache-Control"), "immutable") {
						t.Errorf("individualImage %s/%s: %d %v", run, tag, r.status, r.header)
					}
					total += int64(len(r.body)) + int64(len(strconv.Itoa(legacy[i].Width))+len(strconv.Itoa(legacy[i].Height)))
				}
				if total != e.BlobBytes {
					t.Errorf("images %s/%s: %d blob bytes, want %d", run, tag, total, e.BlobBytes)
				}
			}
		}

		audio := exp.seriesOf("audio", "blob_sequence")
		var audioTags map[string]map[string]struct {
			Samples int64 `json:"samples"`
		}
		s.getJSON(t, base+"plugin/audio/tags", &audioTags)
		for run, tags := range audio {
			for _, tag := range tags {
				e := exp.Runs[run][tag]
				if got := audioTags[run][tag].Samples; got != e.MaxLength {
					t.Errorf("audio/tags %s/%s: samples %d, want %d", run, tag, got, e.MaxLength)
				}
				var entries []struct {
					ContentType string `json:"contentType"`
					Query       string `json:"query"`
				}
				s.getJSON(t, base+"plugin/audio/audio"+q("run", run, "tag", tag), &entries)
				if int64(len(entries)) != min(e.Points, 10) {
					t.Errorf("audio %s/%s: %d entries", run, tag, len(entries))
					continue
				}
				var total int64
				for _, en := range entries {
					r := s.do(t, http.MethodGet, base+"plugin/audio/individualAudio?"+en.Query, s.token, nil)
					if r.status != http.StatusOK || r.header.Get("Content-Type") != en.ContentType || en.ContentType != "audio/wav" {
						t.Errorf("individualAudio %s/%s: %d %q (listed %q)", run, tag, r.status, r.header.Get("Content-Type"), en.ContentType)
					}
					total += int64(len(r.body))
				}
				if e.Points <= 10 && total != e.BlobBytes {
					t.Errorf("audio %s/%s: %d blob bytes, want %d", run, tag, total, e.BlobBytes)
				}
				var legacy []map[string]any
				s.getJSON(t, base+"audio"+q("run", run, "tag", tag), &legacy)
				if len(legacy) != len(entries) {
					t.Errorf("data/audio %s/%s: %d entries, want %d", run, tag, len(legacy), len(entries))
				}
			}
		}
	})
}

func TestCorpusTextPRCurvesMesh(t *testing.T) {
	onBackends(t, func(t *testing.T, s *server, eid string) {
		exp := loadExpected(t)
		p := "/experiment/" + eid + "/data/plugin/"
		text := exp.seriesOf("text", "tensor")
		checkTags(t, s, p+"text/tags", text)
		for run, tags := range text {
			for _, tag := range tags {
				var entries []struct {
					Step int64  `json:"step"`
					Text string `json:"text"`
				}
				s.getJSON(t, p+"text/text"+q("run", run, "tag", tag), &entries)
				e := exp.Runs[run][tag]
				if int64(len(entries)) != min(e.Points, 100) || entries[len(entries)-1].Step != e.MaxStep {
					t.Errorf("text %s/%s: %d entries", run, tag, len(entries))
				}
				for _, en := range entries {
					if strings.Contains(strings.ToLower(en.Text), "<script") {
						t.Errorf("text %s/%s step %d: unsanitized HTML %q", run, tag, en.Step, en.Text)
					}
				}
			}
		}
		pr := exp.seriesOf("pr_curves", "tensor")
		checkTags(t, s, p+"pr_curves/tags", pr)
		for run, tags := range pr {
			for _, tag := range tags {
				var curves map[string][]struct {
					Step      int64     `json:"step"`
					Precision []any     `json:"precision"`
					Recall    []any     `json:"recall"`
					Threshold []float64 `json:"thresholds"`
				}
				s.getJSON(t, p+"pr_curves/pr_curves"+q("run", run, "tag", tag), &curves)
				e := exp.Runs[run][tag]
				got := curves[run]
				if int64(len(got)) != min(e.Points, 100) || got[len(got)-1].Step != e.MaxStep {
					t.Errorf("pr_curves %s/%s: %d entries", run, tag, len(got))
					continue
				}
				if c := got[0]; len(c.Precision) == 0 || len(c.Precision) != len(c.Recall) || len(c.Recall) != len(c.Threshold) {
					t.Errorf("pr_curves %s/%s: lengths %d %d %d", run, tag, len(c.Precision), len(c.Recall), len(c.Threshold))
				}
			}
		}
		var meshTags map[string]map[string]any
		s.getJSON(t, p+"mesh/tags", &meshTags)
		mesh := exp.seriesOf("mesh", "tensor")
		if len(meshTags) != len(mesh) {
			t.Errorf("mesh/tags runs %v, want %v", sortedKeys(meshTags), sortedKeys(mesh))
		}
		for run, names := range meshTags {
			for name := range names {
				var metas []struct {
					ContentType int `json:"content_type"`
					Step        int64
				}
				s.getJSON(t, p+"mesh/meshes"+q("run", run, "tag", name), &metas)
				if len(metas) == 0 {
					t.Errorf("mesh/meshes %s/%s: empty", run, name)
					continue
				}
				r := s.do(t, http.MethodGet, p+"mesh/data"+q("run", run, "tag", name, "content_type", "VERTEX"), s.token, nil)
				if r.status != http.StatusOK || len(r.body) == 0 || len(r.body)%12 != 0 {
					t.Errorf("mesh/data %s/%s VERTEX: %d, %d bytes", run, name, r.status, len(r.body))
				}
			}
		}
	})
}

func TestCorpusGraphs(t *testing.T) {
	onBackends(t, func(t *testing.T, s *server, eid string) {
		exp := loadExpected(t)
		base := "/experiment/" + eid + "/data/"
		var info map[string]struct {
			RunGraph bool `json:"run_graph"`
			Tags     map[string]struct {
				Profile bool `json:"profile"`
			} `json:"tags"`
		}
		s.getJSON(t, base+"plugin/graphs/info", &info)
		graphs := exp.seriesOf("graphs", "blob_sequence")
		tagged := exp.seriesOf("graph_tagged_run_metadata", "")
		for run, tags := range graphs {
			if slices.Contains(tags, "__run_graph__") != info[run].RunGraph {
				t.Errorf("graphs/info %s: run_graph %v", run, info[run].RunGraph)
			}
			for _, path := range []string{base + "plugin/graphs/graph" + q("run", run), base + "graph" + q("run", run, "limit_attr_size", "1024", "large_attrs_key", "_too_large")} {
				r := s.do(t, http.MethodGet, path, s.token, nil)
				if r.status != http.StatusOK || !strings.HasPrefix(r.header.Get("Content-Type"), "text/x-protobuf") || !strings.Contains(string(r.body), "node {") {
					t.Errorf("%s: %d %q %.80q", path, r.status, r.header.Get("Content-Type"), r.body)
				}
			}
		}
		for run, tags := range tagged {
			for _, tag := range tags {
				if !info[run].Tags[tag].Profile {
					t.Errorf("graphs/info %s/%s: profile false", run, tag)
				}
				for _, path := range []string{base + "plugin/graphs/run_metadata" + q("run", run, "tag", tag), base + "run_metadata" + q("run", run, "tag", tag)} {
					r := s.do(t, http.MethodGet, path, s.token, nil)
					if r.status != http.StatusOK || len(r.body) == 0 {
						t.Errorf("%s: %d %.80q", path, r.status, r.body)
					}
				}
			}
		}
		// limit_attr_size without large_attrs_key is refused.
		if r := s.do(t, http.MethodGet, base+"graph"+q("run", "generated/graph", "limit_attr_size", "10"), s.token, nil); r.status != http.StatusBadRequest {
			t.Errorf("limit_attr_size without large_attrs_key: %d", r.status)
		}
	})
}

func TestCorpusHParamsAndCustomScalars(t *testing.T) {
	onBackends(t, func(t *testing.T, s *server, eid string) {
		exp := loadExpected(t)
		p := "/experiment/" + eid + "/data/plugin/"
		sessions := 0
		for _, tags := range exp.seriesOf("hparams", "") {
			if slices.Contains(tags, "_hparams_/session_start_info") {
				sessions++
			}
		}
		var experiment struct {
			HparamInfos []map[string]any `json:"hparamInfos"`
			MetricInfos []map[string]any `json:"metricInfos"`
		}
		r := s.do(t, http.MethodPost, p+"hparams/experiment", s.token, nil)
		if r.status != http.StatusOK || json.Unmarshal(r.body, &experiment) != nil || len(experiment.HparamInfos) == 0 || len(experiment.MetricInfos) == 0 {
			t.Errorf("hparams/experiment: %d %.300s", r.status, r.body)
		}
		var groups struct {
			SessionGroups []struct {
				Name         string           `json:"name"`
				MetricValues []map[string]any `json:"metricValues"`
			} `json:"sessionGroups"`
			TotalSize int `json:"totalSize"`
		}
		r = s.do(t, http.MethodGet, p+"hparams/session_groups"+q("request", `{"startIndex":0,"sliceSize":1000,"allowedStatuses":["STATUS_UNKNOWN","STATUS_SUCCESS","STATUS_FAILURE","STATUS_RUNNING"]}`), s.token, nil)
		if r.status != http.StatusOK || json.Unmarshal(r.body, &groups) != nil || groups.TotalSize == 0 || groups.TotalSize > sessions {
			t.Fatalf("hparams/session_groups: %d %.300s (sessions %d)", r.status, r.body, sessions)
		}
		withMetrics := 0
		for _, g := range groups.SessionGroups {
			if len(g.MetricValues) > 0 {
				withMetrics++
			}
		}
		if withMetrics == 0 {
			t.Errorf("hparams/session_groups: no group has metric values: %.500s", r.body)
		}
		var layout struct {
			Category []map[string]any `json:"category"`
		}
		s.getJSON(t, p+"custom_scalars/layout", &layout)
		if exp.hasPlugin("custom_scalars") && len(layout.Category) == 0 {
			t.Errorf("custom_scalars/layout has no category")
		}
		var cs struct {
			RegexValid  bool                `json:"regex_valid"`
			TagToEvents map[string][][3]any `json:"tag_to_events"`
		}
		s.getJSON(t, p+"custom_scalars/scalars"+q("run", "generated/custom_scalars", "tag", "loss/.*"), &cs)
		if !cs.RegexValid || len(cs.TagToEvents) == 0 {
			t.Errorf("custom_scalars/scalars = %+v", cs)
		}
		var dl [][3]any
		s.getJSON(t, p+"custom_scalars/download_data"+q("run", "generated/custom_scalars", "tag", "loss/a"), &dl)
		if int64(len(dl)) != exp.Runs["generated/custom_scalars"]["loss/a"].Points {
			t.Errorf("custom_scalars/download_data: %d points", len(dl))
		}
		r = s.do(t, http.MethodGet, p+"hparams/download_data"+q("format", "csv"), s.token, nil)
		if lines := strings.Count(string(r.body), "\n"); r.status != http.StatusOK || lines != groups.TotalSize+1 {
			t.Errorf("hparams/download_data: %d, %d lines for %d groups", r.status, lines, groups.TotalSize)
		}
	})
}

func TestCorpusTimeSeries(t *testing.T) {
	onBackends(t, func(t *testing.T, s *server, eid string) {
		exp := loadExpected(t)
		p := "/experiment/" + eid + "/data/plugin/timeseries/"
		var tags struct {
			Scalars    struct{ RunTagInfo map[string][]string } `json:"scalars"`
			Histograms struct{ RunTagInfo map[string][]string } `json:"histograms"`
			Images     struct {
				TagRunSampledInfo map[string]map[string]struct{ MaxSamplesPerStep int64 }
			} `json:"images"`
		}
		s.getJSON(t, p+"tags", &tags)
		for name, pair := range map[string][2]map[string][]string{
			"scalars":    {tags.Scalars.RunTagInfo, exp.seriesOf("scalars", "scalar")},
			"histograms": {tags.Histograms.RunTagInfo, exp.seriesOf("histograms", "tensor")},
		} {
			for _, v := range pair[0] {
				sort.Strings(v)
			}
			if fmt.Sprint(pair[0]) != fmt.Sprint(pair[1]) {
				t.Errorf("timeseries/tags %s differ", name)
			}
		}
		reqs, _ := json.Marshal([]map[string]any{
			{"plugin": "scalars", "tag": "loss"},
			{"plugin": "histograms", "tag": sortedKeys(exp.Runs["generated/histograms"])[0], "run": "generated/histograms"},
			{"plugin": "images", "tag": sortedKeys(exp.Runs["generated/images"])[0], "run": "generated/images", "sample": 0},
			{"plugin": "nope", "tag": "x"},
		})
		r := s.do(t, http.MethodPost, p+"timeSeries", s.token, url.Values{"requests": {string(reqs)}})
		var resp []struct {
			Plugin      string                      `json:"plugin"`
			RunToSeries map[string][]map[string]any `json:"runToSeries"`
			Error       string                      `json:"error"`
		}
		if r.status != http.StatusOK || json.Unmarshal(r.body, &resp) != nil || len(resp) != 4 {
			t.Fatalf("timeSeries: %d %.300s", r.status, r.body)
		}
		for _, e := range resp[:3] {
			if len(e.RunToSeries) == 0 || e.Error != "" {
				t.Errorf("timeSeries %s: %+v", e.Plugin, e)
			}
		}
		if resp[3].Error == "" {
			t.Errorf("timeSeries of an unknown plugin gave no error")
		}
		for _, series := range resp[2].RunToSeries {
			id, _ := series[len(series)-1]["imageId"].(string)
			img := s.do(t, http.MethodGet, p+"imageData"+q("imageId", id), s.token, nil)
			if img.status != http.StatusOK || len(img.body) == 0 {
				t.Errorf("imageData: %d", img.status)
			}
		}
	})
}

func TestCorpusOwnAPI(t *testing.T) {
	onBackends(t, func(t *testing.T, s *server, eid string) {
		exp := loadExpected(t)
		var list struct {
			Experiments []struct {
				ExperimentID string `json:"experimentId"`
			} `json:"experiments"`
		}
		s.getJSON(t, "/api/experiments", &list)
		if !slices.ContainsFunc(list.Experiments, func(e struct {
			ExperimentID string `json:"experimentId"`
		}) bool {
			return e.ExperimentID == eid
		}) {
			t.Errorf("/api/experiments does not list %s: %+v", eid, list)
		}
		var meta struct {
			Name   string            `json:"name"`
			Counts map[string]string `json:"counts"` // int64 is a string in proto3 JSON
		}
		s.getJSON(t, "/api/experiments/"+eid, &meta)
		for field, total := range map[string]string{"numScalarPoints": "scalar_points", "numTensorPoints": "tensor_points", "numBlobs": "blobs", "totalBlobBytes": "blob_bytes"} {
			if meta.Counts[field] != strconv.FormatInt(exp.Totals[total], 10) {
				t.Errorf("/api/experiments/{eid} counts.%s = %q, want %d (%s)", field, meta.Counts[field], exp.Totals[total], storedBlobs(t, s, eid))
			}
		}
		if r := s.do(t, http.MethodGet, "/api/experiments", "", nil); r.status != http.StatusUnauthorized {
			t.Errorf("/api/experiments anonymous: %d", r.status)
		}
		// JSON download, every point, NaN and infinities as strings.
		var dl struct {
			Points struct {
				Steps  []int64 `json:"steps"`
				Values []any   `json:"values"`
			} `json:"points"`
		}
		s.getJSON(t, "/api/experiments/"+eid+"/scalars"+q("run", "generated/legacy_tf1_style", "tag", "special/nan", "format", "json"), &dl)
		if len(dl.Points.Values) != 1 || dl.Points.Values[0] != "NaN" {
			t.Errorf("download special/nan = %+v", dl)
		}
		hist := sortedKeys(exp.Runs["generated/histograms"])[0]
		r := s.do(t, http.MethodGet, "/api/experiments/"+eid+"/tensors"+q("run", "generated/histograms", "tag", hist, "plugin", "histograms"), s.token, nil)
		if lines := strings.Count(string(r.body), "\n"); r.status != http.StatusOK || int64(lines) != exp.Runs["generated/histograms"][hist].Points {
			t.Errorf("tensor download: %d, %d lines", r.status, lines)
		}
	})
}

// Errors: missing parameters are 400, unknown series 404; infinities are
// strings, so answers stay valid JSON; JSON (of at least 1 KB) is gzipped
// when accepted.
func TestCorpusErrorsAndEncoding(t *testing.T) {
	onBackends(t, func(t *testing.T, s *server, eid string) {
		base := "/experiment/" + eid + "/data/"
		for path, want := range map[string]int{
			base + "plugin/scalars/scalars" + q("run", "generated/long_run"):         http.StatusBadRequest,
			base + "plugin/scalars/scalars" + q("run", "nope", "tag", "nope"):        http.StatusNotFound,
			base + "plugin/images/individualImage" + q("blob_key", eid+".AAAA.AAAA"): http.StatusBadRequest,
			// TensorBoard fails with 500 on a key that is not one (docs/http-api.md).
			base + "plugin/images/individualImage" + q("blob_key", "garbage"):                       http.StatusNotFound,
			base + "plugin/pr_curves/pr_curves" + q("run", "generated/pr_curves", "tag", "nope"):    http.StatusBadRequest,
			base + "plugin/images/images" + q("run", "generated/images", "tag", "nope"):             http.StatusNotFound,
			base + "plugin/audio/individualAudio" + q("blob_key", "x", "content_type", "text/html"): http.StatusBadRequest,
			base + "runs" + q("format", "yaml"):                                                     http.StatusBadRequest,
			base + "scalars" + q("sample_count", "1"):                                               http.StatusBadRequest,
		} {
			if r := s.do(t, http.MethodGet, path, s.token, nil); r.status != want {
				t.Errorf("%s: %d %s, want %d", path, r.status, r.body, want)
			}
		}
		r := s.do(t, http.MethodGet, base+"plugin/scalars/scalars"+q("run", "generated/legacy_tf1_style", "tag", "special/inf"), s.token, nil)
		if !strings.Contains(string(r.body), `"Infinity"`) {
			t.Errorf("special/inf: %s", r.body)
		}
		long := s.do(t, http.MethodGet, base+"plugin/scalars/scalars"+q("run", "generated/long_run", "tag", sortedKeys(loadExpected(t).Runs["generated/long_run"])[0]), s.token, nil)
		if long.status != http.StatusOK || long.header.Get("Content-Encoding") != "gzip" {
			t.Errorf("a long series is not gzipped: %d %v", long.status, long.header)
		}
		var v any
		if err := json.Unmarshal(r.body, &v); err != nil {
			t.Errorf("special/inf is not JSON: %v", err)
		}
	})
}

// storedBlobs sums the current blob rows of an experiment, to tell a wrong
// counter from a missing blob when the counts disagree.
func storedBlobs(t *testing.T, s *server, eid string) string {
	var n, size int64
	err := s.st.ReadBlobSequences(context.Background(), eid, store.Query{MaxPoints: store.AllPoints}, func(_ *store.TimeSeries, pts []store.BlobSequencePoint) error {
		for _, p := range pts {
			for _, b := range p.Blobs {
				if b.State == store.BlobStateCurrent {
					n, size = n+1, size+b.Size
				}
			}
		}
		return nil
	})
	return fmt.Sprintf("the store's rows: %d current blobs, %d bytes, %v", n, size, err)
}
