// Package scalarchunk is the compressed encoding of a run of scalar points
// (step, wall time, value) of one series: the unit a store keeps in one
// row, blob or cell. It is lossless to the bit (every float64, NaN payloads,
// ±Inf and -0 included) and costs a few bytes per point on typical
// TensorBoard series instead of the 24 of three raw 8-byte numbers.
//
// # Layout
//
// A chunk is a header, readable without decoding the rest (ReadHeader),
// then a bit stream (most significant bit first, the last byte padded with
// zero bits). The header:
//
//	format   1 byte: version (high 3 bits, 1), the wall time scale (2 bits)
//	         and flags (low 3 bits): flagFloat32 values are float32s
//	         widened to float64, flagSpecials NaN/±Inf counts follow,
//	         flagFinite min/max follow; an empty chunk has only the version
//	count    uvarint, number of points (0: the chunk ends here)
//	first    varint, the first step
//	span     uvarint, last step - first step
//	[nan, posInf, negInf]   uvarints, if flagSpecials
//	firstValue, lastValue   4 bytes (float32 bits) if flagFloat32, else 8
//	[min, max]              likewise, over finite values, if flagFinite
//
// Numbers of 4 or 8 bytes are little-endian IEEE-754 bits. The bit stream
// holds the first point's wall time as 64 raw bits, then per later point
// its step, its wall time and its value's bits (float32 bits if
// flagFloat32, else float64; the first value is the header's), each read
// as an integer, modulo 2^64, and written as its residual from a
// prediction (numCodec): the previous number (delta coding) or the
// previous number plus the previous difference (delta of deltas), chosen
// by which has recently done better, so a regular step or clock costs one
// bit. Residuals are Rice-coded with a parameter that follows their recent
// size, so a noisy value costs about the entropy of its noise plus a bit.
//
// The wall time is its float64 bits (scale 0), or when every wall time of
// the chunk is below 9e9 s and a whole number of microseconds (1),
// milliseconds (2) or seconds (3), that number: w == float64(n)/1e6 to the
// bit, as TensorFlow's C++ writer (NowMicros()/1e6) and writers that round
// to the second give. Appending a point that the chunk's value or wall
// time form cannot hold rewrites the chunk in the wider form.
//
// Why not XOR, as Gorilla (Pelkonen et al., VLDB 2015; Prometheus
// tsdb/chunkenc/xor.go): the float64 bits of a wall time around 1.7e9 s
// are a fixed-point number (the exponent does not change for decades), so
// the difference of differences of those integers is the clock's jitter in
// units of 2^-22 s, which costs about 2.4 B per point for ±20% jitter
// where XOR took 4.5 B; the difference also beat XOR on float32 values,
// and Rice codes beat Gorilla's windows of meaningful bits by about 0.6 B
// per point (docs/capacity.md, "Series encoding", has the measurements).
//
// Steps strictly increase within a chunk: Append rejects any other step
// with ErrStepOrder, and the store splits or merges chunks to keep it so.
package scalarchunk

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/tbhub/tbhub/services/internal/storage/store"
)

var (
	// ErrStepOrder: a point's step is not above the chunk's last step.
	ErrStepOrder = errors.New("scalarchunk: step not above the last step of the chunk")
	// ErrCorrupt: the bytes are not a chunk this package wrote.
	ErrCorrupt = errors.New("scalarchunk: corrupt chunk")
)

const (
	version      = 1
	versionShift = 5
	scaleShift   = 3
	flagFloat32  = 1 << 0
	flagSpecials = 1 << 1
	flagFinite   = 1 << 2
)

// Header summarizes a chunk's points.
type Header struct {
	Count               int
	FirstStep, LastStep int64
	// First and Last are the values of the first and last points.
	First, Last float64
	// Min and Max are over the finite values (the first one seen wins a
	// tie of -0 and +0); both are 0 when no value is finite.
	Min, Max float64
	// NaN, PosInf and NegInf count the values that are NaN, +Inf, -Inf.
	NaN, PosInf, NegInf int
}

