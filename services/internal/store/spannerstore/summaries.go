package spannerstore

import (
	"cloud.google.com/go/spanner"

	"github.com/tbhub/tbhub/services/internal/scalarchunk"
	"github.com/tbhub/tbhub/services/internal/store"
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
// below it (eight rows). A write of earlier steps (not an append) drops
// the series' summaries (one range delete), and so does a write to a
// series that has none while long enough to: such a series is read
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

// summaryKeys is what an append of n points to a series with state st
// must read to keep its summaries: the last row of each level kept, and
// for a level the append makes the series reach, the rows (or, for the
// base level, the chunks of all points) it is built from.
func summaryKeys(eid string, id int64, st *seriesState, n int) []spanner.KeySet {
	before, total := st.pointCount, st.pointCount+int64(n)
	if !scalarchunk.KeepsLevel(scalarchunk.BaseSummaryLevel, total) || (before > 0 && !hasSummaries(st.headSteps) && scalarchunk.KeepsLevel(scalarchunk.BaseSummaryLevel, before)) {
		return nil
	}
	var keys []spanner.KeySet
	for level := scalarchunk.BaseSummaryLevel; scalarchunk.KeepsLevel(level, total); level-- {
		if head, ok := headStep(st.headSteps, level); ok {
			keys = append(keys, spanner.Key{eid, id, int64(level), head})
		} else if before > 0 {
			from := spanner.Key{eid, id, int64(level + 1)}
			keys = append(keys, spanner.KeyRange{Start: from, End: from, Kind: spanner.ClosedClosed})
		}
	}
	return keys
}

// summaries writes the summary rows of the series id after the write of
// batch (sorted, one per step; appending: every step after the series'
// last before it) brought it to st, stored being the rows and chunks the
// write read (summaryKeys among them), merged the points of its chunk of
// all points the write rewrote, when it rewrote it whole.
func (w *chunkWriter) summaries(id int64, st *seriesState, batch []store.ScalarPoint, appending bool, stored map[levelKey][]storedChunk) error {
	if len(batch) == 0 || len(st.headSteps) <= summaryHeadsFrom && !scalarchunk.KeepsLevel(scalarchunk.BaseSummaryLevel, st.pointCount) {
		return nil
	}
	before := st.pointCount - int64(len(batch))
	if !appending || (before > 0 && !hasSummaries(st.headSteps) && scalarchunk.KeepsLevel(scalarchunk.BaseSummaryLevel, before)) {
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
