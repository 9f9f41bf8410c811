package npy

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	tbpb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard"
)

func shape(dims ...int64) *tbpb.TensorShapeProto {
	s := &tbpb.TensorShapeProto{}
	for _, d := range dims {
		s.Dim = append(s.Dim, &tbpb.TensorShapeProto_Dim{Size: d})
	}
	return s
}

func TestFromTensorProto(t *testing.T) {
	f32 := func(fs ...float32) []byte {
		var b []byte
		for _, f := range fs {
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(f))
		}
		return b
	}
	cases := []struct {
		name  string
		in    *tbpb.TensorProto
		descr string
		data  []byte
	}{
		{"content", &tbpb.TensorProto{Dtype: tbpb.DataType_DT_FLOAT, TensorShape: shape(2), TensorContent: f32(1, 2)}, "<f4", f32(1, 2)},
		{"float_val", &tbpb.TensorProto{Dtype: tbpb.DataType_DT_FLOAT, TensorShape: shape(3), FloatVal: []float32{7, 8, 9}}, "<f4", f32(7, 8, 9)},
		{"int8 from int_val", &tbpb.TensorProto{Dtype: tbpb.DataType_DT_INT8, TensorShape: shape(2), IntVal: []int32{-1, 5}}, "|i1", []byte{0xff, 5}},
		{"bfloat16 widened", &tbpb.TensorProto{Dtype: tbpb.DataType_DT_BFLOAT16, HalfVal: []int32{0x3f80}}, "<f4", f32(1)},
		{"strings fixed width", &tbpb.TensorProto{Dtype: tbpb.DataType_DT_STRING, TensorShape: shape(2), StringVal: [][]byte{[]byte("a"), []byte("bcd")}}, "|S3", []byte("a\x00\x00bcd")},
		{"complex64 pairs", &tbpb.TensorProto{Dtype: tbpb.DataType_DT_COMPLEX64, TensorShape: shape(2), ScomplexVal: []float32{1, 2, 3, 4}}, "<c8", f32(1, 2, 3, 4)},
		{"empty shape", &tbpb.TensorProto{Dtype: tbpb.DataType_DT_INT64, TensorShape: shape(2, 0)}, "<i8", nil},
	}
	for _, tc := range cases {
		a, err := FromTensorProto(tc.in)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		var buf bytes.Buffer
		if err := WriteNPY(&buf, a); err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		hlen := int(binary.LittleEndian.Uint16(buf.Bytes()[8:10]))
		if data := buf.Bytes()[10+hlen:]; a.Descr != tc.descr || !bytes.Equal(data, tc.data) {
			t.Errorf("%s: %s %x, want %s %x", tc.name, a.Descr, data, tc.descr, tc.data)
		}
	}
	if _, err := FromTensorProto(&tbpb.TensorProto{Dtype: tbpb.DataType_DT_FLOAT, TensorShape: shape(3), TensorContent: f32(1)}); err == nil {
		t.Error("short tensor_content accepted")
	}
}

func TestNPYHeaderIsAligned(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteNPY(&buf, Array{Descr: "<f8", Shape: []int64{2, 3}, Data: make([]byte, 48)}); err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()
	hlen := int(binary.LittleEndian.Uint16(b[8:10]))
	if (10+hlen)%64 != 0 || !strings.Contains(string(b[10:10+hlen]), "'shape': (2, 3)") || b[10+hlen-1] != '\n' || len(b) != 10+hlen+48 {
		t.Errorf("header %q", b[:10+hlen])
	}
}

// TestNumpyLoadsNPZ loads an archive with NumPy itself (Debian's python3-numpy,
// which CI installs).
func TestNumpyLoadsNPZ(t *testing.T) {
	py := "/usr/bin/python3"
	if err := exec.Command(py, "-c", "import numpy").Run(); err != nil {
		t.Fatalf("NumPy is needed to check the export format (apt-get install python3-numpy): %v", err)
	}
	var arrays []Array
	for _, tp := range []*tbpb.TensorProto{
		{Dtype: tbpb.DataType_DT_FLOAT, TensorShape: shape(2, 2), FloatVal: []float32{1, 2, 3, 4}},
		{Dtype: tbpb.DataType_DT_STRING, TensorShape: shape(2), StringVal: [][]byte{[]byte("x"), []byte("yz")}},
		{Dtype: tbpb.DataType_DT_INT64, Int64Val: []int64{-3}},
	} {
		a, err := FromTensorProto(tp)
		if err != nil {
			t.Fatal(err)
		}
		arrays = append(arrays, a)
	}
	p := filepath.Join(t.TempDir(), "t.npz")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	z := NewNPZ(f)
	for i, a := range arrays {
		if err := z.Add(a); err != nil {
			t.Fatal(err)
		}
		if i == 0 { // a refused array leaves no trace in the archive
			if err := z.Add(Array{Descr: "<f4", Shape: []int64{1 << 30}, Data: make([]byte, 4)}); err == nil {
				t.Fatal("NPZ.Add took 4 bytes for 2^30 floats")
			}
		}
	}
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	out, err := exec.Command(py, "-c", `import numpy, sys
z = numpy.load(sys.argv[1])
print(z["arr_0"].tolist(), z["arr_0"].dtype, z["arr_1"].tolist(), z["arr_2"].tolist(), z["arr_2"].shape)`, p).CombinedOutput()
	if err != nil {
		t.Fatalf("numpy.load: %v\n%s", err, out)
	}
	if got, want := strings.TrimSpace(string(out)), "[[1.0, 2.0], [3.0, 4.0]] float32 [b'x', b'yz'] -3 ()"; got != want {
		t.Errorf("numpy read %q, want %q", got, want)
	}
}

