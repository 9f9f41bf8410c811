// Package migrate turns decoded events into time-series points the way TensorBoard
// does before it stores or uploads them (its data_compat and dataclass_compat steps).
//
// A time series is (run, tag). The first value seen for it fixes the series' plugin,
// data class and summary metadata; legacy values (simple_value, histo, image, audio)
// are given their kind's own metadata whatever they carried. Later values whose own
// metadata names another plugin are dropped and counted. graph_def events become the
// "__run_graph__" series of the graphs plugin, and tagged_run_metadata events a series
// of the graph_tagged_run_metadata plugin, both blob sequences.
package migrate

import (
	"encoding/binary"
	"math"
	"strconv"

	"github.com/tbhub/tbhub/uploader/internal/event"
)

// DataClass is how a series is stored: TensorBoard's SummaryMetadata.DataClass.
type DataClass uint8

// Data classes, numbered as in TensorBoard's enum.
const (
	ClassUnknown DataClass = iota
	ClassScalar
	ClassTensor
	ClassBlobSequence
)

func (c DataClass) String() string {
	switch c {
	case ClassScalar:
		return "scalar"
	case ClassTensor:
		return "tensor"
	case ClassBlobSequence:
		return "blob_sequence"
	}
	return "unknown"
}

// Plugin names with a fixed meaning in migration.
const (
	PluginScalars                = "scalars"
	PluginHistograms             = "histograms"
	PluginImages                 = "images"
	PluginAudio                  = "audio"
	PluginGraphs                 = "graphs"
	PluginGraphTaggedRunMetadata = "graph_tagged_run_metadata"

	// RunGraphTag is the tag under which a run's graph_def is stored.
	RunGraphTag = "__run_graph__"
)

// classByPlugin is TensorBoard's data class for plugins whose metadata carries none.
var classByPlugin = map[string]DataClass{
	PluginScalars:              ClassScalar,
	PluginHistograms:           ClassTensor,
	"text":                     ClassTensor,
	"pr_curves":                ClassTensor,
	"mesh":                     ClassTensor,
	"custom_scalars":           ClassTensor,
	"hparams":                  ClassTensor,
	PluginImages:               ClassBlobSequence,
	PluginAudio:                ClassBlobSequence,
	"graph_run_metadata":       ClassBlobSequence,
	"graph_run_metadata_graph": ClassBlobSequence,
	"graph_keras_model":        ClassBlobSequence,
}

// Metadata is a series' summary metadata after migration.
type Metadata struct {
	PluginName    string
	PluginContent []byte
	DisplayName   string
	Description   string
	DataClass     DataClass
}

// Series is one (run, tag) time series.
type Series struct {
	Tag      string
	Metadata Metadata
	// Dropped counts later values that named another plugin.
	Dropped int
	// Index numbers the run's series in order of appearance, from 0.
	Index int
}

// Plugin is the series' plugin name ("" when its first value named none).
func (s *Series) Plugin() string { return s.Metadata.PluginName }

// Class is the series' data class.
func (s *Series) Class() DataClass { return s.Metadata.DataClass }

// PointKind says where a point came from.
type PointKind uint8

// Point sources.
const (
	FromValue             PointKind = iota // a Summary.Value
	FromGraphDef                           // Event.graph_def
	FromTaggedRunMetadata                  // Event.tagged_run_metadata
)

// Point is one accepted value of a series. It aliases the decoded event: use it
// before decoding the next record.
type Point struct {
	Kind     PointKind
	Step     int64
	WallTime float64
	Value    *event.Value // when Kind == FromValue
	Blob     []byte       // graph_def or run_metadata bytes otherwise
}

// Run holds the series of one run and applies the first-value rules across its files.
type Run struct {
	series map[string]*Series
	order  []*Series
	point  Point // reused for every point handed to emit
}

// NewRun returns an empty run.
func NewRun() *Run { return &Run{series: make(map[string]*Series)} }

// Series lists the run's series in order of first appearance.
func (r *Run) Series() []*Series { return r.order }

// Lookup returns the series for tag, or nil.
func (r *Run) Lookup(tag string) *Series { return r.series[tag] }

