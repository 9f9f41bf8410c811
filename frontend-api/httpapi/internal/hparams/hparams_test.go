package hparams

import (
	"net/http"
	"net/url"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/tbhub/tbhub/frontend-api/httpapi/internal/route/routetest"
	hparamspb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/hparams"
)

// table holds two finished sessions, "run1" (lr 0.1, adam, 4 layers) and
// "run2" (lr 0.01, sgd, 4 layers), each with its loss, and the accuracy of
// run1 under run1/eval.
func table(t *testing.T) Plugin {
	t.Helper()
	info := func(run, tag string, pd *hparamspb.HParamsPluginData) routetest.Series {
		content, err := proto.Marshal(pd)
		if err != nil {
			t.Fatal(err)
		}
		return routetest.Series{Plugin: "hparams", Run: run, Tag: tag, Content: content, Steps: []int64{0}}
	}
	start := func(run string, lr float64, opt string) routetest.Series {
		return info(run, hparamsStartTag, &hparamspb.HParamsPluginData{Data: &hparamspb.HParamsPluginData_SessionStartInfo{
			SessionStartInfo: &hparamspb.SessionStartInfo{StartTimeSecs: 100, Hparams: map[string]*structpb.Value{
				"lr": structpb.NewNumberValue(lr), "optimizer": structpb.NewStringValue(opt), "layers": structpb.NewNumberValue(4)}}}})
	}
	end := func(run string) routetest.Series {
		return info(run, hparamsEndTag, &hparamspb.HParamsPluginData{Data: &hparamspb.HParamsPluginData_SessionEndInfo{
			SessionEndInfo: &hparamspb.SessionEndInfo{Status: hparamspb.Status_STATUS_SUCCESS, EndTimeSecs: 200}}})
	}
	return Plugin{routetest.Env(t, &routetest.Provider{Series: []routetest.Series{
		start("run1", 0.1, "adam"), end("run1"), start("run2", 0.01, "sgd"), end("run2"),
		{Plugin: "scalars", Run: "run1", Tag: "loss", Steps: []int64{1, 2}, Scalars: []float32{0.5, 0.25}},
		{Plugin: "scalars", Run: "run2", Tag: "loss", Steps: []int64{1, 2}, Scalars: []float32{0.75, 0.5}},
		{Plugin: "scalars", Run: "run1/eval", Tag: "accuracy", Steps: []int64{2}, Scalars: []float32{0.875}},
	}})}
}

// req is the query of a GET carrying a request message in proto3 JSON.
func req(json string) string { return "?" + url.Values{"request": {json}}.Encode() }

// run1 and run2 are the session groups of the table, each of one session.
const (
	run1 = `{"name": "run1", "hparams": {"layers": 4, "lr": 0.1, "optimizer": "adam"}, "monitorUrl": "",
		"metricValues": [{"name": {"group": "eval", "tag": "accuracy"}, "value": 0.875, "trainingStep": 2, "wallTimeSecs": 1002},
			{"name": {"group": "", "tag": "loss"}, "value": 0.25, "trainingStep": 2, "wallTimeSecs": 1002}],
		"sessions": [{"name": "run1", "startTimeSecs": 100, "endTimeSecs": 200, "status": "STATUS_SUCCESS", "modelUri": "", "monitorUrl": "",
			"metricValues": [{"name": {"group": "eval", "tag": "accuracy"}, "value": 0.875, "trainingStep": 2, "wallTimeSecs": 1002},
				{"name": {"group": "", "tag": "loss"}, "value": 0.25, "trainingStep": 2, "wallTimeSecs": 1002}]}]}`
	run2 = `{"name": "run2", "hparams": {"layers": 4, "lr": 0.01, "optimizer": "sgd"}, "monitorUrl": "",
		"metricValues": [{"name": {"group": "", "tag": "loss"}, "value": 0.5, "trainingStep": 2, "wallTimeSecs": 1002}],
		"sessions": [{"name": "run2", "startTimeSecs": 100, "endTimeSecs": 200, "status": "STATUS_SUCCESS", "modelUri": "", "monitorUrl": "",
			"metricValues": [{"name": {"group": "", "tag": "loss"}, "value": 0.5, "trainingStep": 2, "wallTimeSecs": 1002}]}]}`
)

