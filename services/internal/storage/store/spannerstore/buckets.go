package spannerstore

import (
	"context"

	"cloud.google.com/go/spanner"

	"github.com/tbhub/tbhub/services/internal/storage/downsample"
	"github.com/tbhub/tbhub/services/internal/storage/store"
)

// DefaultMaxBucketedPoints is Options.MaxBucketedPoints's default.
const DefaultMaxBucketedPoints = 2_000_000

// sampledBucketPoints is how many points of a series' window a bucketed
// read samples (TensorBoard's sampled read) when the window holds more
// than the store's bound: four per bucket.
func sampledBucketPoints(buckets int) int64 { return 4 * int64(buckets) }

// A bucketed read on Spanner answers a series that keeps summaries, and
// whose window holds more than store.MaxExactBucketPoints per bucket,
// from them (readSummarizedBuckets). Another series' window is read
// exactly when it holds at most s.maxBucketed points, and reduced
// (downsample.BucketPoints): the exact answer. A window holding more is
// answered from a sampled read of sampledBucketPoints points reduced the
// same way: real points, the window's latest among them, but a spike
// between the samples may be missed. Which series are past the bound is
// estimated from their point count and step span; a series whose window
// turns out denser than estimated is read exactly up to the bound, then
// sampled.

// bucketAnswer is one series' answer, held until the series before it
// are emitted.
type bucketAnswer struct {
	ts       store.TimeSeries
	points   []store.ScalarPoint
	overflow bool // more points than the bound: to be sampled
	reduced  bool // points is the answer already
}

// windowEstimate is the number of points of s in the window [lo, hi] if
// its steps are dense.
func windowEstimate(s *store.SeriesSummary, q *store.Query, lo, hi int64) float64 {
	window := float64(s.PointCount)
	if span := float64(s.MaxStep) + 1; q.MinStep != nil || q.MaxStep != nil {
		window *= min(1, (float64(hi)-max(float64(lo), 0)+1)/max(span, 1))
	}
	return window
}

// readScalarBuckets answers a bucketed read (q.Buckets > 0) in one
// read-only transaction: one query selecting the series, one read and
// one query for those answered from summaries, then per run of
// consecutive series read the same way (exactly or sampled) the reads of
// readSelectedScalars, and for series found denser than estimated one
// more sampled read.
func (s *Store) readScalarBuckets(ctx context.Context, eid string, q store.Query, fn store.ScalarVisitor) error {
	s, release := s.acquire()
	defer release()
	tx := s.client.ReadOnlyTransaction().WithBeginTransactionOption(spanner.InlinedBeginTransaction)
	defer tx.Close()
	series, err := selectScalarSeries(ctx, tx, eid, &q)
	if err != nil {
		return fail("ReadScalars", err)
	}
	ready, err := readSummarizedBuckets(ctx, tx, eid, series, &q)
	if err != nil {
		return fail("ReadScalars", err)
	}
	exact, sampled := q, q
	exact.Buckets, exact.MaxPoints = 0, store.AllPoints
	sampled.Buckets, sampled.MaxPoints = 0, sampledBucketPoints(q.Buckets)
	// How series i is read: from its summaries (answered above), exactly,
	// or sampled.
	const fromSummaries, whole, sample = 0, 1, 2
	mode := func(i int) int {
		if _, ok := ready[i]; ok {
			return fromSummaries
		}
		sc := &series[i]
		lo, hi := stepWindow(&q, sc.sum.MaxStep)
		if windowEstimate(&sc.sum, &q, lo, hi) > float64(s.maxBucketed) {
			return sample
		}
		return whole
	}
	for i := 0; i < len(series); {
		m, n := mode(i), i+1
		for n < len(series) && mode(n) == m {
			n++
		}
		run := series[i:n]
		var answers []bucketAnswer
		switch m {
		case fromSummaries:
			for j := range run {
				answers = append(answers, bucketAnswer{ts: run[j].sum.TimeSeries, points: ready[i+j], reduced: true})
			}
		case whole:
			answers, err = s.collectBuckets(ctx, tx, eid, run, &exact)
		case sample:
			answers, err = s.collectBuckets(ctx, tx, eid, run, &sampled)
		}
		if err != nil {
			return fail("ReadScalars", err)
		}
		i = n
		for j := range answers {
			a := &answers[j]
			if a.overflow {
				again, err := s.collectBuckets(ctx, tx, eid, run[j:j+1], &sampled)
				if err != nil {
					return fail("ReadScalars", err)
				}
				a.points = again[0].points
			}
			if !a.reduced {
				a.points = downsample.BucketPoints(a.points, q.Buckets)
			}
			if err := fn(&a.ts, a.points); err != nil {
				return err
			}
		}
	}
	return nil
}

// collectBuckets reads the points q selects of series (in their order),
// each series' at most s.maxBucketed: past that its answer is marked
// overflow and its points dropped.
func (s *Store) collectBuckets(ctx context.Context, tx txReader, eid string, series []scalarSeries, q *store.Query) ([]bucketAnswer, error) {
	var out []bucketAnswer
	err := readSelectedScalars(ctx, tx, eid, series, q, func(ts *store.TimeSeries, ps []store.ScalarPoint) error {
		if n := len(out); n == 0 || out[n-1].ts.Run != ts.Run || out[n-1].ts.Tag != ts.Tag {
			out = append(out, bucketAnswer{ts: *ts})
		}
		a := &out[len(out)-1]
		if a.overflow {
			return nil
		}
		if int64(len(a.points)+len(ps)) > s.maxBucketed {
			a.points, a.overflow = nil, true
			return nil
		}
		a.points = append(a.points, ps...)
		return nil
	})
	return out, err
}
