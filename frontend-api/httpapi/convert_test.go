package httpapi

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	tbpb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard"
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
		if got := string(appendFloat(nil, tc.f)); got != tc.want {
			t.Errorf("appendFloat(%v) = %s, want %s", tc.f, got, tc.want)
		}
	}
	if got := string(appendCSVFloat(nil, math.Inf(-1))); got != "-inf" {
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
		if got, want := string(appendFloat(nil, f)), pythonRepr(f); got != want {
			t.Fatalf("appendFloat(%v) = %s, want %s", f, got, want)
		}
	}
}

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
		got, err := tensorFloats(tc.t)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, %v; want %v", name, got, err, tc.want)
		}
	}
	if _, err := tensorFloats(&tbpb.TensorProto{Dtype: tbpb.DataType_DT_FLOAT, TensorShape: shape(3), TensorContent: content}); err == nil {
		t.Error("tensor_content of the wrong size accepted")
	}
	if _, err := tensorFloats(&tbpb.TensorProto{Dtype: tbpb.DataType_DT_STRING}); err == nil {
		t.Error("string tensor decoded as numbers")
	}
}

func shape(dims ...int64) *tbpb.TensorShapeProto {
	s := &tbpb.TensorShapeProto{}
	for _, d := range dims {
		s.Dim = append(s.Dim, &tbpb.TensorShapeProto_Dim{Size: d})
	}
	return s
}

func TestTextToHTML(t *testing.T) {
	table := &tbpb.TensorProto{Dtype: tbpb.DataType_DT_STRING, TensorShape: shape(2, 2), StringVal: [][]byte{[]byte("a"), []byte("*b*"), []byte("c"), []byte("d")}}
	got, err := textToHTML(table, true)
	if err != nil || strings.Count(got, "<tr>") != 2 || strings.Count(got, "<td>") != 4 || !strings.Contains(got, "<em>b</em>") {
		t.Errorf("2x2 table: %q, %v", got, err)
	}
	plain, err := textToHTML(&tbpb.TensorProto{Dtype: tbpb.DataType_DT_STRING, StringVal: [][]byte{[]byte("<b>x</b>")}}, false)
	if err != nil || plain != "&lt;b&gt;x&lt;/b&gt;" {
		t.Errorf("markdown=false: %q, %v", plain, err)
	}
	cube := &tbpb.TensorProto{Dtype: tbpb.DataType_DT_STRING, TensorShape: shape(1, 2, 2), StringVal: [][]byte{[]byte("a"), []byte("zz"), []byte("b"), []byte("yy")}}
	if got, err := textToHTML(cube, true); err != nil || !strings.Contains(got, "Warning") || !strings.Contains(got, "<td><p>b</p>") || strings.Contains(got, "zz") {
		t.Errorf("3-d text shows [0, j, 0]: %q, %v", got, err)
	}
	huge := &tbpb.TensorProto{Dtype: tbpb.DataType_DT_STRING, TensorShape: shape(1<<40, 1<<40, 0)}
	if got, err := textToHTML(huge, true); err == nil && strings.Contains(got, "<td>") {
		t.Errorf("empty huge tensor: %q, %v", got, err)
	}
	if _, err := textToHTML(&tbpb.TensorProto{Dtype: tbpb.DataType_DT_STRING, TensorShape: shape(1 << 40), StringVal: [][]byte{[]byte("a")}}, true); err == nil {
		t.Error("a claimed 2^40 strings were expanded")
	}
}

func TestPRCurveTrimsUndefinedTail(t *testing.T) {
	// 4 thresholds; the last two have TP + FP = 0.
	vals := []float64{
		5, 3, 0, 0, // TP
		5, 1, 0, 0, // FP
		0, 4, 5, 5, // TN
		0, 2, 5, 5, // FN
		0.5, 0.75, 0, 0, // precision
		1, 0.6, 0, 0, // recall
	}
	tp := &tbpb.TensorProto{Dtype: tbpb.DataType_DT_DOUBLE, TensorShape: shape(6, 4), DoubleVal: vals}
	e, err := prCurveEntryOf(tp)
	if err != nil {
		t.Fatal(err)
	}
	if len(e.Precision) != 2 || len(e.Thresholds) != 2 || e.Thresholds[1] != Float(1.0/3) || e.TruePositives[1] != 3 {
		t.Errorf("entry = %+v", e)
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
		tensorFloats(&tp)
		textToHTML(&tp, true)
		histogramBuckets(&tp)
		prCurveEntryOf(&tp)
	})
}

func TestAppendFloat32IsShortestJSON(t *testing.T) {
	for _, tc := range []struct {
		v    float32
		want string
	}{
		{0.1, "0.1"},
		{1, "1"},
		{-2.5e-7, "-2.5e-07"},
		{123456789, "1.2345679e+08"},
		{float32(math.NaN()), `"NaN"`},
		{float32(math.Inf(-1)), `"-Infinity"`},
	} {
		if got := string(appendFloat32(nil, tc.v)); got != tc.want {
			t.Errorf("appendFloat32(%v) = %s, want %s", tc.v, got, tc.want)
		}
	}
}

func TestAppendShortFloat(t *testing.T) {
	for _, tc := range []struct {
		f    float64
		want string
	}{
		{0, "0"},
		{22, "22"},
		{-0.5, "-0.5"},
		{1e-4, "0.0001"},
		{1.5e-7, "1.5e-07"},
		{19998.125, "19998.125"},
		{2e15, "2e+15"},
		{math.NaN(), `"NaN"`},
	} {
		if got := string(appendShortFloat(nil, tc.f)); got != tc.want {
			t.Errorf("appendShortFloat(%v) = %s, want %s", tc.f, got, tc.want)
		}
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 10_000 {
		f := (rng.Float64() - 0.5) * math.Pow(10, float64(rng.IntN(40)-20))
		back, err := strconv.ParseFloat(string(appendShortFloat(nil, f)), 64)
		if err != nil || back != f {
			t.Fatalf("appendShortFloat(%v) reads back as %v (%v)", f, back, err)
		}
	}
}

// Wall times as a base and offsets read back exactly, or the base is 0.
func TestWallTimeBase(t *testing.T) {
	for _, tc := range []struct {
		walls []float64
		want  float64
	}{
		{nil, 0},
		{[]float64{math.NaN(), 1.7e9 + 0.25, 1.7e9 + 22.125}, 1.7e9 + 0.25},
		{[]float64{1443856985.705543, 1443856986.123457, math.Inf(1)}, 1443856985.705543},
		// 1e-3 - 1.7e9 rounds: no base.
		{[]float64{1.7e9, 1e-3}, 0},
	} {
		base := wallTimeBase(tc.walls)
		if base != tc.want {
			t.Errorf("wallTimeBase(%v) = %v, want %v", tc.walls, base, tc.want)
		}
		for _, w := range tc.walls {
			if back := base + (w - base); back != w && !math.IsNaN(w) {
				t.Errorf("base %v: wall %v reads back as %v", base, w, back)
			}
		}
	}
}
