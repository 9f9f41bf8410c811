package histograms

import (
	"math"
	"testing"

	"google.golang.org/protobuf/proto"

	tbpb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard"
)

func TestCompressHistogram(t *testing.T) {
	// Four equal buckets over [0, 4]: the percentiles fall on a line.
	buckets := [][]float64{{0, 1, 10}, {1, 2, 10}, {2, 3, 10}, {3, 4, 10}}
	got := compressHistogram(buckets)
	if len(got) != len(normalBasisPoints) {
		t.Fatalf("got %d values", len(got))
	}
	for _, c := range got {
		want := 4 * float64(c.bps) / 10000
		if math.Abs(c.value-want) > 1e-9 {
			t.Errorf("bps %d: %v, want %v", c.bps, c.value, want)
		}
	}
	// With no mass below a bucket, TensorBoard interpolates from the
	// histogram's minimum: all the mass in [5, 6] of [0, 9] puts the
	// median at 3; the basis points past the last bucket get the maximum.
	got = compressHistogram([][]float64{{0, 5, 0}, {5, 6, 3}, {6, 9, 0}})
	if got[0].value != 0 || got[4].value != 3 || got[8].value != 9 {
		t.Errorf("sparse histogram: %v", got)
	}
	for _, c := range compressHistogram(nil) {
		if c.value != 0 {
			t.Errorf("empty histogram: %v", c)
		}
	}
}

func shape(dims ...int64) *tbpb.TensorShapeProto {
	s := &tbpb.TensorShapeProto{}
	for _, d := range dims {
		s.Dim = append(s.Dim, &tbpb.TensorShapeProto_Dim{Size: d})
	}
	return s
}

func FuzzBuckets(f *testing.F) {
	b, _ := proto.Marshal(&tbpb.TensorProto{Dtype: tbpb.DataType_DT_DOUBLE, TensorShape: shape(2, 3), DoubleVal: []float64{0, 1, 5, 1, 2, 3}})
	f.Add(b)
	f.Fuzz(func(t *testing.T, b []byte) {
		var tp tbpb.TensorProto
		if proto.Unmarshal(b, &tp) == nil {
			Buckets(&tp)
		}
	})
}
