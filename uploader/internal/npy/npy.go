// Package npy writes NumPy .npy arrays and .npz archives (a zip of .npy files, as
// numpy.savez makes), so exported tensors load with numpy.load and no pickle.
package npy

import (
	"archive/zip"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"strings"

	tbpb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard"
)

// Array is a dense little-endian array.
type Array struct {
	Descr string  // NumPy dtype string, e.g. "<f4", "|S12"
	Shape []int64 // C order
	Data  []byte
}

// WriteNPY writes one array in .npy format version 1.0.
func WriteNPY(w io.Writer, a Array) error {
	dims := make([]string, len(a.Shape))
	for i, d := range a.Shape {
		dims[i] = fmt.Sprint(d)
	}
	shape := strings.Join(dims, ", ")
	if len(a.Shape) == 1 {
		shape += ","
	}
	header := fmt.Sprintf("{'descr': '%s', 'fortran_order': False, 'shape': (%s), }", a.Descr, shape)
	// Magic (6) + version (2) + header length (2) + header + padding + '\n' is a
	// multiple of 64, as NumPy writes it.
	total := 10 + len(header) + 1
	pad := (64 - total%64) % 64
	header += strings.Repeat(" ", pad) + "\n"
	var pre [10]byte
	copy(pre[:], "\x93NUMPY\x01\x00")
	binary.LittleEndian.PutUint16(pre[8:], uint16(len(header)))
	if _, err := w.Write(pre[:]); err != nil {
		return err
	}
	if _, err := io.WriteString(w, header); err != nil {
		return err
	}
	_, err := w.Write(a.Data)
	return err
}

// WriteNPZ writes arrays as arr_0, arr_1, ... of an uncompressed .npz archive.
func WriteNPZ(w io.Writer, arrays []Array) error {
	zw := zip.NewWriter(w)
	for i, a := range arrays {
		f, err := zw.CreateHeader(&zip.FileHeader{Name: fmt.Sprintf("arr_%d.npy", i), Method: zip.Store})
		if err != nil {
			return err
		}
		if err := WriteNPY(f, a); err != nil {
			return err
		}
	}
	return zw.Close()
}

// element is how a TensorFlow dtype is laid out in NumPy.
type element struct {
	descr string
	width int
}

var elements = map[tbpb.DataType]element{
	tbpb.DataType_DT_FLOAT:      {"<f4", 4},
	tbpb.DataType_DT_DOUBLE:     {"<f8", 8},
	tbpb.DataType_DT_HALF:       {"<f2", 2},
	tbpb.DataType_DT_BFLOAT16:   {"<f4", 4}, // NumPy has no bfloat16: widened exactly
	tbpb.DataType_DT_INT8:       {"|i1", 1},
	tbpb.DataType_DT_INT16:      {"<i2", 2},
	tbpb.DataType_DT_INT32:      {"<i4", 4},
	tbpb.DataType_DT_INT64:      {"<i8", 8},
	tbpb.DataType_DT_UINT8:      {"|u1", 1},
	tbpb.DataType_DT_UINT16:     {"<u2", 2},
	tbpb.DataType_DT_UINT32:     {"<u4", 4},
	tbpb.DataType_DT_UINT64:     {"<u8", 8},
	tbpb.DataType_DT_BOOL:       {"|b1", 1},
	tbpb.DataType_DT_COMPLEX64:  {"<c8", 8},
	tbpb.DataType_DT_COMPLEX128: {"<c16", 16},
}

