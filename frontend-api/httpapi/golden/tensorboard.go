package golden

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"mime"
	"mime/multipart"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// TensorBoard's own answers on ../shared/corpus, recorded by
// scripts/tbgolden/record.py from stock TensorBoard
// (frontend-api/httpapi/testdata/tensorboard, one gzipped JSON Lines file
// per plugin), are compared with tbhub's answers to the same requests
// (TensorBoardGoldens). The comparison normalises only what
// docs/http-api.md lists as tbhub's data model or deliberate differences
// (see tbNormalise) and float noise below 1e-9 relative.

// goldenSamples is the recorder's --samples_per_plugin: above the longest
// series of the corpus, so that neither side downsamples.
const goldenSamples = 100000

// TensorBoardSamples is the HTTP API's SamplesPerPlugin the TensorBoard
// goldens are compared under: every plugin at goldenSamples.
func TensorBoardSamples() map[string]int64 {
	samples := map[string]int64{}
	for _, p := range goldenPlugins {
		samples[p] = goldenSamples
	}
	return samples
}

// Response is one HTTP answer, decompressed.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// Ask sends one request to the HTTP API under test with the owner's
// credential: path is from the root ("/experiment/EID/data/..."),
// contentType and body are "" for none.
type Ask func(t *testing.T, method, path, contentType, body string) Response

var goldenPlugins = []string{"scalars", "histograms", "images", "audio", "text", "pr_curves", "mesh",
	"hparams", "custom_scalars", "graphs", "graph_keras_model", "graph_run_metadata",
	"graph_run_metadata_graph", "graph_tagged_run_metadata", "graph_profile", "tensors"}

// tbAnswer is one recorded question and TensorBoard's answer.
type tbAnswer struct {
	Name   string     `json:"name"`
	Method string     `json:"method"`
	Path   string     `json:"path"`
	Query  [][]string `json:"query"`
	Form   [][]string `json:"form"`
	// Encodings of a posted form ("multipart", "urlencoded"): both got
	// this answer.
	Encodings   []string `json:"encodings"`
	JSON        any      `json:"json"`
	Status      int      `json:"status"`
	ContentType string   `json:"content_type"`
	Body        any      `json:"body"`
}

