package customscalars

import (
	"net/http"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/tbhub/tbhub/frontend-api/httpapi/internal/route/routetest"
	tbpb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard"
)

// layout is the config series of run: a string tensor holding l.
func layout(t *testing.T, run string, l *tbpb.Layout) routetest.Series {
	t.Helper()
	b, err := proto.Marshal(l)
	if err != nil {
		t.Fatal(err)
	}
	return routetest.Series{Plugin: "custom_scalars", Run: run, Tag: customScalarsConfigTag, Steps: []int64{0},
		Tensors: []*tbpb.TensorProto{{Dtype: tbpb.DataType_DT_STRING, StringVal: [][]byte{b}}}}
}

func chart(title string, tags ...string) *tbpb.Chart {
	return &tbpb.Chart{Title: title, Content: &tbpb.Chart_Multiline{Multiline: &tbpb.MultilineChartContent{Tag: tags}}}
}

// table holds two runs' layouts sharing the category "losses" (one chart
// in both), a damaged layout, and the scalars of run "train".
func table(t *testing.T, layouts bool) Plugin {
	t.Helper()
	series := []routetest.Series{
		{Plugin: "scalars", Run: "train", Tag: "loss/total", Steps: []int64{1, 2}, Scalars: []float32{2, 1}},
		{Plugin: "scalars", Run: "train", Tag: "loss/reg", Steps: []int64{2}, Scalars: []float32{0.5}},
		{Plugin: "scalars", Run: "train", Tag: "accuracy", Steps: []int64{2}, Scalars: []float32{0.75}},
	}
	if layouts {
		series = append(series,
			layout(t, "train", &tbpb.Layout{Category: []*tbpb.Category{{Title: "losses", Chart: []*tbpb.Chart{chart("loss", "loss/.*")}}}}),
			layout(t, "eval", &tbpb.Layout{Category: []*tbpb.Category{
				{Title: "losses", Chart: []*tbpb.Chart{chart("loss", "loss/.*"), chart("total", "loss/total")}},
				{Title: "metrics", Closed: true, Chart: []*tbpb.Chart{chart("acc", "accuracy")}}}}),
			routetest.Series{Plugin: "custom_scalars", Run: "broken", Tag: customScalarsConfigTag, Steps: []int64{0},
				Tensors: []*tbpb.TensorProto{{Dtype: tbpb.DataType_DT_STRING, StringVal: [][]byte{{0xff, 0xff}}}}},
		)
	}
	return Plugin{routetest.Env(t, &routetest.Provider{Series: series})}
}

func TestRoutes(t *testing.T) {
	t.Parallel()
	h := table(t, true)
	const p = "/experiment/e1/data/plugin/custom_scalars/"
	routetest.Run(t, []routetest.Case{
		// Categories of one title merge, each distinct chart kept once; the
		// damaged layout hides only itself.
		{Name: "layout", Fn: h.CustomScalarsLayout, Target: p + "layout", Want: `{"version": 0, "category": [
			{"title": "losses", "closed": false, "chart": [
				{"title": "loss", "multiline": {"tag": ["loss/.*"]}},
				{"title": "total", "multiline": {"tag": ["loss/total"]}}]},
			{"title": "metrics", "closed": true, "chart": [{"title": "acc", "multiline": {"tag": ["accuracy"]}}]}]}`},
		{Name: "layout of none", Fn: table(t, false).CustomScalarsLayout, Target: p + "layout", Want: `{}`},
		// The expression is anchored at the start only.
		{Name: "scalars matching", Fn: h.CustomScalars, Target: p + "scalars?run=train&tag=loss/", Want: `{"regex_valid": true, "tag_to_events": {
			"loss/total": [[1001, 1, 2], [1002, 2, 1]], "loss/reg": [[1002, 2, 0.5]]}}`},
		{Name: "scalars matching none", Fn: h.CustomScalars, Target: p + "scalars?run=train&tag=acc$x", Want: `{"regex_valid": true, "tag_to_events": {}}`},
		{Name: "an invalid expression", Fn: h.CustomScalars, Target: p + "scalars?run=train&tag=(", Want: `{"regex_valid": false, "tag_to_events": {}}`},
		{Name: "scalars without a run", Fn: h.CustomScalars, Target: p + "scalars?tag=loss", Code: http.StatusBadRequest},
		{Name: "download", Fn: h.CustomScalarsDownload, Target: p + "download_data?run=train&tag=accuracy", Want: `[[1002, 2, 0.75]]`},
		{Name: "download of a missing series", Fn: h.CustomScalarsDownload, Target: p + "download_data?run=train&tag=nope", Code: http.StatusNotFound},
		{Name: "download as XML", Fn: h.CustomScalarsDownload, Target: p + "download_data?run=train&tag=accuracy&format=xml", Code: http.StatusBadRequest},
	})
}

func TestDownloadCSV(t *testing.T) {
	t.Parallel()
	rec := routetest.Call(t, table(t, false).CustomScalarsDownload, http.MethodGet, "/experiment/e1/data/plugin/custom_scalars/download_data?run=train&tag=loss/total&format=csv", "")
	if got, want := string(routetest.Body(t, rec)), "Wall time,Step,Value\r\n1001.0,1,2.0\r\n1002.0,2,1.0\r\n"; got != want {
		t.Errorf("CSV %q, want %q", got, want)
	}
}
