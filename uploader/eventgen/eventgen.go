// Package eventgen writes TensorFlow event files: synthetic logdirs for tests and
// benchmarks, in the shapes real writers produce (TF2 scalar tensors, legacy
// simple_value, PNG-sized image blobs).
package eventgen

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"

	tbpb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard"
	"google.golang.org/protobuf/proto"

	"github.com/tbhub/tbhub/uploader/internal/eventfile"
)

// Writer appends framed records to a stream.
type Writer struct {
	w   *bufio.Writer
	c   io.Closer
	hdr [12]byte
	n   int64
}

// Create starts a new event file at path (parents created) with its file_version record.
func Create(path string, wallTime float64) (*Writer, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	w := NewWriter(f)
	w.c = f
	if err := w.WriteEvent(&tbpb.Event{WallTime: wallTime, What: &tbpb.Event_FileVersion{FileVersion: "brain.Event:2"}}); err != nil {
		f.Close()
		return nil, err
	}
	return w, nil
}

// Append opens an existing event file to add records at its end, as a writer that
// keeps writing during a job does.
func Append(path string) (*Writer, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return nil, err
	}
	w := NewWriter(f)
	w.c = f
	return w, nil
}

// NewWriter writes records to w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: bufio.NewWriterSize(w, 1<<20)} }

// WriteRecord frames data.
func (w *Writer) WriteRecord(data []byte) error {
	binary.LittleEndian.PutUint64(w.hdr[:8], uint64(len(data)))
	binary.LittleEndian.PutUint32(w.hdr[8:], eventfile.MaskedCRC32C(w.hdr[:8]))
	var crc [4]byte
	binary.LittleEndian.PutUint32(crc[:], eventfile.MaskedCRC32C(data))
	w.w.Write(w.hdr[:])
	w.w.Write(data)
	_, err := w.w.Write(crc[:])
	w.n += int64(len(data)) + 16
	return err
}

// WriteEvent serializes and frames an event.
func (w *Writer) WriteEvent(ev *tbpb.Event) error {
	b, err := proto.Marshal(ev)
	if err != nil {
		return err
	}
	return w.WriteRecord(b)
}

// Bytes is how much has been written.
func (w *Writer) Bytes() int64 { return w.n }

// Close flushes and closes the file.
func (w *Writer) Close() error {
	err := w.w.Flush()
	if w.c != nil {
		if cerr := w.c.Close(); err == nil {
			err = cerr
		}
	}
	return err
}

// ScalarMetadata is the summary metadata TF2 writes with a scalar's first value.
func ScalarMetadata() *tbpb.SummaryMetadata {
	return &tbpb.SummaryMetadata{
		PluginData: &tbpb.SummaryMetadata_PluginData{PluginName: "scalars"},
		DataClass:  tbpb.DataClass_DATA_CLASS_SCALAR,
	}
}

// Scalar is a TF2-style scalar: a rank-0 DT_FLOAT tensor. md is set on a tag's first value.
func Scalar(tag string, step int64, wallTime float64, v float32, md *tbpb.SummaryMetadata) *tbpb.Event {
	return &tbpb.Event{WallTime: wallTime, Step: step, What: &tbpb.Event_Summary{Summary: &tbpb.Summary{Value: []*tbpb.Summary_Value{{
		Tag:      tag,
		Metadata: md,
		Value:    &tbpb.Summary_Value_Tensor{Tensor: &tbpb.TensorProto{Dtype: tbpb.DataType_DT_FLOAT, TensorShape: &tbpb.TensorShapeProto{}, FloatVal: []float32{v}}},
	}}}}}
}

// SimpleScalar is a legacy (TF1, tensorboardX, PyTorch) scalar.
func SimpleScalar(tag string, step int64, wallTime float64, v float32) *tbpb.Event {
	return &tbpb.Event{WallTime: wallTime, Step: step, What: &tbpb.Event_Summary{Summary: &tbpb.Summary{Value: []*tbpb.Summary_Value{{
		Tag: tag, Value: &tbpb.Summary_Value_SimpleValue{SimpleValue: v},
	}}}}}
}

