package spannerstore_test

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"cloud.google.com/go/spanner"

	"github.com/tbhub/tbhub/services/internal/storage/store"
	"github.com/tbhub/tbhub/services/internal/storage/store/spannerstore"
	"github.com/tbhub/tbhub/services/internal/storage/store/storetest"
	"github.com/tbhub/tbhub/services/internal/testenv/spanneremu"
)

// benchStore returns a store on a fresh emulator database with one
// experiment, and the experiment's id.
func benchStore(b *testing.B) (*spannerstore.Store, string) {
	b.Helper()
	s := spanneremu.NewDatabase(b).Store(b)
	return s, newExperiment(b, s)
}

// newExperiment creates a user and an experiment it owns in s, and returns
// the experiment's id.
func newExperiment(tb testing.TB, s store.Store) string {
	tb.Helper()
	ctx := context.Background()
	if err := s.CreateUser(ctx, store.User{ID: "u", Name: "bench"}); err != nil {
		tb.Fatal(err)
	}
	eid := store.NewExperimentID()
	if err := s.CreateExperiment(ctx, store.Experiment{ID: eid, Owner: "u", Visibility: store.VisibilityPrivate}); err != nil {
		tb.Fatal(err)
	}
	return eid
}

// scalarBatch is points [from, to) of series r/loss.
func scalarBatch(from, to int64) []store.ScalarSeries {
	ps := make([]store.ScalarPoint, 0, to-from)
	for st := from; st < to; st++ {
		ps = append(ps, store.ScalarPoint{Step: st, WallTime: 1.7e9 + float64(st), Value: 1 / float64(st+1)})
	}
	return []store.ScalarSeries{{Series: store.TimeSeries{Run: "r", Tag: "loss", PluginName: "scalars"}, Points: ps}}
}

// BenchmarkReadScalarsDownsampled reads k = 1,000 points from one series
// of n points: the latest point plus 999 entries of the SampleKey index.
// The time should not grow with n.
func BenchmarkReadScalarsDownsampled(b *testing.B) {
	for _, n := range []int64{10_000, 100_000, 1_000_000} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			s, eid := benchStore(b)
			start := time.Now()
			const load = 100_000
			for from := int64(0); from < n; from += load {
				if err := s.WriteScalars(b.Context(), eid, scalarBatch(from, min(from+load, n))); err != nil {
					b.Fatal(err)
				}
			}
			b.Logf("loaded %d points in %v", n, time.Since(start))
			q := store.Query{MaxPoints: 1000}
			for b.Loop() {
				got := 0
				err := s.ReadScalars(b.Context(), eid, q, func(_ *store.TimeSeries, ps []store.ScalarPoint) error {
					got += len(ps)
					return nil
				})
				if err != nil || got != 1000 {
					b.Fatalf("read %d points, err %v; want 1000", got, err)
				}
			}
		})
	}
}

// BenchmarkWriteScalars writes batches of 1,000 points (an uploader-sized
// request) to one series, appending.
func BenchmarkWriteScalars(b *testing.B) {
	s, eid := benchStore(b)
	const batch = 1000
	var step int64
	start := time.Now()
	for b.Loop() {
		if err := s.WriteScalars(b.Context(), eid, scalarBatch(step, step+batch)); err != nil {
			b.Fatal(err)
		}
		step += batch
	}
	b.ReportMetric(float64(step)/time.Since(start).Seconds(), "points/s")
}

