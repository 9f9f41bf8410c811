package verify

import (
	"context"
	"hash/crc32"
	"io"
	"math"
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	experimentsv1 "github.com/tbhub/tbhub/schemas/gen/go/tbhub/experiments/v1"
	tbpb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard"
	servicepb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/service"

	"github.com/tbhub/tbhub/uploader/internal/migrate"
)

// fakeExport serves a fixed experiment through the export API.
type fakeExport struct {
	servicepb.TensorBoardExporterServiceClient // other methods are not called
	data                                       []*servicepb.StreamExperimentDataResponse
	blobs                                      map[string][]byte
}

type stream[T any] struct {
	grpc.ClientStream // not called
	items             []*T
}

func (s *stream[T]) Recv() (*T, error) {
	if len(s.items) == 0 {
		return nil, io.EOF
	}
	it := s.items[0]
	s.items = s.items[1:]
	return it, nil
}

func (f *fakeExport) StreamExperimentData(context.Context, *servicepb.StreamExperimentDataRequest, ...grpc.CallOption) (grpc.ServerStreamingClient[servicepb.StreamExperimentDataResponse], error) {
	return &stream[servicepb.StreamExperimentDataResponse]{items: f.data}, nil
}

func (f *fakeExport) StreamBlobData(_ context.Context, req *servicepb.StreamBlobDataRequest, _ ...grpc.CallOption) (grpc.ServerStreamingClient[servicepb.StreamBlobDataResponse], error) {
	b, ok := f.blobs[req.GetBlobId()]
	if !ok {
		return nil, status.Error(codes.NotFound, "blob not found")
	}
	return &stream[servicepb.StreamBlobDataResponse]{items: []*servicepb.StreamBlobDataResponse{{Data: b}}}, nil
}

func ts(sec float64) *timestamppb.Timestamp {
	return &timestamppb.Timestamp{Seconds: int64(sec), Nanos: int32((sec - math.Floor(sec)) * 1e9)}
}

func blobDigestOf(b []byte) blobDigest {
	return blobDigest{size: int64(len(b)), crc: crc32.Checksum(b, castagnoli)}
}

var tensorA = &tbpb.TensorProto{Dtype: tbpb.DataType_DT_FLOAT, FloatVal: []float32{1, 2}}

// logdirFixture: run r (start 100) with a scalar series (a NaN value
// included), a tensor series and an image series whose third blob is over
// the server's limit; run empty with no data.
func logdirFixture() *Logdir {
	size, crc := tensorDigest(tensorA)
	return &Logdir{
		runs: map[string]float64{"r": 100, "empty": 0},
		series: map[seriesKey]*localSeries{
			{"r", "s"}: {plugin: "scalars", class: migrate.ClassScalar, points: map[int64]*digest{
				0: {wall: 1, value: 0.5}, 1: {wall: 2, value: math.NaN()}}},
			{"r", "t"}: {plugin: "histograms", class: migrate.ClassTensor, points: map[int64]*digest{
				0: {wall: 1.25, size: size, crc: crc}}},
			{"r", "i"}: {plugin: "images", class: migrate.ClassBlobSequence, points: map[int64]*digest{
				0: {wall: 3, blobs: []blobDigest{blobDigestOf([]byte("abc")), blobDigestOf([]byte("de")), {size: 1 << 30, tooLarge: true}}}}},
		},
	}
}

func md(plugin string) *tbpb.SummaryMetadata {
	return &tbpb.SummaryMetadata{PluginData: &tbpb.SummaryMetadata_PluginData{PluginName: plugin}}
}

func serverFixture() ([]*experimentsv1.RunStart, *fakeExport) {
	current := func(id string) *servicepb.BlobSequenceEntry {
		return &servicepb.BlobSequenceEntry{Blob: &servicepb.Blob{BlobId: id, State: servicepb.BlobState_BLOB_STATE_CURRENT}}
	}
	return []*experimentsv1.RunStart{{Name: "empty"}, {Name: "r", StartTime: 100}}, &fakeExport{
		data: []*servicepb.StreamExperimentDataResponse{
			{RunName: "r", TagName: "s", TagMetadata: md("scalars"), Data: &servicepb.StreamExperimentDataResponse_Points{Points: &servicepb.StreamExperimentDataResponse_ScalarPoints{
				Steps: []int64{0}, WallTimes: []*timestamppb.Timestamp{ts(1)}, Values: []float64{0.5}}}},
			{RunName: "r", TagName: "s", Data: &servicepb.StreamExperimentDataResponse_Points{Points: &servicepb.StreamExperimentDataResponse_ScalarPoints{
				Steps: []int64{1}, WallTimes: []*timestamppb.Timestamp{ts(2)}, Values: []float64{math.NaN()}}}},
			{RunName: "r", TagName: "t", TagMetadata: md("histograms"), Data: &servicepb.StreamExperimentDataResponse_Tensors{Tensors: &servicepb.StreamExperimentDataResponse_TensorPoints{
				Steps: []int64{0}, WallTimes: []*timestamppb.Timestamp{ts(1.25)}, Values: []*tbpb.TensorProto{tensorA}}}},
			{RunName: "r", TagName: "i", TagMetadata: md("images"), Data: &servicepb.StreamExperimentDataResponse_BlobSequences{BlobSequences: &servicepb.StreamExperimentDataResponse_BlobSequencePoints{
				Steps: []int64{0}, WallTimes: []*timestamppb.Timestamp{ts(3)}, Values: []*servicepb.BlobSequence{{Entries: []*servicepb.BlobSequenceEntry{current("b0"), current("b1"), {}}}}}}},
		},
		blobs: map[string][]byte{"b0": []byte("abc"), "b1": []byte("de")},
	}
}