func TestRoutes(t *testing.T) {
	t.Parallel()
	h := table(t)
	const p = "/experiment/e1/data/plugin/hparams/"
	// With no experiment written, it is inferred: the hparams whose values
	// differ first, then by name; metrics are the sessions' scalar tags,
	// the group the run below the session.
	const lr = `{"name": "lr", "displayName": "", "description": "", "type": "DATA_TYPE_FLOAT64", "domainInterval": {"minValue": 0.01, "maxValue": 0.1}, "differs": true}`
	const inferred = `{"name": "", "description": "", "user": "", "timeCreatedSecs": 0, "hparamInfos": [` + lr + `,
		{"name": "optimizer", "displayName": "", "description": "", "type": "DATA_TYPE_STRING", "domainDiscrete": ["adam", "sgd"], "differs": true},
		{"name": "layers", "displayName": "", "description": "", "type": "DATA_TYPE_FLOAT64", "domainInterval": {"minValue": 4, "maxValue": 4}, "differs": false}]`
	const metrics = `"metricInfos": [
		{"name": {"group": "eval", "tag": "accuracy"}, "displayName": "", "description": "", "datasetType": "DATASET_UNKNOWN"},
		{"name": {"group": "", "tag": "loss"}, "displayName": "", "description": "", "datasetType": "DATASET_UNKNOWN"}]`
	routetest.Run(t, []routetest.Case{
		{Name: "experiment", Fn: h.HParams("experiment"), Target: p + "experiment", Want: inferred + `, ` + metrics + `}`},
		{Name: "experiment by POST", Fn: h.HParams("experiment"), Method: http.MethodPost, Target: p + "experiment", Body: `{"experimentName": "e1"}`,
			Want: inferred + `, ` + metrics + `}`},
		{Name: "experiment without metrics", Fn: h.HParams("experiment"), Target: p + "experiment" + req(`{"includeMetrics": false}`), Want: inferred + `, "metricInfos": []}`},
		{Name: "experiment, one hparam", Fn: h.HParams("experiment"), Target: p + "experiment" + req(`{"hparamsLimit": 1, "includeMetrics": false}`),
			Want: `{"name": "", "description": "", "user": "", "timeCreatedSecs": 0, "hparamInfos": [` + lr + `], "metricInfos": []}`},
		{Name: "experiment of a bad request", Fn: h.HParams("experiment"), Target: p + "experiment" + req(`{"hparamsLimit": "many"}`), Code: http.StatusBadRequest},
		{Name: "session groups by lr, descending", Fn: h.HParams("session_groups"),
			Target: p + "session_groups" + req(`{"sliceSize": 10, "allowedStatuses": ["STATUS_SUCCESS"], "colParams": [{"hparam": "lr", "order": "ORDER_DESC"}]}`),
			Want:   `{"sessionGroups": [` + run1 + `, ` + run2 + `], "totalSize": 2}`},
		{Name: "session groups by lr, ascending", Fn: h.HParams("session_groups"),
			Target: p + "session_groups" + req(`{"sliceSize": 10, "allowedStatuses": ["STATUS_SUCCESS"], "colParams": [{"hparam": "lr", "order": "ORDER_ASC"}]}`),
			Want:   `{"sessionGroups": [` + run2 + `, ` + run1 + `], "totalSize": 2}`},
		{Name: "session groups filtered", Fn: h.HParams("session_groups"),
			Target: p + "session_groups" + req(`{"sliceSize": 10, "allowedStatuses": ["STATUS_SUCCESS"], "colParams": [{"hparam": "optimizer", "filterRegexp": "sg"}]}`),
			Want:   `{"sessionGroups": [` + run2 + `], "totalSize": 1}`},
		{Name: "session groups, second page", Fn: h.HParams("session_groups"),
			Target: p + "session_groups" + req(`{"startIndex": 1, "sliceSize": 1, "allowedStatuses": ["STATUS_SUCCESS"], "colParams": [{"hparam": "lr", "order": "ORDER_DESC"}]}`),
			Want:   `{"sessionGroups": [` + run2 + `], "totalSize": 2}`},
		{Name: "session groups of no allowed status", Fn: h.HParams("session_groups"),
			Target: p + "session_groups" + req(`{"sliceSize": 10, "allowedStatuses": ["STATUS_RUNNING"]}`), Want: `{"sessionGroups": [], "totalSize": 0}`},
		{Name: "metric evals", Fn: h.HParams("metric_evals"),
			Target: p + "metric_evals" + req(`{"sessionName": "run1", "metricName": {"tag": "accuracy", "group": "eval"}}`), Want: `[[1002, 2, 0.875]]`},
		{Name: "metric evals of a missing metric", Fn: h.HParams("metric_evals"),
			Target: p + "metric_evals" + req(`{"sessionName": "run2", "metricName": {"tag": "accuracy", "group": "eval"}}`), Code: http.StatusNotFound},
		{Name: "download as JSON", Fn: h.HParamsDownload, Target: p + "download_data?format=json",
			Want: `{"header": ["lr", "optimizer", "layers", "accuracy", "loss"], "rows": [[0.1, "adam", 4, 0.875, 0.25], [0.01, "sgd", 4, null, 0.5]]}`},
		{Name: "download as XML", Fn: h.HParamsDownload, Target: p + "download_data?format=xml", Code: http.StatusBadRequest},
	})
}

// The CSV and LaTeX downloads write the table of every session as
// TensorBoard does: Python's floats, an empty field (CSV) or a dash
// (LaTeX) for a metric a session lacks.
func TestDownloadText(t *testing.T) {
	t.Parallel()
	h := table(t)
	for format, want := range map[string]string{
		"csv": "lr,optimizer,layers,accuracy,loss\r\n0.1,adam,4.0,0.875,0.25\r\n0.01,sgd,4.0,,0.5\r\n",
		"latex": "\\begin{table}[tbp]\n\\begin{tabular}{lllll}\nlr & optimizer & layers & accuracy & loss \\\\ \\hline\n" +
			"$0.1$ & adam & $4$ & $0.875$ & $0.25$ \\\\\n$0.01$ & sgd & $4$ & - & $0.5$ \\\\\n\\hline\n\\end{tabular}\n\\end{table}\n",
	} {
		rec := routetest.Call(t, h.HParamsDownload, http.MethodGet, "/experiment/e1/data/plugin/hparams/download_data?format="+format, "")
		if got := string(routetest.Body(t, rec)); got != want {
			t.Errorf("%s:\n%q\nwant\n%q", format, got, want)
		}
	}
}