// uploadBatches is the 500,000-point logdir of the issue 21 measurements
// (scripts/bench-upload.sh with RUNS=100 TAGS=2 STEPS=2500, eventgen's
// shape: float32 values of a slow sine, a wall time every 0.1 s) as tbup
// sends it: run after run, each run's events in step order with its tags
// interleaved, cut into requests of the server's 1 MiB scalar request
// limit at tbup's estimate of about 33 bytes per point.
func uploadBatches(runs, tags, steps int) [][]store.ScalarSeries {
	const perRequest = (1 << 20) / 33
	var out [][]store.ScalarSeries
	var cur []store.ScalarSeries
	at := map[store.SeriesRef]int{}
	n := 0
	for r := range runs {
		run := fmt.Sprintf("run_%03d", r)
		for s := range steps {
			for t := range tags {
				ref := store.SeriesRef{Run: run, Tag: fmt.Sprintf("metrics/tag_%02d", t)}
				i, ok := at[ref]
				if !ok {
					i = len(cur)
					at[ref] = i
					cur = append(cur, store.ScalarSeries{Series: store.TimeSeries{Run: ref.Run, Tag: ref.Tag, PluginName: "scalars"}})
				}
				v := float32(math.Sin(float64(s+t)*0.01)) / float32(1+t)
				cur[i].Points = append(cur[i].Points, store.ScalarPoint{Step: int64(s), WallTime: 1.7e9 + float64(s)*0.1, Value: float64(v)})
				if n++; n%perRequest == 0 {
					out, cur, at = append(out, cur), nil, map[store.SeriesRef]int{}
				}
			}
		}
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

// BenchmarkScalarIngest writes the 500,000 points of uploadBatches (100
// runs × 2 tags × 2,500 steps) into a new experiment per iteration and
// counts what the commits write, by Spanner's rules (commitCounter):
// mutations and logical bytes per point, and the points written per
// second of the emulator.
func BenchmarkScalarIngest(b *testing.B) {
	s, _, commits, _ := countingStore(b)
	batches := uploadBatches(100, 2, 2500)
	points := 0
	for _, batch := range batches {
		for _, ser := range batch {
			points += len(ser.Points)
		}
	}
	var took time.Duration
	var eid string
	commits.take()
	for b.Loop() {
		eid = store.NewExperimentID()
		if err := s.CreateExperiment(b.Context(), store.Experiment{ID: eid, Owner: "u", Visibility: store.VisibilityPrivate}); err != nil {
			b.Fatal(err)
		}
		commits.take()
		start := time.Now()
		for _, batch := range batches {
			if err := s.WriteScalars(b.Context(), eid, batch); err != nil {
				b.Fatal(err)
			}
		}
		took += time.Since(start)
	}
	n, muts, bytes := commits.take()
	b.ReportMetric(float64(muts)/float64(points), "mutations/pt")
	b.ReportMetric(float64(bytes)/float64(points), "B/pt")
	// What stays: the chunk rows' logical bytes (key columns: the
	// experiment ID, three INT64s).
	var rows, chunkBytes int64
	err := commits.client.Single().Query(b.Context(), spanner.Statement{
		SQL:    "SELECT COUNT(*), SUM(BYTE_LENGTH(Chunk)) FROM ScalarChunks WHERE ExperimentId = @eid",
		Params: map[string]any{"eid": eid},
	}).Do(func(r *spanner.Row) error { return r.Columns(&rows, &chunkBytes) })
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(chunkBytes+rows*int64(len(eid)+24))/float64(points), "stored-B/pt")
	b.ReportMetric(float64(points*b.N)/took.Seconds(), "points/s")
	b.Logf("last iteration: %d points in %d requests, %d commits, %d mutations, %d bytes", points, len(batches), n, muts, bytes)
}

// BenchmarkExperimentLists reads a gallery page and one user's list (20
// experiments) out of n experiments on the emulator, at a smaller scale
// than sqlitestore's (each experiment costs the emulator two commits).
func BenchmarkExperimentLists(b *testing.B) {
	for _, n := range []int{50, 1_000} {
		s := spanneremu.NewDatabase(b).Store(b)
		start := time.Now()
		storetest.FillExperimentLists(b, s, n)
		b.Logf("wrote %d experiments in %v", n, time.Since(start))
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) { storetest.BenchmarkExperimentLists(b, s) })
	}
}
