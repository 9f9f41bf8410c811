package npy

import (
	"bytes"
	"encoding/binary"
	"math"
	"os"
	"os/exec"
	"path/filepath"
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
		{"broadcast last value", &tbpb.TensorProto{Dtype: tbpb.DataType_DT_FLOAT, TensorShape: shape(3), FloatVal: []float32{7}}, "<f4", f32(7, 7, 7)},
		{"int8 from int_val", &tbpb.TensorProto{Dtype: tbpb.DataType_DT_INT8, TensorShape: shape(2), IntVal: []int32{-1, 5}}, "|i1", []byte{0xff, 5}},
		{"bfloat16 widened", &tbpb.TensorProto{Dtype: tbpb.DataType_DT_BFLOAT16, HalfVal: []int32{0x3f80}}, "<f4", f32(1)},
		{"strings fixed width", &tbpb.TensorProto{Dtype: tbpb.DataType_DT_STRING, TensorShape: shape(2), StringVal: [][]byte{[]byte("a"), []byte("bcd")}}, "|S3", []byte("a\x00\x00bcd")},
		{"empty values are zeros", &tbpb.TensorProto{Dtype: tbpb.DataType_DT_INT64, TensorShape: shape(2)}, "<i8", make([]byte, 16)},
	}
	for _, tc := range cases {
		a, err := FromTensorProto(tc.in)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if a.Descr != tc.descr || !bytes.Equal(a.Data, tc.data) {
			t.Errorf("%s: %s %x, want %s %x", tc.name, a.Descr, a.Data, tc.descr, tc.data)
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
	if err := WriteNPZ(f, arrays); err != nil {
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
