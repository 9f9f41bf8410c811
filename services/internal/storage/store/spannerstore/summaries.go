package spannerstore

import (
	"context"
	"math"

	"cloud.google.com/go/spanner"

	"github.com/tbhub/tbhub/services/internal/storage/scalarchunk"
	"github.com/tbhub/tbhub/services/internal/storage/store"
)

// Summaries of long scalar series (package scalarchunk, "Summaries") are
// ScalarChunks rows at SampleLevel scalarchunk.BaseSummaryLevel (-2) to
// TopSummaryLevel (-5), keyed by their first segment's first step, Chunk
// holding scalarchunk.AppendSegments of up to 64 segments. The first step
// of each level's last row is on the TimeSeries row beside the chunks'
// (headIndex), so an append reads the rows it extends by key in the same
// read as the chunks, and writes them back: one or two rows per level.
//
// A level is built in the write where the series reaches its size
// (scalarchunk.KeepsLevel): the base level from the chunks of all points
// (16,384 and a batch), each coarser one from all rows of the level
// below it (eight rows). A write of earlier steps (not an append) reads
// each level's rows up to its last step in the same read and recomputes
// the segments it touches from the chunks of all points, as the embedded
// store does (rewriteSummaries; one more read when those segments reach
// past the chunks the write read). Where that can not be done (a write
// before a level's first row, a level the write makes the series reach)
// and for a write to a series that has none while long enough to, the
// series' summaries are dropped (one range delete): such a series is read
// exactly (readScalarBuckets), and `tbhub migrate` (SummarizeScalars)
// builds them again.

// headIndex is the index in TimeSeries.HeadSteps of level's last chunk:
// L+1 for the sample levels, 63-L (65 to 68) for the summary levels.
func headIndex(level int) int {
	if level < scalarchunk.AllLevels {
		return 63 - level
	}
	return level + 1
}

// summaryHeadsFrom is the HeadSteps index of the first summary level.
var summaryHeadsFrom = headIndex(scalarchunk.BaseSummaryLevel)

// hasSummaries tells whether the series keeps its base summary level.
func hasSummaries(heads []spanner.NullInt64) bool {
	_, ok := headStep(heads, scalarchunk.BaseSummaryLevel)
	return ok
}

// summaryLevels is the key range of every summary row of the series.
func summaryLevels(eid string, id int64) spanner.KeyRange {
	return spanner.KeyRange{Start: spanner.Key{eid, id, int64(scalarchunk.TopSummaryLevel)}, End: spanner.Key{eid, id, int64(scalarchunk.BaseSummaryLevel)}, Kind: spanner.ClosedClosed}
}

// summaryKeys is what a write of points (sorted, one per step) to a
// series with state st must read to keep its summaries. For an append:
// the last row of each level kept, and for a level the append makes the
// series reach, the rows (or, for the base level, the chunks of all
// points) it is built from. For a write of earlier steps: each level's
// rows up to the points' last step.
func summaryKeys(eid string, id int64, st *seriesState, points []store.ScalarPoint, appending bool) []spanner.KeySet {
	if len(points) == 0 {
		return nil
	}
	before, total := st.pointCount, st.pointCount+int64(len(points))
	if !scalarchunk.KeepsLevel(scalarchunk.BaseSummaryLevel, total) || (before > 0 && !hasSummaries(st.headSteps) && scalarchunk.KeepsLevel(scalarchunk.BaseSummaryLevel, before)) {
		return nil
	}
	var keys []spanner.KeySet
	for level := scalarchunk.BaseSummaryLevel; scalarchunk.KeepsLevel(level, total); level-- {
		head, ok := headStep(st.headSteps, level)
		switch {
		case !appending && ok:
			keys = append(keys, rewriteRows(eid, id, st, level, points, true))
		case ok:
			keys = append(keys, spanner.Key{eid, id, int64(level), head})
		case appending && before > 0:
			from := spanner.Key{eid, id, int64(level + 1)}
			keys = append(keys, spanner.KeyRange{Start: from, End: from, Kind: spanner.ClosedClosed})
		}
	}
	return keys
}

// rewriteRows is the key range of the summary rows at level a write of
// earlier steps (points) reads: up to the points' last step, from twice
// a row's step span (if steps are dense) before their first (near) or
// from the level's first row.
func rewriteRows(eid string, id int64, st *seriesState, level int, points []store.ScalarPoint, near bool) spanner.KeySet {
	start := spanner.Key{eid, id, int64(level)}
	if near {
		sum := store.SeriesSummary{PointCount: st.pointCount, MaxStep: st.maxStep}
		start = append(start, stepsBack(&sum, scalarchunk.SegmentsPerRow*scalarchunk.SegmentCap(level), points[0].Step))
	}
	return spanner.KeyRange{Start: start, End: spanner.Key{eid, id, int64(level), points[len(points)-1].Step}, Kind: spanner.ClosedClosed}
}