// Restore recreates a series known from an earlier upload of the same logdir, so that
// files read now are migrated against the first value seen then.
func (r *Run) Restore(tag string, md Metadata) *Series {
	if s := r.series[tag]; s != nil {
		return s
	}
	s := &Series{Tag: tag, Metadata: md, Index: len(r.order)}
	r.series[tag] = s
	r.order = append(r.order, s)
	return s
}

// Add migrates one event and calls emit for each point it yields, in order.
func (r *Run) Add(ev *event.Event, emit func(*Series, *Point)) {
	p := &r.point
	*p = Point{Step: ev.Step, WallTime: ev.WallTime}
	switch ev.What {
	case event.WhatGraphDef:
		p.Kind, p.Blob = FromGraphDef, ev.GraphDef
		r.accept(runGraphTag, pluginGraphs, p, emit)
	case event.WhatTaggedRunMetadata:
		p.Kind, p.Blob = FromTaggedRunMetadata, ev.TaggedRunMetadata.RunMetadata
		r.accept(ev.TaggedRunMetadata.Tag, pluginGraphTaggedRunMetadata, p, emit)
	case event.WhatSummary:
		for i := range ev.Summary.Values {
			v := &ev.Summary.Values[i]
			p.Kind, p.Value = FromValue, v
			r.accept(v.Tag, ownPlugin(v), p, emit)
		}
	}
}

// The names above as bytes, so that routing a point compares without allocating.
var (
	runGraphTag                  = []byte(RunGraphTag)
	pluginScalars                = []byte(PluginScalars)
	pluginHistograms             = []byte(PluginHistograms)
	pluginImages                 = []byte(PluginImages)
	pluginAudio                  = []byte(PluginAudio)
	pluginGraphs                 = []byte(PluginGraphs)
	pluginGraphTaggedRunMetadata = []byte(PluginGraphTaggedRunMetadata)
)

// accept routes a point to its series, creating the series from the point's own
// metadata when it is the first, and dropping it when it names another plugin.
func (r *Run) accept(tag, plugin []byte, p *Point, emit func(*Series, *Point)) {
	s := r.series[string(tag)]
	if s == nil {
		md := Metadata{PluginName: string(plugin), DataClass: ClassBlobSequence} // graph and run metadata
		if p.Kind == FromValue {
			md = initialMetadata(p.Value)
		}
		s = &Series{Tag: string(tag), Metadata: md, Index: len(r.order)}
		r.series[s.Tag] = s
		r.order = append(r.order, s)
	} else if len(plugin) != 0 && string(plugin) != s.Metadata.PluginName {
		s.Dropped++
		return
	}
	emit(s, p)
}

// ownPlugin is the plugin a value names by itself, after legacy migration.
func ownPlugin(v *event.Value) []byte {
	switch v.Kind {
	case event.ValueSimple:
		return pluginScalars
	case event.ValueHisto:
		return pluginHistograms
	case event.ValueImage:
		return pluginImages
	case event.ValueAudio:
		return pluginAudio
	}
	return v.Metadata.PluginName
}

// Plugin content of migrated legacy values: ImagePluginData{converted_to_tensor: true}
// and AudioPluginData{encoding: WAV, converted_to_tensor: true}.
var (
	imageContent = []byte{0x10, 0x01}
	audioContent = []byte{0x10, 0x0b, 0x18, 0x01}
)

// initialMetadata is the metadata a series takes from its first value.
func initialMetadata(v *event.Value) Metadata {
	md := Metadata{
		PluginName:    string(v.Metadata.PluginName),
		PluginContent: append([]byte(nil), v.Metadata.PluginContent...),
		DisplayName:   string(v.Metadata.DisplayName),
		Description:   string(v.Metadata.Description),
	}
	legacy := true
	switch v.Kind {
	case event.ValueSimple:
		md.PluginName, md.PluginContent = PluginScalars, nil
	case event.ValueHisto:
		md.PluginName, md.PluginContent = PluginHistograms, nil
	case event.ValueImage:
		md.PluginName, md.PluginContent = PluginImages, imageContent
	case event.ValueAudio:
		md.PluginName, md.PluginContent = PluginAudio, audioContent
	default:
		legacy = false
	}
	if legacy {
		if md.DisplayName == "" {
			md.DisplayName = string(v.Tag)
		}
		md.DataClass = classByPlugin[md.PluginName]
		return md
	}
	switch dc := v.Metadata.DataClass; {
	case dc >= 1 && dc <= 3:
		md.DataClass = DataClass(dc)
	case dc != 0:
		md.DataClass = ClassUnknown
	default:
		md.DataClass = classByPlugin[md.PluginName]
	}
	return md
}

