package timeseries

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/tbhub/tbhub/frontend-api/httpapi/internal/route/routetest"
	tbpb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard"
)

const png = "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"

var images = routetest.Series{Plugin: "images", Run: "eval", Tag: "digits", Description: "**input**", Steps: []int64{3, 4},
	Blobs: [][][]byte{{[]byte("28"), []byte("28"), []byte(png), []byte("second")}, {[]byte("28"), []byte("28"), []byte(png)}}}

func table(t *testing.T) Plugin {
	t.Helper()
	return Plugin{routetest.Env(t, &routetest.Provider{Series: []routetest.Series{
		{Plugin: "scalars", Run: "train", Tag: "loss", Description: "the *loss*", Steps: []int64{1, 2}, Scalars: []float32{0.5, 0.25}},
		{Plugin: "scalars", Run: "eval", Tag: "loss", Steps: []int64{2}, Scalars: []float32{0.75}},
		{Plugin: "histograms", Run: "train", Tag: "w", Steps: []int64{5}, Tensors: []*tbpb.TensorProto{routetest.Histogram([3]float64{0, 1, 2}, [3]float64{1, 3, 4})}},
		images,
	}})}
}

// requests is the form of a timeSeries POST asking for reqs (JSON).
func requests(reqs string) string { return url.Values{"requests": {reqs}}.Encode() }

func TestRoutes(t *testing.T) {
	t.Parallel()
	h := table(t)
	const p = "/experiment/e1/data/plugin/timeseries/"
	routetest.Run(t, []routetest.Case{
		{Name: "tags", Fn: h.TimeSeriesTags, Target: p + "tags", Want: `{
			"scalars": {"runTagInfo": {"train": ["loss"], "eval": ["loss"]}, "tagDescriptions": {"loss": "<p>the <em>loss</em></p>"}},
			"histograms": {"runTagInfo": {"train": ["w"]}, "tagDescriptions": {}},
			"images": {"tagDescriptions": {"digits": "<p><strong>input</strong></p>"}, "tagRunSampledInfo": {"digits": {"eval": {"maxSamplesPerStep": 2}}}}}`},
		{Name: "scalars of every run", Fn: h.TimeSeries, Method: http.MethodPost, Target: p + "timeSeries",
			Body: requests(`[{"plugin": "scalars", "tag": "loss"}]`), Want: `[{"plugin": "scalars", "tag": "loss", "runToSeries": {
				"train": [{"wallTime": 1001, "step": 1, "value": 0.5}, {"wallTime": 1002, "step": 2, "value": 0.25}],
				"eval": [{"wallTime": 1002, "step": 2, "value": 0.75}]}}]`},
		{Name: "scalars of one run, and a histogram", Fn: h.TimeSeries, Method: http.MethodPost, Target: p + "timeSeries",
			Body: requests(`[{"plugin": "scalars", "tag": "loss", "run": "eval"}, {"plugin": "histograms", "tag": "w", "run": "train"}]`),
			Want: `[{"plugin": "scalars", "tag": "loss", "run": "eval", "runToSeries": {"eval": [{"wallTime": 1002, "step": 2, "value": 0.75}]}},
				{"plugin": "histograms", "tag": "w", "run": "train", "runToSeries": {"train": [{"wallTime": 1005, "step": 5,
					"bins": [{"min": 0, "max": 1, "count": 2}, {"min": 1, "max": 3, "count": 4}]}]}}]`},
		{Name: "images, second sample", Fn: h.TimeSeries, Method: http.MethodPost, Target: p + "timeSeries",
			Body: requests(`[{"plugin": "images", "tag": "digits", "run": "eval", "sample": 1}]`),
			Want: `[{"plugin": "images", "tag": "digits", "run": "eval", "sample": 1, "runToSeries": {"eval": [
				{"wallTime": 1003, "step": 3, "imageId": "` + routetest.BlobKey(images, 3, 3) + `"}]}}]`},
		// A request the route cannot answer is answered with its error, the
		// others with their data.
		{Name: "an unknown plugin beside a good request", Fn: h.TimeSeries, Method: http.MethodPost, Target: p + "timeSeries",
			Body: requests(`[{"plugin": "audio", "tag": "x"}, {"plugin": "images", "tag": "digits", "sample": -1}, {"plugin": "scalars", "tag": "nope"}]`),
			Want: `[{"plugin": "audio", "tag": "x", "error": "plugin \"audio\": want scalars, histograms or images"},
				{"plugin": "images", "tag": "digits", "sample": -1, "error": "sample must be >= 0"},
				{"plugin": "scalars", "tag": "nope"}]`},
		{Name: "requests that are no JSON", Fn: h.TimeSeries, Method: http.MethodPost, Target: p + "timeSeries", Body: requests(`[{`), Code: http.StatusBadRequest},
		{Name: "image of a missing ID", Fn: h.TimeSeriesImageData, Target: p + "imageData?imageId=nope", Code: http.StatusNotFound},
	})
}

func TestImageData(t *testing.T) {
	t.Parallel()
	rec := routetest.Call(t, table(t).TimeSeriesImageData, http.MethodGet,
		"/experiment/e1/data/plugin/timeseries/imageData?"+url.Values{"imageId": {routetest.BlobKey(images, 4, 2)}}.Encode(), "")
	if got := string(routetest.Body(t, rec)); got != png {
		t.Errorf("body %q, want the PNG", got)
	}
	if ct := rec.Header().Get("Content-Type"); ct != "image/png" {
		t.Errorf("Content-Type %q", ct)
	}
}