// Finite is the number of finite values.
func (h Header) Finite() int { return h.Count - h.NaN - h.PosInf - h.NegInf }

// same tells whether h and o are equal, their floats to the bit.
func (h Header) same(o Header) bool {
	hf, of := [4]*float64{&h.First, &h.Last, &h.Min, &h.Max}, [4]*float64{&o.First, &o.Last, &o.Min, &o.Max}
	for i := range hf {
		if math.Float64bits(*hf[i]) != math.Float64bits(*of[i]) {
			return false
		}
		*hf[i], *of[i] = 0, 0
	}
	return h == o
}

// add counts p, the point after the others, into h.
func (h *Header) add(p store.ScalarPoint) {
	if h.Count == 0 {
		h.FirstStep, h.First = p.Step, p.Value
	}
	h.Count++
	h.LastStep, h.Last = p.Step, p.Value
	// Every point of a chunk is counted as it is decoded: the finite
	// value, the usual one, takes one test to tell apart (v-v is 0 for a
	// finite v, NaN for NaN and ±Inf).
	switch v := p.Value; {
	case v-v != 0:
		switch {
		case v != v:
			h.NaN++
		case v > 0:
			h.PosInf++
		default:
			h.NegInf++
		}
	case h.Finite() == 1:
		h.Min, h.Max = v, v
	case v < h.Min:
		h.Min = v
	case v > h.Max:
		h.Max = v
	}
}

// form is how a chunk's points are written.
type form struct {
	float32   bool  // values are float32s widened
	wallScale uint8 // wall times: 0 float64 bits, else ticks of wallUnits[wallScale]
}

// appendHeader appends h's encoding to dst.
func appendHeader(dst []byte, h *Header, f form) []byte {
	if h.Count == 0 {
		return append(dst, version<<versionShift, 0)
	}
	format := byte(version<<versionShift) | f.wallScale<<scaleShift
	if f.float32 {
		format |= flagFloat32
	}
	specials := h.NaN+h.PosInf+h.NegInf > 0
	if specials {
		format |= flagSpecials
	}
	if h.Finite() > 0 {
		format |= flagFinite
	}
	dst = append(dst, format)
	dst = binary.AppendUvarint(dst, uint64(h.Count))
	dst = binary.AppendVarint(dst, h.FirstStep)
	dst = binary.AppendUvarint(dst, uint64(h.LastStep)-uint64(h.FirstStep))
	if specials {
		dst = binary.AppendUvarint(dst, uint64(h.NaN))
		dst = binary.AppendUvarint(dst, uint64(h.PosInf))
		dst = binary.AppendUvarint(dst, uint64(h.NegInf))
	}
	values := []float64{h.First, h.Last, h.Min, h.Max}
	if h.Finite() == 0 {
		values = values[:2]
	}
	for _, v := range values {
		if f.float32 {
			dst = binary.LittleEndian.AppendUint32(dst, narrow(v))
		} else {
			dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(v))
		}
	}
	return dst
}

// ReadHeader reads the header of chunk without decoding its points.
func ReadHeader(chunk []byte) (Header, error) {
	h, _, _, err := parseHeader(chunk)
	return h, err
}

