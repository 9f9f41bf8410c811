package sqlitestore

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/tbhub/tbhub/services/internal/storage/store"
	"github.com/tbhub/tbhub/services/internal/storage/store/storetest"
)

// fillSeries writes n points (steps 0..n-1) to run "r", tag "loss" of a new
// experiment and returns its ID.
func fillSeries(b *testing.B, s *Store, n int) string {
	b.Helper()
	c := b.Context()
	eid := newTestExperiment(b, s)
	const perCall = 100_000
	for start := 0; start < n; start += perCall {
		if err := s.WriteScalars(c, eid, []store.ScalarSeries{scalarBatch(int64(start), min(perCall, n-start))}); err != nil {
			b.Fatal(err)
		}
	}
	return eid
}

func scalarBatch(first int64, n int) store.ScalarSeries {
	batch := store.ScalarSeries{Series: store.TimeSeries{Run: "r", Tag: "loss", PluginName: "scalars"}}
	batch.Points = make([]store.ScalarPoint, n)
	for i := range batch.Points {
		st := first + int64(i)
		batch.Points[i] = store.ScalarPoint{Step: st, WallTime: 1.7e9 + float64(st), Value: 1 / float64(st+1)}
	}
	return batch
}

var benchSizes = []int{10_000, 100_000, 1_000_000}

// BenchmarkReadScalarsDownsample reads k = 1,000 points of one series of n
// points through the store: the sample chunks' read, the store's cache of
// downsampled series invalidated before each read.
func BenchmarkReadScalarsDownsample(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			s := newTestStore(b)
			eid := fillSeries(b, s, n)
			q := store.Query{MaxPoints: 1000}
			defer reportCPU(b, cpuTime())
			for b.Loop() {
				s.scalars.wrote(eid)
				got := 0
				err := s.ReadScalars(b.Context(), eid, q, func(_ *store.TimeSeries, ps []store.ScalarPoint) error {
					got += len(ps)
					return nil
				})
				if err != nil || got != 1000 {
					b.Fatalf("read %d points, %v", got, err)
				}
			}
		})
	}
}

// cpuTime is the process's CPU time, user and system: on a machine shared
// with other jobs a truer cost than the time elapsed.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU reports the CPU time per iteration since cpuStart, in ms.
func reportCPU(b *testing.B, cpuStart time.Duration) {
	b.ReportMetric(float64((cpuTime()-cpuStart).Microseconds())/1e3/float64(b.N), "cpu-ms/op")
}

// BenchmarkReadScalarsBucketedSQL is the alternative the downsample package
// rejects, for comparison: one point per step bucket (the largest step of
// each of 1,000 buckets), computed by SQL over one row per point, the
// layout that method needs (a table keyed by (series_id, step), built here
// beside the store's own tables).
func BenchmarkReadScalarsBucketedSQL(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			s := newTestStore(b)
			c := b.Context()
			if _, err := s.w.ExecContext(c, `CREATE TABLE bench_points (series_id INTEGER, step INTEGER,
				wall_time REAL, value REAL, PRIMARY KEY (series_id, step)) WITHOUT ROWID`); err != nil {
				b.Fatal(err)
			}
			if _, err := s.w.ExecContext(c, `WITH RECURSIVE steps(step) AS (SELECT 0 UNION ALL SELECT step + 1 FROM steps WHERE step < ?)
				INSERT INTO bench_points SELECT 1, step, 1.7e9 + step, 1.0 / (step + 1) FROM steps`, n-1); err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				var width int64
				if err := s.r.QueryRowContext(c, "SELECT MAX(step) + 1 FROM bench_points WHERE series_id = 1").Scan(&width); err != nil {
					b.Fatal(err)
				}
				rows, err := s.r.QueryContext(c, `SELECT step, wall_time, value FROM bench_points WHERE series_id = 1 AND step IN
					(SELECT MAX(step) FROM bench_points WHERE series_id = 1 GROUP BY step * 1000 / ?) ORDER BY step`, width)
				if err != nil {
					b.Fatal(err)
				}
				got := 0
				for rows.Next() {
					var p store.ScalarPoint
					if err := rows.Scan(&p.Step, &p.WallTime, &p.Value); err != nil {
						b.Fatal(err)
					}
					got++
				}
				rows.Close()
				if got != 1000 {
					b.Fatalf("read %d points", got)
				}
			}
		})
	}
}

// BenchmarkWriteScalars appends scalar points to one series, perCall
// points per WriteScalars call, and reports points per second.
func BenchmarkWriteScalars(b *testing.B) {
	for _, perCall := range []int{1_000, 10_000, 100_000} {
		b.Run(fmt.Sprintf("batch=%d", perCall), func(b *testing.B) {
			s := newTestStore(b)
			eid := fillSeries(b, s, 0)
			next := int64(0)
			for b.Loop() {
				if err := s.WriteScalars(b.Context(), eid, []store.ScalarSeries{scalarBatch(next, perCall)}); err != nil {
					b.Fatal(err)
				}
				next += int64(perCall)
			}
			b.ReportMetric(float64(next)/b.Elapsed().Seconds(), "points/s")
		})
	}
}