// TensorFlow DataType numbers the migration needs.
const (
	DTInvalid  = 0
	DTFloat    = 1
	DTDouble   = 2
	DTInt32    = 3
	DTUint8    = 4
	DTInt16    = 5
	DTInt8     = 6
	DTString   = 7
	DTInt64    = 9
	DTBool     = 10
	DTBfloat16 = 14
	DTUint16   = 17
	DTHalf     = 19
	DTUint32   = 22
	DTUint64   = 23
)

// scalarDTypes gives, for each dtype a scalar may have, its width in tensor_content
// and the typed *_val field it is read from otherwise.
var scalarDTypes = [DTUint64 + 1]struct {
	width int // 0: not a scalar dtype
	field int
}{
	DTFloat:    {4, event.ValFloat},
	DTDouble:   {8, event.ValDouble},
	DTHalf:     {2, event.ValHalf},
	DTBfloat16: {2, event.ValHalf},
	DTInt8:     {1, event.ValInt},
	DTInt16:    {2, event.ValInt},
	DTInt32:    {4, event.ValInt},
	DTUint8:    {1, event.ValInt},
	DTUint16:   {2, event.ValInt},
	DTInt64:    {8, event.ValInt64},
	DTUint32:   {4, event.ValUint32},
	DTUint64:   {8, event.ValUint64},
	DTBool:     {1, event.ValBool},
}

// ScalarValue reads a point of a scalar series as TensorFlow's make_ndarray would:
// simple_value, or a one-element tensor of a numeric or bool dtype. ok is false for
// anything else (the point is invalid: it holds its step but has no value).
func ScalarValue(p *Point) (v float64, ok bool) {
	if p.Kind != FromValue {
		return 0, false
	}
	switch p.Value.Kind {
	case event.ValueSimple:
		return float64(p.Value.Simple), true
	case event.ValueTensor:
	default:
		return 0, false
	}
	t := &p.Value.Tensor
	if t.DType < 0 || int(t.DType) >= len(scalarDTypes) || scalarDTypes[t.DType].width == 0 || t.NumElements() != 1 {
		return 0, false
	}
	spec := scalarDTypes[t.DType]
	var bits uint64
	if len(t.Content) > 0 {
		if len(t.Content) != spec.width {
			return 0, false
		}
		var buf [8]byte
		copy(buf[:], t.Content)
		bits = binary.LittleEndian.Uint64(buf[:])
	} else {
		l := t.Vals[spec.field]
		if l.N > 1 {
			return 0, false
		}
		bits = l.First // zero when the list is empty: TensorFlow reads 0
	}
	return numberFromBits(t.DType, bits), true
}

func numberFromBits(dtype int32, bits uint64) float64 {
	switch dtype {
	case DTFloat:
		return float64(math.Float32frombits(uint32(bits)))
	case DTDouble:
		return math.Float64frombits(bits)
	case DTHalf:
		return halfToFloat(uint16(bits))
	case DTBfloat16:
		return float64(math.Float32frombits(uint32(uint16(bits)) << 16))
	case DTInt8:
		return float64(int8(bits))
	case DTInt16:
		return float64(int16(bits))
	case DTInt32:
		return float64(int32(bits))
	case DTUint8:
		return float64(uint8(bits))
	case DTUint16:
		return float64(uint16(bits))
	case DTInt64:
		return float64(int64(bits))
	case DTUint32:
		return float64(uint32(bits))
	case DTUint64:
		return float64(bits)
	case DTBool:
		if bits&0xff != 0 {
			return 1
		}
		return 0
	}
	return math.NaN()
}

