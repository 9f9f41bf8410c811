package migrate

import (
	"encoding/binary"
	"math"
	"reflect"
	"testing"

	tbpb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard"
	"google.golang.org/protobuf/proto"

	"github.com/tbhub/tbhub/uploader/internal/event"
)

type collected struct {
	series *Series
	scalar float64
	valid  bool
	shape  TensorShape
	blobs  []string
}

// feed decodes events as the reader would and collects what migration emits.
func feed(t *testing.T, r *Run, evs ...*tbpb.Event) []collected {
	t.Helper()
	var out []collected
	var ev event.Event
	for _, e := range evs {
		b, err := proto.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		if err := event.Decode(b, &ev); err != nil {
			t.Fatal(err)
		}
		r.Add(&ev, func(s *Series, p *Point) {
			c := collected{series: s}
			c.scalar, c.valid = ScalarValue(p)
			c.shape = TensorInfo(p, nil)
			c.shape.Dims = append([]int64(nil), c.shape.Dims...)
			ForEachBlob(s, p, func(b []byte) { c.blobs = append(c.blobs, string(b)) })
			out = append(out, c)
		})
	}
	return out
}

func value(tag string, step int64, v *tbpb.Summary_Value) *tbpb.Event {
	v.Tag = tag
	return &tbpb.Event{Step: step, What: &tbpb.Event_Summary{Summary: &tbpb.Summary{Value: []*tbpb.Summary_Value{v}}}}
}

func tensor(dtype tbpb.DataType, dims []int64, fill func(*tbpb.TensorProto)) *tbpb.Summary_Value {
	t := &tbpb.TensorProto{Dtype: dtype, TensorShape: &tbpb.TensorShapeProto{}}
	for _, d := range dims {
		t.TensorShape.Dim = append(t.TensorShape.Dim, &tbpb.TensorShapeProto_Dim{Size: d})
	}
	if fill != nil {
		fill(t)
	}
	return &tbpb.Summary_Value{Value: &tbpb.Summary_Value_Tensor{Tensor: t}}
}

func withPlugin(v *tbpb.Summary_Value, plugin string, class tbpb.DataClass) *tbpb.Summary_Value {
	v.Metadata = &tbpb.SummaryMetadata{PluginData: &tbpb.SummaryMetadata_PluginData{PluginName: plugin}, DataClass: class}
	return v
}

func TestFirstValueFixesSeriesAndMismatchesDrop(t *testing.T) {
	r := NewRun()
	got := feed(t, r,
		value("loss", 0, &tbpb.Summary_Value{Value: &tbpb.Summary_Value_SimpleValue{SimpleValue: 1.5}}),
		value("loss", 1, tensor(tbpb.DataType_DT_FLOAT, nil, func(t *tbpb.TensorProto) { t.FloatVal = []float32{2.5} })),
		value("loss", 2, &tbpb.Summary_Value{Value: &tbpb.Summary_Value_Histo{Histo: &tbpb.HistogramProto{}}}),
		value("loss", 3, withPlugin(tensor(tbpb.DataType_DT_FLOAT, nil, nil), "text", 0)),
		value("odd", 0, withPlugin(tensor(tbpb.DataType_DT_FLOAT, nil, nil), "my_plugin", 0)),
		value("explicit", 0, withPlugin(tensor(tbpb.DataType_DT_FLOAT, nil, nil), "my_plugin", tbpb.DataClass_DATA_CLASS_TENSOR)),
		value("weird_class", 0, withPlugin(tensor(tbpb.DataType_DT_FLOAT, nil, nil), "scalars", tbpb.DataClass(9))),
	)
	loss := r.Lookup("loss")
	if loss.Plugin() != PluginScalars || loss.Class() != ClassScalar || loss.Metadata.DisplayName != "loss" {
		t.Errorf("loss series: %+v", loss.Metadata)
	}
	if loss.Dropped != 2 {
		t.Errorf("loss dropped %d values, want 2 (the histogram and the text value)", loss.Dropped)
	}
	if len(got) != 5 || got[0].scalar != 1.5 || got[1].scalar != 2.5 || !got[1].valid {
		t.Errorf("emitted %+v", got)
	}
	if c := r.Lookup("odd").Class(); c != ClassUnknown {
		t.Errorf("unknown plugin without class: %v, want unknown", c)
	}
	if c := r.Lookup("explicit").Class(); c != ClassTensor {
		t.Errorf("explicit class: %v, want tensor", c)
	}
	if c := r.Lookup("weird_class").Class(); c != ClassUnknown {
		t.Errorf("unknown class number: %v, want unknown", c)
	}
}