func loadTBAnswers(t *testing.T, file string) []tbAnswer {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var out []tbAnswer
	sc := bufio.NewScanner(zr)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var a tbAnswer
		d := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		d.UseNumber()
		if err := d.Decode(&a); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		out = append(out, a)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// blobKeys maps TensorBoard's blob references (blob_key and imageId
// values) to tbhub's for the same blob, as found when comparing the
// listings that hand them out.
type blobKeys map[string]string

// TensorBoardGoldens compares the HTTP API's answers (ask), on the corpus
// uploaded as experiment eid with TensorBoardSamples, with TensorBoard's
// recorded in dir/*.jsonl.gz. An answer skip says yes to is not compared
// (nil: every answer is). It returns how many answers it compared and
// skipped.
func TensorBoardGoldens(t *testing.T, dir, eid string, ask Ask, skip func(Response) bool) (compared, skipped int) {
	files, err := filepath.Glob(filepath.Join(dir, "*.jsonl.gz"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no goldens in %s (%v); record them with scripts/tbgolden/record.py", dir, err)
	}
	defer func() { t.Logf("TensorBoard goldens: %d answers compared, %d skipped", compared, skipped) }()
	for _, file := range files {
		group := strings.TrimSuffix(filepath.Base(file), ".jsonl.gz")
		t.Run(group, func(t *testing.T) {
			keys := blobKeys{}
			for _, a := range loadTBAnswers(t, file) {
				for _, enc := range encodingsOf(a) {
					got := askTbhub(t, ask, eid, a, enc, keys)
					if skip != nil && skip(got) {
						skipped++
						continue
					}
					compared++
					if dumpDir := os.Getenv("TBGOLDEN_DUMP"); dumpDir != "" {
						dumpAnswer(dumpDir, group, a, got)
					}
					diff := compareAnswer(a, got, keys)
					if why, ok := pending[a.Path]; ok {
						if diff == "" {
							t.Errorf("%s now answers as TensorBoard: remove it from pending (%s)", a.Path, why)
						} else {
							t.Logf("%s differs, pending %s: %s", a.Path, why, diff)
						}
						continue
					}
					if diff != "" {
						t.Errorf("%s %s %s%s: %s", a.Method, a.Path, describe(a), enc, diff)
					}
				}
			}
		})
	}
	return compared, skipped
}

func encodingsOf(a tbAnswer) []string {
	if len(a.Encodings) > 0 {
		return a.Encodings
	}
	return []string{""}
}

func describe(a tbAnswer) string {
	var b strings.Builder
	for _, kv := range a.Query {
		fmt.Fprintf(&b, "%s=%.80s ", kv[0], kv[1])
	}
	for _, kv := range a.Form {
		fmt.Fprintf(&b, "%s=%.80s ", kv[0], kv[1])
	}
	if a.JSON != nil {
		j, _ := json.Marshal(a.JSON)
		fmt.Fprintf(&b, "%.200s ", j)
	}
	return b.String()
}

// askTbhub sends a's request to tbhub, with TensorBoard's blob references
// replaced by tbhub's.
func askTbhub(t *testing.T, ask Ask, eid string, a tbAnswer, encoding string, keys blobKeys) Response {
	t.Helper()
	q := url.Values{}
	for _, kv := range a.Query {
		v := kv[1]
		if k, ok := keys[v]; ok && (kv[0] == "blob_key" || kv[0] == "imageId") {
			v = k
		}
		q.Add(kv[0], v)
	}
	path := "/experiment/" + eid + "/data/" + a.Path
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	switch {
	case a.JSON != nil:
		b, _ := json.Marshal(a.JSON)
		return ask(t, a.Method, path, "application/json", string(b))
	case encoding == "multipart":
		var body bytes.Buffer
		w := multipart.NewWriter(&body)
		for _, kv := range a.Form {
			w.WriteField(kv[0], kv[1])
		}
		w.Close()
		return ask(t, a.Method, path, w.FormDataContentType(), body.String())
	case encoding == "urlencoded":
		f := url.Values{}
		for _, kv := range a.Form {
			f.Add(kv[0], kv[1])
		}
		return ask(t, a.Method, path, "application/x-www-form-urlencoded", f.Encode())
	}
	return ask(t, a.Method, path, "", "")
}

// compareAnswer returns "" when tbhub's answer got is TensorBoard's a,
// else what differs first.
func compareAnswer(a tbAnswer, got Response, keys blobKeys) string {
	if want, ok := documentedStatus[a.Name]; ok && got.Status == want {
		return ""
	}
	if got.Status != a.Status {
		return fmt.Sprintf("status %d, TensorBoard %d (%.200s); tbhub said %.200s", got.Status, a.Status, fmt.Sprint(a.Body), got.Body)
	}
	if a.Status != http.StatusOK {
		return "" // error texts are not compared
	}
	gotType, _, _ := mime.ParseMediaType(got.Header.Get("Content-Type"))
	wantType, _, _ := mime.ParseMediaType(a.ContentType)
	if gotType != wantType {
		return fmt.Sprintf("Content-Type %q, TensorBoard %q", gotType, wantType)
	}
	switch want := a.Body.(type) {
	case string:
		w, g := tbNormaliseText(a, want), string(got.Body)
		if w != g {
			return "text differs: " + firstLineDiff(g, w)
		}
		return ""
	case map[string]any:
		if _, ok := want["sha256"]; ok && !strings.HasPrefix(wantType, "application/json") {
			sum := sha256.Sum256(got.Body)
			if hex.EncodeToString(sum[:]) != want["sha256"] {
				return fmt.Sprintf("bytes differ (%d bytes, TensorBoard %v)", len(got.Body), want["bytes"])
			}
			return ""
		}
	}
	d := json.NewDecoder(bytes.NewReader(got.Body))
	d.UseNumber()
	var g any
	if err := d.Decode(&g); err != nil {
		return fmt.Sprintf("not JSON: %v: %.200s", err, got.Body)
	}
	w := tbNormalise(a, a.Body)
	documentedDifferences(a, g, w)
	return jsonDiff("$", g, w, keys)
}

// pending are the routes whose answers another open issue changes; the
// test says when one starts to match.
var pending = map[string]string{}

// documentedStatus: answers whose status deliberately differs
// (docs/http-api.md): a blob key that is not one is tbhub's 404 where
// TensorBoard fails with 500; data/notifications is tbhub's empty list
// where TensorBoard redirects to its web bundle's release notes; hparams
// groups aggregated by MIN, MAX or MEDIAN of a metric some group lacks are
// answered (that group without metric values) where TensorBoard fails.
var documentedStatus = map[string]int{
	"individualImage_garbage":           http.StatusNotFound,
	"notifications":                     http.StatusOK,
	"session_groups_aggregation_min":    http.StatusOK,
	"session_groups_aggregation_max":    http.StatusOK,
	"session_groups_aggregation_median": http.StatusOK,
}

// hostedFields are the fields of the core routes that describe where the
// data lives: a local logdir for TensorBoard, the hosted experiment for
// tbhub (its name, description, creation time; docs/http-api.md).
var hostedFields = map[string][]string{
	"environment":       {"data_location", "window_title", "experiment_name", "experiment_description", "creation_time"},
	"logdir":            {"logdir"},
	"window_properties": {"window_title"},
}

// documentedDifferences makes TensorBoard's answer w take tbhub's g where
// docs/http-api.md lists a deliberate difference.
func documentedDifferences(a tbAnswer, g, w any) {
	gm, _ := g.(map[string]any)
	wm, _ := w.(map[string]any)
	if fields, ok := hostedFields[a.Path]; ok && gm != nil && wm != nil {
		for _, f := range fields {
			if v, ok := gm[f]; ok {
				wm[f] = v
			}
		}
		// TensorBoard's flags and data provider, with --debug-style info.
		delete(wm, "debug")
	}
	if a.Path == "plugin/text/tags" && gm != nil && wm != nil {
		// Each run's tags: TensorBoard lists them in the order they were
		// first written, tbhub by name.
		for _, m := range []map[string]any{gm, wm} {
			for run, tags := range m {
				l := asList(tags)
				sort.Slice(l, func(i, j int) bool { return fmt.Sprint(l[i]) < fmt.Sprint(l[j]) })
				m[run] = l
			}
		}
	}
}

// tbNormalise applies tbhub's data model (docs/http-api.md, "Data model")
// to TensorBoard's JSON answer: within one series, the last point written
// for a step replaces earlier ones, and points are in step order.
// TensorBoard (run here without purging orphaned data) keeps every point
// in file order.
func tbNormalise(a tbAnswer, v any) any {
	switch a.Path {
	case "plugin/scalars/scalars", "plugin/histograms/histograms", "plugin/distributions/distributions",
		"plugin/hparams/metric_evals", "plugin/custom_scalars/download_data":
		return lastPerStep(v, tupleStep)
	case "plugin/images/images", "plugin/audio/audio", "plugin/text/text":
		return lastPerStep(v, fieldStep)
	case "plugin/mesh/meshes":
		return lastPerStep(v, func(p any) string {
			m, _ := p.(map[string]any)
			return fmt.Sprint(m["content_type"]) + "/" + fieldStep(p)
		})
	case "plugin/scalars/scalars_multirun":
		return eachValue(v, func(s any) any { return lastPerStep(s, tupleStep) })
	case "plugin/pr_curves/pr_curves":
		return eachValue(v, func(s any) any { return lastPerStep(s, fieldStep) })
	case "plugin/custom_scalars/scalars":
		if m, ok := v.(map[string]any); ok {
			m["tag_to_events"] = eachValue(m["tag_to_events"], func(s any) any { return lastPerStep(s, tupleStep) })
		}
	case "plugin/timeseries/timeSeries":
		for _, item := range asList(v) {
			if m, ok := item.(map[string]any); ok {
				m["runToSeries"] = eachValue(m["runToSeries"], func(s any) any { return lastPerStep(s, fieldStep) })
			}
		}
	}
	return v
}

// tbNormaliseText is tbNormalise for text answers (CSV downloads).
func tbNormaliseText(a tbAnswer, s string) string {
	if !strings.HasPrefix(a.ContentType, "text/csv") || a.Path == "plugin/hparams/download_data" {
		return s
	}
	lines := strings.SplitAfter(s, "\n")
	header, rows := lines[0], lines[1:]
	if len(rows) > 0 && rows[len(rows)-1] == "" {
		rows = rows[:len(rows)-1]
	}
	var points []any
	for _, r := range rows {
		points = append(points, r)
	}
	points = asList(lastPerStep(points, func(p any) string {
		f := strings.Split(p.(string), ",")
		if len(f) < 2 {
			return p.(string)
		}
		return f[1]
	}))
	var b strings.Builder
	b.WriteString(header)
	for _, p := range points {
		b.WriteString(p.(string))
	}
	return b.String()
}

func asList(v any) []any { l, _ := v.([]any); return l }

func eachValue(v any, f func(any) any) any {
	if m, ok := v.(map[string]any); ok {
		for k, x := range m {
			m[k] = f(x)
		}
	}
	return v
}

func tupleStep(p any) string {
	if l := asList(p); len(l) > 1 {
		return fmt.Sprint(l[1])
	}
	return ""
}

func fieldStep(p any) string {
	m, _ := p.(map[string]any)
	return fmt.Sprint(m["step"])
}

// lastPerStep keeps, of the points of series v with the same key, the
// last, and orders the points by step (the key's leading number).
func lastPerStep(v any, key func(any) string) any {
	l, ok := v.([]any)
	if !ok {
		return v
	}
	last := map[string]int{}
	for i, p := range l {
		last[key(p)] = i
	}
	var out []any
	for i, p := range l {
		if last[key(p)] == i {
			out = append(out, p)
		}
	}
	stepOf := func(p any) float64 {
		k := key(p)
		if i := strings.LastIndexByte(k, '/'); i >= 0 {
			k = k[i+1:]
		}
		f, _ := strconv.ParseFloat(k, 64)
		return f
	}
	sort.SliceStable(out, func(i, j int) bool { return stepOf(out[i]) < stepOf(out[j]) })
	if out == nil {
		out = []any{}
	}
	return out
}

// jsonDiff compares tbhub's value g with TensorBoard's w at path; blob
// references (a "query" holding blob_key=, an "imageId") are recorded in
// keys, not compared.
func jsonDiff(path string, g, w any, keys blobKeys) string {
	switch w := w.(type) {
	case map[string]any:
		gm, ok := g.(map[string]any)
		if !ok {
			return fmt.Sprintf("%s: %.100s, TensorBoard an object", path, show(g))
		}
		for _, k := range slices.Sorted(maps.Keys(w)) {
			gv, ok := gm[k]
			if !ok {
				return fmt.Sprintf("%s: no %q (TensorBoard %.100s)", path, k, show(w[k]))
			}
			if ws, ok := w[k].(string); ok && (k == "query" && strings.Contains(ws, "blob_key=") || k == "imageId") {
				recordBlobKeys(ws, fmt.Sprint(gv), k == "imageId", keys)
				continue
			}
			if d := jsonDiff(path+"."+k, gv, w[k], keys); d != "" {
				return d
			}
		}
		for _, k := range slices.Sorted(maps.Keys(gm)) {
			if _, ok := w[k]; !ok {
				return fmt.Sprintf("%s: extra %q: %.100s", path, k, show(gm[k]))
			}
		}
		return ""
	case []any:
		gl, ok := g.([]any)
		if !ok {
			return fmt.Sprintf("%s: %.100s, TensorBoard a list", path, show(g))
		}
		if len(gl) != len(w) {
			return fmt.Sprintf("%s: %d elements, TensorBoard %d", path, len(gl), len(w))
		}
		for i := range w {
			if d := jsonDiff(fmt.Sprintf("%s[%d]", path, i), gl[i], w[i], keys); d != "" {
				return d
			}
		}
		return ""
	case json.Number:
		gn, ok := g.(json.Number)
		if !ok {
			return fmt.Sprintf("%s: %.100s, TensorBoard %s", path, show(g), w)
		}
		if !closeNumbers(string(gn), string(w)) {
			return fmt.Sprintf("%s: %s, TensorBoard %s", path, gn, w)
		}
		return ""
	}
	if fmt.Sprint(g) != fmt.Sprint(w) || (g == nil) != (w == nil) {
		return fmt.Sprintf("%s: %.200s, TensorBoard %.200s", path, show(g), show(w))
	}
	return ""
}

func show(v any) string { b, _ := json.Marshal(v); return string(b) }

// closeNumbers: equal, or within 1e-9 relative (float noise).
func closeNumbers(g, w string) bool {
	if g == w {
		return true
	}
	gf, err1 := strconv.ParseFloat(g, 64)
	wf, err2 := strconv.ParseFloat(w, 64)
	if err1 != nil || err2 != nil {
		return false
	}
	if gf == wf {
		return true
	}
	return math.Abs(gf-wf) <= 1e-9*math.Max(math.Abs(gf), math.Abs(wf))
}

func recordBlobKeys(tb, ours string, whole bool, keys blobKeys) {
	if whole {
		keys[tb] = ours
		return
	}
	tq, _ := url.ParseQuery(tb)
	oq, _ := url.ParseQuery(ours)
	if k := tq.Get("blob_key"); k != "" {
		keys[k] = oq.Get("blob_key")
	}
}

func firstLineDiff(g, w string) string {
	gl, wl := strings.Split(g, "\n"), strings.Split(w, "\n")
	for i := range max(len(gl), len(wl)) {
		var a, b string
		if i < len(gl) {
			a = gl[i]
		}
		if i < len(wl) {
			b = wl[i]
		}
		if a != b {
			return fmt.Sprintf("line %d: %q, TensorBoard %q", i+1, trunc(a), trunc(b))
		}
	}
	return fmt.Sprintf("%d vs %d bytes", len(g), len(w))
}

func trunc(s string) string {
	if len(s) > 160 {
		return s[:160] + "…"
	}
	return s
}

// dumpAnswer appends tbhub's answer to DIR/group.jsonl (TBGOLDEN_DUMP=DIR),
// to read beside TensorBoard's when they differ.
func dumpAnswer(dir, group string, a tbAnswer, got Response) {
	a.Status, a.ContentType = got.Status, got.Header.Get("Content-Type")
	var v any
	if json.Unmarshal(got.Body, &v) == nil {
		a.Body = v
	} else {
		a.Body = string(got.Body)
	}
	b, _ := json.Marshal(a)
	f, err := os.OpenFile(filepath.Join(dir, group+".jsonl"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return
	}
	defer f.Close()
	f.Write(append(b, '\n'))
}
