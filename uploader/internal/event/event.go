// Package event decodes serialized tensorboard.Event records without the generic
// protobuf runtime.
//
// Event files hold millions of small records, and the uploader's budget is a few
// hundred nanoseconds per event, so the decoder parses the wire format directly
// into reusable structs whose byte fields point into the record buffer: decoding
// allocates nothing once the structs have grown to the file's shapes.
//
// The decoder accepts exactly what a conforming proto3 parser accepts for the
// messages it knows (Event, Summary, Summary.Value, SummaryMetadata, PluginData,
// TensorProto, TensorShapeProto, HistogramProto, Summary.Image, Summary.Audio,
// TaggedRunMetadata, SessionLog, LogMessage, SourceMetadata; ResourceHandle and
// Variant protos at wire level only): well-formed wire format, valid UTF-8 in
// string fields, unknown fields and known fields with another wire type skipped,
// the last oneof member winning, repeated occurrences of a singular message
// merged, and scalar fields last-one-wins.
package event

import (
	"errors"
	"fmt"
	"math"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"
)

// What says which member of Event's "what" oneof is set.
type What uint8

// Members of Event.what.
const (
	WhatNone What = iota
	WhatFileVersion
	WhatGraphDef
	WhatSummary
	WhatLogMessage
	WhatSessionLog
	WhatTaggedRunMetadata
	WhatMetaGraphDef
)

// ValueKind says which member of Summary.Value's "value" oneof is set.
type ValueKind uint8

// Members of Summary.Value.value.
const (
	ValueNone ValueKind = iota
	ValueSimple
	ValueOldHistogram
	ValueImage
	ValueHisto
	ValueAudio
	ValueTensor
)

// Event is a decoded tensorboard.Event. Byte slices alias the record buffer.
type Event struct {
	WallTime          float64
	Step              int64
	What              What
	FileVersion       []byte
	GraphDef          []byte // also set, possibly empty, when What == WhatGraphDef
	MetaGraphDef      []byte
	Summary           Summary
	TaggedRunMetadata TaggedRunMetadata
}

// TaggedRunMetadata is tensorboard.TaggedRunMetadata.
type TaggedRunMetadata struct {
	Tag         []byte
	RunMetadata []byte
}

// Summary is tensorboard.Summary.
type Summary struct {
	Values []Value
}

// Metadata is tensorboard.SummaryMetadata.
type Metadata struct {
	Present       bool
	PluginName    []byte
	PluginContent []byte
	DisplayName   []byte
	Description   []byte
	DataClass     int32
}

// Image is Summary.Image.
type Image struct {
	Height, Width, Colorspace int32
	Encoded                   []byte
}

// Audio is Summary.Audio.
type Audio struct {
	SampleRate   float32
	NumChannels  int64
	LengthFrames int64
	Encoded      []byte
	ContentType  []byte
}

// Histogram is tensorboard.HistogramProto.
type Histogram struct {
	Min, Max, Num, Sum, SumSquares float64
	BucketLimit                    []float64
	Bucket                         []float64
}

// Value is Summary.Value.
type Value struct {
	Tag          []byte
	Metadata     Metadata
	Kind         ValueKind
	Simple       float32
	OldHistogram []byte
	Image        Image
	Audio        Audio
	Histo        Histogram
	Tensor       Tensor
}

// Typed value lists of TensorProto, by index into Tensor.Vals.
const (
	ValFloat = iota
	ValDouble
	ValInt
	ValInt64
	ValBool
	ValHalf
	ValUint32
	ValUint64
	ValComplex64
	ValComplex128
	numVals
)

// ValList records how many elements a typed *_val field holds and the bits of its first
// element (float bits for float/double, the integer otherwise). That is all the
// uploader's scalar and shape logic needs; the tensor itself travels as Raw.
type ValList struct {
	N     int
	First uint64
}

// Tensor is tensorboard.TensorProto, summarized.
type Tensor struct {
	// Raw holds the serialized TensorProto: one slice per occurrence on the wire
	// (concatenating them gives the merged message).
	Raw         [][]byte
	DType       int32
	Dims        []int64
	UnknownRank bool
	Content     []byte
	Vals        [numVals]ValList
	StringVal   [][]byte
}

// NumElements is the product of the dims (1 for rank 0); -1 if the rank is unknown.
func (t *Tensor) NumElements() int64 {
	if t.UnknownRank {
		return -1
	}
	n := int64(1)
	for _, d := range t.Dims {
		n *= d
	}
	return n
}