// summaries writes the summary rows of the series id after the write of
// batch (sorted, one per step; appending: every step after the series'
// last before it) brought it to st, stored being the rows and chunks the
// write read (summaryKeys among them), merged the points of its chunk of
// all points the write rewrote, when it rewrote it whole.
func (w *chunkWriter) summaries(ctx context.Context, tx txReader, id int64, st *seriesState, batch []store.ScalarPoint, appending bool, stored map[levelKey][]storedChunk) error {
	if len(batch) == 0 || len(st.headSteps) <= summaryHeadsFrom && !scalarchunk.KeepsLevel(scalarchunk.BaseSummaryLevel, st.pointCount) {
		return nil
	}
	if !appending {
		ok, err := w.rewriteSummaries(ctx, tx, id, st, batch, stored)
		if err == nil && !ok {
			w.dropSummaries(id, st)
		}
		return err
	}
	before := st.pointCount - int64(len(batch))
	if before > 0 && !hasSummaries(st.headSteps) && scalarchunk.KeepsLevel(scalarchunk.BaseSummaryLevel, before) {
		w.dropSummaries(id, st)
		return nil
	}
	// finer is every segment of the level below, when known whole.
	var finer []scalarchunk.Segment
	for level := scalarchunk.BaseSummaryLevel; scalarchunk.KeepsLevel(level, st.pointCount); level-- {
		g := scalarchunk.Segmenter{Cap: scalarchunk.SegmentCap(level), Open: true}
		var kept []scalarchunk.Segment // the level's segments before the new ones
		head, ok := headStep(st.headSteps, level)
		switch {
		case ok:
			rows := stored[levelKey{id, level}]
			if len(rows) == 0 || rows[len(rows)-1].first != head {
				w.dropSummaries(id, st) // not as the series' row says
				return nil
			}
			segs, err := scalarchunk.DecodeSegments(rows[len(rows)-1].chunk, nil)
			if err != nil {
				return err
			}
			kept = segs[:len(segs)-1]
			g.Resume(segs[len(segs)-1])
			for _, p := range batch {
				g.Add(p)
			}
			// The level's rows before its last, read when the level
			// above is built from them.
			finer = finer[:0]
			for _, r := range rows[:len(rows)-1] {
				if finer, err = scalarchunk.DecodeSegments(r.chunk, finer); err != nil {
					return err
				}
			}
		case level == scalarchunk.BaseSummaryLevel:
			var all []store.ScalarPoint
			for _, c := range stored[levelKey{id, scalarchunk.AllLevels}] {
				var err error
				if all, err = scalarchunk.Decode(c.chunk, all); err != nil {
					return err
				}
			}
			for _, p := range scalarchunk.Merge(all, batch) {
				g.Add(p)
			}
		default:
			for _, s := range finer {
				g.AddSegment(s)
			}
			finer = nil
		}
		g.Flush()
		segs := append(kept, g.Out...)
		finer = append(finer, segs...)
		err := scalarchunk.PackRows(level, segs, func(row []scalarchunk.Segment, _ bool) error {
			head = row[0].First()
			w.put(id, level, head, scalarchunk.AppendSegments(nil, row))
			return nil
		})
		if err != nil {
			return err
		}
		st.headSteps = setHeadStep(st.headSteps, level, head)
	}
	return nil
}

// dropSummaries deletes the series' summary rows and their heads.
func (w *chunkWriter) dropSummaries(id int64, st *seriesState) {
	if len(st.headSteps) > summaryHeadsFrom {
		w.ms = append(w.ms, spanner.Delete("ScalarChunks", summaryLevels(w.eid, id)))
		st.headSteps = st.headSteps[:summaryHeadsFrom]
	}
}