// parseHeader returns chunk's header, its form, and the bit stream after
// the header.
func parseHeader(chunk []byte) (h Header, f form, body []byte, err error) {
	bad := func(what string) (Header, form, []byte, error) {
		return Header{}, form{}, nil, fmt.Errorf("%w: %s", ErrCorrupt, what)
	}
	if len(chunk) == 0 || chunk[0]>>versionShift != version {
		return bad("unknown format")
	}
	format, b := chunk[0], chunk[1:]
	f = form{float32: format&flagFloat32 != 0, wallScale: format >> scaleShift & 3}
	uvarint := func() uint64 {
		v, n := binary.Uvarint(b)
		if n <= 0 {
			b, err = nil, ErrCorrupt
			return 0
		}
		b = b[n:]
		return v
	}
	count := uvarint()
	if err != nil || count > uint64(len(chunk))*8 {
		return bad("point count")
	}
	h.Count = int(count)
	if count == 0 {
		if format != version<<versionShift || len(b) != 0 {
			return bad("empty chunk with points")
		}
		return h, f, nil, nil
	}
	first, n := binary.Varint(b)
	if n <= 0 {
		return bad("first step")
	}
	b = b[n:]
	h.FirstStep = first
	h.LastStep = int64(uint64(first) + uvarint())
	if format&flagSpecials != 0 {
		h.NaN, h.PosInf, h.NegInf = int(uvarint()), int(uvarint()), int(uvarint())
		if err != nil || uint64(h.NaN)+uint64(h.PosInf)+uint64(h.NegInf) > count || h.Finite() < 0 {
			return bad("special value counts")
		}
	}
	if err != nil || h.LastStep < h.FirstStep || (count == 1) != (h.LastStep == h.FirstStep) {
		return bad("step range")
	}
	if (h.Finite() > 0) != (format&flagFinite != 0) {
		return bad("finite flag")
	}
	values := []*float64{&h.First, &h.Last, &h.Min, &h.Max}
	if h.Finite() == 0 {
		values = values[:2]
	}
	for _, v := range values {
		if f.float32 {
			if len(b) < 4 {
				return bad("values")
			}
			*v = math.Float64frombits(widen(binary.LittleEndian.Uint32(b)))
			b = b[4:]
		} else {
			if len(b) < 8 {
				return bad("values")
			}
			*v = math.Float64frombits(binary.LittleEndian.Uint64(b))
			b = b[8:]
		}
	}
	return h, f, b, nil
}

// widen returns the float64 bits of the float32 with bits f, NaN payloads
// kept (shifted into the top of the float64's mantissa), the same on every
// machine.
func widen(f uint32) uint64 {
	if f>>23&0xff == 0xff { // ±Inf, NaN: conversion may touch a NaN's bits
		return uint64(f>>31)<<63 | 0x7ff<<52 | uint64(f&0x7fffff)<<29
	}
	return math.Float64bits(float64(math.Float32frombits(f))) // exact
}

// narrow returns the float32 bits that widen to v, for a v that isFloat32.
func narrow(v float64) uint32 {
	b := math.Float64bits(v)
	if v != v {
		return uint32(b>>63)<<31 | 0xff<<23 | uint32(b>>29)&0x7fffff
	}
	return math.Float32bits(float32(v))
}

// isFloat32 tells whether v is a float32 widened, to the bit.
func isFloat32(v float64) bool {
	return widen(narrow(v)) == math.Float64bits(v)
}

// wallUnits are the ticks per second of the wall time scales 1 to 3.
var wallUnits = [...]float64{1: 1e6, 2: 1e3, 3: 1}

// maxTickWall bounds the wall times written as ticks: below it, a number
// of µs is exact in a float64, so a wall time that is a whole number of
// seconds is one of milliseconds and one of microseconds too, and the
// scales nest (a chunk's scale is the coarsest that holds every point
// because it holds each). 9e9 s is in the year 2255.
const maxTickWall = 9e9

// wallTicks returns wall time w as a number of ticks of scale (its float64
// bits for scale 0), and whether it is exactly one.
func wallTicks(w float64, scale uint8) (uint64, bool) {
	if scale == 0 {
		return math.Float64bits(w), true
	}
	if !(math.Abs(w) < maxTickWall) {
		return 0, false
	}
	n := int64(math.Round(w * wallUnits[scale]))
	return uint64(n), math.Float64bits(wallOf(uint64(n), scale)) == math.Float64bits(w)
}

// wallOf is the wall time of ticks of scale.
func wallOf(ticks uint64, scale uint8) float64 {
	if scale == 0 {
		return math.Float64frombits(ticks)
	}
	return float64(int64(ticks)) / wallUnits[scale]
}

// wallScaleOf is the coarsest scale, not above max, that holds w.
func wallScaleOf(w float64, max uint8) uint8 {
	for s := max; s > 0; s-- {
		if _, ok := wallTicks(w, s); ok {
			return s
		}
	}
	return 0
}
