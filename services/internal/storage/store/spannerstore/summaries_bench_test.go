package spannerstore_test

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/tbhub/tbhub/services/internal/storage/store"
	"github.com/tbhub/tbhub/services/internal/storage/store/storetest"
)

// BenchmarkReadScalarsBucketed reads one series of n points bucketed (B =
// 1,000, whole and zoomed to the middle tenth of the steps), the series
// holding one spike, found in every answer: from summaries, its cost
// should not grow with n. Reports Spanner calls per read. The 10M series
// takes minutes to load on the emulator: only with TBHUB_BENCH_10M=1.
func BenchmarkReadScalarsBucketed(b *testing.B) {
	sizes := []int64{10_000, 1_000_000}
	if os.Getenv("TBHUB_BENCH_10M") != "" {
		sizes = append(sizes, 10_000_000)
	}
	for _, n := range sizes {
		s, calls, eid := countedStore(b)
		start := time.Now()
		const load = 100_000
		for from := int64(0); from < n; from += load {
			batch := scalarBatch(from, min(from+load, n))
			if from <= n/2+7 && n/2+7 < from+load {
				batch[0].Points[n/2+7-from].Value = storetest.SpikeValue
			}
			if err := s.WriteScalars(b.Context(), eid, batch); err != nil {
				b.Fatal(err)
			}
		}
		b.Logf("loaded %d points in %v", n, time.Since(start))
		for _, w := range []struct {
			name     string
			min, max *int64
		}{{"whole", nil, nil}, {"zoom", ptr(n * 45 / 100), ptr(n * 55 / 100)}} {
			b.Run(fmt.Sprintf("n=%d/%s", n, w.name), func(b *testing.B) {
				q := store.Query{MinStep: w.min, MaxStep: w.max, Buckets: 1000}
				calls.take()
				reads := 0
				for b.Loop() {
					b.ReportMetric(float64(storetest.ReadBuckets(b, s, eid, q)), "points/read")
					reads++
				}
				_, total := calls.take()
				b.ReportMetric(float64(total)/float64(reads), "calls/read")
			})
		}
	}
}

// BenchmarkLongSeriesIngest appends batches of 1,000 points to one series
// growing to 200,000 points, past two summary levels' thresholds (16,384
// and 131,072 points), and reports mutations and logical bytes written
// per point: each batch also rewrites the last summary row of each level.
func BenchmarkLongSeriesIngest(b *testing.B) {
	s, _, commits, _ := countingStore(b)
	const batch, batches = 1000, 200
	for b.Loop() {
		eid := store.NewExperimentID()
		if err := s.CreateExperiment(b.Context(), store.Experiment{ID: eid, Owner: "u", Visibility: store.VisibilityPrivate}); err != nil {
			b.Fatal(err)
		}
		commits.take()
		for i := range int64(batches) {
			if err := s.WriteScalars(b.Context(), eid, scalarBatch(i*batch, (i+1)*batch)); err != nil {
				b.Fatal(err)
			}
		}
	}
	_, muts, bytes := commits.take()
	b.ReportMetric(float64(muts)/float64(batch*batches*b.N), "mutations/pt")
	b.ReportMetric(float64(bytes)/float64(batch*batches*b.N), "B/pt")
}