// Hostile tensors, as a public experiment may hold: each declares far more
// elements than it carries. FromTensorProto refuses them before allocating
// anything sized by the declared shape.
func TestFromTensorProtoRefusesShapesTheDataDoesNotFill(t *testing.T) {
	const big = 1 << 30
	cases := []struct {
		name string
		in   *tbpb.TensorProto
		want string
	}{
		// A 60-byte point whose zeros (no values) would take 8 GiB.
		{"no values for a huge shape", &tbpb.TensorProto{Dtype: tbpb.DataType_DT_DOUBLE, TensorShape: shape(big)}, "has 0 values"},
		// One value repeated over 2^30 elements (TensorFlow's compact form).
		{"one value for a huge shape", &tbpb.TensorProto{Dtype: tbpb.DataType_DT_DOUBLE, TensorShape: shape(big), DoubleVal: []float64{1}}, "has 1 value"},
		{"content too short for its shape", &tbpb.TensorProto{Dtype: tbpb.DataType_DT_FLOAT, TensorShape: shape(big), TensorContent: make([]byte, 4)}, "tensor_content has 4 bytes"},
		// 2^31 fixed-width strings of 256 KiB: a makeslice beyond any address space.
		{"one string for 2^31", &tbpb.TensorProto{Dtype: tbpb.DataType_DT_STRING, TensorShape: shape(1 << 31), StringVal: [][]byte{make([]byte, 1<<18)}}, "has 1 string"},
		// 3 × 6148914691236517206 = 2^64 + 2: wraps to 2 elements in int64.
		{"element count overflows", &tbpb.TensorProto{Dtype: tbpb.DataType_DT_FLOAT, TensorShape: shape(3, 6148914691236517206), FloatVal: []float32{1, 2}}, "overflows"},
		{"overflow to zero", &tbpb.TensorProto{Dtype: tbpb.DataType_DT_FLOAT, TensorShape: shape(1<<32, 1<<32)}, "overflows"},
		{"negative dimension", &tbpb.TensorProto{Dtype: tbpb.DataType_DT_FLOAT, TensorShape: shape(-1)}, "unknown dimension"},
		{"odd complex64 values", &tbpb.TensorProto{Dtype: tbpb.DataType_DT_COMPLEX64, TensorShape: shape(1), ScomplexVal: []float32{1, 2, 3}}, "has 3 values"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a, err := FromTensorProto(tc.in)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %s %v (%d data bytes), error %v; want an error containing %q", a.Descr, a.Shape, len(a.Data), err, tc.want)
			}
		})
	}
}

// WriteNPY itself checks that the data fills the shape exactly, so no array
// can get a header promising other data than it holds.
func TestWriteNPYRefusesDataThatDoesNotMatchShape(t *testing.T) {
	cases := []Array{
		{Descr: "<f4", Shape: []int64{3}, Data: make([]byte, 8)},
		{Descr: "<f4", Shape: []int64{3, 6148914691236517206}, Data: make([]byte, 8)}, // 2^64+2 elements
		{Descr: "<f4", Shape: []int64{-2, -1}, Data: make([]byte, 8)},
		{Descr: "|S2", Shape: []int64{2}, Strings: [][]byte{[]byte("ab")}},
		{Descr: "|S1", Shape: []int64{1}, Strings: [][]byte{[]byte("ab")}},
		{Descr: "<f4', 'x': '", Shape: []int64{1}, Data: make([]byte, 4)},
		{Descr: "<f4", Shape: make([]int64, 30000), Data: nil}, // header longer than version 1.0 can say
	}
	for _, a := range cases {
		var buf bytes.Buffer
		if err := WriteNPY(&buf, a); err == nil {
			t.Errorf("WriteNPY(%s %v, %d bytes, %d strings) wrote %d bytes; want an error", a.Descr, len(a.Shape), len(a.Data), len(a.Strings), buf.Len())
		}
	}
}

