package e2e_test

import (
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/tbhub/tbhub/services/internal/blob/fileblob"
	"github.com/tbhub/tbhub/services/internal/store"
	"github.com/tbhub/tbhub/services/internal/testenv/spanneremu"
	"github.com/tbhub/tbhub/uploader/eventgen"
)

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil {
		return v
	}
	return def
}

// BenchmarkUpload uploads a generated logdir with the tbup binary to tbhub serve
// (embedded store, in this process) and reports scalar points/s end to end and the
// uploader's CPU time and peak memory. The size is RUNS=100 TAGS=20
// STEPS=10000 IMAGES=1000 (scripts/bench-upload.sh); the defaults are smaller.
// STORE=spanner serves a database of the Spanner emulator instead (issue 21's
// measure: RUNS=100 TAGS=2 STEPS=2500 IMAGES=0), blobs in a folder.
func BenchmarkUpload(b *testing.B) {
	spec := eventgen.Spec{
		Runs: envInt("RUNS", 10), Tags: envInt("TAGS", 20), Steps: envInt("STEPS", 10_000),
		Images: envInt("IMAGES", 100), ImageBytes: envInt("IMAGE_BYTES", 100_000), Seed: 5,
	}
	logdir := filepath.Join(b.TempDir(), "logs")
	size, err := eventgen.WriteLogdir(logdir, spec)
	if err != nil {
		b.Fatal(err)
	}
	points := spec.Runs * spec.Tags * spec.Steps
	b.Logf("logdir: %d scalar points, %d images of %d bytes, %.1f MiB", points, spec.Images, spec.ImageBytes, float64(size)/(1<<20))
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		var s *server
		if os.Getenv("STORE") == "spanner" {
			blobs, err := fileblob.Open(filepath.Join(b.TempDir(), "blobs"))
			if err != nil {
				b.Fatal(err)
			}
			s = start(b, spanneremu.NewDatabase(b).ConcurrentStore(b), blobs, "127.0.0.1:0", blobs.Close)
		} else {
			s = startEmbedded(b, b.TempDir(), "127.0.0.1:0")
		}
		c := newTbup(b, s)
		b.StartTimer()
		start := time.Now()
		cmd := c.cmd(b.Context(), "upload", "--one-shot", "--quiet", "--logdir", logdir)
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("upload: %v\n%s", err, out)
		}
		wall := time.Since(start)
		b.StopTimer()
		ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
		cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		b.ReportMetric(float64(points)/wall.Seconds(), "scalars/s")
		b.ReportMetric(float64(ru.Maxrss)/1024, "uploader-MiB")
		b.ReportMetric(cpu.Seconds(), "uploader-cpu-s")
		b.ReportMetric(wall.Seconds(), "wall-s")
		verifyBenchUpload(b, s.st, int64(points), int64(spec.Images), int64(spec.Images*spec.ImageBytes))
		s.stop()
		b.StartTimer()
	}
}

// verifyBenchUpload checks that the server holds every point and image of the
// benchmark's logdir, so the rate counts only data that arrived. An image is a blob
// sequence of three blobs (width, height, encoded image).
func verifyBenchUpload(b *testing.B, st store.Reader, points, images, imageBytes int64) {
	b.Helper()
	var got []store.Experiment
	if err := st.ListExperiments(b.Context(), store.ExperimentFilter{}, func(e store.Experiment) error {
		got = append(got, e)
		return nil
	}); err != nil {
		b.Fatal(err)
	}
	if len(got) != 1 || got[0].NumScalars != points || got[0].NumBlobSequences != images ||
		got[0].NumBlobs != 3*images || got[0].TotalBlobBytes < imageBytes {
		b.Fatalf("server holds %+v, want one experiment with %d scalars and %d images of %d bytes in all", got, points, images, imageBytes)
	}
}