// ErrMalformed wraps every decoding failure.
var ErrMalformed = errors.New("malformed event")

func malformed(msg string, field protowire.Number) error {
	return fmt.Errorf("%w: %s (field %d)", ErrMalformed, msg, field)
}

// Decode parses b into ev, reusing ev's buffers. On error ev's contents are undefined.
func Decode(b []byte, ev *Event) error {
	ev.WallTime, ev.Step, ev.What = 0, 0, WhatNone
	ev.FileVersion, ev.GraphDef, ev.MetaGraphDef = nil, nil, nil
	ev.Summary.Values = ev.Summary.Values[:0]
	ev.TaggedRunMetadata = TaggedRunMetadata{}
	for len(b) > 0 {
		num, typ, n := consumeTag(b)
		if n < 0 {
			return malformed("bad tag", 0)
		}
		b = b[n:]
		var err error
		switch {
		case num == 1 && typ == protowire.Fixed64Type:
			v, m := protowire.ConsumeFixed64(b)
			ev.WallTime, n = math.Float64frombits(v), m
		case num == 2 && typ == protowire.VarintType:
			v, m := protowire.ConsumeVarint(b)
			ev.Step, n = int64(v), m
		case num == 3 && typ == protowire.BytesType:
			var s []byte
			s, n = protowire.ConsumeBytes(b)
			if n >= 0 && !utf8.Valid(s) {
				return malformed("file_version is not UTF-8", num)
			}
			ev.setWhat(WhatFileVersion)
			ev.FileVersion = s
		case num == 4 && typ == protowire.BytesType:
			var s []byte
			s, n = protowire.ConsumeBytes(b)
			ev.setWhat(WhatGraphDef)
			ev.GraphDef = s
			if ev.GraphDef == nil {
				ev.GraphDef = []byte{}
			}
		case num == 5 && typ == protowire.BytesType:
			var s []byte
			if s, n = protowire.ConsumeBytes(b); n >= 0 {
				ev.setWhat(WhatSummary)
				err = decodeSummary(s, &ev.Summary)
			}
		case num == 6 && typ == protowire.BytesType:
			var s []byte
			if s, n = protowire.ConsumeBytes(b); n >= 0 {
				ev.setWhat(WhatLogMessage)
				err = checkStrings(s, 2)
			}
		case num == 7 && typ == protowire.BytesType:
			var s []byte
			if s, n = protowire.ConsumeBytes(b); n >= 0 {
				ev.setWhat(WhatSessionLog)
				err = checkStrings(s, 2, 3)
			}
		case num == 8 && typ == protowire.BytesType:
			var s []byte
			if s, n = protowire.ConsumeBytes(b); n >= 0 {
				ev.setWhat(WhatTaggedRunMetadata)
				err = decodeTaggedRunMetadata(s, &ev.TaggedRunMetadata)
			}
		case num == 9 && typ == protowire.BytesType:
			var s []byte
			s, n = protowire.ConsumeBytes(b)
			ev.setWhat(WhatMetaGraphDef)
			ev.MetaGraphDef = s
		case num == 10 && typ == protowire.BytesType:
			var s []byte
			if s, n = protowire.ConsumeBytes(b); n >= 0 {
				err = checkStrings(s, 1)
			}
		default:
			n = skipField(num, typ, b)
		}
		if n < 0 {
			return malformed("truncated or invalid field", num)
		}
		if err != nil {
			return err
		}
		b = b[n:]
	}
	return nil
}

// setWhat switches the oneof; switching to another member clears the previous one,
// while the same message member arriving again is merged into.
func (ev *Event) setWhat(w What) {
	if ev.What == w {
		return
	}
	ev.What = w
	ev.Summary.Values = ev.Summary.Values[:0]
	ev.TaggedRunMetadata = TaggedRunMetadata{}
}

// consumeTag reads a field tag, rejecting field numbers outside 1..2^29-1 as protobuf does.
func consumeTag(b []byte) (protowire.Number, protowire.Type, int) {
	num, typ, n := protowire.ConsumeTag(b)
	if n >= 0 && num > protowire.MaxValidNumber {
		return 0, 0, -1
	}
	return num, typ, n
}

