package httpapi_test

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	tbpb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard"

	"github.com/tbhub/tbhub/frontend-api/httpapi"
)

func shapeOf(dims ...int64) *tbpb.TensorShapeProto {
	s := &tbpb.TensorShapeProto{}
	for _, d := range dims {
		s.Dim = append(s.Dim, &tbpb.TensorShapeProto_Dim{Size: d})
	}
	return s
}

// Stored tensors with hostile shapes are the client's 400, never a 500,
// and in a timeSeries batch an error of their entry only (issue 14 #10).
func TestHostileTensorShapes(t *testing.T) {
	huge := &tbpb.TensorProto{Dtype: tbpb.DataType_DT_STRING, TensorShape: shapeOf(1e9, 1e9), StringVal: [][]byte{[]byte("a")}}
	rank5 := &tbpb.TensorProto{Dtype: tbpb.DataType_DT_DOUBLE, TensorShape: shapeOf(1, 1, 1, 1, 3), DoubleVal: []float64{0, 1, 2}}
	hugeHist := &tbpb.TensorProto{Dtype: tbpb.DataType_DT_DOUBLE, TensorShape: shapeOf(1e9, 1e9), DoubleVal: []float64{0, 1, 2}}
	_, srv := serveTable(t, httpapi.Config{},
		series{plugin: "text", run: "r", tag: "huge", steps: []int64{1}, tensors: []*tbpb.TensorProto{huge}},
		series{plugin: "histograms", run: "r", tag: "rank5", steps: []int64{1}, tensors: []*tbpb.TensorProto{rank5}},
		series{plugin: "histograms", run: "r", tag: "huge", steps: []int64{1}, tensors: []*tbpb.TensorProto{hugeHist}},
		series{plugin: "scalars", run: "r", tag: "loss", steps: []int64{1, 2}, scalars: []float32{1, 2}},
	)
	p := srv.URL + "/experiment/e1/data/plugin/"
	for _, route := range []string{"text/text?run=r&tag=huge", "histograms/histograms?run=r&tag=rank5", "histograms/histograms?run=r&tag=huge"} {
		resp, body := get(t, p+route)
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, "stored tensor cannot be shown") {
			t.Errorf("%s: %s %q, want 400 saying the stored tensor cannot be shown", route, resp.Status, body)
		}
	}
	form := url.Values{"requests": {`[{"plugin":"histograms","tag":"huge"},{"plugin":"scalars","tag":"loss"}]`}}
	resp, err := http.PostForm(p+"timeseries/timeSeries", form)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	body := string(raw)
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, "stored tensor cannot be shown") || !strings.Contains(body, `"loss"`) {
		t.Errorf("timeSeries with one bad series: %s %s; want 200, the bad entry's error and the good entry's data", resp.Status, body)
	}
}
