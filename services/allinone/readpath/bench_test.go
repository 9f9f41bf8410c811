package readpath_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/tbhub/tbhub/services/allinone/readpath"
	"github.com/tbhub/tbhub/services/internal/api/reader/readertest"
	"github.com/tbhub/tbhub/services/internal/storage/store"
)

// Read-path benchmarks on the embedded store, through the whole stack a
// browser request takes in `tbhub serve`: HTTP, the frontend handler, a
// loopback gRPC call with the bearer token, the tenancy guard, the read
// service and SQLite. Commands and results: docs/benchmarks.md, "Read path".

// benchServer is a server with one experiment owned by its token's user;
// latency benchmarks turn the frontend's response cache off (cacheTTL -1)
// so that every request reaches the store.
func benchServer(b *testing.B, cacheTTL time.Duration) (*server, string, *readertest.Env) {
	b.Helper()
	s := startServerWith(b, readpath.Config{CacheTTL: cacheTTL})
	s.http = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 128, DisableCompression: true}}
	owner, err := s.st.GetUserByName(context.Background(), "researcher")
	if err != nil {
		b.Fatal(err)
	}
	eid := store.NewExperimentID()
	if err := s.st.CreateExperiment(context.Background(), store.Experiment{ID: eid, Name: "bench", Owner: owner.ID, Visibility: store.VisibilityPrivate}); err != nil {
		b.Fatal(err)
	}
	return s, eid, &readertest.Env{Store: s.st, Blobs: s.blobs}
}

// timeRequests GETs path b.N times, one after another (POSTs form, if
// given), and reports the median and 99th-percentile latency.
func timeRequests(b *testing.B, s *server, path string, form ...url.Values) {
	b.Helper()
	lat := make([]time.Duration, 0, b.N)
	var bytes int
	method, body := http.MethodGet, url.Values(nil)
	if len(form) > 0 {
		method, body = http.MethodPost, form[0]
	}
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		r := s.do(b, method, path, s.token, body)
		lat = append(lat, time.Since(start))
		if r.status != http.StatusOK {
			b.Fatalf("%s %s: %d %s", method, path, r.status, r.body)
		}
		bytes = len(r.body)
	}
	b.StopTimer()
	slices.Sort(lat)
	pct := func(p float64) float64 {
		return float64(lat[min(len(lat)-1, int(p*float64(len(lat))))].Microseconds()) / 1000
	}
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
	b.ReportMetric(float64(bytes), "resp-bytes")
}

// writeLongSeries writes series ("train", "loss") of n points, in
// batches of 100,000.
func writeLongSeries(b *testing.B, env *readertest.Env, eid string, n int) {
	const batch = 100_000
	for lo := 0; lo < n; lo += batch {
		pts := make([]store.ScalarPoint, min(batch, n-lo))
		for i := range pts {
			step := int64(lo + i)
			pts[i] = store.ScalarPoint{Step: step, WallTime: 1.7e9 + float64(step)/10, Value: float64(step%977) / 977}
		}
		env.Scalars(b, eid, "train", "loss", pts)
	}
}

// One series of 1,000,000 points, read by the scalars route (k = 1,000).
func BenchmarkScalarsRoute1MPoints(b *testing.B) {
	s, eid, env := benchServer(b, -1)
	writeLongSeries(b, env, eid, 1_000_000)
	timeRequests(b, s, "/experiment/"+eid+"/data/plugin/scalars/scalars?run=train&tag=loss")
}

// One series of n points, read by scalars_multirun in 1,000 buckets as the
// web UI reads a card (format=columns): whole, and zoomed to a tenth of
// its steps. Writing the 10,000,000 points takes about a minute.
func BenchmarkScalarsMultirunBuckets(b *testing.B) {
	for _, n := range []int{10_000, 1_000_000, 10_000_000} {
		s, eid, env := benchServer(b, -1)
		writeLongSeries(b, env, eid, n)
		for _, w := range []struct{ name, min, max string }{{"whole", "", ""}, {"zoom", fmt.Sprint(n * 45 / 100), fmt.Sprint(n * 55 / 100)}} {
			b.Run(fmt.Sprintf("n=%d/%s", n, w.name), func(b *testing.B) {
				form := url.Values{"tag": {"loss"}, "runs": {"train"}, "format": {"columns"}, "samples": {"1000"}, "buckets": {"1000"}}
				if w.min != "" {
					form.Set("min_step", w.min)
					form.Set("max_step", w.max)
				}
				timeRequests(b, s, "/experiment/"+eid+"/data/plugin/scalars/scalars_multirun", form)
			})
		}
	}
}

// An experiment of 1,000 runs × 50 tags (one point each): the run index
// (data/runs) and scalars/tags.
func BenchmarkManyRuns(b *testing.B) {
	s, eid, _ := benchServer(b, -1)
	const runs, tags = 1000, 50
	for r := 0; r < runs; r += 100 {
		var batch []store.ScalarSeries
		for rr := r; rr < r+100; rr++ {
			for t := range tags {
				batch = append(batch, store.ScalarSeries{
					Series: readertest.Series(fmt.Sprintf("run-%04d", rr), fmt.Sprintf("metrics/tag-%02d", t), "scalars", store.DataClassScalar, nil),
					Points: []store.ScalarPoint{{Step: 1, WallTime: 1.7e9 + float64(rr), Value: 1}},
				})
			}
		}
		if err := s.st.WriteScalars(context.Background(), eid, batch); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("data/runs", func(b *testing.B) { timeRequests(b, s, "/experiment/"+eid+"/data/runs?format=index") })
	b.Run("scalars/tags", func(b *testing.B) { timeRequests(b, s, "/experiment/"+eid+"/data/plugin/scalars/tags") })
	// One small RPC (ListPlugins): the fixed cost of a call on this
	// experiment, mostly the access check reading the experiment.
	b.Run("plugins_listing", func(b *testing.B) { timeRequests(b, s, "/experiment/"+eid+"/data/plugins_listing") })
}

// 32 clients at once, each reading a small series (100 points) over and
// over: requests per second, with the frontend's response cache (its
// default 2 s TTL: one request in each TTL reaches the store) and without.
func BenchmarkSmallReadConcurrent(b *testing.B) {
	b.Run("cached", func(b *testing.B) { smallReadConcurrent(b, 0) })
	b.Run("uncached", func(b *testing.B) { smallReadConcurrent(b, -1) })
}

func smallReadConcurrent(b *testing.B, cacheTTL time.Duration) {
	s, eid, env := benchServer(b, cacheTTL)
	pts := make([]store.ScalarPoint, 100)
	for i := range pts {
		pts[i] = store.ScalarPoint{Step: int64(i), WallTime: 1.7e9 + float64(i), Value: float64(i)}
	}
	env.Scalars(b, eid, "train", "loss", pts)
	path := "/experiment/" + eid + "/data/plugin/scalars/scalars?run=train&tag=loss"
	s.do(b, http.MethodGet, path, s.token, nil) // warm up
	const clients = 32
	var wg sync.WaitGroup
	work := make(chan struct{}, b.N)
	for range b.N {
		work <- struct{}{}
	}
	close(work)
	errs := make(chan error, clients)
	b.ResetTimer()
	start := time.Now()
	for range clients {
		wg.Go(func() {
			for range work {
				if r := s.do(b, http.MethodGet, path, s.token, nil); r.status != http.StatusOK {
					errs <- fmt.Errorf("status %d: %s", r.status, r.body)
					return
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "req/s")
}
