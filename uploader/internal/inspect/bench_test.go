package inspect

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"

	tbpb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard"

	"github.com/tbhub/tbhub/uploader/internal/corpustest"
	"github.com/tbhub/tbhub/uploader/internal/event"
	"github.com/tbhub/tbhub/uploader/internal/eventfile"
	"github.com/tbhub/tbhub/uploader/internal/eventgen"
	"github.com/tbhub/tbhub/uploader/internal/logdir"
	"github.com/tbhub/tbhub/uploader/internal/migrate"
)

// eventFile builds an in-memory event file of n events made by mk.
func eventFile(b *testing.B, n int, mk func(i int) *tbpb.Event) []byte {
	var buf bytes.Buffer
	w := eventgen.NewWriter(&buf)
	for i := range n {
		if err := w.WriteEvent(mk(i)); err != nil {
			b.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	return buf.Bytes()
}

// runPipeline reads, decodes and migrates every record of data, touching each point's
// value the way the uploader does, and returns the number of events.
func runPipeline(b *testing.B, data []byte) int {
	var ev event.Event
	run := migrate.NewRun()
	var sink float64
	emit := func(s *migrate.Series, p *migrate.Point) {
		switch s.Class() {
		case migrate.ClassScalar:
			v, _ := migrate.ScalarValue(p)
			sink += v
		case migrate.ClassBlobSequence:
			_, n := migrate.BlobStats(s, p)
			sink += float64(n)
		}
	}
	r := eventfile.NewReader(bytes.NewReader(data), 0)
	n := 0
	for {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			b.Fatal(err)
		}
		if err := event.Decode(rec.Data, &ev); err != nil {
			b.Fatal(err)
		}
		run.Add(&ev, emit)
		n++
	}
	_ = sink
	return n
}

// BenchmarkPipeline measures reading + CRC checks + decoding + migration on one
// goroutine, from memory, for the shapes real logdirs are made of.
func BenchmarkPipeline(b *testing.B) {
	cases := []struct {
		name string
		data func(b *testing.B) []byte
	}{
		{"tf2-scalars", func(b *testing.B) []byte {
			return eventFile(b, 200_000, func(i int) *tbpb.Event {
				var md *tbpb.SummaryMetadata
				if i < 10 {
					md = eventgen.ScalarMetadata()
				}
				return eventgen.Scalar(tagName(i%10), int64(i/10), 1.7e9+float64(i), float32(i), md)
			})
		}},
		{"legacy-scalars", func(b *testing.B) []byte {
			return eventFile(b, 200_000, func(i int) *tbpb.Event {
				return eventgen.SimpleScalar(tagName(i%10), int64(i/10), 1.7e9+float64(i), float32(i))
			})
		}},
		{"images-100KB", func(b *testing.B) []byte {
			img := bytes.Repeat([]byte{0x89, 'P', 'N', 'G'}, 25_000)
			return eventFile(b, 500, func(i int) *tbpb.Event {
				return eventgen.Image("samples", int64(i), 1.7e9+float64(i), 64, 64, img)
			})
		}},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			data := tc.data(b)
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			b.ResetTimer()
			events := 0
			for range b.N {
				events += runPipeline(b, data)
			}
			b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
		})
	}
}

func tagName(i int) string {
	return [...]string{"loss", "acc", "lr", "val/loss", "val/acc", "grad_norm", "t/a", "t/b", "t/c", "t/d"}[i]
}

// BenchmarkInspectCorpus runs the whole inspection (files from disk, one worker) over
// the shared corpus of real and generated event files.
func BenchmarkInspectCorpus(b *testing.B) {
	src := logdir.Local(corpustest.Dir(b))
	rep, err := Inspect(context.Background(), src, Options{Workers: 1})
	if err != nil {
		b.Fatal(err)
	}
	runs, _ := src.Scan(context.Background())
	var size int64
	for _, r := range runs {
		for _, f := range r.Files {
			size += f.Size
		}
	}
	b.SetBytes(size)
	b.ResetTimer()
	for range b.N {
		if _, err := Inspect(context.Background(), src, Options{Workers: 1}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(rep.Totals.Records*b.N)/b.Elapsed().Seconds(), "events/s")
}