// skipField consumes an unknown field (or a known one with an unexpected wire type),
// rejecting what protobuf rejects: wire types 6 and 7, a stray end-group, malformed
// groups and varints.
func skipField(num protowire.Number, typ protowire.Type, b []byte) int {
	if typ == protowire.EndGroupType {
		return -1
	}
	return protowire.ConsumeFieldValue(num, typ, b)
}

// checkStrings validates a message whose only interesting content is string fields at
// the given numbers (LogMessage, SessionLog, SourceMetadata): well-formed, valid UTF-8.
func checkStrings(b []byte, stringFields ...protowire.Number) error {
	for len(b) > 0 {
		num, typ, n := consumeTag(b)
		if n < 0 {
			return malformed("bad tag", 0)
		}
		b = b[n:]
		isString := false
		if typ == protowire.BytesType {
			for _, f := range stringFields {
				isString = isString || f == num
			}
		}
		if isString {
			s, m := protowire.ConsumeBytes(b)
			if m >= 0 && !utf8.Valid(s) {
				return malformed("string is not UTF-8", num)
			}
			n = m
		} else {
			n = skipField(num, typ, b)
		}
		if n < 0 {
			return malformed("truncated or invalid field", num)
		}
		b = b[n:]
	}
	return nil
}

// checkWire validates a message known only at wire level (ResourceHandleProto,
// VariantTensorDataProto).
func checkWire(b []byte) error { return checkStrings(b) }

func consumeString(b []byte, num protowire.Number) ([]byte, int, error) {
	s, n := protowire.ConsumeBytes(b)
	if n >= 0 && !utf8.Valid(s) {
		return nil, n, malformed("string is not UTF-8", num)
	}
	return s, n, nil
}

func decodeTaggedRunMetadata(b []byte, t *TaggedRunMetadata) error {
	for len(b) > 0 {
		num, typ, n := consumeTag(b)
		if n < 0 {
			return malformed("bad tag", 0)
		}
		b = b[n:]
		var err error
		switch {
		case num == 1 && typ == protowire.BytesType:
			t.Tag, n, err = consumeString(b, num)
		case num == 2 && typ == protowire.BytesType:
			t.RunMetadata, n = protowire.ConsumeBytes(b)
		default:
			n = skipField(num, typ, b)
		}
		if n < 0 {
			return malformed("truncated or invalid field", num)
		}
		if err != nil {
			return err
		}
		b = b[n:]
	}
	return nil
}

func decodeSummary(b []byte, s *Summary) error {
	for len(b) > 0 {
		num, typ, n := consumeTag(b)
		if n < 0 {
			return malformed("bad tag", 0)
		}
		b = b[n:]
		if num == 1 && typ == protowire.BytesType {
			v, m := protowire.ConsumeBytes(b)
			if m < 0 {
				return malformed("truncated value", num)
			}
			if err := decodeValue(v, s.nextValue()); err != nil {
				return err
			}
			n = m
		} else {
			n = skipField(num, typ, b)
		}
		if n < 0 {
			return malformed("truncated or invalid field", num)
		}
		b = b[n:]
	}
	return nil
}

// nextValue appends a reset Value, reusing the backing array's inner buffers.
func (s *Summary) nextValue() *Value {
	if len(s.Values) < cap(s.Values) {
		s.Values = s.Values[:len(s.Values)+1]
	} else {
		s.Values = append(s.Values, Value{})
	}
	v := &s.Values[len(s.Values)-1]
	v.reset()
	return v
}

func (v *Value) reset() {
	v.Tag = nil
	v.Metadata = Metadata{}
	v.setKind(ValueNone)
}

// setKind switches the value oneof. Only the member that was set can hold data, so
// only it is cleared: zeroing the whole struct per value is measurable.
func (v *Value) setKind(k ValueKind) {
	if v.Kind == k {
		return
	}
	switch v.Kind {
	case ValueSimple:
		v.Simple = 0
	case ValueOldHistogram:
		v.OldHistogram = nil
	case ValueImage:
		v.Image = Image{}
	case ValueAudio:
		v.Audio = Audio{}
	case ValueHisto:
		v.Histo = Histogram{BucketLimit: v.Histo.BucketLimit[:0], Bucket: v.Histo.Bucket[:0]}
	case ValueTensor:
		v.Tensor.reset()
	}
	v.Kind = k
}

