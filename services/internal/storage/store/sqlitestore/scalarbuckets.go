package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"

	"github.com/tbhub/tbhub/services/internal/storage/downsample"
	"github.com/tbhub/tbhub/services/internal/storage/scalarchunk"
	"github.com/tbhub/tbhub/services/internal/storage/store"
)

// Bucketed reads (store.Query.Buckets) of long series are answered from
// summaries kept in scalar_chunks beside the chunks, at the sample levels
// scalarchunk.BaseSummaryLevel..TopSummaryLevel (the rules and the row
// encoding are scalarchunk's, shared with spannerstore): a row's
// first_step and last_step are its first and last segment's.

// summaryRow is one row of summaries.
type summaryRow struct {
	rowid, first, last int64
	segs               []scalarchunk.Segment
}

// scanScalarRange calls fn with every stored point of the series with a
// step in [lo, hi], in step order, from the chunks of all points.
// query runs chunksInRangeSQL (prepared or not).
func scanScalarRange(ctx context.Context, query func(context.Context, ...any) (*sql.Rows, error), seriesID, lo, hi int64, fn func(store.ScalarPoint)) error {
	rows, err := query(ctx, seriesID, lo, hi, allLevels)
	if err != nil {
		return err
	}
	defer rows.Close()
	var points []store.ScalarPoint
	for rows.Next() {
		var chunk sql.RawBytes
		if err := rows.Scan(&chunk); err != nil {
			return err
		}
		if points, err = scalarchunk.Decode(chunk, points[:0]); err != nil {
			return err
		}
		for _, p := range points {
			if p.Step >= lo && p.Step <= hi {
				fn(p)
			}
		}
	}
	return rows.Err()
}

// chunksInRangeSQL selects, for series ?1 and level ?4, the chunks that
// may hold steps of [?2, ?3], in step order.
const chunksInRangeSQL = "SELECT chunk FROM scalar_chunks WHERE series_id = ?1 AND sample_level = ?4 AND first_step >= " +
	chunkStartSQL + " AND first_step <= ?3 ORDER BY first_step"

// txQuery is query run in tx, with the shape of a prepared statement's
// QueryContext.
func txQuery(tx *sql.Tx, query string) func(context.Context, ...any) (*sql.Rows, error) {
	return func(ctx context.Context, args ...any) (*sql.Rows, error) { return tx.QueryContext(ctx, query, args...) }
}

// updateScalarSummaries brings the series' summaries up to date after
// points (sorted, one per step) were written to its chunks of all points,
// added of them at new steps. A level is kept only for series of at least
// scalarchunk.LevelMinSegments of its segments: a shorter series is read whole as
// fast as its summaries, which would cost it bytes for nothing. A level
// the series reaches (or one missing, in a database older than
// summaries) is built from all its points.
func updateScalarSummaries(ctx context.Context, tx *sql.Tx, seriesID int64, points []store.ScalarPoint, added int64) error {
	var total int64
	if err := tx.QueryRowContext(ctx, "SELECT point_count FROM series WHERE id = ?", seriesID).Scan(&total); err != nil {
		return err
	}
	total += added // point_count is the count before this write
	var missing []int
	for level := scalarchunk.BaseSummaryLevel; scalarchunk.KeepsLevel(level, total); level-- {
		done, err := updateSummaryLevel(ctx, tx, seriesID, level, points)
		if err != nil {
			return fmt.Errorf("summaries at level %d: %w", level, err)
		}
		if !done {
			missing = append(missing, level)
		}
	}
	return rebuildSummaries(ctx, tx, seriesID, missing)
}

