package route

import (
	"encoding/binary"
	"math"
	"net/http"

	tbpb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard"
)

// badTensor is a stored tensor the API cannot show: the client's 400 (the
// data was stored by an uploader; the server is fine), and in a
// timeSeries batch an error of its entry only.
func badTensor(format string, args ...any) error {
	return Errorf(http.StatusBadRequest, "stored tensor cannot be shown: "+format, args...)
}

// shapeOf returns a tensor's dimension sizes.
func ShapeOf(t *tbpb.TensorProto) []int64 {
	dims := t.GetTensorShape().GetDim()
	out := make([]int64, len(dims))
	for i, d := range dims {
		out[i] = d.GetSize()
	}
	return out
}

// maxElements bounds the tensors the API decodes: stored tensors are
// small (TensorBoard's are at most a few KB), and a shape is only a
// claim, so a huge one must not make the server allocate for it.
const maxElements = 1 << 22

// elementCount is the number of elements the tensor's shape declares (1
// for a scalar); an error if a dimension is negative or the count exceeds
// maxElements.
func elementCount(t *tbpb.TensorProto) (int64, error) {
	n := int64(1)
	for _, d := range ShapeOf(t) {
		if d < 0 || (d > 0 && n > maxElements/d) {
			return 0, badTensor("tensor shape %v: unsupported size", ShapeOf(t))
		}
		n *= d
	}
	if n > maxElements {
		return 0, badTensor("tensor shape %v: unsupported size", ShapeOf(t))
	}
	return n, nil
}

// tensorFloats decodes a numeric tensor to float64s in row-major order, as
// TensorFlow's make_ndarray does: tensor_content when present, else the
// typed value field, whose single value fills the tensor when it holds
// fewer values than elements.
func TensorFloats(t *tbpb.TensorProto) ([]float64, error) {
	n, err := elementCount(t)
	if err != nil {
		return nil, err
	}
	if c := t.GetTensorContent(); len(c) > 0 {
		return decodeContent(t.GetDtype(), c, n)
	}
	var vals []float64
	switch t.GetDtype() {
	case tbpb.DataType_DT_FLOAT:
		for _, v := range t.GetFloatVal() {
			vals = append(vals, float64(v))
		}
	case tbpb.DataType_DT_DOUBLE:
		vals = append(vals, t.GetDoubleVal()...)
	case tbpb.DataType_DT_HALF, tbpb.DataType_DT_BFLOAT16:
		for _, v := range t.GetHalfVal() {
			vals = append(vals, halfToFloat(t.GetDtype(), uint16(v)))
		}
	case tbpb.DataType_DT_INT8, tbpb.DataType_DT_INT16, tbpb.DataType_DT_INT32, tbpb.DataType_DT_UINT8, tbpb.DataType_DT_UINT16:
		for _, v := range t.GetIntVal() {
			vals = append(vals, float64(v))
		}
	case tbpb.DataType_DT_INT64:
		for _, v := range t.GetInt64Val() {
			vals = append(vals, float64(v))
		}
	case tbpb.DataType_DT_UINT32:
		for _, v := range t.GetUint32Val() {
			vals = append(vals, float64(v))
		}
	case tbpb.DataType_DT_UINT64:
		for _, v := range t.GetUint64Val() {
			vals = append(vals, float64(v))
		}
	case tbpb.DataType_DT_BOOL:
		for _, v := range t.GetBoolVal() {
			if v {
				vals = append(vals, 1)
			} else {
				vals = append(vals, 0)
			}
		}
	default:
		return nil, badTensor("tensor of type %v is not numeric", t.GetDtype())
	}
	return fill(vals, n)
}

// fill repeats the last value to n elements (TensorFlow's rule for
// shortened typed fields); zeros when there is none.
func fill(vals []float64, n int64) ([]float64, error) {
	if int64(len(vals)) > n {
		return nil, badTensor("tensor holds %d values for %d elements", len(vals), n)
	}
	last := 0.0
	if len(vals) > 0 {
		last = vals[len(vals)-1]
	}
	for int64(len(vals)) < n {
		vals = append(vals, last)
	}
	return vals, nil
}