// BenchmarkReadScalarsManyRuns is one scalar card of the web UI on the
// issue's large experiment: one tag of 100 runs of 10,000 points each, read
// at k points per series in one ReadScalars call. k = 1,000 is the read
// path's default; smaller k is a card asking for about one point per pixel
// column. "cold" reads the database each time; "cached" is a chart read
// again (scalarCache); "buckets" reads k buckets per series, as the web
// UI's cards do. p50-ms is the median time of one read.
func BenchmarkReadScalarsManyRuns(b *testing.B) {
	const runs, steps = 100, 10_000
	s := newTestStore(b)
	eid := newTestExperiment(b, s)
	for r := range runs {
		batch := scalarBatch(0, steps)
		batch.Series.Run = fmt.Sprintf("run%03d", r)
		if err := s.WriteScalars(b.Context(), eid, []store.ScalarSeries{batch}); err != nil {
			b.Fatal(err)
		}
	}
	for _, tc := range []struct {
		k       int64
		cached  bool
		buckets bool // as the web UI's cards read: k buckets (first, last, min, max)
	}{{1000, false, false}, {500, false, false}, {200, false, false}, {500, true, false}, {500, false, true}} {
		name := fmt.Sprintf("k=%d/cold", tc.k)
		switch {
		case tc.cached:
			name = fmt.Sprintf("k=%d/cached", tc.k)
		case tc.buckets:
			name = fmt.Sprintf("buckets=%d/cold", tc.k)
		}
		b.Run(name, func(b *testing.B) {
			k := tc.k
			q := store.Query{Filter: store.Filter{Tags: []string{"loss"}}, MaxPoints: k}
			if tc.buckets {
				q.Buckets = int(k)
			}
			defer reportCPU(b, cpuTime())
			var took []time.Duration
			defer func() {
				slices.Sort(took)
				b.ReportMetric(float64(took[len(took)/2].Microseconds())/1e3, "p50-ms")
			}()
			for b.Loop() {
				if !tc.cached {
					s.scalars.wrote(eid)
				}
				start := time.Now()
				got := int64(0)
				err := s.ReadScalars(b.Context(), eid, q, func(_ *store.TimeSeries, ps []store.ScalarPoint) error {
					got += int64(len(ps))
					return nil
				})
				took = append(took, time.Since(start))
				if err != nil || !tc.buckets && got != runs*k || tc.buckets && (got < runs*k || got > 4*runs*k) {
					b.Fatalf("read %d points, %v", got, err)
				}
			}
		})
	}
}

// BenchmarkListPublicExperiments reads one page of the public gallery (21
// experiments, what ExperimentService asks for a page of 20) out of n
// experiments, half of them public: the first page, a search that matches
// one experiment in 1,000 (every public row is tested), and a page deep
// in the list (from a cursor).
func BenchmarkListPublicExperiments(b *testing.B) {
	for _, n := range []int{1_000, 10_000} {
		s := newTestStore(b)
		c := b.Context()
		if err := s.CreateUser(c, store.User{ID: "u", Name: "owner"}); err != nil {
			b.Fatal(err)
		}
		var middle store.PublicCursor
		for i := range n {
			v := store.VisibilityPrivate
			if i%2 == 0 {
				v = store.VisibilityPublic
			}
			e := store.Experiment{ID: store.NewExperimentID(), Name: fmt.Sprintf("run %d", i), Owner: "u", Visibility: v,
				Description: fmt.Sprintf("A **sweep** of learning rates, number %d of many; see the [notes](https://example.com/%d).", i, i)}
			if i%1000 == 0 {
				e.Description += " needle"
			}
			if err := s.CreateExperiment(c, e); err != nil {
				b.Fatal(err)
			}
			if i == n/2 {
				got, err := s.GetExperiment(c, e.ID)
				if err != nil {
					b.Fatal(err)
				}
				middle = store.PublicCursor{UpdateTime: got.UpdateTime, ID: got.ID}
			}
		}
		for _, q := range []struct {
			name string
			q    store.PublicQuery
		}{
			{"first", store.PublicQuery{Limit: 21}},
			{"search", store.PublicQuery{Limit: 21, Search: "NEEDLE"}},
			{"middle", store.PublicQuery{Limit: 21, After: middle}},
		} {
			b.Run(fmt.Sprintf("n=%d/%s", n, q.name), func(b *testing.B) {
				for b.Loop() {
					list, err := s.ListPublicExperiments(c, q.q)
					if err != nil || len(list) == 0 {
						b.Fatalf("%d experiments, %v", len(list), err)
					}
				}
			})
		}
	}
}

