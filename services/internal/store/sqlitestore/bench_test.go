package sqlitestore

import (
	"fmt"
	"testing"

	"github.com/tbhub/tbhub/services/internal/store"
)

// fillSeries writes n points (steps 0..n-1) to run "r", tag "loss" of a new
// experiment and returns its ID.
func fillSeries(b *testing.B, s *Store, n int) string {
	b.Helper()
	c := b.Context()
	if err := s.CreateUser(c, store.User{ID: "u", Name: "u"}); err != nil {
		b.Fatal(err)
	}
	eid := store.NewExperimentID()
	if err := s.CreateExperiment(c, store.Experiment{ID: eid, Owner: "u", Visibility: store.VisibilityPrivate}); err != nil {
		b.Fatal(err)
	}
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
// points through the store: the sample-key index read.
func BenchmarkReadScalarsDownsample(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			s := newTestStore(b)
			eid := fillSeries(b, s, n)
			q := store.Query{MaxPoints: 1000}
			for b.Loop() {
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

// BenchmarkReadScalarsBucketedSQL is the alternative the downsample package
// rejects, for comparison: one point per step bucket (the largest step of
// each of 1,000 buckets), computed by SQL over every row of the series.
func BenchmarkReadScalarsBucketedSQL(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			s := newTestStore(b)
			fillSeries(b, s, n)
			for b.Loop() {
				rows, err := s.r.QueryContext(b.Context(), `SELECT p.step, p.wall_time, p.value_bits FROM scalar_points p
					JOIN (SELECT MAX(step) AS step FROM scalar_points WHERE series_id = 1
						GROUP BY step * 1000 / (SELECT max_step + 1 FROM series WHERE id = 1)) m
					ON p.series_id = 1 AND p.step = m.step ORDER BY p.step`)
				if err != nil {
					b.Fatal(err)
				}
				got := 0
				for rows.Next() {
					var p store.ScalarPoint
					if err := scalarTable.scan(rows, &p); err != nil {
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