// FuzzWriteNPY checks the writer's shape handling against a second
// computation in arbitrary precision: whatever WriteNPY writes has a header
// naming exactly the shape it was given and exactly the bytes that shape
// needs, and every array whose data does fill its shape is written.
func FuzzWriteNPY(f *testing.F) {
	le := func(dims ...int64) []byte {
		var b []byte
		for _, d := range dims {
			b = binary.LittleEndian.AppendUint64(b, uint64(d))
		}
		return b
	}
	f.Add("<f4", le(2, 3), make([]byte, 24), false)
	f.Add("<f4", le(3, 6148914691236517206), make([]byte, 8), false)
	f.Add("<f8", le(1<<30), make([]byte, 60), false)
	f.Add("|S3", le(2), []byte("a\xffbcd"), true)
	f.Add("|S1", le(1<<31), []byte("x"), true)
	f.Add("<c16", le(), make([]byte, 16), false)
	f.Add("<f4', 'x': '", le(1), make([]byte, 4), false)
	validDescr := regexp.MustCompile(`^[<>|=][biufcSV][0-9]+$`)
	f.Fuzz(func(t *testing.T, descr string, rawDims, data []byte, asStrings bool) {
		var dims []int64
		for len(rawDims) >= 8 && len(dims) < 64 {
			dims = append(dims, int64(binary.LittleEndian.Uint64(rawDims)))
			rawDims = rawDims[8:]
		}
		a := Array{Descr: descr, Shape: dims, Data: data}
		if asStrings {
			a.Data, a.Strings = nil, bytes.Split(data, []byte{0xff})
		}
		// The same checks, in arbitrary precision.
		width := new(big.Int)
		_, widthOK := width.SetString(strings.TrimLeft(descr[min(2, len(descr)):], "0"), 10)
		if asStrings && widthOK && width.Int64()*int64(len(a.Strings)) > 1<<20 {
			return // consistent or not, a few strings padded to a huge width only take long to write
		}
		var out bytes.Buffer
		err := WriteNPY(&out, a)
		ok := validDescr.MatchString(descr) && widthOK && width.Sign() > 0 && width.Cmp(big.NewInt(1<<30)) <= 0
		elems := big.NewInt(1)
		for _, d := range dims {
			ok = ok && d >= 0
			elems.Mul(elems, big.NewInt(d))
		}
		body := new(big.Int).Mul(elems, width)
		if ok && descr[1] == 'S' {
			ok = a.Strings != nil && a.Data == nil && elems.Cmp(big.NewInt(int64(len(a.Strings)))) == 0
			for _, s := range a.Strings {
				ok = ok && int64(len(s)) <= width.Int64()
			}
		} else if ok {
			ok = a.Strings == nil && body.Cmp(big.NewInt(int64(len(data)))) == 0
		}
		if err != nil {
			if ok && len(dims) < 1000 {
				t.Fatalf("WriteNPY(%q, %v, %d bytes, %d strings) refused a consistent array: %v", descr, dims, len(a.Data), len(a.Strings), err)
			}
			if out.Len() != 0 {
				t.Fatalf("a refused array wrote %d bytes", out.Len())
			}
			return
		}
		if !ok {
			t.Fatalf("WriteNPY(%q, %v, %d bytes, %d strings) wrote an array whose data does not fill its shape", descr, dims, len(a.Data), len(a.Strings))
		}
		b := out.Bytes()
		hlen := int(binary.LittleEndian.Uint16(b[8:10]))
		dimText := make([]string, len(dims))
		for i, d := range dims {
			dimText[i] = fmt.Sprint(d)
		}
		want := "(" + strings.Join(dimText, ", ")
		if len(dims) == 1 {
			want += ","
		}
		want += ")"
		header := string(b[10 : 10+hlen])
		if !strings.HasPrefix(string(b), "\x93NUMPY\x01\x00") || (10+hlen)%64 != 0 || !strings.Contains(header, "'shape': "+want+", }") {
			t.Fatalf("header %q for shape %v", header, dims)
		}
		if got := big.NewInt(int64(len(b) - 10 - hlen)); got.Cmp(body) != 0 {
			t.Fatalf("%v bytes after the header; shape %v of %s needs %v", got, dims, descr, body)
		}
	})
}
