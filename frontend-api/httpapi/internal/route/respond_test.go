package route

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	tbpb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard"
	"google.golang.org/protobuf/proto"
)

func TestAppendFloatIsPythonRepr(t *testing.T) {
	for _, tc := range []struct {
		f    float64
		want string
	}{
		{1, "1.0"},
		{0.5, "0.5"},
		{math.Copysign(0, -1), "-0.0"},
		{0, "0.0"},
		{1e-4, "0.0001"},
		{1e-5, "1e-05"},
		{1.5e-7, "1.5e-07"},
		{1234567890123456, "1234567890123456.0"},
		{1e16, "1e+16"},
		{2.5e300, "2.5e+300"},
		{1443856985.705543, "1443856985.705543"},
		{float64(float32(0.05)), "0.05000000074505806"},
		{math.NaN(), `"NaN"`},
		{math.Inf(1), `"Infinity"`},
		{math.Inf(-1), `"-Infinity"`},
	} {
		if got := string(AppendFloat(nil, tc.f)); got != tc.want {
			t.Errorf("appendFloat(%v) = %s, want %s", tc.f, got, tc.want)
		}
	}
	if got := string(AppendCSVFloat(nil, math.Inf(-1))); got != "-inf" {
		t.Errorf("appendCSVFloat(-Inf) = %s", got)
	}
}

// pythonRepr is Python's float repr by its definition, for comparison:
// repr uses positional notation when the decimal exponent of the shortest
// round-tripping digits is in [-4, 16), scientific notation otherwise.
func pythonRepr(f float64) string {
	e := strconv.FormatFloat(f, 'e', -1, 64)
	exp, _ := strconv.Atoi(e[strings.LastIndexByte(e, 'e')+1:])
	if f == 0 || exp < -4 || exp >= 16 {
		return e
	}
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.Contains(s, ".") {
		s += ".0"
	}
	return s
}

func TestAppendFloatMatchesPythonRepr(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200_000 {
		// Every decimal exponent from -12 to 20, many digit counts, both signs.
		f := (rng.Float64() - 0.5) * math.Pow(10, float64(rng.IntN(33)-12))
		switch rng.IntN(3) {
		case 0:
			f = float64(float32(f))
		case 1:
			f = math.Round(f)
		}
		if f == 0 {
			continue
		}
		if got, want := string(AppendFloat(nil, f)), pythonRepr(f); got != want {
			t.Fatalf("appendFloat(%v) = %s, want %s", f, got, want)
		}
	}
}

func TestTensorFloats(t *testing.T) {
	content := binary.LittleEndian.AppendUint32(nil, math.Float32bits(1.5))
	content = binary.LittleEndian.AppendUint32(content, math.Float32bits(-2))
	for name, tc := range map[string]struct {
		t    *tbpb.TensorProto
		want []float64
	}{
		"float content": {&tbpb.TensorProto{Dtype: tbpb.DataType_DT_FLOAT, TensorShape: shape(2), TensorContent: content}, []float64{1.5, -2}},
		"double_val":    {&tbpb.TensorProto{Dtype: tbpb.DataType_DT_DOUBLE, TensorShape: shape(1, 3), DoubleVal: []float64{1, 2, 3}}, []float64{1, 2, 3}},
		"filled":        {&tbpb.TensorProto{Dtype: tbpb.DataType_DT_INT32, TensorShape: shape(3), IntVal: []int32{7}}, []float64{7, 7, 7}},
		"half":          {&tbpb.TensorProto{Dtype: tbpb.DataType_DT_HALF, TensorShape: shape(2), HalfVal: []int32{0x3c00, 0xc000}}, []float64{1, -2}},
		"bool":          {&tbpb.TensorProto{Dtype: tbpb.DataType_DT_BOOL, TensorShape: shape(2), BoolVal: []bool{true, false}}, []float64{1, 0}},
		"scalar":        {&tbpb.TensorProto{Dtype: tbpb.DataType_DT_FLOAT, FloatVal: []float32{0.25}}, []float64{0.25}},
	} {
		got, err := TensorFloats(tc.t)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, %v; want %v", name, got, err, tc.want)
		}
	}
	if _, err := TensorFloats(&tbpb.TensorProto{Dtype: tbpb.DataType_DT_FLOAT, TensorShape: shape(3), TensorContent: content}); err == nil {
		t.Error("tensor_content of the wrong size accepted")
	}
	if _, err := TensorFloats(&tbpb.TensorProto{Dtype: tbpb.DataType_DT_STRING}); err == nil {
		t.Error("string tensor decoded as numbers")
	}
}

func TestAcceptsGzip(t *testing.T) {
	for header, want := range map[string]bool{
		"gzip": true, "deflate, gzip;q=0.5": true, "gzip;q=0": false, "br": false, "": false, "GZIP": true, "gzip; q=0.0": false,
	} {
		if got := acceptsGzip(header); got != want {
			t.Errorf("acceptsGzip(%q) = %v", header, got)
		}
	}
}

// Stored tensors come from uploads: whatever their bytes claim, decoding
// them must not panic or allocate for a shape the data does not have.
// FuzzDecodeTensor: the tensor decoders never panic (the plugins'
// parsers have their own fuzz tests).
func FuzzDecodeTensor(f *testing.F) {
	for _, t := range []*tbpb.TensorProto{
		{Dtype: tbpb.DataType_DT_STRING, TensorShape: shape(2, 2), StringVal: [][]byte{[]byte("a")}},
		{Dtype: tbpb.DataType_DT_FLOAT, TensorShape: shape(3), FloatVal: []float32{1}},
		{Dtype: tbpb.DataType_DT_DOUBLE, TensorShape: shape(6, 2), DoubleVal: []float64{1, 2}},
	} {
		b, _ := proto.Marshal(t)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var tp tbpb.TensorProto
		if proto.Unmarshal(b, &tp) != nil {
			return
		}
		TensorFloats(&tp)
		TensorStrings(&tp)
	})
}

func shape(dims ...int64) *tbpb.TensorShapeProto {
	s := &tbpb.TensorShapeProto{}
	for _, d := range dims {
		s.Dim = append(s.Dim, &tbpb.TensorShapeProto_Dim{Size: d})
	}
	return s
}