func decodeValue(b []byte, v *Value) error {
	for len(b) > 0 {
		num, typ, n := consumeTag(b)
		if n < 0 {
			return malformed("bad tag", 0)
		}
		b = b[n:]
		var err error
		var s []byte
		switch {
		case num == 1 && typ == protowire.BytesType:
			v.Tag, n, err = consumeString(b, num)
		case num == 2 && typ == protowire.Fixed32Type:
			var bits uint32
			bits, n = protowire.ConsumeFixed32(b)
			v.setKind(ValueSimple)
			v.Simple = math.Float32frombits(bits)
		case num == 3 && typ == protowire.BytesType:
			s, n = protowire.ConsumeBytes(b)
			v.setKind(ValueOldHistogram)
			v.OldHistogram = s
		case num == 4 && typ == protowire.BytesType:
			if s, n = protowire.ConsumeBytes(b); n >= 0 {
				v.setKind(ValueImage)
				err = decodeImage(s, &v.Image)
			}
		case num == 5 && typ == protowire.BytesType:
			if s, n = protowire.ConsumeBytes(b); n >= 0 {
				v.setKind(ValueHisto)
				err = decodeHisto(s, &v.Histo)
			}
		case num == 6 && typ == protowire.BytesType:
			if s, n = protowire.ConsumeBytes(b); n >= 0 {
				v.setKind(ValueAudio)
				err = decodeAudio(s, &v.Audio)
			}
		case num == 7 && typ == protowire.BytesType:
			_, n, err = consumeString(b, num) // node_name: validated, unused
		case num == 8 && typ == protowire.BytesType:
			if s, n = protowire.ConsumeBytes(b); n >= 0 {
				v.setKind(ValueTensor)
				err = decodeTensor(s, &v.Tensor)
			}
		case num == 9 && typ == protowire.BytesType:
			if s, n = protowire.ConsumeBytes(b); n >= 0 {
				err = decodeMetadata(s, &v.Metadata)
			}
		default:
			n = skipField(num, typ, b)
		}
		if n < 0 {
			return malformed("truncated or invalid field", num)
		}
		if err != nil {
			return err
		}
		b = b[n:]
	}
	return nil
}

func decodeMetadata(b []byte, md *Metadata) error {
	md.Present = true
	for len(b) > 0 {
		num, typ, n := consumeTag(b)
		if n < 0 {
			return malformed("bad tag", 0)
		}
		b = b[n:]
		var err error
		switch {
		case num == 1 && typ == protowire.BytesType:
			var s []byte
			if s, n = protowire.ConsumeBytes(b); n >= 0 {
				err = decodePluginData(s, md)
			}
		case num == 2 && typ == protowire.BytesType:
			md.DisplayName, n, err = consumeString(b, num)
		case num == 3 && typ == protowire.BytesType:
			md.Description, n, err = consumeString(b, num)
		case num == 4 && typ == protowire.VarintType:
			var x uint64
			x, n = protowire.ConsumeVarint(b)
			md.DataClass = int32(x)
		default:
			n = skipField(num, typ, b)
		}
		if n < 0 {
			return malformed("truncated or invalid field", num)
		}
		if err != nil {
			return err
		}
		b = b[n:]
	}
	return nil
}

func decodePluginData(b []byte, md *Metadata) error {
	for len(b) > 0 {
		num, typ, n := consumeTag(b)
		if n < 0 {
			return malformed("bad tag", 0)
		}
		b = b[n:]
		var err error
		switch {
		case num == 1 && typ == protowire.BytesType:
			md.PluginName, n, err = consumeString(b, num)
		case num == 2 && typ == protowire.BytesType:
			md.PluginContent, n = protowire.ConsumeBytes(b)
		default:
			n = skipField(num, typ, b)
		}
		if n < 0 {
			return malformed("truncated or invalid field", num)
		}
		if err != nil {
			return err
		}
		b = b[n:]
	}
	return nil
}

func decodeImage(b []byte, im *Image) error {
	for len(b) > 0 {
		num, typ, n := consumeTag(b)
		if n < 0 {
			return malformed("bad tag", 0)
		}
		b = b[n:]
		var x uint64
		switch {
		case num >= 1 && num <= 3 && typ == protowire.VarintType:
			x, n = protowire.ConsumeVarint(b)
			switch num {
			case 1:
				im.Height = int32(x)
			case 2:
				im.Width = int32(x)
			default:
				im.Colorspace = int32(x)
			}
		case num == 4 && typ == protowire.BytesType:
			im.Encoded, n = protowire.ConsumeBytes(b)
		default:
			n = skipField(num, typ, b)
		}
		if n < 0 {
			return malformed("truncated or invalid field", num)
		}
		b = b[n:]
	}
	return nil
}