// halfToFloat converts IEEE 754 binary16 bits.
func halfToFloat(h uint16) float64 {
	sign := 1.0
	if h&0x8000 != 0 {
		sign = -1
	}
	exp := int(h>>10) & 0x1f
	frac := float64(h & 0x3ff)
	switch exp {
	case 0:
		return sign * math.Ldexp(frac, -24)
	case 0x1f:
		if frac != 0 {
			return math.NaN()
		}
		return math.Inf(int(sign))
	}
	return sign * math.Ldexp(1+frac/1024, exp-15)
}

// TensorShape is a dtype and shape; Dims is nil when the rank is unknown.
type TensorShape struct {
	DType       int32
	Dims        []int64
	UnknownRank bool
}

// TensorInfo is the dtype and shape a point has once migrated to a tensor, as
// TensorBoard's Python uploader sends it. dims is scratch space the result may use.
func TensorInfo(p *Point, dims []int64) TensorShape {
	if p.Kind != FromValue {
		return TensorShape{DType: DTString, Dims: append(dims[:0], 1)}
	}
	v := p.Value
	switch v.Kind {
	case event.ValueTensor:
		if v.Tensor.UnknownRank {
			return TensorShape{DType: v.Tensor.DType, UnknownRank: true}
		}
		return TensorShape{DType: v.Tensor.DType, Dims: append(dims[:0], v.Tensor.Dims...)}
	case event.ValueSimple:
		return TensorShape{DType: DTFloat, Dims: dims[:0]}
	case event.ValueHisto:
		first, last := histoRange(&v.Histo)
		return TensorShape{DType: DTFloat, Dims: append(dims[:0], int64(last-first), 3)}
	case event.ValueImage:
		return TensorShape{DType: DTString, Dims: append(dims[:0], 3)}
	case event.ValueAudio:
		return TensorShape{DType: DTString, Dims: append(dims[:0], 1, 2)}
	case event.ValueOldHistogram:
		return TensorShape{DType: DTInvalid, Dims: dims[:0]}
	}
	return TensorShape{DType: DTFloat, Dims: append(dims[:0], 0)} // no value: the null tensor
}

// histoRange is the half-open range of buckets TensorBoard keeps when it migrates a
// legacy histogram: from the first to the last non-empty bucket.
func histoRange(h *event.Histogram) (first, last int) {
	first, last = -1, -1
	for i, c := range h.Bucket {
		if c > 0 { // as TensorBoard: NaN and negative counts are "empty"
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	if first < 0 {
		return 0, 0
	}
	return first, last + 1
}

// BlobStats counts the blobs a point of a blob-sequence series holds and their bytes,
// without materializing them.
func BlobStats(s *Series, p *Point) (count int, bytes int64) {
	ForEachBlob(s, p, func(b []byte) {
		count++
		bytes += int64(len(b))
	})
	return count, bytes
}

// ForEachBlob calls fn with each blob of a point of a blob-sequence series, in order:
// a legacy image gives str(width), str(height) and the encoded image (TensorBoard's
// layout); legacy audio its encoded clip; graphs and run metadata their bytes; a
// string tensor its elements (only the first column for audio). The slices passed to
// fn are valid only during the call.
func ForEachBlob(s *Series, p *Point, fn func([]byte)) {
	if p.Kind != FromValue {
		fn(p.Blob)
		return
	}
	v := p.Value
	switch v.Kind {
	case event.ValueImage:
		var scratch [24]byte
		fn(strconv.AppendInt(scratch[:0], int64(v.Image.Width), 10))
		fn(strconv.AppendInt(scratch[:0], int64(v.Image.Height), 10))
		fn(v.Image.Encoded)
	case event.ValueAudio:
		fn(v.Audio.Encoded)
	case event.ValueTensor:
		t := &v.Tensor
		if t.DType != DTString {
			return
		}
		stride := int64(1)
		if s.Metadata.PluginName == PluginAudio {
			for i := 1; i < len(t.Dims); i++ {
				stride *= t.Dims[i]
			}
			if stride <= 0 {
				return
			}
		}
		for i := int64(0); i < int64(len(t.StringVal)); i += stride {
			fn(t.StringVal[i])
		}
	}
}
