package legacy

import (
	"net/http"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/tbhub/tbhub/frontend-api/httpapi/internal/media"
	"github.com/tbhub/tbhub/frontend-api/httpapi/internal/route/routetest"
	tbpb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard"
)

var (
	images = routetest.Series{Plugin: "images", Run: "train", Tag: "digits", Steps: []int64{7},
		Blobs: [][][]byte{{[]byte("28"), []byte(" 14\n"), []byte("png")}}}
	audio = routetest.Series{Plugin: "audio", Run: "train", Tag: "speech", Steps: []int64{3},
		Blobs: [][][]byte{{[]byte("RIFF....WAVE")}}}
)

func table(t *testing.T) Plugin {
	t.Helper()
	wav, err := proto.Marshal(&tbpb.AudioPluginData{Encoding: tbpb.AudioPluginData_WAV})
	if err != nil {
		t.Fatal(err)
	}
	a := audio
	a.Content = wav
	return Plugin{routetest.Env(t, &routetest.Provider{Series: []routetest.Series{
		{Plugin: "scalars", Run: "train", Tag: "loss", Steps: []int64{1, 2, 3, 4, 5}, Scalars: []float32{0.5, 0.25, 0.125, 1, 2}},
		{Plugin: "scalars", Run: "eval", Tag: "acc", Steps: []int64{10}, Scalars: []float32{0.75}},
		{Plugin: "histograms", Run: "train", Tag: "w", Steps: []int64{4}, Tensors: []*tbpb.TensorProto{routetest.Histogram([3]float64{0, 1, 2}, [3]float64{1, 3, 4})}},
		{Plugin: "histograms", Run: "train", Tag: "uniform", Steps: []int64{5}, Tensors: []*tbpb.TensorProto{routetest.Histogram([3]float64{0, 4, 8})}},
		images, a,
	}})}
}

func TestRoutes(t *testing.T) {
	t.Parallel()
	h := table(t)
	const e = "/experiment/e1/data/"
	routetest.Run(t, []routetest.Case{
		{Name: "one scalar series", Fn: h.LegacyScalars, Target: e + "scalars?run=train&tag=loss",
			Want: `[[1001, 1, 0.5], [1002, 2, 0.25], [1003, 3, 0.125], [1004, 4, 1], [1005, 5, 2]]`},
		{Name: "every scalar series, sampled uniformly", Fn: h.LegacyScalars, Target: e + "scalars?sample_count=3",
			Want: `{"train": {"loss": [[1001, 1, 0.5], [1003, 3, 0.125], [1005, 5, 2]]}, "eval": {"acc": [[1010, 10, 0.75]]}}`},
		{Name: "a sample count of one", Fn: h.LegacyScalars, Target: e + "scalars?sample_count=1", Code: http.StatusBadRequest},
		{Name: "a run without a tag", Fn: h.LegacyScalars, Target: e + "scalars?run=train", Code: http.StatusBadRequest},
		{Name: "a missing scalar series", Fn: h.LegacyScalars, Target: e + "scalars?run=train&tag=nope", Code: http.StatusNotFound},
		// [wall_time, step, [min, max, num, sum, sum_squares, bucket limits, bucket counts]],
		// the sums over bucket midpoints.
		{Name: "histograms", Fn: h.LegacyHistograms, Target: e + "histograms?run=train&tag=w",
			Want: `[[1004, 4, [0, 3, 6, 9, 16.5, [1, 3], [2, 4]]]]`},
		{Name: "a missing histogram", Fn: h.LegacyHistograms, Target: e + "histograms?run=train&tag=nope", Code: http.StatusNotFound},
		// One even bucket over [0, 4]: each basis point at 4 * bps / 10000.
		{Name: "compressed histograms", Fn: h.LegacyCompressedHistograms, Target: e + "compressedHistograms?run=train&tag=uniform",
			Want: `[[1005, 5, [[0, 0], [668, 0.2672], [1587, 0.6348], [3085, 1.234], [5000, 2], [6915, 2.766], [8413, 3.3652], [9332, 3.7328], [10000, 4]]]]`},
		// Width and height are read from the first two blobs.
		{Name: "images", Fn: h.LegacyImages, Target: e + "images?run=train&tag=digits",
			Want: `[{"width": 28, "height": 14, "wall_time": 1007, "step": 7, "query": "` + media.BlobQuery(routetest.BlobKey(images, 7, 2)) + `"}]`},
		{Name: "images without a run", Fn: h.LegacyImages, Target: e + "images?tag=digits", Code: http.StatusBadRequest},
		{Name: "audio", Fn: h.LegacyAudio, Target: e + "audio?run=train&tag=speech",
			Want: `[{"wall_time": 1003, "step": 3, "content_type": "audio/wav", "query": "` + media.BlobQuery(routetest.BlobKey(audio, 3, 0), "content_type", "audio/wav") + `"}]`},
		{Name: "missing audio", Fn: h.LegacyAudio, Target: e + "audio?run=eval&tag=speech", Code: http.StatusNotFound},
	})
}

// The CSV form of one series is Python's csv module's.
func TestScalarsCSV(t *testing.T) {
	t.Parallel()
	rec := routetest.Call(t, table(t).LegacyScalars, http.MethodGet, "/experiment/e1/data/scalars?run=eval&tag=acc&format=csv", "")
	if got, want := string(routetest.Body(t, rec)), "Wall time,step,value\r\n1010.0,10,0.75\r\n"; got != want {
		t.Errorf("CSV %q, want %q", got, want)
	}
	if ct := rec.Header().Get("Content-Type"); ct != "text/csv; charset=utf-8" {
		t.Errorf("Content-Type %q", ct)
	}
}