func compare(t *testing.T, runs []*experimentsv1.RunStart, api *fakeExport) (*Result, []string) {
	t.Helper()
	var lines []string
	res, err := Compare(t.Context(), logdirFixture(), runs, api, "eid", func(l string) { lines = append(lines, l) }, 100)
	if err != nil {
		t.Fatal(err)
	}
	return res, lines
}

func TestCompareIdentical(t *testing.T) {
	runs, api := serverFixture()
	res, lines := compare(t, runs, api)
	if res.Differences != 0 || len(lines) != 0 {
		t.Errorf("identical experiment: %d differences: %q", res.Differences, lines)
	}
	if res.Runs != 2 || res.Series != 3 || res.Points != 4 || res.Blobs != 2 {
		t.Errorf("compared %+v, want 2 runs, 3 series, 4 points, 2 blobs (the one over the limit skipped)", res)
	}
}

// Each way the server can differ is named on its own line.
func TestCompareDifferences(t *testing.T) {
	_, api := serverFixture()
	runs := []*experimentsv1.RunStart{{Name: "r", StartTime: 99}, {Name: "gone"}}         // a start time, runs missing and extra
	api.data[1].GetPoints().Values[0] = 7                                                 // a value
	api.data[0].GetPoints().WallTimes[0] = ts(1.5)                                        // a wall time
	api.data[2].GetTensors().Values[0] = &tbpb.TensorProto{Dtype: tbpb.DataType_DT_FLOAT} // a tensor
	api.data[3].GetBlobSequences().Values[0].Entries[1] = &servicepb.BlobSequenceEntry{}  // a blob never uploaded (a kill -9 loss)
	api.data[2].TagMetadata = md("text")                                                  // a plugin
	api.blobs["b0"] = []byte("abd")                                                       // a blob's bytes
	api.data = append(api.data, &servicepb.StreamExperimentDataResponse{RunName: "r", TagName: "extra", Data: &servicepb.StreamExperimentDataResponse_Points{
		Points: &servicepb.StreamExperimentDataResponse_ScalarPoints{Steps: []int64{4}, WallTimes: []*timestamppb.Timestamp{ts(4)}, Values: []float64{1}}}})
	res, lines := compare(t, runs, api)
	want := []string{
		"run r: starts at 99 on the server, 100 in the logdir",
		"run gone: on the server, not in the logdir",
		"run empty: missing on the server",
		"r/s: step 0: wall time 1.5 on the server, 1 in the logdir",
		"r/s: step 1: value 7 on the server, NaN in the logdir",
		"r/t: step 0: the tensor differs",
		`r/t: plugin "text" on the server, "histograms" in the logdir`,
		"r/i: step 0: blob 1 (2 bytes) is missing on the server",
		"r/extra: on the server (1 points), not in the logdir",
		"r/i: step 0: blob 0: 3 bytes (CRC32C",
	}
	for _, w := range want {
		if !slices.ContainsFunc(lines, func(l string) bool { return strings.HasPrefix(l, w) }) {
			t.Errorf("no line starts with %q", w)
		}
	}
	if res.Differences != len(want) || len(lines) != len(want) {
		t.Errorf("%d differences, want %d:\n%s", res.Differences, len(want), strings.Join(lines, "\n"))
	}
	// A step missing on the server, and the report capped.
	runs, api = serverFixture()
	api.data = api.data[1:]
	var shown []string
	res, err := Compare(t.Context(), logdirFixture(), runs, api, "eid", func(l string) { shown = append(shown, l) }, 0)
	if err != nil {
		t.Fatal(err)
	}
	if res.Differences != 1 || len(shown) != 0 {
		t.Errorf("step 0 of r/s missing: %d differences, %q shown with a cap of 0", res.Differences, shown)
	}
}