// Image is a TF2-style image summary: a DT_STRING tensor [width, height, encoded...].
func Image(tag string, step int64, wallTime float64, w, h int, encoded ...[]byte) *tbpb.Event {
	vals := [][]byte{[]byte(fmt.Sprint(w)), []byte(fmt.Sprint(h))}
	vals = append(vals, encoded...)
	return &tbpb.Event{WallTime: wallTime, Step: step, What: &tbpb.Event_Summary{Summary: &tbpb.Summary{Value: []*tbpb.Summary_Value{{
		Tag: tag,
		Metadata: &tbpb.SummaryMetadata{
			PluginData: &tbpb.SummaryMetadata_PluginData{PluginName: "images"},
			DataClass:  tbpb.DataClass_DATA_CLASS_BLOB_SEQUENCE,
		},
		Value: &tbpb.Summary_Value_Tensor{Tensor: &tbpb.TensorProto{
			Dtype:       tbpb.DataType_DT_STRING,
			TensorShape: &tbpb.TensorShapeProto{Dim: []*tbpb.TensorShapeProto_Dim{{Size: int64(len(vals))}}},
			StringVal:   vals,
		}},
	}}}}}
}

// Spec describes a synthetic logdir.
type Spec struct {
	Runs, Tags, Steps int   // scalar series: Runs × Tags, Steps points each
	Images            int   // image points in total, spread over the runs
	ImageBytes        int   // bytes per image
	Legacy            bool  // write simple_value scalars instead of TF2 tensors
	Seed              int64 // varies values
	// FirstStep is the step of the first scalar and image written. Above 0, a
	// run's event file that exists already is appended to (a job still
	// training), so WriteLogdir can grow a logdir a watching upload reads.
	FirstStep int
}

// WriteLogdir writes spec under dir (run names "run_000", ...), one event file per run,
// and returns the bytes written.
func WriteLogdir(dir string, spec Spec) (int64, error) {
	var total int64
	const wall0 = 1.7e9
	img := make([]byte, spec.ImageBytes)
	for i := range img {
		img[i] = byte(i*31 + int(spec.Seed))
	}
	imagesPerRun := 0
	if spec.Runs > 0 {
		imagesPerRun = (spec.Images + spec.Runs - 1) / spec.Runs
	}
	imagesLeft := spec.Images
	for r := 0; r < spec.Runs; r++ {
		path := filepath.Join(dir, fmt.Sprintf("run_%03d", r), fmt.Sprintf("events.out.tfevents.%d.tbgen.%d.0.v2", int64(wall0), r))
		var w *Writer
		var err error
		_, statErr := os.Stat(path)
		appending := spec.FirstStep > 0 && statErr == nil
		if appending {
			w, err = Append(path)
		} else {
			w, err = Create(path, wall0)
		}
		if err != nil {
			return total, err
		}
		for s := spec.FirstStep; s < spec.FirstStep+spec.Steps; s++ {
			for t := 0; t < spec.Tags; t++ {
				tag := fmt.Sprintf("metrics/tag_%02d", t)
				v := float32(math.Sin(float64(s+t)*0.01+float64(spec.Seed))) / float32(1+t)
				wt := wall0 + float64(s)*0.1
				var ev *tbpb.Event
				switch {
				case spec.Legacy:
					ev = SimpleScalar(tag, int64(s), wt, v)
				case s == spec.FirstStep && !appending: // a series' first value carries its metadata
					ev = Scalar(tag, int64(s), wt, v, ScalarMetadata())
				default:
					ev = Scalar(tag, int64(s), wt, v, nil)
				}
				if err := w.WriteEvent(ev); err != nil {
					w.Close()
					return total, err
				}
			}
		}
		for i := 0; i < imagesPerRun && imagesLeft > 0; i, imagesLeft = i+1, imagesLeft-1 {
			img[i%len(img)]++ // every image differs
			step := spec.FirstStep + i
			if err := w.WriteEvent(Image("samples/input", int64(step), wall0+float64(step), 64, 64, img)); err != nil {
				w.Close()
				return total, err
			}
		}
		total += w.Bytes()
		if err := w.Close(); err != nil {
			return total, err
		}
	}
	return total, nil
}
