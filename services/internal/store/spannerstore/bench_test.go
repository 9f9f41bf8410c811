package spannerstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/tbhub/tbhub/services/internal/store"
	"github.com/tbhub/tbhub/services/internal/store/spannerstore"
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