func decodeAudio(b []byte, a *Audio) error {
	for len(b) > 0 {
		num, typ, n := consumeTag(b)
		if n < 0 {
			return malformed("bad tag", 0)
		}
		b = b[n:]
		var err error
		switch {
		case num == 1 && typ == protowire.Fixed32Type:
			var bits uint32
			bits, n = protowire.ConsumeFixed32(b)
			a.SampleRate = math.Float32frombits(bits)
		case (num == 2 || num == 3) && typ == protowire.VarintType:
			var x uint64
			x, n = protowire.ConsumeVarint(b)
			if num == 2 {
				a.NumChannels = int64(x)
			} else {
				a.LengthFrames = int64(x)
			}
		case num == 4 && typ == protowire.BytesType:
			a.Encoded, n = protowire.ConsumeBytes(b)
		case num == 5 && typ == protowire.BytesType:
			a.ContentType, n, err = consumeString(b, num)
		default:
			n = skipField(num, typ, b)
		}
		if n < 0 {
			return malformed("truncated or invalid field", num)
		}
		if err != nil {
			return err
		}
		b = b[n:]
	}
	return nil
}

func decodeHisto(b []byte, h *Histogram) error {
	for len(b) > 0 {
		num, typ, n := consumeTag(b)
		if n < 0 {
			return malformed("bad tag", 0)
		}
		b = b[n:]
		switch {
		case num >= 1 && num <= 5 && typ == protowire.Fixed64Type:
			var bits uint64
			bits, n = protowire.ConsumeFixed64(b)
			f := math.Float64frombits(bits)
			switch num {
			case 1:
				h.Min = f
			case 2:
				h.Max = f
			case 3:
				h.Num = f
			case 4:
				h.Sum = f
			default:
				h.SumSquares = f
			}
		case num == 6 && (typ == protowire.Fixed64Type || typ == protowire.BytesType):
			h.BucketLimit, n = appendDoubles(h.BucketLimit, typ, b)
		case num == 7 && (typ == protowire.Fixed64Type || typ == protowire.BytesType):
			h.Bucket, n = appendDoubles(h.Bucket, typ, b)
		default:
			n = skipField(num, typ, b)
		}
		if n < 0 {
			return malformed("truncated or invalid field", num)
		}
		b = b[n:]
	}
	return nil
}

// appendDoubles reads one unpacked element or a packed run of doubles.
func appendDoubles(dst []float64, typ protowire.Type, b []byte) ([]float64, int) {
	if typ == protowire.Fixed64Type {
		bits, n := protowire.ConsumeFixed64(b)
		if n < 0 {
			return dst, n
		}
		return append(dst, math.Float64frombits(bits)), n
	}
	s, n := protowire.ConsumeBytes(b)
	if n < 0 || len(s)%8 != 0 {
		return dst, -1
	}
	for ; len(s) > 0; s = s[8:] {
		bits, _ := protowire.ConsumeFixed64(s)
		dst = append(dst, math.Float64frombits(bits))
	}
	return dst, n
}

func (t *Tensor) reset() {
	t.Raw = t.Raw[:0]
	t.DType = 0
	t.Dims = t.Dims[:0]
	t.UnknownRank = false
	t.Content = nil
	t.Vals = [numVals]ValList{}
	t.StringVal = t.StringVal[:0]
}

// tensorValField maps TensorProto field numbers of typed value lists to their element
// wire type and Vals index.
var tensorValField = [19]struct {
	ok    bool
	wire  protowire.Type
	index int
}{
	5:  {true, protowire.Fixed32Type, ValFloat},
	6:  {true, protowire.Fixed64Type, ValDouble},
	7:  {true, protowire.VarintType, ValInt},
	9:  {true, protowire.Fixed32Type, ValComplex64},
	10: {true, protowire.VarintType, ValInt64},
	11: {true, protowire.VarintType, ValBool},
	12: {true, protowire.Fixed64Type, ValComplex128},
	13: {true, protowire.VarintType, ValHalf},
	16: {true, protowire.VarintType, ValUint32},
	17: {true, protowire.VarintType, ValUint64},
}