// rewriteSummaries updates the summaries of a series after a write of
// earlier steps (batch) as the embedded store does: at each level, the
// segments owning the batch's steps are recomputed from the chunks of all
// points (read again past the batch's last step where they reach beyond
// it: one more read), the rows holding them rewritten. False (nothing
// written) when the series' rows are not as a rewrite can update: a
// level without rows, one the write makes the series reach, or a batch
// wholly before a level's first row; the caller then drops them.
func (w *chunkWriter) rewriteSummaries(ctx context.Context, tx txReader, id int64, st *seriesState, batch []store.ScalarPoint, stored map[levelKey][]storedChunk) (bool, error) {
	lo, hi := batch[0].Step, batch[len(batch)-1].Step
	type levelPlan struct {
		level int
		rows  []storedChunk // the rows from the one owning lo to the last starting at or before hi
		segs  []scalarchunk.Segment
		t     scalarchunk.Touched
	}
	var plans []levelPlan
	to := hi
	for level := scalarchunk.BaseSummaryLevel; scalarchunk.KeepsLevel(level, st.pointCount); level-- {
		head, ok := headStep(st.headSteps, level)
		if !ok {
			return false, nil
		}
		rows := stored[levelKey{id, level}]
		if len(rows) == 0 || rows[0].first > lo {
			// The read near lo missed the row owning it: from the first.
			more, err := readChunks(ctx, tx, []spanner.KeySet{rewriteRows(w.eid, id, st, level, batch, false)})
			if err != nil {
				return false, err
			}
			if rows = more[levelKey{id, level}]; len(rows) == 0 {
				return false, nil
			}
		}
		start := 0 // the row that may own lo: the last starting at or before it
		for i, r := range rows {
			if r.first <= lo {
				start = i
			}
		}
		rows = rows[start:]
		var segs []scalarchunk.Segment
		for _, r := range rows {
			var err error
			if segs, err = scalarchunk.DecodeSegments(r.chunk, segs); err != nil {
				return false, err
			}
		}
		// The last segment read owns up to the next row's first step;
		// it holds no stored step past its last point's, so its points
		// are all at or before max(its last, hi).
		end := max(segs[len(segs)-1].Last(), hi)
		t := scalarchunk.TouchedSegments(level, segs, end, rows[len(rows)-1].first == head, lo, hi)
		to = max(to, t.To)
		plans = append(plans, levelPlan{level: level, rows: rows, segs: segs, t: t})
	}
	if len(plans) == 0 {
		return false, nil
	}
	// The points of all levels' touched segments: the chunks of all
	// points the write read (from the level's start up to hi), the ones
	// after hi up to the farthest segment end, and the batch.
	chunks := stored[levelKey{id, scalarchunk.AllLevels}]
	if to > hi {
		more, err := readChunks(ctx, tx, []spanner.KeySet{spanner.KeyRange{
			Start: spanner.Key{w.eid, id, int64(scalarchunk.AllLevels), hi + 1}, End: spanner.Key{w.eid, id, int64(scalarchunk.AllLevels), to}, Kind: spanner.ClosedClosed}})
		if err != nil {
			return false, err
		}
		chunks = append(chunks[:len(chunks):len(chunks)], more[levelKey{id, scalarchunk.AllLevels}]...)
	}
	from := int64(math.MaxInt64)
	for _, p := range plans {
		from = min(from, p.t.From)
	}
	var old []store.ScalarPoint
	for _, c := range chunks {
		err := scalarchunk.Visit(c.chunk, from, to, func(ps []store.ScalarPoint) error {
			for _, p := range ps {
				if p.Step >= from && p.Step <= to {
					old = append(old, p)
				}
			}
			return nil
		})
		if err != nil {
			return false, err
		}
	}
	points := scalarchunk.Merge(old, batch)
	for _, p := range plans {
		for _, pt := range points {
			if pt.Step >= p.t.From && pt.Step <= p.t.To {
				p.t.Add(pt)
			}
		}
		p.t.Flush()
		segs := p.t.Replace(p.segs)
		written := map[int64]bool{}
		head, _ := headStep(st.headSteps, p.level)
		last := head
		err := scalarchunk.PackRows(p.level, segs, func(row []scalarchunk.Segment, _ bool) error {
			first := row[0].First()
			w.put(id, p.level, first, scalarchunk.AppendSegments(nil, row))
			written[first], last = true, first
			return nil
		})
		if err != nil {
			return false, err
		}
		headGone := false
		for _, r := range p.rows {
			if !written[r.first] {
				w.ms = append(w.ms, spanner.Delete("ScalarChunks", spanner.Key{w.eid, id, int64(p.level), r.first}))
				headGone = headGone || r.first == head
			}
		}
		if headGone || last > head || p.rows[len(p.rows)-1].first == head {
			head = last
		}
		st.headSteps = setHeadStep(st.headSteps, p.level, head)
	}
	return true, nil
}