func TestScalarValues(t *testing.T) {
	le := func(n int, v uint64) []byte {
		b := binary.LittleEndian.AppendUint64(nil, v)
		return b[:n]
	}
	cases := []struct {
		name  string
		v     *tbpb.Summary_Value
		want  float64
		valid bool
	}{
		{"double_val", tensor(tbpb.DataType_DT_DOUBLE, nil, func(t *tbpb.TensorProto) { t.DoubleVal = []float64{0.1} }), 0.1, true},
		{"empty float_val is 0", tensor(tbpb.DataType_DT_FLOAT, nil, nil), 0, true},
		{"shape [1,1]", tensor(tbpb.DataType_DT_INT64, []int64{1, 1}, func(t *tbpb.TensorProto) { t.Int64Val = []int64{-7} }), -7, true},
		{"two floats", tensor(tbpb.DataType_DT_FLOAT, nil, func(t *tbpb.TensorProto) { t.FloatVal = []float32{1, 2} }), 0, false},
		{"shape [2]", tensor(tbpb.DataType_DT_FLOAT, []int64{2}, func(t *tbpb.TensorProto) { t.FloatVal = []float32{1} }), 0, false},
		{"string", tensor(tbpb.DataType_DT_STRING, nil, func(t *tbpb.TensorProto) { t.StringVal = [][]byte{[]byte("1")} }), 0, false},
		{"half", tensor(tbpb.DataType_DT_HALF, nil, func(t *tbpb.TensorProto) { t.HalfVal = []int32{0x3c00} }), 1, true},
		{"bfloat16 content", tensor(tbpb.DataType_DT_BFLOAT16, nil, func(t *tbpb.TensorProto) { t.TensorContent = le(2, 0xc040) }), -3, true},
		{"int8 content", tensor(tbpb.DataType_DT_INT8, nil, func(t *tbpb.TensorProto) { t.TensorContent = le(1, 0xff) }), -1, true},
		{"uint16 int_val", tensor(tbpb.DataType_DT_UINT16, nil, func(t *tbpb.TensorProto) { t.IntVal = []int32{65535} }), 65535, true},
		{"uint64", tensor(tbpb.DataType_DT_UINT64, nil, func(t *tbpb.TensorProto) { t.Uint64Val = []uint64{1 << 63} }), 1 << 63, true},
		{"bool", tensor(tbpb.DataType_DT_BOOL, nil, func(t *tbpb.TensorProto) { t.BoolVal = []bool{true} }), 1, true},
		{"content of the wrong width", tensor(tbpb.DataType_DT_FLOAT, nil, func(t *tbpb.TensorProto) { t.TensorContent = le(8, 0) }), 0, false},
		{"double content NaN", tensor(tbpb.DataType_DT_DOUBLE, nil, func(t *tbpb.TensorProto) { t.TensorContent = le(8, math.Float64bits(math.NaN())) }), math.NaN(), true},
		{"null tensor", &tbpb.Summary_Value{}, 0, false},
	}
	for _, tc := range cases {
		r := NewRun()
		feed(t, r, value("x", 0, withPlugin(tensor(tbpb.DataType_DT_FLOAT, nil, nil), "scalars", 0)))
		got := feed(t, r, value("x", 1, tc.v))
		if len(got) != 1 {
			t.Fatalf("%s: %d points", tc.name, len(got))
		}
		if got[0].valid != tc.valid || (tc.valid && !(got[0].scalar == tc.want || math.IsNaN(tc.want) && math.IsNaN(got[0].scalar))) {
			t.Errorf("%s: got %v (valid %v), want %v (valid %v)", tc.name, got[0].scalar, got[0].valid, tc.want, tc.valid)
		}
	}
}

func TestLegacyShapesAndBlobs(t *testing.T) {
	r := NewRun()
	got := feed(t, r,
		value("h", 0, &tbpb.Summary_Value{Value: &tbpb.Summary_Value_Histo{Histo: &tbpb.HistogramProto{Bucket: []float64{0, 1, 0, 2, 0}, BucketLimit: []float64{1, 2, 3, 4, 5}}}}),
		value("img", 0, &tbpb.Summary_Value{Value: &tbpb.Summary_Value_Image{Image: &tbpb.Summary_Image{Width: 640, Height: 480, EncodedImageString: []byte("png")}}}),
		value("snd", 0, withPlugin(tensor(tbpb.DataType_DT_STRING, []int64{2, 2}, func(t *tbpb.TensorProto) {
			t.StringVal = [][]byte{[]byte("a"), []byte("label a"), []byte("b"), []byte("label b")}
		}), "audio", 0)),
		&tbpb.Event{Step: 3, What: &tbpb.Event_GraphDef{GraphDef: []byte("graph")}},
		&tbpb.Event{Step: 4, What: &tbpb.Event_TaggedRunMetadata{TaggedRunMetadata: &tbpb.TaggedRunMetadata{Tag: "step4", RunMetadata: []byte("rm")}}},
	)
	if want := (TensorShape{DType: DTFloat, Dims: []int64{3, 3}}); !reflect.DeepEqual(got[0].shape, want) {
		t.Errorf("histogram shape %+v, want %+v (empty edge buckets trimmed)", got[0].shape, want)
	}
	if want := []string{"640", "480", "png"}; !reflect.DeepEqual(got[1].blobs, want) || r.Lookup("img").Class() != ClassBlobSequence {
		t.Errorf("image blobs %q, want %q", got[1].blobs, want)
	}
	if want := []string{"a", "b"}; !reflect.DeepEqual(got[2].blobs, want) {
		t.Errorf("audio blobs %q, want the first column %q", got[2].blobs, want)
	}
	if g := r.Lookup(RunGraphTag); g == nil || g.Plugin() != PluginGraphs || !reflect.DeepEqual(got[3].blobs, []string{"graph"}) {
		t.Errorf("graph series %+v, blobs %q", g, got[3].blobs)
	}
	if m := r.Lookup("step4"); m == nil || m.Plugin() != PluginGraphTaggedRunMetadata || !reflect.DeepEqual(got[4].blobs, []string{"rm"}) {
		t.Errorf("run metadata series %+v", m)
	}
}
