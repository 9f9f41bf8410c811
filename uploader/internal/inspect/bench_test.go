package inspect

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	tbpb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard"

	"github.com/tbhub/tbhub/uploader/eventgen"
	"github.com/tbhub/tbhub/uploader/internal/corpustest"
	"github.com/tbhub/tbhub/uploader/internal/event"
	"github.com/tbhub/tbhub/uploader/internal/eventfile"
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
			cpu0 := cpuSeconds()
			events := 0
			for range b.N {
				events += runPipeline(b, data)
			}
			reportRates(b, events, int64(len(data))*int64(b.N), cpuSeconds()-cpu0)
		})
	}
}

func tagName(i int) string {
	return [...]string{"loss", "acc", "lr", "val/loss", "val/acc", "grad_norm", "t/a", "t/b", "t/c", "t/d"}[i]
}

// BenchmarkInspectCorpus inspects the shared corpus on one goroutine: all of it, its
// real-world files and the generated ones. "read" reads, checks, decodes, migrates and
// summarizes every file of an already scanned logdir; "scan+read" includes walking the
// directory tree.
func BenchmarkInspectCorpus(b *testing.B) {
	for _, sub := range []string{".", "real", "generated"} {
		src := logdir.Local(filepath.Join(corpustest.Dir(b), sub))
		runs, err := src.Scan(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		var size int64
		for _, r := range runs {
			for _, f := range r.Files {
				fi, err := os.Stat(f.Path)
				if err != nil {
					b.Fatal(err)
				}
				size += fi.Size()
			}
		}
		rep, err := inspectRuns(context.Background(), src, runs, Options{Workers: 1})
		if err != nil {
			b.Fatal(err)
		}
		for _, mode := range []string{"read", "scan+read"} {
			b.Run(sub+"/"+mode, func(b *testing.B) {
				b.SetBytes(size)
				b.ResetTimer()
				cpu0 := cpuSeconds()
				for range b.N {
					var err error
					if mode == "read" {
						_, err = inspectRuns(context.Background(), src, runs, Options{Workers: 1})
					} else {
						_, err = Inspect(context.Background(), src, Options{Workers: 1})
					}
					if err != nil {
						b.Fatal(err)
					}
				}
				reportRates(b, rep.Totals.Records*b.N, size*int64(b.N), cpuSeconds()-cpu0)
			})
		}
	}
}

// cpuSeconds is the process's user+system CPU time. Rates per CPU-second stay
// meaningful on a machine shared with other work, where wall-clock rates do not.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

func reportRates(b *testing.B, events int, bytes int64, cpu float64) {
	b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
	if cpu > 0 {
		b.ReportMetric(float64(events)/cpu, "events/cpu-s")
		b.ReportMetric(float64(bytes)/cpu/1e6, "MB/cpu-s")
	}
}
