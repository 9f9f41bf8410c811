package e2e_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tbhub/tbhub/services/internal/storage/blob/fileblob"
	"github.com/tbhub/tbhub/services/internal/storage/store"
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
// measure: RUNS=100 TAGS=2 STEPS=2500 IMAGES=0), blobs in a folder. CARDS=n then
// reads a scalars card of every run n times (benchCard; SAMPLES per run, 500;
// BUCKETS=n asks for it bucketed, as the web UI does, with samples=buckets=n).
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
		eid := verifyBenchUpload(b, s.st, int64(points), int64(spec.Images), int64(spec.Images*spec.ImageBytes))
		if cards := envInt("CARDS", 0); cards > 0 {
			benchCard(b, s, eid, cards, envInt("SAMPLES", 500), envInt("BUCKETS", 0))
		}
		s.stop()
		b.StartTimer()
	}
}

// verifyBenchUpload checks that the server holds every point and image of the
// benchmark's logdir, so the rate counts only data that arrived. An image is a blob
// sequence of three blobs (width, height, encoded image).
func verifyBenchUpload(b *testing.B, st store.Reader, points, images, imageBytes int64) string {
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
	return got[0].ID
}

// benchCard reads the scalars card of tag metrics/tag_00 over every run
// of experiment eid as the web UI asks for it (one scalars_multirun POST,
// format=columns, samples points per run) n times and reports the median
// answer time and the CPU per card of the benchmark's process (server and
// HTTP client, the answer's gzip included; the Spanner emulator, if any, is
// another process), and the first read's CPU apart: the embedded store
// caches downsampled and bucketed answers (sqlitestore's scalarCache), so
// the later reads measure a card read again. With buckets > 0 it asks as
// the web UI's cards do: samples=buckets=n, each run's first, last, min
// and max point of each of n buckets (at most 4n points, every point of a
// run that has fewer).
func benchCard(b *testing.B, s *server, eid string, n, samples, buckets int) {
	runs, err := s.st.ListRuns(b.Context(), eid)
	if err != nil {
		b.Fatal(err)
	}
	form := url.Values{"tag": {"metrics/tag_00"}, "samples": {strconv.Itoa(samples)}, "format": {"columns"}}
	if buckets > 0 {
		samples = buckets
		form.Set("samples", strconv.Itoa(buckets))
		form.Set("buckets", strconv.Itoa(buckets))
	}
	for _, r := range runs {
		form.Add("runs", r.Name)
	}
	body := form.Encode()
	var took []time.Duration
	var cpu time.Duration
	var points, bytes int
	var firstCPU time.Duration // the first read's: later ones may come from the store's scalar cache
	for i := range n {
		req, err := http.NewRequestWithContext(b.Context(), http.MethodPost, s.url+"/experiment/"+eid+"/data/plugin/scalars/scalars_multirun", strings.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Authorization", "Bearer "+s.token)
		cpuStart, start := processCPU(), time.Now()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		answer, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		took, cpu = append(took, time.Since(start)), cpu+processCPU()-cpuStart
		if i == 0 {
			firstCPU = cpu
		}
		if err != nil || resp.StatusCode != http.StatusOK {
			b.Fatalf("scalars_multirun: status %d, err %v", resp.StatusCode, err)
		}
		// Checked off the clock: a browser parses JSON faster than Go.
		var columns map[string]struct {
			Step []int64 `json:"step"`
		}
		if err := json.Unmarshal(answer, &columns); err != nil || len(columns) != len(runs) {
			b.Fatalf("scalars_multirun: %d runs, err %v; want %d runs", len(columns), err, len(runs))
		}
		points = 0
		for run, c := range columns {
			if buckets == 0 && len(c.Step) != samples || buckets > 0 && (len(c.Step) < buckets || len(c.Step) > 4*buckets) {
				b.Fatalf("scalars_multirun: run %s has %d points, want %d (buckets=%d)", run, len(c.Step), samples, buckets)
			}
			points += len(c.Step)
		}
		bytes = len(answer)
	}
	b.ReportMetric(float64(points), "card-points")
	b.ReportMetric(float64(cpu.Microseconds())/1000/float64(n), "card-cpu-ms")
	b.ReportMetric(float64(firstCPU.Microseconds())/1000, "first-card-cpu-ms")
	b.Logf("first read: %v, %v CPU", took[0], firstCPU)
	slices.Sort(took)
	b.ReportMetric(float64(took[n/2].Microseconds())/1000, "card-p50-ms")
	b.Logf("card of %d runs, samples=%d, buckets=%d, %d points, %d JSON bytes, %d reads: fastest %v, p50 %v, slowest %v",
		len(runs), samples, buckets, points, bytes, n, took[0], took[n/2], took[n-1])
}

// processCPU is the CPU time this process has used (user and system).
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