// FromTensorProto converts a tensor as TensorFlow's make_ndarray does: from
// tensor_content when present, else from the typed value list, where fewer values
// than elements repeat the last one. Strings become fixed-width bytes ("|S<n>").
func FromTensorProto(t *tbpb.TensorProto) (Array, error) {
	var shape []int64
	n := int64(1)
	for _, d := range t.GetTensorShape().GetDim() {
		if d.GetSize() < 0 {
			return Array{}, fmt.Errorf("tensor has an unknown dimension")
		}
		shape = append(shape, d.GetSize())
		n *= d.GetSize()
	}
	if t.GetTensorShape().GetUnknownRank() {
		return Array{}, fmt.Errorf("tensor has unknown rank")
	}
	if n > 1<<31 {
		return Array{}, fmt.Errorf("tensor of %d elements is too large", n)
	}
	shape = append([]int64{}, shape...)
	if t.GetDtype() == tbpb.DataType_DT_STRING {
		vals := t.GetStringVal()
		width := 1
		for _, v := range vals {
			width = max(width, len(v))
		}
		data := make([]byte, int(n)*width)
		for i := int64(0); i < n && len(vals) > 0; i++ {
			copy(data[int(i)*width:], vals[min(int(i), len(vals)-1)])
		}
		return Array{Descr: fmt.Sprintf("|S%d", width), Shape: shape, Data: data}, nil
	}
	el, ok := elements[t.GetDtype()]
	if !ok {
		return Array{}, fmt.Errorf("dtype %s has no NumPy equivalent", t.GetDtype())
	}
	out := Array{Descr: el.descr, Shape: shape, Data: make([]byte, int(n)*el.width)}
	if c := t.GetTensorContent(); len(c) > 0 {
		if t.GetDtype() == tbpb.DataType_DT_BFLOAT16 {
			if len(c) != int(n)*2 {
				return Array{}, fmt.Errorf("tensor_content has %d bytes for %d bfloat16 elements", len(c), n)
			}
			for i := range int(n) {
				binary.LittleEndian.PutUint32(out.Data[4*i:], uint32(binary.LittleEndian.Uint16(c[2*i:]))<<16)
			}
			return out, nil
		}
		if len(c) != len(out.Data) {
			return Array{}, fmt.Errorf("tensor_content has %d bytes for %d elements of %d bytes", len(c), n, el.width)
		}
		copy(out.Data, c)
		return out, nil
	}
	vals := typedValues(t)
	if len(vals) == 0 || (el.width == 16 && len(vals) < 2) {
		return out, nil // zeros
	}
	for i := range int(n) {
		v := vals[min(i, len(vals)-1)]
		b := out.Data[i*el.width:]
		switch el.width {
		case 1:
			b[0] = byte(v)
		case 2:
			binary.LittleEndian.PutUint16(b, uint16(v))
		case 4:
			binary.LittleEndian.PutUint32(b, uint32(v))
		case 8:
			binary.LittleEndian.PutUint64(b, v)
		case 16: // complex128: vals holds (real, imaginary) pairs
			p := 2 * min(i, len(vals)/2-1)
			binary.LittleEndian.PutUint64(b, vals[p])
			binary.LittleEndian.PutUint64(b[8:], vals[p+1])
		}
	}
	return out, nil
}

// typedValues returns the tensor's typed values as the bit patterns of its NumPy
// element (complex numbers as consecutive real and imaginary parts).
func typedValues(t *tbpb.TensorProto) []uint64 {
	var out []uint64
	switch t.GetDtype() {
	case tbpb.DataType_DT_FLOAT:
		for _, f := range t.GetFloatVal() {
			out = append(out, uint64(math.Float32bits(f)))
		}
	case tbpb.DataType_DT_DOUBLE:
		for _, f := range t.GetDoubleVal() {
			out = append(out, math.Float64bits(f))
		}
	case tbpb.DataType_DT_HALF:
		for _, h := range t.GetHalfVal() {
			out = append(out, uint64(uint16(h)))
		}
	case tbpb.DataType_DT_BFLOAT16:
		for _, h := range t.GetHalfVal() {
			out = append(out, uint64(uint32(uint16(h))<<16))
		}
	case tbpb.DataType_DT_INT8, tbpb.DataType_DT_INT16, tbpb.DataType_DT_INT32, tbpb.DataType_DT_UINT8, tbpb.DataType_DT_UINT16:
		for _, i := range t.GetIntVal() {
			out = append(out, uint64(int64(i)))
		}
	case tbpb.DataType_DT_INT64:
		for _, i := range t.GetInt64Val() {
			out = append(out, uint64(i))
		}
	case tbpb.DataType_DT_UINT32:
		for _, i := range t.GetUint32Val() {
			out = append(out, uint64(i))
		}
	case tbpb.DataType_DT_UINT64:
		out = append(out, t.GetUint64Val()...)
	case tbpb.DataType_DT_BOOL:
		for _, b := range t.GetBoolVal() {
			if b {
				out = append(out, 1)
			} else {
				out = append(out, 0)
			}
		}
	case tbpb.DataType_DT_COMPLEX64:
		// Pairs of float32 packed into one 8-byte element each.
		v := t.GetScomplexVal()
		for i := 0; i+1 < len(v); i += 2 {
			out = append(out, uint64(math.Float32bits(v[i]))|uint64(math.Float32bits(v[i+1]))<<32)
		}
	case tbpb.DataType_DT_COMPLEX128:
		for _, f := range t.GetDcomplexVal() {
			out = append(out, math.Float64bits(f))
		}
	}
	return out
}