func decodeTensor(b []byte, t *Tensor) error {
	t.Raw = append(t.Raw, b)
	for len(b) > 0 {
		num, typ, n := consumeTag(b)
		if n < 0 {
			return malformed("bad tag", 0)
		}
		b = b[n:]
		var err error
		switch {
		case num == 1 && typ == protowire.VarintType:
			var x uint64
			x, n = protowire.ConsumeVarint(b)
			t.DType = int32(x)
		case num == 2 && typ == protowire.BytesType:
			var s []byte
			if s, n = protowire.ConsumeBytes(b); n >= 0 {
				err = decodeShape(s, t)
			}
		case num == 4 && typ == protowire.BytesType:
			t.Content, n = protowire.ConsumeBytes(b)
		case num == 8 && typ == protowire.BytesType:
			var s []byte
			s, n = protowire.ConsumeBytes(b)
			t.StringVal = append(t.StringVal, s)
		case (num == 14 || num == 15) && typ == protowire.BytesType:
			var s []byte
			if s, n = protowire.ConsumeBytes(b); n >= 0 {
				err = checkWire(s)
			}
		case num < protowire.Number(len(tensorValField)) && tensorValField[num].ok &&
			(typ == tensorValField[num].wire || typ == protowire.BytesType):
			f := tensorValField[num]
			n = appendVals(&t.Vals[f.index], f.wire, typ, b)
		default:
			n = skipField(num, typ, b)
		}
		if n < 0 {
			return malformed("truncated or invalid field", num)
		}
		if err != nil {
			return err
		}
		b = b[n:]
	}
	return nil
}

// appendVals counts one unpacked element or a packed run, remembering the first element.
func appendVals(l *ValList, elem, typ protowire.Type, b []byte) int {
	if typ != protowire.BytesType {
		x, n := consumeElem(elem, b)
		if n >= 0 {
			if l.N == 0 {
				l.First = x
			}
			l.N++
		}
		return n
	}
	s, n := protowire.ConsumeBytes(b)
	if n < 0 {
		return n
	}
	switch elem {
	case protowire.Fixed32Type, protowire.Fixed64Type:
		w := 4
		if elem == protowire.Fixed64Type {
			w = 8
		}
		if len(s)%w != 0 {
			return -1
		}
		if len(s) > 0 && l.N == 0 {
			l.First, _ = consumeElem(elem, s)
		}
		l.N += len(s) / w
	default:
		for len(s) > 0 {
			x, m := protowire.ConsumeVarint(s)
			if m < 0 {
				return -1
			}
			if l.N == 0 {
				l.First = x
			}
			l.N++
			s = s[m:]
		}
	}
	return n
}

func consumeElem(elem protowire.Type, b []byte) (uint64, int) {
	switch elem {
	case protowire.Fixed32Type:
		x, n := protowire.ConsumeFixed32(b)
		return uint64(x), n
	case protowire.Fixed64Type:
		return protowire.ConsumeFixed64(b)
	default:
		return protowire.ConsumeVarint(b)
	}
}

func decodeShape(b []byte, t *Tensor) error {
	for len(b) > 0 {
		num, typ, n := consumeTag(b)
		if n < 0 {
			return malformed("bad tag", 0)
		}
		b = b[n:]
		var err error
		switch {
		case num == 2 && typ == protowire.BytesType:
			var s []byte
			if s, n = protowire.ConsumeBytes(b); n >= 0 {
				var size int64
				size, err = decodeDim(s)
				t.Dims = append(t.Dims, size)
			}
		case num == 3 && typ == protowire.VarintType:
			var x uint64
			x, n = protowire.ConsumeVarint(b)
			t.UnknownRank = x != 0
		default:
			n = skipField(num, typ, b)
		}
		if n < 0 {
			return malformed("truncated or invalid field", num)
		}
		if err != nil {
			return err
		}
		b = b[n:]
	}
	return nil
}

func decodeDim(b []byte) (int64, error) {
	var size int64
	for len(b) > 0 {
		num, typ, n := consumeTag(b)
		if n < 0 {
			return 0, malformed("bad tag", 0)
		}
		b = b[n:]
		var err error
		switch {
		case num == 1 && typ == protowire.VarintType:
			var x uint64
			x, n = protowire.ConsumeVarint(b)
			size = int64(x)
		case num == 2 && typ == protowire.BytesType:
			_, n, err = consumeString(b, num)
		default:
			n = skipField(num, typ, b)
		}
		if n < 0 {
			return 0, malformed("truncated or invalid field", num)
		}
		if err != nil {
			return 0, err
		}
		b = b[n:]
	}
	return size, nil
}
