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

// Array is a dense little-endian array. Its elements are in Data, except for a
// byte-string array ("|S<n>"), whose elements are in Strings, unpadded: the
// writer pads each to n bytes as it goes, so no padded copy is ever held.
type Array struct {
	Descr   string  // NumPy dtype string, e.g. "<f4", "|S12"
	Shape   []int64 // C order
	Data    []byte
	Strings [][]byte
}

// StringGrowth is how many times larger a byte-string array is once every
// string is padded to the longest, than its strings are (each counted one
// byte more, as a tensor proto spends at least that on it); 1 for any other
// array. Padding is what lets a small tensor make a large .npy: 4096 strings,
// one of 64 KiB, take 256 MiB.
func (a Array) StringGrowth() float64 {
	if len(a.Strings) == 0 {
		return 1
	}
	width, total := 1, 0
	for _, s := range a.Strings {
		width = max(width, len(s))
		total += len(s) + 1
	}
	return float64(width) * float64(len(a.Strings)) / float64(total)
}

// Elements returns the number of elements of shape, refusing a negative
// dimension and a product that overflows int64.
func Elements(shape []int64) (int64, error) {
	n := int64(1)
	for _, d := range shape {
		if d < 0 {
			return 0, fmt.Errorf("shape %v has an unknown dimension", shape)
		}
		if d != 0 && n > math.MaxInt64/d {
			return 0, fmt.Errorf("the element count of shape %v overflows", shape)
		}
		n *= d
	}
	return n, nil
}

// bytesOf returns n elements of width bytes each, refusing an overflow.
func bytesOf(n int64, width int, shape []int64) (int64, error) {
	if width > 0 && n > math.MaxInt64/int64(width) {
		return 0, fmt.Errorf("the byte size of shape %v overflows", shape)
	}
	return n * int64(width), nil
}

// itemSize reads the element width from a dtype string: a byte-order
// character, a kind letter and a decimal width ("<f4", "|S12", "<c16").
func itemSize(descr string) (int, error) {
	bad := fmt.Errorf("dtype %q is not a byte order, a kind and a width", descr)
	if len(descr) < 3 || !strings.ContainsRune("<>|=", rune(descr[0])) || !strings.ContainsRune("biufcSV", rune(descr[1])) {
		return 0, bad
	}
	w := 0
	for _, c := range descr[2:] {
		if c < '0' || c > '9' || w > 1<<30 {
			return 0, bad
		}
		w = 10*w + int(c-'0')
	}
	if w == 0 {
		return 0, bad
	}
	return w, nil
}

// header returns the .npy version 1.0 preamble of a, after checking that its
// data fills its shape exactly: the header never promises other data than
// the array holds.
func (a Array) header() ([]byte, error) {
	width, err := itemSize(a.Descr)
	if err != nil {
		return nil, err
	}
	n, err := Elements(a.Shape)
	if err != nil {
		return nil, err
	}
	if a.Descr[1] == 'S' {
		if a.Data != nil || int64(len(a.Strings)) != n {
			return nil, fmt.Errorf("shape %v needs %d strings; the array has %d (and %d data bytes)", a.Shape, n, len(a.Strings), len(a.Data))
		}
		for _, s := range a.Strings {
			if len(s) > width {
				return nil, fmt.Errorf("a string of %d bytes does not fit dtype %s", len(s), a.Descr)
			}
		}
	} else {
		size, err := bytesOf(n, width, a.Shape)
		if err != nil {
			return nil, err
		}
		if a.Strings != nil || int64(len(a.Data)) != size {
			return nil, fmt.Errorf("shape %v of %s needs %d bytes; the array has %d (and %d strings)", a.Shape, a.Descr, size, len(a.Data), len(a.Strings))
		}
	}
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
	header += strings.Repeat(" ", (64-total%64)%64) + "\n"
	if len(header) > math.MaxUint16 {
		return nil, fmt.Errorf("shape of %d dimensions does not fit a version 1.0 header", len(a.Shape))
	}
	out := make([]byte, 10, 10+len(header))
	copy(out, "\x93NUMPY\x01\x00")
	binary.LittleEndian.PutUint16(out[8:], uint16(len(header)))
	return append(out, header...), nil
}

// WriteNPY writes one array in .npy format version 1.0. It writes nothing for
// an array whose data does not fill its shape exactly.
func WriteNPY(w io.Writer, a Array) error {
	h, err := a.header()
	if err != nil {
		return err
	}
	return writeArray(w, h, a)
}

func writeArray(w io.Writer, header []byte, a Array) error {
	if _, err := w.Write(header); err != nil {
		return err
	}
	if a.Descr[1] != 'S' {
		_, err := w.Write(a.Data)
		return err
	}
	width, _ := itemSize(a.Descr)
	zeros := make([]byte, min(width, 32<<10))
	for _, s := range a.Strings {
		if _, err := w.Write(s); err != nil {
			return err
		}
		for pad := width - len(s); pad > 0; pad -= len(zeros) {
			if _, err := w.Write(zeros[:min(pad, len(zeros))]); err != nil {
				return err
			}
		}
	}
	return nil
}

// NPZ writes an uncompressed .npz archive (arrays arr_0, arr_1, ... as
// numpy.savez names them) one array at a time, straight to its writer: memory
// holds the array being added, never the archive.
type NPZ struct {
	zw *zip.Writer
	n  int
}