// issueExperiment writes the shape of issue 21's storage target through
// the store's Writer: 100 runs × 2 tags × 2,500 steps (500,000 points),
// a float32 loss decaying with 1% noise and a float32 accuracy with ±0.05
// noise, wall times as Python's time.time() gives them (whole nanoseconds
// / 1e9) 0.5 s apart ±20%, sent as an uploader does: one call per run
// per 250 steps, both tags (500 points).
func issueExperiment(tb testing.TB, s *Store) (eid string, points int) {
	tb.Helper()
	const runs, steps, perCall = 100, 2_500, 250
	eid = newTestExperiment(tb, s)
	r := rand.New(rand.NewPCG(21, 3))
	wallNanos := make([]int64, runs)
	for i := range wallNanos {
		wallNanos[i] = 1_700_000_000_000_000_000 + int64(i)*1e12
	}
	for start := 0; start < steps; start += perCall {
		for run := range runs {
			loss := store.ScalarSeries{Series: store.TimeSeries{Run: fmt.Sprintf("run%03d", run), Tag: "loss", PluginName: "scalars"}}
			acc := store.ScalarSeries{Series: store.TimeSeries{Run: loss.Series.Run, Tag: "accuracy", PluginName: "scalars"}}
			for st := start; st < start+perCall; st++ {
				wall := float64(wallNanos[run]) / 1e9
				wallNanos[run] += int64(0.5e9 * (0.8 + 0.4*r.Float64()))
				l := float32(0.1 + 2.2*math.Exp(-float64(st)/600)*(1+0.01*r.NormFloat64()))
				a := float32(0.9 - 0.4*math.Exp(-float64(st)/500) + 0.05*r.NormFloat64())
				loss.Points = append(loss.Points, store.ScalarPoint{Step: int64(st), WallTime: wall, Value: float64(l)})
				acc.Points = append(acc.Points, store.ScalarPoint{Step: int64(st), WallTime: wall, Value: float64(a)})
			}
			if err := s.WriteScalars(tb.Context(), eid, []store.ScalarSeries{loss, acc}); err != nil {
				tb.Fatal(err)
			}
			points += 2 * perCall
		}
	}
	return eid, points
}

// issueDatabase writes issueExperiment into a fresh database, closes the
// store and returns the size of its files (tbhub.db and its -wal) and the
// number of points.
func issueDatabase(tb testing.TB) (size int64, points int) {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), DefaultFile)
	s, err := Open(tb.Context(), path, Options{})
	if err != nil {
		tb.Fatal(err)
	}
	_, points = issueExperiment(tb, s)
	if err := s.Close(); err != nil {
		tb.Fatal(err)
	}
	for _, name := range []string{path, path + "-wal"} {
		info, err := os.Stat(name)
		if err != nil && !os.IsNotExist(err) {
			tb.Fatal(err)
		}
		if err == nil {
			size += info.Size()
		}
	}
	return size, points
}

// BenchmarkBytesPerScalarPoint reports issueDatabase's size per point: the
// issue's "at most 8 bytes per scalar point". Run it with -benchtime 1x.
func BenchmarkBytesPerScalarPoint(b *testing.B) {
	for b.Loop() {
		size, points := issueDatabase(b)
		b.ReportMetric(float64(size)/float64(points), "B/point")
		b.ReportMetric(float64(size), "file-bytes")
	}
}

// BenchmarkReadScalarsBuckets reads one series of n points (with one
// spike) in 1,000 buckets, whole and zoomed to its middle tenth: the
// issue's "a bucketed read over a 10,000,000-point series costs the same
// as over a 10,000-point series (within 2×)". The 10M series takes about
// a minute to write.
func BenchmarkReadScalarsBuckets(b *testing.B) {
	for _, n := range bucketBenchSizes {
		s := newTestStore(b)
		eid := fillSeries(b, s, n)
		spike := scalarBatch(int64(n/2+7), 1)
		spike.Points[0].Value = storetest.SpikeValue
		if err := s.WriteScalars(b.Context(), eid, []store.ScalarSeries{spike}); err != nil {
			b.Fatal(err)
		}
		for _, w := range []struct {
			name     string
			min, max *int64
		}{{"whole", nil, nil}, {"zoom", ptrTo(int64(n * 45 / 100)), ptrTo(int64(n * 55 / 100))}} {
			b.Run(fmt.Sprintf("n=%d/%s", n, w.name), func(b *testing.B) {
				q := store.Query{MinStep: w.min, MaxStep: w.max, Buckets: 1000}
				defer reportCPU(b, cpuTime())
				for b.Loop() {
					b.ReportMetric(float64(storetest.ReadBuckets(b, s, eid, q)), "points/read")
				}
			})
		}
	}
}

var bucketBenchSizes = []int{10_000, 1_000_000, 10_000_000}

func ptrTo[T any](v T) *T { return &v }

// BenchmarkExperimentLists reads a gallery page and one user's list (20
// experiments) out of n experiments: the time should not grow with n.
func BenchmarkExperimentLists(b *testing.B) {
	for _, n := range []int{100, 10_000} {
		s := newTestStore(b)
		storetest.FillExperimentLists(b, s, n)
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) { storetest.BenchmarkExperimentLists(b, s) })
	}
}
