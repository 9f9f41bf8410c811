package httpapi_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/tbhub/tbhub/frontend-api/httpapi"
	tbpb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard"
	hparamspb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/hparams"
	meshpb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/mesh"
)

// Tests of the answers that must be TensorBoard's (issue 16); the golden
// comparison with TensorBoard itself on the whole corpus is
// services/allinone/readpath's TestTensorBoardGoldens.

// postMultipart posts fields as multipart/form-data, as a browser's
// FormData is sent.
func postMultipart(t *testing.T, u string, fields url.Values) (int, string) {
	t.Helper()
	var body bytes.Buffer
	w := multipart.NewWriter(&body)
	for k, vs := range fields {
		for _, v := range vs {
			w.WriteField(k, v)
		}
	}
	w.Close()
	resp, err := http.Post(u, w.FormDataContentType(), &body)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TensorBoard's frontend posts FormData (multipart/form-data); both POST
// form routes take it as they take a urlencoded form.
func TestPostRoutesAcceptMultipart(t *testing.T) {
	_, srv := start(t, nil)
	p := srv.URL + "/experiment/e1/data/plugin/"
	code, body := postMultipart(t, p+"scalars/scalars_multirun", url.Values{"tag": {"loss"}, "runs": {"train", "eval"}})
	if want := `{"train":[[10.5,1,"NaN"],[11.0,2,0.25]]}`; code != 200 || body != want {
		t.Errorf("scalars_multirun, multipart: %d %s, want %s", code, body, want)
	}
	code, body = postMultipart(t, p+"timeseries/timeSeries", url.Values{"requests": {`[{"plugin":"scalars","tag":"loss"}]`}})
	if code != 200 || !strings.Contains(body, `"runToSeries":{"train":[{"wallTime":10.5,"step":1,"value":"NaN"}`) {
		t.Errorf("timeSeries, multipart: %d %s", code, body)
	}
}

// hparamsTable is an experiment of two trials: trial-0 still without an
// end info, trial-1 finished; the experiment lists its hparams out of
// name order and names its metric "Accuracy".
func hparamsTable(t *testing.T) []series {
	hp := func(run, tag string, d *hparamspb.HParamsPluginData) series {
		return series{plugin: "hparams", run: run, tag: tag, steps: []int64{0}, content: mustMarshal(t, d)}
	}
	start := func(lr float64, opt string, units float64, bn bool) *hparamspb.HParamsPluginData {
		return &hparamspb.HParamsPluginData{Data: &hparamspb.HParamsPluginData_SessionStartInfo{SessionStartInfo: &hparamspb.SessionStartInfo{
			StartTimeSecs: 1700000000,
			Hparams: map[string]*structpb.Value{"learning_rate": structpb.NewNumberValue(lr), "optimizer": structpb.NewStringValue(opt),
				"units": structpb.NewNumberValue(units), "use_bn": structpb.NewBoolValue(bn)}}}}
	}
	exp := &hparamspb.Experiment{TimeCreatedSecs: 1700000000, HparamInfos: []*hparamspb.HParamInfo{
		{Name: "use_bn", Type: hparamspb.DataType_DATA_TYPE_BOOL},
		{Name: "units", Type: hparamspb.DataType_DATA_TYPE_FLOAT64},
		{Name: "optimizer", Type: hparamspb.DataType_DATA_TYPE_STRING},
		{Name: "learning_rate", Type: hparamspb.DataType_DATA_TYPE_FLOAT64},
	}, MetricInfos: []*hparamspb.MetricInfo{{Name: &hparamspb.MetricName{Tag: "accuracy"}, DisplayName: "Accuracy"}}}
	return []series{
		hp(".", "_hparams_/experiment", &hparamspb.HParamsPluginData{Data: &hparamspb.HParamsPluginData_Experiment{Experiment: exp}}),
		hp("trial-0", "_hparams_/session_start_info", start(0.001, "adam", 64, false)),
		hp("trial-1", "_hparams_/session_start_info", start(0.01, "sgd, fast", 128, true)),
		hp("trial-1", "_hparams_/session_end_info", &hparamspb.HParamsPluginData{Data: &hparamspb.HParamsPluginData_SessionEndInfo{
			SessionEndInfo: &hparamspb.SessionEndInfo{Status: hparamspb.Status_STATUS_SUCCESS, EndTimeSecs: 1700000060}}}),
		{plugin: "scalars", run: "trial-0", tag: "accuracy", steps: []int64{0, 1}, scalars: []float32{0.5, 0.75}},
		{plugin: "scalars", run: "trial-1", tag: "accuracy", steps: []int64{0, 1}, scalars: []float32{0.5, 0.25}},
	}
}

func postJSON(t *testing.T, u, body string) (int, string) {
	t.Helper()
	resp, err := http.Post(u, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// jsonEqual reports whether two JSON texts hold the same value.
func jsonEqual(t *testing.T, got, want string) bool {
	t.Helper()
	var g, w any
	if err := json.Unmarshal([]byte(got), &g); err != nil {
		t.Errorf("not JSON: %v: %s", err, got)
		return false
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatal(err)
	}
	return reflect.DeepEqual(g, w)
}

const allStatuses = `"allowedStatuses":["STATUS_UNKNOWN","STATUS_SUCCESS","STATUS_FAILURE","STATUS_RUNNING"]`

// A session without an end info is STATUS_UNKNOWN (not running: nothing
// says it runs), and a group's hparams are those of the columns included
// in the result when a column says.
func TestHParamsSessionStatusAndIncludedColumns(t *testing.T) {
	_, srv := serveTable(t, httpapi.Config{}, hparamsTable(t)...)
	u := srv.URL + "/experiment/e1/data/plugin/hparams/session_groups"
	code, body := postJSON(t, u, `{`+allStatuses+`,"colParams":[{"hparam":"learning_rate","includeInResult":true},{"hparam":"optimizer","includeInResult":false}],"sliceSize":10,"includeMetrics":false}`)
	want := `{"sessionGroups":[
	 {"name":"trial-0","hparams":{"learning_rate":0.001},"metricValues":[],"monitorUrl":"","sessions":[
	  {"name":"trial-0","startTimeSecs":1700000000,"endTimeSecs":0,"status":"STATUS_UNKNOWN","modelUri":"","monitorUrl":"","metricValues":[]}]},
	 {"name":"trial-1","hparams":{"learning_rate":0.01},"metricValues":[],"monitorUrl":"","sessions":[
	  {"name":"trial-1","startTimeSecs":1700000000,"endTimeSecs":1700000060,"status":"STATUS_SUCCESS","modelUri":"","monitorUrl":"","metricValues":[]}]}],
	 "totalSize":2}`
	if code != 200 || !jsonEqual(t, body, want) {
		t.Errorf("session_groups: %d %s\nwant %s", code, body, want)
	}
	code, body = postJSON(t, u, `{"allowedStatuses":["STATUS_RUNNING"],"sliceSize":10}`)
	if code != 200 || !jsonEqual(t, body, `{"sessionGroups":[],"totalSize":0}`) {
		t.Errorf("only running sessions: %d %s", code, body)
	}
}

// hparams answers carry proto3's default values as TensorBoard writes
// them (its frontend reads them unguarded), hparamInfos sorted by name.
func TestHParamsDefaultFields(t *testing.T) {
	_, srv := serveTable(t, httpapi.Config{}, hparamsTable(t)...)
	p := srv.URL + "/experiment/e1/data/plugin/hparams/"
	code, body := postJSON(t, p+"experiment", `{"experimentName":"","includeMetrics":false}`)
	info := func(name, typ string) string {
		return `{"name":"` + name + `","displayName":"","description":"","type":"` + typ + `","differs":false}`
	}
	want := `{"name":"","description":"","user":"","timeCreatedSecs":1700000000,"metricInfos":[],"hparamInfos":[` +
		info("learning_rate", "DATA_TYPE_FLOAT64") + "," + info("optimizer", "DATA_TYPE_STRING") + "," +
		info("units", "DATA_TYPE_FLOAT64") + "," + info("use_bn", "DATA_TYPE_BOOL") + `]}`
	if code != 200 || !jsonEqual(t, body, want) {
		t.Errorf("experiment: %d %s\nwant %s", code, body, want)
	}
	code, body = postJSON(t, p+"experiment", `{}`)
	if !strings.Contains(body, `"metricInfos":[{"name":{"group":"","tag":"accuracy"},"displayName":"Accuracy","description":"","datasetType":"DATASET_UNKNOWN"}]`) {
		t.Errorf("experiment with metrics: %d %s", code, body)
	}

	_, empty := serveTable(t, httpapi.Config{})
	p = empty.URL + "/experiment/e1/data/plugin/hparams/"
	code, body = postJSON(t, p+"experiment", `{}`)
	if code != 200 || !jsonEqual(t, body, `{"name":"","description":"","user":"","timeCreatedSecs":0,"hparamInfos":[],"metricInfos":[]}`) {
		t.Errorf("experiment without hparams: %d %s", code, body)
	}
	code, body = postJSON(t, p+"session_groups", `{`+allStatuses+`,"sliceSize":10}`)
	if code != 200 || !jsonEqual(t, body, `{"sessionGroups":[],"totalSize":0}`) {
		t.Errorf("session_groups without hparams: %d %s", code, body)
	}
}

// metric_evals of a series that does not exist is TensorBoard's 404.
func TestHParamsMetricEvalsOfMissingSeries(t *testing.T) {
	_, srv := serveTable(t, httpapi.Config{}, hparamsTable(t)...)
	u := srv.URL + "/experiment/e1/data/plugin/hparams/metric_evals"
	code, body := postJSON(t, u, `{"sessionName":"trial-0","metricName":{"tag":"accuracy"}}`)
	if code != 200 || body != `[[1000.0,0,0.5],[1001.0,1,0.75]]` {
		t.Errorf("metric_evals: %d %s", code, body)
	}
	code, body = postJSON(t, u, `{"sessionName":"trial-0","metricName":{"tag":"nope"}}`)
	if want := "Not found: No scalar data for run='trial-0', tag='nope'\n"; code != 404 || body != want {
		t.Errorf("missing series: %d %q, want 404 %q", code, body, want)
	}
}

// download_data writes typed values under the columns' display names, no
// trial column, \r\n line ends (Python's csv module).
func TestHParamsDownloadData(t *testing.T) {
	_, srv := serveTable(t, httpapi.Config{}, hparamsTable(t)...)
	req := url.QueryEscape(`{` + allStatuses + `,"sliceSize":10}`)
	u := srv.URL + "/experiment/e1/data/plugin/hparams/download_data?request=" + req + "&columnsVisibility=" + url.QueryEscape("[true,true,true,true,true]")
	_, body := get(t, u+"&format=csv")
	want := "learning_rate,optimizer,units,use_bn,Accuracy\r\n0.001,adam,64.0,False,0.75\r\n0.01,\"sgd, fast\",128.0,True,0.25\r\n"
	if body != want {
		t.Errorf("csv:\n%q\nwant\n%q", body, want)
	}
	_, body = get(t, u+"&format=json")
	if want := `{"header":["learning_rate","optimizer","units","use_bn","Accuracy"],"rows":[[0.001,"adam",64.0,false,0.75],[0.01,"sgd, fast",128.0,true,0.25]]}`; body != want {
		t.Errorf("json:\n%s\nwant\n%s", body, want)
	}
	_, body = get(t, u+"&format=latex")
	want = "\\begin{table}[tbp]\n\\begin{tabular}{lllll}\nlearning\\_rate & optimizer & units & use\\_bn & Accuracy \\\\ \\hline\n" +
		"$0.001$ & adam & $64$ & $0$ & $0.75$ \\\\\n$0.01$ & sgd, fast & $128$ & $1$ & $0.25$ \\\\\n\\hline\n\\end{tabular}\n\\end{table}\n"
	if body != want {
		t.Errorf("latex:\n%q\nwant\n%q", body, want)
	}
	_, body = get(t, srv.URL+"/experiment/e1/data/plugin/hparams/download_data?request="+req+"&format=csv&columnsVisibility="+url.QueryEscape("[false,true]"))
	if want := "optimizer\r\nadam\r\n\"sgd, fast\"\r\n"; body != want {
		t.Errorf("two columns asked, the second visible: %q, want %q", body, want)
	}
}

// floatTensor is a DT_FLOAT tensor of the given shape.
func floatTensor(shape []int64, vals ...float32) *tbpb.TensorProto {
	s := &tbpb.TensorShapeProto{}
	for _, d := range shape {
		s.Dim = append(s.Dim, &tbpb.TensorShapeProto_Dim{Size: d})
	}
	return &tbpb.TensorProto{Dtype: tbpb.DataType_DT_FLOAT, TensorShape: s, FloatVal: vals}
}

// PR curve counts are integers, as TensorBoard truncates them; a run
// without the tag is TensorBoard's 400.
func TestPRCurvesIntegerCountsAndMissingSeries(t *testing.T) {
	// Three thresholds: TP, FP, TN, FN, precision, recall.
	curve := floatTensor([]int64{6, 3},
		46.067947, 20.5, 0.4,
		10, 3.9, 0.3,
		1, 2, 3,
		4, 5, 6,
		0.8, 0.9, 1,
		1, 0.5, 0)
	_, srv := serveTable(t, httpapi.Config{},
		series{plugin: "pr_curves", run: "train", tag: "pr", steps: []int64{7}, tensors: []*tbpb.TensorProto{curve}})
	p := srv.URL + "/experiment/e1/data/plugin/pr_curves/pr_curves?tag=pr&run="
	_, body := get(t, p+"train")
	// The last threshold goes: its truncated TP + FP is 0 + 0.
	want := `{"train":[{"wall_time":1007.0,"step":7,"precision":[0.800000011920929,0.8999999761581421],"recall":[1.0,0.5],` +
		`"true_positives":[46,20],"false_positives":[10,3],"true_negatives":[1,2],"false_negatives":[4,5],"thresholds":[0.0,0.5]}]}`
	if body != want {
		t.Errorf("pr_curves:\n%s\nwant\n%s", body, want)
	}
	resp, body := get(t, p+"train&run=eval")
	if want := "No PR curves could be found for run 'eval' and tag 'pr'\n"; resp.StatusCode != 400 || body != want {
		t.Errorf("a run without the tag: %d %q, want 400 %q", resp.StatusCode, body, want)
	}
}

// plugins_listing is TensorBoard's: its entries in its order (the
// frontend's tab order), its tab names, graphs not reloaded.
func TestPluginsListingIsTensorBoards(t *testing.T) {
	_, srv := serveTable(t, httpapi.Config{},
		series{plugin: "scalars", run: "train", tag: "loss", steps: []int64{0}, scalars: []float32{1}})
	_, body := get(t, srv.URL+"/experiment/e1/data/plugins_listing")
	dec := json.NewDecoder(strings.NewReader(body))
	dec.Token()
	var order []string
	entries := map[string]map[string]any{}
	for dec.More() {
		k, _ := dec.Token()
		var v map[string]any
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("%v in %s", err, body)
		}
		order = append(order, k.(string))
		entries[k.(string)] = v
	}
	wantOrder := []string{"timeseries", "scalars", "custom_scalars", "images", "audio", "debugger-v2", "graphs", "distributions",
		"histograms", "text", "pr_curves", "profile_redirect", "hparams", "mesh", "wit_redirect"}
	if !reflect.DeepEqual(order, wantOrder) {
		t.Errorf("order %v, want %v", order, wantOrder)
	}
	for name, tab := range map[string]string{"timeseries": "Time Series", "custom_scalars": "Custom Scalars", "pr_curves": "PR Curves", "scalars": "scalars"} {
		if got := entries[name]["tab_name"]; got != tab {
			t.Errorf("%s: tab_name %v, want %q", name, got, tab)
		}
	}
	if entries["graphs"]["disable_reload"] != true || entries["scalars"]["disable_reload"] != false {
		t.Errorf("disable_reload: graphs %v, scalars %v", entries["graphs"]["disable_reload"], entries["scalars"]["disable_reload"])
	}
	if entries["scalars"]["enabled"] != true || entries["images"]["enabled"] != false || entries["debugger-v2"]["enabled"] != false {
		t.Errorf("enabled: %s", body)
	}
}

// mesh/meshes is sorted by step (then by component: vertices, faces,
// colors); mesh/data is TensorBoard's "arraybuffer" for one batch sample.
// The custom scalars layout writes proto3 default values.
func TestMeshOrderAndContentTypeAndLayoutDefaults(t *testing.T) {
	part := func(tag string, ct meshpb.MeshPluginData_ContentType, vals ...float32) series {
		md := &meshpb.MeshPluginData{Name: "cube", ContentType: ct, Components: 7}
		return series{plugin: "mesh", run: "train", tag: tag, content: mustMarshal(t, md), steps: []int64{2, 1},
			tensors: []*tbpb.TensorProto{floatTensor([]int64{2, 1, int64(len(vals)) / 2}, vals...), floatTensor([]int64{2, 1, int64(len(vals)) / 2}, vals...)}}
	}
	layout := &tbpb.Layout{Category: []*tbpb.Category{{Title: "losses", Chart: []*tbpb.Chart{{Title: "l",
		Content: &tbpb.Chart_Multiline{Multiline: &tbpb.MultilineChartContent{Tag: []string{"loss/.*"}}}}}}}}
	_, srv := serveTable(t, httpapi.Config{},
		part("cube_COLOR", meshpb.MeshPluginData_COLOR, 1, 2, 3, 4, 5, 6),
		part("cube_VERTEX", meshpb.MeshPluginData_VERTEX, 0.5, 1, 1.5, 2, 2.5, 3),
		series{plugin: "custom_scalars", run: ".", tag: "custom_scalars__config__", steps: []int64{0}, tensors: []*tbpb.TensorProto{
			{Dtype: tbpb.DataType_DT_STRING, TensorShape: &tbpb.TensorShapeProto{}, StringVal: [][]byte{mustMarshal(t, layout)}}}})
	p := srv.URL + "/experiment/e1/data/plugin/"
	_, body := get(t, p+"mesh/meshes?run=train&tag=cube")
	var metas []struct {
		Step        int64 `json:"step"`
		ContentType int   `json:"content_type"`
	}
	if err := json.Unmarshal([]byte(body), &metas); err != nil {
		t.Fatal(err)
	}
	want := []struct {
		Step        int64 `json:"step"`
		ContentType int   `json:"content_type"`
	}{{1, 1}, {1, 3}, {2, 1}, {2, 3}}
	if !reflect.DeepEqual(metas, want) {
		t.Errorf("meshes (step, content type): %v, want %v", metas, want)
	}
	resp, body := get(t, p+"mesh/data?run=train&tag=cube&content_type=COLOR&step=1&sample=1")
	if ct := resp.Header.Get("Content-Type"); ct != "arraybuffer" || body != "\x04\x05\x06" {
		t.Errorf("mesh/data: %s %q, want arraybuffer of sample 1", ct, body)
	}
	_, body = get(t, p+"custom_scalars/layout")
	if want := `{"version":0,"category":[{"title":"losses","chart":[{"title":"l","multiline":{"tag":["loss/.*"]}}],"closed":false}]}`; body != want {
		t.Errorf("layout: %s, want %s", body, want)
	}
}

func stringTensor(shape []int64, vals ...string) *tbpb.TensorProto {
	t := floatTensor(shape)
	t.Dtype, t.FloatVal = tbpb.DataType_DT_STRING, nil
	for _, v := range vals {
		t.StringVal = append(t.StringVal, []byte(v))
	}
	return t
}

// Text is rendered as TensorBoard renders it (Python-Markdown, then
// bleach): blocks without a trailing newline, apostrophes as they are,
// tags outside TensorBoard's allow list escaped; with markdown=false the
// text is only cleaned, not wrapped in a paragraph.
func TestTextIsTensorBoardsMarkdown(t *testing.T) {
	_, srv := serveTable(t, httpapi.Config{},
		series{plugin: "text", run: "text", tag: "notes", steps: []int64{0}, tensors: []*tbpb.TensorProto{
			stringTensor(nil, "**step 0** — it's <script>alert(1)</script>\n\nsecond [x](javascript:alert(1)) [y](https://e.org/?a=1&b=2 \"t\")")}},
		series{plugin: "text", run: "text", tag: "table", steps: []int64{0}, tensors: []*tbpb.TensorProto{stringTensor([]int64{2}, "a <b>", "c's")}},
		series{plugin: "scalars", run: "text", tag: "loss", steps: []int64{0}, scalars: []float32{1}, content: nil})
	p := srv.URL + "/experiment/e1/data/plugin/text/text?run=text&tag="
	var got []struct {
		Text string `json:"text"`
	}
	check := func(u, want string) {
		t.Helper()
		_, body := get(t, u)
		if err := json.Unmarshal([]byte(body), &got); err != nil || len(got) != 1 {
			t.Fatalf("%s: %v %s", u, err, body)
		}
		if got[0].Text != want {
			t.Errorf("%s:\n got %q\nwant %q", u, got[0].Text, want)
		}
	}
	check(p+"notes", "<p><strong>step 0</strong> — it's &lt;script&gt;alert(1)&lt;/script&gt;</p>\n"+
		`<p>second <a>x</a> <a href="https://e.org/?a=1&amp;b=2" title="t">y</a></p>`)
	check(p+"notes&markdown=false", "**step 0** — it's &lt;script&gt;alert(1)&lt;/script&gt;\n\nsecond [x](javascript:alert(1)) [y](https://e.org/?a=1&amp;b=2 \"t\")")
	check(p+"table", "<table>\n<tbody>\n<tr>\n<td><p>a &lt;b&gt;</p></td>\n</tr>\n<tr>\n<td><p>c's</p></td>\n</tr>\n</tbody>\n</table>")
	check(p+"table&markdown=false", "<table>\n<tbody>\n<tr>\n<td>a &lt;b&gt;</td>\n</tr>\n<tr>\n<td>c's</td>\n</tr>\n</tbody>\n</table>")
}

// The histograms route shows at most 51 points per series and the
// distributions route at most 501 (TensorBoard's), of the points kept per
// series (samples_per_plugin histograms, 500 by default).
func TestHistogramRoutesPoints(t *testing.T) {
	hist := series{plugin: "histograms", run: "train", tag: "w", steps: []int64{0}, tensors: []*tbpb.TensorProto{floatTensor([]int64{1, 3}, 0, 1, 5)}}
	for _, tc := range []struct {
		samples     map[string]int64
		hist, dists int64
	}{{nil, 51, 500}, {map[string]int64{"histograms": 20}, 20, 20}, {map[string]int64{"histograms": 100000}, 51, 501}} {
		p, srv := serveTable(t, httpapi.Config{SamplesPerPlugin: tc.samples}, hist)
		base := srv.URL + "/experiment/e1/data/plugin/"
		if resp, body := get(t, base+"histograms/histograms?run=train&tag=w"); resp.StatusCode != 200 || p.numPoints("histograms") != tc.hist {
			t.Errorf("samples %v: histograms read %d points (%d %s), want %d", tc.samples, p.numPoints("histograms"), resp.StatusCode, body, tc.hist)
		}
		if resp, body := get(t, base+"distributions/distributions?run=train&tag=w"); resp.StatusCode != 200 || p.numPoints("histograms") != tc.dists {
			t.Errorf("samples %v: distributions read %d points (%d %s), want %d", tc.samples, p.numPoints("histograms"), resp.StatusCode, body, tc.dists)
		}
	}
}

// --samples_per_plugin, as TensorBoard parses it, sets the points per
// series a plugin's routes read.
func TestSamplesPerPluginFlag(t *testing.T) {
	var s httpapi.SamplesPerPlugin
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Var(&s, "samples_per_plugin", httpapi.SamplesFlagUsage)
	if err := fs.Parse([]string{"--samples_per_plugin", "scalars=3, images=0,scalars=2"}); err != nil {
		t.Fatal(err)
	}
	if want := (httpapi.SamplesPerPlugin{"scalars": 2, "images": 0}); !reflect.DeepEqual(s, want) || s.String() != "images=0,scalars=2" {
		t.Errorf("parsed %v (%s), want %v", s, s.String(), want)
	}
	for _, bad := range []string{"scalars", "scalars=-1", "=3", "scalars=many"} {
		if err := fs.Parse([]string{"--samples_per_plugin", bad}); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	p, srv := serveTable(t, httpapi.Config{SamplesPerPlugin: s},
		series{plugin: "scalars", run: "train", tag: "loss", steps: []int64{0}, scalars: []float32{1}})
	get(t, srv.URL+"/experiment/e1/data/plugin/scalars/scalars?run=train&tag=loss")
	if n := p.numPoints("scalars"); n != 2 {
		t.Errorf("scalars read %d points, want 2", n)
	}
}

// TensorBoard's frontend asks data/notifications for its notification
// center and maps its list: tbhub has none to show.
func TestNotificationsIsAnEmptyList(t *testing.T) {
	_, srv := serveTable(t, httpapi.Config{})
	resp, body := get(t, srv.URL+"/experiment/e1/data/notifications")
	if resp.StatusCode != 200 || body != `{"notifications":[]}` {
		t.Errorf("notifications: %d %s", resp.StatusCode, body)
	}
}

// AGGREGATION_MAX picks the first session with the largest value, in
// session order, as Python's max does.
func TestHParamsAggregationMaxTakesTheFirst(t *testing.T) {
	start := func(run string) series {
		d := &hparamspb.HParamsPluginData{Data: &hparamspb.HParamsPluginData_SessionStartInfo{SessionStartInfo: &hparamspb.SessionStartInfo{
			GroupName: "g", Hparams: map[string]*structpb.Value{"lr": structpb.NewNumberValue(0.1)}}}}
		return series{plugin: "hparams", run: run, tag: "_hparams_/session_start_info", steps: []int64{0}, content: mustMarshal(t, d)}
	}
	_, srv := serveTable(t, httpapi.Config{}, start("a"), start("b"),
		series{plugin: "scalars", run: "a", tag: "acc", steps: []int64{1}, scalars: []float32{0.75}},
		series{plugin: "scalars", run: "b", tag: "acc", steps: []int64{2}, scalars: []float32{0.75}})
	code, body := postJSON(t, srv.URL+"/experiment/e1/data/plugin/hparams/session_groups",
		`{`+allStatuses+`,"sliceSize":10,"aggregationType":"AGGREGATION_MAX","aggregationMetric":{"tag":"acc"}}`)
	var got struct {
		SessionGroups []struct {
			MetricValues []struct {
				TrainingStep int `json:"trainingStep"`
			} `json:"metricValues"`
		} `json:"sessionGroups"`
	}
	if err := json.Unmarshal([]byte(body), &got); err != nil || code != 200 || len(got.SessionGroups) != 1 ||
		len(got.SessionGroups[0].MetricValues) != 1 || got.SessionGroups[0].MetricValues[0].TrainingStep != 1 {
		t.Errorf("session_groups: %d %s, want the group to take session a's value (step 1)", code, body)
	}
}
