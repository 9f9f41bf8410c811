package spannerstore

import (
	"cmp"
	"context"
	"math"
	"slices"

	"cloud.google.com/go/spanner"

	"github.com/tbhub/tbhub/services/internal/storage/scalarchunk"
	"github.com/tbhub/tbhub/services/internal/storage/store"
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

// stepsBack is a guess of the steps n points span before a step of s,
// twice their span if its steps are dense, for a read that starts that
// far before the step to find the row or chunk holding it.
func stepsBack(s *store.SeriesSummary, n int64, step int64) int64 {
	span := 2*float64(n)*(float64(s.MaxStep)+1)/float64(max(s.PointCount, 1)) + 1
	from := step - int64(min(span, float64(1<<62)))
	if from > step {
		return math.MinInt64 // wrapped
	}
	return from
}

// rowsFrom is the first step of the plan's read of its level's rows,
// stepsBack from lo by the points of a row.
func (p *summaryPlan) rowsFrom() int64 {
	return stepsBack(&p.s.sum, scalarchunk.SegmentsPerRow*scalarchunk.SegmentCap(p.level), p.lo)
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
			p := &summaryPlan{s: s, lo: lo, hi: hi, level: level}
			plans[i] = p
			id := s.id.Int64
			keys = append(keys, spanner.KeyRange{Start: spanner.Key{eid, id, int64(level), p.rowsFrom()}, End: spanner.Key{eid, id, int64(level), hi}, Kind: spanner.ClosedClosed})
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
	// A level whose range read missed the row owning lo (sparse steps
	// before the window, or a window starting before the series): read
	// again from the level's first row.
	keys = keys[:0]
	for _, p := range plans {
		if from := p.rowsFrom(); from > math.MinInt64 {
			got := rows[levelKey{p.s.id.Int64, p.level}]
			if len(got) == 0 || got[0].first > p.lo {
				id := p.s.id.Int64
				keys = append(keys, spanner.KeyRange{Start: spanner.Key{eid, id, int64(p.level)}, End: spanner.Key{eid, id, int64(p.level), p.hi}, Kind: spanner.ClosedClosed})
			}
		}
	}
	if len(keys) > 0 {
		more, err := readChunks(ctx, tx, keys)
		if err != nil {
			return nil, err
		}
		for k, cs := range more {
			rows[k] = cs
		}
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
		got, err := readEdgeChunks(ctx, tx, eid, edges, byID)
		if err != nil {
			return nil, err
		}
		for _, e := range edges {
			p := byID[e.ID]
			for j, g := range []*scalarchunk.Segment{p.head, p.tail} {
				if g == nil || max(p.lo, g.First()) != e.Lo {
					continue
				}
				for _, c := range got[e] {
					err := scalarchunk.Visit(c.chunk, e.Lo, e.Hi, func(ps []store.ScalarPoint) error {
						for _, pt := range ps {
							if pt.Step >= e.Lo && pt.Step <= e.Hi {
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

// readEdgeChunks reads the chunks of all points that may hold the steps of
// each edge range, in step order: first in one read of each range
// widened below by twice the steps a full chunk spans if the series'
// steps are dense, which holds the chunk the range starts in unless
// steps are sparse there; for the ranges it misses, edgeChunksSQL.
func readEdgeChunks(ctx context.Context, tx txReader, eid string, edges []edgeRange, byID map[int64]*summaryPlan) (map[edgeRange][]storedChunk, error) {
	keys := make([]spanner.KeySet, len(edges))
	for i, e := range edges {
		from := stepsBack(&byID[e.ID].s.sum, scalarchunk.MaxChunkPoints, e.Lo)
		keys[i] = spanner.KeyRange{Start: spanner.Key{eid, e.ID, int64(scalarchunk.AllLevels), from}, End: spanner.Key{eid, e.ID, int64(scalarchunk.AllLevels), e.Hi}, Kind: spanner.ClosedClosed}
	}
	read, err := readChunks(ctx, tx, keys)
	if err != nil {
		return nil, err
	}
	out := map[edgeRange][]storedChunk{}
	var missed []edgeRange
	for i, e := range edges {
		cs := read[levelKey{e.ID, scalarchunk.AllLevels}]
		// The last chunk starting at or before Lo, if this range read it
		// (cs may hold the other edge's range too).
		start := lastStartAtOrBefore(cs, e.Lo)
		if start < 0 || cs[start].first < keys[i].(spanner.KeyRange).Start[3].(int64) {
			missed = append(missed, e)
			continue
		}
		for _, c := range cs[start:] {
			if c.first <= e.Hi {
				out[e] = append(out[e], c)
			}
		}
	}
	if len(missed) == 0 {
		return out, nil
	}
	found, err := queryEdgeChunks(ctx, tx, eid, missed)
	for e, cs := range found {
		out[e] = cs
	}
	return out, err
}

// queryEdgeChunks runs edgeChunksSQL: for each edge range, the chunks of
// all points from the last starting at or before Lo to Hi, in step order;
// none for a range of no chunk starting at or before Lo.
func queryEdgeChunks(ctx context.Context, tx txReader, eid string, edges []edgeRange) (map[edgeRange][]storedChunk, error) {
	out := map[edgeRange][]storedChunk{}
	err := tx.Query(ctx, spanner.Statement{SQL: edgeChunksSQL, Params: map[string]any{"eid": eid, "edges": edges}}).Do(func(row *spanner.Row) error {
		var id, lo int64
		var c storedChunk
		if err := row.Columns(&id, &lo, &c.first, &c.chunk); err != nil {
			return err
		}
		for _, e := range edges {
			if e.ID == id && e.Lo == lo {
				out[e] = append(out[e], c)
			}
		}
		return nil
	})
	for _, cs := range out {
		slices.SortFunc(cs, func(a, b storedChunk) int { return cmp.Compare(a.first, b.first) })
	}
	return out, err
}
