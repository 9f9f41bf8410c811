package migrate

import (
	"encoding/binary"
	"math"
	"strconv"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/tbhub/tbhub/uploader/internal/event"
)

// Marshal serializes the metadata as a tensorboard.SummaryMetadata, the form the
// write service stores and returns.
func (m *Metadata) Marshal() []byte {
	var pd []byte
	if m.PluginName != "" {
		pd = protowire.AppendTag(pd, 1, protowire.BytesType)
		pd = protowire.AppendString(pd, m.PluginName)
	}
	if len(m.PluginContent) > 0 {
		pd = protowire.AppendTag(pd, 2, protowire.BytesType)
		pd = protowire.AppendBytes(pd, m.PluginContent)
	}
	var b []byte
	if len(pd) > 0 {
		b = protowire.AppendTag(b, 1, protowire.BytesType)
		b = protowire.AppendBytes(b, pd)
	}
	if m.DisplayName != "" {
		b = protowire.AppendTag(b, 2, protowire.BytesType)
		b = protowire.AppendString(b, m.DisplayName)
	}
	if m.Description != "" {
		b = protowire.AppendTag(b, 3, protowire.BytesType)
		b = protowire.AppendString(b, m.Description)
	}
	if m.DataClass != ClassUnknown {
		b = protowire.AppendTag(b, 4, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(m.DataClass))
	}
	return b
}

// AppendTensorProto appends the point's value as a serialized tensorboard.TensorProto,
// migrated as TensorBoard's Python uploader migrates it (legacy histograms become
// [k,3] float32 tensors of (left, right, count) with empty edge buckets trimmed,
// images [3] strings, audio [1,2] strings, a missing value the null tensor).
func AppendTensorProto(dst []byte, p *Point) []byte {
	if p.Kind != FromValue {
		return appendStringTensor(dst, []int64{1}, p.Blob)
	}
	v := p.Value
	switch v.Kind {
	case event.ValueTensor:
		for _, raw := range v.Tensor.Raw { // concatenated occurrences are the merged message
			dst = append(dst, raw...)
		}
		return dst
	case event.ValueSimple:
		dst = appendTensorHeader(dst, DTFloat, nil)
		dst = protowire.AppendTag(dst, 5, protowire.BytesType)
		dst = protowire.AppendVarint(dst, 4)
		return binary.LittleEndian.AppendUint32(dst, math.Float32bits(v.Simple))
	case event.ValueHisto:
		h := &v.Histo
		first, last := histoRange(h)
		k := last - first
		dst = appendTensorHeader(dst, DTFloat, []int64{int64(k), 3})
		if k == 0 {
			return dst
		}
		dst = protowire.AppendTag(dst, 4, protowire.BytesType)
		dst = protowire.AppendVarint(dst, uint64(k*3*4))
		for i := first; i < last; i++ {
			left, right := h.Min, h.Max
			if i > first {
				left = limit(h, i-1)
			}
			if i < last-1 {
				right = limit(h, i)
			}
			for _, f := range [3]float64{left, right, h.Bucket[i]} {
				dst = binary.LittleEndian.AppendUint32(dst, math.Float32bits(float32(f)))
			}
		}
		return dst
	case event.ValueImage:
		var w, hgt [24]byte
		return appendStringTensor(dst, []int64{3},
			strconv.AppendInt(w[:0], int64(v.Image.Width), 10), strconv.AppendInt(hgt[:0], int64(v.Image.Height), 10), v.Image.Encoded)
	case event.ValueAudio:
		return appendStringTensor(dst, []int64{1, 2}, v.Audio.Encoded, nil)
	case event.ValueOldHistogram:
		return appendTensorHeader(dst, DTInvalid, nil)
	}
	return appendTensorHeader(dst, DTFloat, []int64{0})
}

// limit is bucket_limit[i], or +Inf where a malformed histogram has too few limits.
func limit(h *event.Histogram, i int) float64 {
	if i < len(h.BucketLimit) {
		return h.BucketLimit[i]
	}
	return math.Inf(1)
}

func appendTensorHeader(dst []byte, dtype int32, dims []int64) []byte {
	if dtype != 0 {
		dst = protowire.AppendTag(dst, 1, protowire.VarintType)
		dst = protowire.AppendVarint(dst, uint64(dtype))
	}
	var shape []byte
	for _, d := range dims {
		var dim []byte
		if d != 0 {
			dim = protowire.AppendTag(dim, 1, protowire.VarintType)
			dim = protowire.AppendVarint(dim, uint64(d))
		}
		shape = protowire.AppendTag(shape, 2, protowire.BytesType)
		shape = protowire.AppendBytes(shape, dim)
	}
	dst = protowire.AppendTag(dst, 2, protowire.BytesType)
	return protowire.AppendBytes(dst, shape)
}

func appendStringTensor(dst []byte, dims []int64, vals ...[]byte) []byte {
	dst = appendTensorHeader(dst, DTString, dims)
	for _, s := range vals {
		dst = protowire.AppendTag(dst, 8, protowire.BytesType)
		dst = protowire.AppendBytes(dst, s)
	}
	return dst
}