func decodeContent(dt tbpb.DataType, c []byte, n int64) ([]float64, error) {
	width := map[tbpb.DataType]int{
		tbpb.DataType_DT_FLOAT: 4, tbpb.DataType_DT_DOUBLE: 8, tbpb.DataType_DT_HALF: 2, tbpb.DataType_DT_BFLOAT16: 2,
		tbpb.DataType_DT_INT8: 1, tbpb.DataType_DT_UINT8: 1, tbpb.DataType_DT_INT16: 2, tbpb.DataType_DT_UINT16: 2,
		tbpb.DataType_DT_INT32: 4, tbpb.DataType_DT_UINT32: 4, tbpb.DataType_DT_INT64: 8, tbpb.DataType_DT_UINT64: 8,
		tbpb.DataType_DT_BOOL: 1,
	}[dt]
	if width == 0 {
		return nil, badTensor("tensor of type %v is not numeric", dt)
	}
	if int64(len(c)) != n*int64(width) {
		return nil, badTensor("tensor_content has %d bytes for %d elements of %d", len(c), n, width)
	}
	out := make([]float64, n)
	le := binary.LittleEndian
	for i := range out {
		b := c[i*width:]
		switch dt {
		case tbpb.DataType_DT_FLOAT:
			out[i] = float64(math.Float32frombits(le.Uint32(b)))
		case tbpb.DataType_DT_DOUBLE:
			out[i] = math.Float64frombits(le.Uint64(b))
		case tbpb.DataType_DT_HALF, tbpb.DataType_DT_BFLOAT16:
			out[i] = halfToFloat(dt, le.Uint16(b))
		case tbpb.DataType_DT_INT8:
			out[i] = float64(int8(b[0]))
		case tbpb.DataType_DT_UINT8, tbpb.DataType_DT_BOOL:
			out[i] = float64(b[0])
		case tbpb.DataType_DT_INT16:
			out[i] = float64(int16(le.Uint16(b)))
		case tbpb.DataType_DT_UINT16:
			out[i] = float64(le.Uint16(b))
		case tbpb.DataType_DT_INT32:
			out[i] = float64(int32(le.Uint32(b)))
		case tbpb.DataType_DT_UINT32:
			out[i] = float64(le.Uint32(b))
		case tbpb.DataType_DT_INT64:
			out[i] = float64(int64(le.Uint64(b)))
		case tbpb.DataType_DT_UINT64:
			out[i] = float64(le.Uint64(b))
		}
	}
	return out, nil
}

// halfToFloat converts IEEE half or bfloat16 bits.
func halfToFloat(dt tbpb.DataType, h uint16) float64 {
	if dt == tbpb.DataType_DT_BFLOAT16 {
		return float64(math.Float32frombits(uint32(h) << 16))
	}
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	frac := uint32(h) & 0x3ff
	switch {
	case exp == 0 && frac == 0:
		return float64(math.Float32frombits(sign))
	case exp == 0: // subnormal
		v := float64(frac) / 1024 * math.Pow(2, -14)
		if sign != 0 {
			v = -v
		}
		return v
	case exp == 0x1f:
		return float64(math.Float32frombits(sign | 0xff<<23 | frac<<13))
	}
	return float64(math.Float32frombits(sign | (exp+112)<<23 | frac<<13))
}

// tensorStrings returns a string tensor's elements in row-major order.
func TensorStrings(t *tbpb.TensorProto) ([][]byte, error) {
	if t.GetDtype() != tbpb.DataType_DT_STRING {
		return nil, badTensor("tensor of type %v is not a string tensor", t.GetDtype())
	}
	n, err := elementCount(t)
	if err != nil {
		return nil, err
	}
	vals := t.GetStringVal()
	if int64(len(vals)) > n {
		return nil, badTensor("tensor holds %d strings for %d elements", len(vals), n)
	}
	for int64(len(vals)) < n {
		var last []byte
		if len(vals) > 0 {
			last = vals[len(vals)-1]
		}
		vals = append(vals, last)
	}
	return vals, nil
}

// rows splits a row-major [k, width] array into k rows.
func Rows(vals []float64, width int) [][]float64 {
	if width <= 0 {
		return nil
	}
	out := make([][]float64, 0, len(vals)/width)
	for i := 0; i+width <= len(vals); i += width {
		out = append(out, vals[i:i+width])
	}
	return out
}