// NewNPZ starts an archive on w; Close finishes it.
func NewNPZ(w io.Writer) *NPZ { return &NPZ{zw: zip.NewWriter(w)} }

// Add appends a as the next arr_<i>.npy. An array whose data does not fill
// its shape is refused before anything is written, so the archive stays
// usable for the next one.
func (z *NPZ) Add(a Array) error {
	h, err := a.header()
	if err != nil {
		return err
	}
	f, err := z.zw.CreateHeader(&zip.FileHeader{Name: fmt.Sprintf("arr_%d.npy", z.n), Method: zip.Store})
	if err != nil {
		return err
	}
	z.n++
	return writeArray(f, h, a)
}

// Close writes the archive's central directory.
func (z *NPZ) Close() error { return z.zw.Close() }

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

// FromTensorProto converts a tensor as TensorFlow's make_ndarray does, from
// tensor_content when present, else from the typed value list. Strings become
// fixed-width bytes ("|S<n>", n the longest string).
//
// The tensor must hold every element its shape declares: tensor_content of
// exactly elements × width bytes, or exactly one typed value (one string) per
// element. make_ndarray would also take fewer values and repeat the last one,
// or none and give zeros; those compact forms are refused here, because they
// let a point of a few bytes declare gigabytes (a public experiment is input
// from strangers). So the array is never larger than a small multiple of the
// tensor's own bytes, whatever its shape claims.
func FromTensorProto(t *tbpb.TensorProto) (Array, error) {
	if t.GetTensorShape().GetUnknownRank() {
		return Array{}, fmt.Errorf("tensor has unknown rank")
	}
	var shape []int64
	for _, d := range t.GetTensorShape().GetDim() {
		shape = append(shape, d.GetSize())
	}
	n, err := Elements(shape)
	if err != nil {
		return Array{}, err
	}
	if t.GetDtype() == tbpb.DataType_DT_STRING {
		vals := t.GetStringVal()
		if int64(len(vals)) != n {
			return Array{}, fmt.Errorf("tensor of shape %v has %s for its %d elements", shape, plural(len(vals), "string"), n)
		}
		width := 1
		for _, v := range vals {
			width = max(width, len(v))
		}
		return Array{Descr: fmt.Sprintf("|S%d", width), Shape: shape, Strings: vals}, nil
	}
	el, ok := elements[t.GetDtype()]
	if !ok {
		return Array{}, fmt.Errorf("dtype %s has no NumPy equivalent", t.GetDtype())
	}
	if c := t.GetTensorContent(); len(c) > 0 {
		stored := el.width
		if t.GetDtype() == tbpb.DataType_DT_BFLOAT16 {
			stored = 2
		}
		want, err := bytesOf(n, stored, shape)
		if err != nil {
			return Array{}, err
		}
		if int64(len(c)) != want {
			return Array{}, fmt.Errorf("tensor_content has %d bytes for %d elements of %d bytes", len(c), n, stored)
		}
		if t.GetDtype() != tbpb.DataType_DT_BFLOAT16 {
			return Array{Descr: el.descr, Shape: shape, Data: c}, nil // shared, not copied: arrays are only read
		}
		out := Array{Descr: el.descr, Shape: shape, Data: make([]byte, 2*len(c))}
		for i := range len(c) / 2 {
			binary.LittleEndian.PutUint32(out.Data[4*i:], uint32(binary.LittleEndian.Uint16(c[2*i:]))<<16)
		}
		return out, nil
	}
	vals, present := typedValues(t)
	perElement := 1
	if t.GetDtype() == tbpb.DataType_DT_COMPLEX64 || t.GetDtype() == tbpb.DataType_DT_COMPLEX128 {
		perElement = 2 // real and imaginary parts
	}
	if present%perElement != 0 || int64(present/perElement) != n {
		return Array{}, fmt.Errorf("tensor of shape %v has %s for its %d elements", shape, plural(present, "value"), n)
	}
	count := int(n)
	out := Array{Descr: el.descr, Shape: shape, Data: make([]byte, count*el.width)}
	for i := range count {
		b := out.Data[i*el.width:]
		switch el.width {
		case 1:
			b[0] = byte(vals[i])
		case 2:
			binary.LittleEndian.PutUint16(b, uint16(vals[i]))
		case 4:
			binary.LittleEndian.PutUint32(b, uint32(vals[i]))
		case 8:
			binary.LittleEndian.PutUint64(b, vals[i])
		case 16: // complex128: vals holds (real, imaginary) pairs
			binary.LittleEndian.PutUint64(b, vals[2*i])
			binary.LittleEndian.PutUint64(b[8:], vals[2*i+1])
		}
	}
	return out, nil
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// typedValues returns the tensor's typed values as the bit patterns of its NumPy
// element (complex128 as consecutive real and imaginary parts), and how many
// numbers the proto's value list holds.
func typedValues(t *tbpb.TensorProto) ([]uint64, int) {
	var out []uint64
	present := -1
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
		present = len(v)
		for i := 0; i+1 < len(v); i += 2 {
			out = append(out, uint64(math.Float32bits(v[i]))|uint64(math.Float32bits(v[i+1]))<<32)
		}
	case tbpb.DataType_DT_COMPLEX128:
		for _, f := range t.GetDcomplexVal() {
			out = append(out, math.Float64bits(f))
		}
	}
	if present < 0 {
		present = len(out)
	}
	return out, present
}
