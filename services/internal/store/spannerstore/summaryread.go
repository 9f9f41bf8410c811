package spannerstore

import (
	"cmp"
	"context"
	"slices"

	"cloud.google.com/go/spanner"

	"github.com/tbhub/tbhub/services/internal/scalarchunk"
	"github.com/tbhub/tbhub/services/internal/store"
)

// summaryPlan is the bucketed read of one series from its summary rows.
type summaryPlan struct {
	s          *scalarSeries
	lo, hi     int64
	level      int
	segs       []scalarchunk.Segment
	head, tail *scalarchunk.Segment
	edges      [2][]store.ScalarPoint // the points of head and tail in the window
}

// summaryLevel is the coarsest summary level whose segments hold no more
// points than a bucket of the window is expected to, if the series
// keeps it; 0 for none (a window of at most store.MaxExactBucketPoints
// per bucket, or a short series).
func summaryLevel(s *scalarSeries, q *store.Query, lo, hi int64) int {
	if !s.id.Valid {
		return 0
	}
	per := windowEstimate(&s.sum, q, lo, hi) / float64(q.Buckets)
	if per <= store.MaxExactBucketPoints {
		return 0
	}
	for level := scalarchunk.TopSummaryLevel; level <= scalarchunk.BaseSummaryLevel; level++ {
		if scalarchunk.KeepsLevel(level, s.sum.PointCount) && per >= float64(scalarchunk.SegmentCap(level)) {
			return level
		}
	}
	return 0
}

// edgeRange is a range of steps of a series to read from its chunks of
// all points, as the edge query's parameter.
type edgeRange struct {
	ID int64 `spanner:"Id"`
	Lo int64 `spanner:"Lo"`
	Hi int64 `spanner:"Hi"`
}

// edgeChunksSQL reads, for each edge range, the chunks of all points that
// may hold its steps: from the last starting at or before Lo (one grouped
// scan of the ranges' chunk keys) to Hi.
const edgeChunksSQL = `WITH s AS (
  SELECT e.Id, e.Lo, e.Hi, MAX(d.FirstStep) AS Start FROM UNNEST(@edges) AS e
  JOIN ScalarChunks AS d ON d.ExperimentId = @eid AND d.SeriesId = e.Id AND d.SampleLevel = -1 AND d.FirstStep <= e.Lo
  GROUP BY e.Id, e.Lo, e.Hi)
SELECT s.Id, s.Lo, c.FirstStep, c.Chunk FROM s
JOIN ScalarChunks AS c ON c.ExperimentId = @eid AND c.SeriesId = s.Id AND c.SampleLevel = -1 AND c.FirstStep >= s.Start AND c.FirstStep <= s.Hi`

// readSummarizedBuckets answers from summaries the bucketed read of the
// series that keep them for the window: one read of every such series'
// summary rows at its level up to the window's end, then one query for
// the points of the segments crossing the window's ends. It returns the
// answers by index in series; a series not among them is read otherwise
// (its summaries are missing, or its window holds too few points).
func readSummarizedBuckets(ctx context.Context, tx txReader, eid string, series []scalarSeries, q *store.Query) (map[int][]store.ScalarPoint, error) {
	plans := map[int]*summaryPlan{}
	var keys []spanner.KeySet
	for i := range series {
		s := &series[i]
		if s.sum.PointCount == 0 {
			continue
		}
		lo, hi := stepWindow(q, s.sum.MaxStep)
		if lo > hi {
			continue
		}
		if level := summaryLevel(s, q, lo, hi); level != 0 {
			plans[i] = &summaryPlan{s: s, lo: lo, hi: hi, level: level}
			id := s.id.Int64
			keys = append(keys, spanner.KeyRange{Start: spanner.Key{eid, id, int64(level)}, End: spanner.Key{eid, id, int64(level), hi}, Kind: spanner.ClosedClosed})
		}
	}
	out := map[int][]store.ScalarPoint{}
	if len(plans) == 0 {
		return out, nil
	}
	rows, err := readChunks(ctx, tx, keys)
	if err != nil {
		return nil, err
	}
	var edges []edgeRange
	for i, p := range plans {
		var segs []scalarchunk.Segment
		for _, r := range rows[levelKey{p.s.id.Int64, p.level}] {
			if segs, err = scalarchunk.DecodeSegments(r.chunk, segs); err != nil {
				return nil, err
			}
		}
		segs = scalarchunk.SegmentsIn(segs, p.lo, p.hi)
		if !scalarchunk.LevelFitsBuckets(p.level, segs, q.Buckets) {
			delete(plans, i)
			continue
		}
		p.segs, p.head, p.tail = scalarchunk.EdgeSegments(segs, p.lo, p.hi)
		for _, g := range []*scalarchunk.Segment{p.head, p.tail} {
			if g != nil {
				edges = append(edges, edgeRange{ID: p.s.id.Int64, Lo: max(p.lo, g.First()), Hi: min(p.hi, g.Last())})
			}
		}
	}
	if len(edges) > 0 {
		byID := map[int64]*summaryPlan{}
		for _, p := range plans {
			byID[p.s.id.Int64] = p
		}
		type edgeChunk struct {
			lo int64
			c  storedChunk
		}
		got := map[int64][]edgeChunk{}
		err := tx.Query(ctx, spanner.Statement{SQL: edgeChunksSQL, Params: map[string]any{"eid": eid, "edges": edges}}).Do(func(row *spanner.Row) error {
			var id int64
			var e edgeChunk
			if err := row.Columns(&id, &e.lo, &e.c.first, &e.c.chunk); err != nil {
				return err
			}
			got[id] = append(got[id], e)
			return nil
		})
		if err != nil {
			return nil, err
		}
		for id, cs := range got {
			slices.SortFunc(cs, func(a, b edgeChunk) int { return cmp.Or(cmp.Compare(a.lo, b.lo), cmp.Compare(a.c.first, b.c.first)) })
			p := byID[id]
			for j, g := range []*scalarchunk.Segment{p.head, p.tail} {
				if g == nil {
					continue
				}
				from, to := max(p.lo, g.First()), min(p.hi, g.Last())
				for _, e := range cs {
					if e.lo != from {
						continue
					}
					err := scalarchunk.Visit(e.c.chunk, from, to, func(ps []store.ScalarPoint) error {
						for _, pt := range ps {
							if pt.Step >= from && pt.Step <= to {
								p.edges[j] = append(p.edges[j], pt)
							}
						}
						return nil
					})
					if err != nil {
						return nil, err
					}
				}
			}
		}
	}
	for i, p := range plans {
		if scalarchunk.SummedCount(p.edges[0], p.segs, p.edges[1]) <= store.MaxExactBucketPoints*int64(q.Buckets) {
			continue // exact instead
		}
		out[i] = scalarchunk.BucketsFromSegments(p.edges[0], p.segs, p.edges[1], q.Buckets)
	}
	return out, nil
}