// readSummaryRows returns the rows of a level of the series whose first
// step lies in [from, to], in step order.
func readSummaryRows(ctx context.Context, tx *sql.Tx, query string, args ...any) ([]summaryRow, error) {
	rows, err := tx.QueryContext(ctx, "SELECT rowid, first_step, last_step, chunk FROM scalar_chunks WHERE "+query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []summaryRow
	for rows.Next() {
		var r summaryRow
		var b sql.RawBytes
		if err := rows.Scan(&r.rowid, &r.first, &r.last, &b); err != nil {
			return nil, err
		}
		if r.segs, err = scalarchunk.DecodeSegments(b, nil); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// updateSummaryLevel updates one level; done is false when the level has
// no rows yet (to be built from every point).
func updateSummaryLevel(ctx context.Context, tx *sql.Tx, seriesID int64, level int, points []store.ScalarPoint) (done bool, err error) {
	last, err := readSummaryRows(ctx, tx, "series_id = ? AND sample_level = ? ORDER BY first_step DESC LIMIT 1", seriesID, level)
	if err != nil || len(last) == 0 || len(points) == 0 {
		return len(last) > 0, err
	}
	lo, hi := points[0].Step, points[len(points)-1].Step
	if lo > last[0].last {
		// An append: the last segment takes points up to its capacity.
		r := last[0]
		g := scalarchunk.Segmenter{Cap: scalarchunk.SegmentCap(level), Open: true}
		g.Resume(r.segs[len(r.segs)-1])
		for _, p := range points {
			g.Add(p)
		}
		g.Flush()
		return true, replaceSummaryRows(ctx, tx, seriesID, level, last, append(r.segs[:len(r.segs)-1], g.Out...))
	}
	// The rows whose segments may own steps of [lo, hi]; if the batch
	// lies wholly before the series' first step, the first row, whose
	// first segment then begins earlier.
	rows, err := readSummaryRows(ctx, tx, "series_id = ?1 AND sample_level = ?4 AND first_step >= "+chunkStartSQL+
		" AND first_step <= ?3 ORDER BY first_step", seriesID, lo, hi, level)
	if err == nil && len(rows) == 0 {
		rows, err = readSummaryRows(ctx, tx, "series_id = ? AND sample_level = ? ORDER BY first_step LIMIT 1", seriesID, level)
	}
	if err != nil {
		return false, err
	}
	var segs []scalarchunk.Segment
	for _, r := range rows {
		segs = append(segs, r.segs...)
	}
	end, open := int64(math.MaxInt64), true // where the last row's ownership ends
	var next int64
	err = tx.QueryRowContext(ctx, "SELECT first_step FROM scalar_chunks WHERE series_id = ? AND sample_level = ? AND first_step > ? ORDER BY first_step LIMIT 1",
		seriesID, level, rows[len(rows)-1].first).Scan(&next)
	switch {
	case err == nil:
		end, open = next-1, false
	case !errors.Is(err, sql.ErrNoRows):
		return false, err
	}
	t := scalarchunk.TouchedSegments(level, segs, end, open, lo, hi)
	if err := scanScalarRange(ctx, txQuery(tx, chunksInRangeSQL), seriesID, t.From, t.To, t.Add); err != nil {
		return false, err
	}
	t.Flush()
	fresh := t.Replace(segs)
	return true, replaceSummaryRows(ctx, tx, seriesID, level, rows, fresh)
}

// replaceSummaryRows replaces the rows old of a level by rows packing
// segs; the last row updated in place when it is the only one.
func replaceSummaryRows(ctx context.Context, tx *sql.Tx, seriesID int64, level int, old []summaryRow, segs []scalarchunk.Segment) error {
	if len(old) == 1 && len(segs) <= scalarchunk.SegmentsPerRow && !scalarchunk.RowFull(level, segs, false) && segs[0].First() == old[0].first {
		_, err := tx.ExecContext(ctx, "UPDATE scalar_chunks SET last_step = ?, chunk = ? WHERE rowid = ?",
			segs[len(segs)-1].Last(), scalarchunk.AppendSegments(nil, segs), old[0].rowid)
		return err
	}
	for _, r := range old {
		if _, err := tx.ExecContext(ctx, "DELETE FROM scalar_chunks WHERE rowid = ?", r.rowid); err != nil {
			return err
		}
	}
	return insertSummaryRows(ctx, tx, seriesID, level, segs)
}

func insertSummaryRows(ctx context.Context, tx *sql.Tx, seriesID int64, level int, segs []scalarchunk.Segment) error {
	return scalarchunk.PackRows(level, segs, func(row []scalarchunk.Segment, full bool) error {
		_, err := tx.ExecContext(ctx, insertChunkSQL(full), seriesID, level, row[0].First(), row[len(row)-1].Last(), scalarchunk.AppendSegments(nil, row))
		return err
	})
}

// rebuildSummaries builds the given levels of the series' summaries from
// all its points, in one pass over its chunks.
func rebuildSummaries(ctx context.Context, tx *sql.Tx, seriesID int64, levels []int) error {
	if len(levels) == 0 {
		return nil
	}
	gs := make([]scalarchunk.Segmenter, len(levels))
	for i, l := range levels {
		gs[i] = scalarchunk.Segmenter{Cap: scalarchunk.SegmentCap(l), Open: true}
	}
	err := scanScalarRange(ctx, txQuery(tx, chunksInRangeSQL), seriesID, math.MinInt64, math.MaxInt64, func(p store.ScalarPoint) {
		for i := range gs {
			gs[i].Add(p)
		}
	})
	if err != nil {
		return err
	}
	for i, l := range levels {
		gs[i].Flush()
		if _, err := tx.ExecContext(ctx, "DELETE FROM scalar_chunks WHERE series_id = ? AND sample_level = ?", seriesID, l); err != nil {
			return err
		}
		if err := insertSummaryRows(ctx, tx, seriesID, l, gs[i].Out); err != nil {
			return err
		}
	}
	return nil
}

// summarizeScalars is the batched migration that gives the series stored
// before summaries existed theirs: a batch is up to summaryBatchSeries
// series, so a database of long series is converted in steps that each
// end in a commit.
func summarizeScalars(ctx context.Context, tx *sql.Tx) (done bool, err error) {
	const summaryBatchSeries = 16
	rows, err := tx.QueryContext(ctx, `SELECT id FROM series s WHERE data_class = 1 AND point_count >= ?
		AND NOT EXISTS (SELECT 1 FROM scalar_chunks c WHERE c.series_id = s.id AND c.sample_level = ?)
		ORDER BY id LIMIT ?`, scalarchunk.LevelMinSegments*scalarchunk.SegmentCap(scalarchunk.BaseSummaryLevel), scalarchunk.BaseSummaryLevel, summaryBatchSeries)
	if err != nil {
		return false, err
	}
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return false, err
		}
		ids = append(ids, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return false, err
	}
	for _, id := range ids {
		if err := updateScalarSummaries(ctx, tx, id, nil, 0); err != nil {
			return false, err
		}
	}
	return len(ids) < summaryBatchSeries, nil
}

// readScalarBuckets answers a bucketed read (q.Buckets > 0) of one series.
func readScalarBuckets(ctx context.Context, tx *sql.Tx, sq *scalarStmts, si *seriesInfo, q *store.Query, fn store.ScalarVisitor) error {
	ts := &si.TimeSeries
	if si.PointCount == 0 {
		return fn(ts, nil)
	}
	lo, hi := stepBounds(q)
	buckets := int64(q.Buckets)
	exact := func() error {
		// The window's first and last steps, then its points streamed
		// into their buckets.
		var edges [2]*int64
		for i, reverse := range []bool{false, true} {
			var err error
			if edges[i], err = windowEdge(ctx, tx, sq, si.id, lo, hi, reverse); err != nil || edges[i] == nil {
				if err != nil {
					return err
				}
				return fn(ts, nil)
			}
		}
		b := downsample.NewBuckets(*edges[0], *edges[1], q.Buckets)
		if err := scanScalarRange(ctx, tx.StmtContext(ctx, sq.chunksAsc).QueryContext, si.id, lo, hi, b.Add); err != nil {
			return err
		}
		return fn(ts, b.Points())
	}
	// From the top level down to the coarsest whose segments are no
	// larger than a bucket, by the count of the segments in the window. A
	// level cannot fit a series of fewer points than a segment's cap per
	// bucket (the segments in the window count at most all its points):
	// such a level is not read (a card of runs of a few thousand points
	// queried four levels of every run for nothing).
	var segs []scalarchunk.Segment
	for level := scalarchunk.TopSummaryLevel; ; level++ {
		if si.PointCount >= scalarchunk.SegmentCap(level)*buckets {
			var err error
			if segs, err = summarySegments(ctx, tx, sq, si.id, level, lo, hi); err != nil {
				return err
			}
			if scalarchunk.LevelFitsBuckets(level, segs, q.Buckets) {
				break
			}
		}
		if level == scalarchunk.BaseSummaryLevel {
			return exact()
		}
	}
	// Points at the window's edges, where a segment crosses them, come
	// from the chunks; the segments inside it from their summaries.
	var head, tail []store.ScalarPoint
	collect := func(dst *[]store.ScalarPoint, g *scalarchunk.Segment) error {
		if g == nil {
			return nil
		}
		return scanScalarRange(ctx, tx.StmtContext(ctx, sq.chunksAsc).QueryContext, si.id, max(lo, g.First()), min(hi, g.Last()), func(p store.ScalarPoint) { *dst = append(*dst, p) })
	}
	segs, hg, tg := scalarchunk.EdgeSegments(segs, lo, hi)
	if err := collect(&head, hg); err != nil {
		return err
	}
	if err := collect(&tail, tg); err != nil {
		return err
	}
	if scalarchunk.SummedCount(head, segs, tail) <= store.MaxExactBucketPoints*buckets {
		return exact()
	}
	return fn(ts, scalarchunk.BucketsFromSegments(head, segs, tail, q.Buckets))
}

// windowEdge returns the series' first step in [lo, hi] (its last, if
// reverse), or nil if it has none there. Where the chunk at that end of
// the window starts (ends) inside it, that is the chunk's first_step
// (last_step), read without the chunk: decoding the two chunks at a whole
// series' ends cost a bucketed card of runs of a few thousand points half
// as much again as decoding all their points. A chunk crossing the
// window's end is decoded.
func windowEdge(ctx context.Context, tx *sql.Tx, sq *scalarStmts, seriesID, lo, hi int64, reverse bool) (*int64, error) {
	stmt := sq.boundsAsc
	if reverse {
		stmt = sq.boundsDesc
	}
	var first, last int64
	err := tx.StmtContext(ctx, stmt).QueryRowContext(ctx, seriesID, lo, hi, allLevels).Scan(&first, &last)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil, nil
	case err != nil:
		return nil, err
	case !reverse && first >= lo: // and first <= hi, by the query
		return &first, nil
	case reverse && last >= lo && last <= hi:
		return &last, nil
	}
	var edge *int64
	err = forEachScalarBlock(ctx, tx, sq, seriesID, lo, hi, reverse, func(points []store.ScalarPoint) (bool, error) {
		for j := range points {
			if reverse {
				j = len(points) - 1 - j
			}
			if st := points[j].Step; st >= lo && st <= hi {
				edge = &st
				return false, nil
			}
		}
		return true, nil
	})
	return edge, err
}

// summarySegments returns the segments of a level of the series that
// hold steps of [lo, hi], in step order.
func summarySegments(ctx context.Context, tx *sql.Tx, sq *scalarStmts, seriesID int64, level int, lo, hi int64) ([]scalarchunk.Segment, error) {
	rows, err := tx.StmtContext(ctx, sq.chunksAsc).QueryContext(ctx, seriesID, lo, hi, level)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var segs []scalarchunk.Segment
	for rows.Next() {
		var b sql.RawBytes
		if err := rows.Scan(&b); err != nil {
			return nil, err
		}
		if segs, err = scalarchunk.DecodeSegments(b, segs); err != nil {
			return nil, err
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return scalarchunk.SegmentsIn(segs, lo, hi), nil
}
