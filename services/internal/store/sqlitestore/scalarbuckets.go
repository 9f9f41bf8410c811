package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/tbhub/tbhub/services/internal/downsample"
	"github.com/tbhub/tbhub/services/internal/scalarchunk"
	"github.com/tbhub/tbhub/services/internal/store"
)

// Bucketed reads (store.Query.Buckets) of long series are answered from
// summaries kept in scalar_chunks beside the chunks, at sample levels
// below allLevels: level baseSummaryLevel cuts a series into segments of
// about 256 consecutive points, each level above it (more negative) into
// segments of 8 times as many, up to topSummaryLevel (131,072 points).
// Each level cuts independently. A segment is kept as its count and
// downsample.Summary's points (at most five); a row packs up to
// segmentsPerRow consecutive segments of one level, first_step and
// last_step being its first and last segment's. A read picks the coarsest
// level whose segments hold no more points than a bucket, so it reads
// about the same number of segments, a few per bucket, whatever the
// series' length, and decodes points only at the window's edges.
//
// A segment owns the steps from its first to the next segment's first:
// a step inserted between two segments (a rewrite) joins the earlier
// one, so segment boundaries, once made, never move. Appends fill the
// last segment up to its capacity, then start new ones; a write that
// touches stored steps recomputes the segments it touches from the
// chunks of all points (a rewritten step can not be taken out of a
// summary), letting them grow past their capacity rather than split.
const (
	baseSummaryLevel = -2
	topSummaryLevel  = -5
	segmentsPerRow   = 64
	// levelMinSegments is how many segments of a level a series must
	// fill before the level is kept (see updateScalarSummaries): a series
	// of fewer than 16,384 points has no summaries and a bucketed read
	// decodes it whole (about 2 ms).
	levelMinSegments = 64
)

// segmentCap is the number of points after which appends start a new
// segment at level: store.MaxExactBucketPoints at the base level, 8
// times more at each level above.
func segmentCap(level int) int64 {
	return store.MaxExactBucketPoints << (3 * (baseSummaryLevel - level))
}

var errCorruptSummary = errors.New("sqlitestore: corrupt summary row")

// segment is a run of consecutive points of a series summarized.
type segment struct {
	count  int64
	points []store.ScalarPoint // downsample.Summary's, at least one
}

func (g *segment) first() int64 { return g.points[0].Step }
func (g *segment) last() int64  { return g.points[len(g.points)-1].Step }

// appendSegments encodes segs: per segment its count and number of points
// (uvarints), then per point its step (a varint, the difference from the
// previous point's), wall time and value (float64 bits, little-endian).
func appendSegments(dst []byte, segs []segment) []byte {
	var prev int64
	for _, g := range segs {
		dst = binary.AppendUvarint(dst, uint64(g.count))
		dst = binary.AppendUvarint(dst, uint64(len(g.points)))
		for _, p := range g.points {
			dst = binary.AppendVarint(dst, p.Step-prev) // wraps, as decoding does
			prev = p.Step
			dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(p.WallTime))
			dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(p.Value))
		}
	}
	return dst
}

// decodeSegments appends the segments of a row to dst.
func decodeSegments(b []byte, dst []segment) ([]segment, error) {
	var prev int64
	uvarint := func() (uint64, bool) {
		v, n := binary.Uvarint(b)
		b = b[max(n, 0):]
		return v, n > 0
	}
	for len(b) > 0 {
		count, ok1 := uvarint()
		n, ok2 := uvarint()
		if !ok1 || !ok2 || n == 0 || n > 5 {
			return dst, errCorruptSummary
		}
		g := segment{count: int64(count), points: make([]store.ScalarPoint, n)}
		for i := range g.points {
			d, k := binary.Varint(b)
			if k <= 0 || len(b) < k+16 {
				return dst, errCorruptSummary
			}
			prev += d
			g.points[i] = store.ScalarPoint{
				Step:     prev,
				WallTime: math.Float64frombits(binary.LittleEndian.Uint64(b[k:])),
				Value:    math.Float64frombits(binary.LittleEndian.Uint64(b[k+8:])),
			}
			b = b[k+16:]
		}
		dst = append(dst, g)
	}
	return dst, nil
}

// segmenter cuts points, added in step order, into segments: a new one
// starts at each of bounds and, after the last bound, if open, whenever
// the current one holds cap points.
type segmenter struct {
	cap    int64
	bounds []int64
	open   bool
	cur    downsample.Summary
	out    []segment
}

func (g *segmenter) add(p store.ScalarPoint) {
	for len(g.bounds) > 0 && p.Step >= g.bounds[0] {
		g.flush()
		g.bounds = g.bounds[1:]
	}
	if len(g.bounds) == 0 && g.open && g.cur.Count >= g.cap {
		g.flush()
	}
	g.cur.Add(p)
}

func (g *segmenter) flush() {
	if g.cur.Count > 0 {
		g.out = append(g.out, segment{count: g.cur.Count, points: g.cur.Points(nil)})
		g.cur.Reset()
	}
}

// summaryRow is one row of summaries.
type summaryRow struct {
	rowid, first, last int64
	segs               []segment
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
// levelMinSegments of its segments: a shorter series is read whole as
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
	for level := baseSummaryLevel; level >= topSummaryLevel && total >= levelMinSegments*segmentCap(level); level-- {
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
		if r.segs, err = decodeSegments(b, nil); err != nil {
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
	capacity := segmentCap(level)
	if lo > last[0].last {
		// An append: the last segment takes points up to its capacity.
		r := last[0]
		tail := r.segs[len(r.segs)-1]
		g := segmenter{cap: capacity, open: true}
		g.cur.AddSummary(tail.points, tail.count)
		for _, p := range points {
			g.add(p)
		}
		g.flush()
		return true, replaceSummaryRows(ctx, tx, seriesID, level, last, append(r.segs[:len(r.segs)-1], g.out...))
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
	var segs []segment
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
	// Segments i0..i1 own steps of [lo, hi]: recompute them.
	ownEnd := func(i int) int64 {
		if i+1 < len(segs) {
			return segs[i+1].first() - 1
		}
		return end
	}
	i0 := 0
	for i0 < len(segs)-1 && ownEnd(i0) < lo {
		i0++
	}
	i1 := i0
	for i1 < len(segs)-1 && segs[i1+1].first() <= hi {
		i1++
	}
	from := segs[i0].first()
	if i0 == 0 {
		from = min(from, lo)
	}
	g := segmenter{cap: capacity, open: open && i1 == len(segs)-1}
	for i := i0 + 1; i <= i1; i++ {
		g.bounds = append(g.bounds, segs[i].first())
	}
	if err := scanScalarRange(ctx, txQuery(tx, chunksInRangeSQL), seriesID, from, ownEnd(i1), g.add); err != nil {
		return false, err
	}
	g.flush()
	fresh := append(append(segs[:i0:i0], g.out...), segs[i1+1:]...)
	return true, replaceSummaryRows(ctx, tx, seriesID, level, rows, fresh)
}

// replaceSummaryRows replaces the rows old of a level by rows packing
// segs; the last row updated in place when it is the only one.
func replaceSummaryRows(ctx context.Context, tx *sql.Tx, seriesID int64, level int, old []summaryRow, segs []segment) error {
	full := func(rowSegs []segment) bool {
		return len(rowSegs) == segmentsPerRow && rowSegs[len(rowSegs)-1].count >= segmentCap(level)
	}
	if len(old) == 1 && len(segs) <= segmentsPerRow && !full(segs) && segs[0].first() == old[0].first {
		_, err := tx.ExecContext(ctx, "UPDATE scalar_chunks SET last_step = ?, chunk = ? WHERE rowid = ?",
			segs[len(segs)-1].last(), appendSegments(nil, segs), old[0].rowid)
		return err
	}
	for _, r := range old {
		if _, err := tx.ExecContext(ctx, "DELETE FROM scalar_chunks WHERE rowid = ?", r.rowid); err != nil {
			return err
		}
	}
	return insertSummaryRows(ctx, tx, seriesID, level, segs)
}

func insertSummaryRows(ctx context.Context, tx *sql.Tx, seriesID int64, level int, segs []segment) error {
	for len(segs) > 0 {
		row := segs[:min(len(segs), segmentsPerRow)]
		full := len(row) == segmentsPerRow && (len(segs) > len(row) || row[len(row)-1].count >= segmentCap(level))
		if _, err := tx.ExecContext(ctx, insertChunkSQL(full), seriesID, level, row[0].first(), row[len(row)-1].last(), appendSegments(nil, row)); err != nil {
			return err
		}
		segs = segs[len(row):]
	}
	return nil
}

// rebuildSummaries builds the given levels of the series' summaries from
// all its points, in one pass over its chunks.
func rebuildSummaries(ctx context.Context, tx *sql.Tx, seriesID int64, levels []int) error {
	if len(levels) == 0 {
		return nil
	}
	gs := make([]segmenter, len(levels))
	for i, l := range levels {
		gs[i] = segmenter{cap: segmentCap(l), open: true}
	}
	err := scanScalarRange(ctx, txQuery(tx, chunksInRangeSQL), seriesID, math.MinInt64, math.MaxInt64, func(p store.ScalarPoint) {
		for i := range gs {
			gs[i].add(p)
		}
	})
	if err != nil {
		return err
	}
	for i, l := range levels {
		gs[i].flush()
		if _, err := tx.ExecContext(ctx, "DELETE FROM scalar_chunks WHERE series_id = ? AND sample_level = ?", seriesID, l); err != nil {
			return err
		}
		if err := insertSummaryRows(ctx, tx, seriesID, l, gs[i].out); err != nil {
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
		ORDER BY id LIMIT ?`, levelMinSegments*segmentCap(baseSummaryLevel), baseSummaryLevel, summaryBatchSeries)
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
			err := forEachScalarBlock(ctx, tx, sq, si.id, lo, hi, reverse, func(points []store.ScalarPoint) (bool, error) {
				for j := range points {
					if reverse {
						j = len(points) - 1 - j
					}
					if st := points[j].Step; st >= lo && st <= hi {
						edges[i] = &st
						return false, nil
					}
				}
				return true, nil
			})
			if err != nil || edges[i] == nil {
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
	// larger than a bucket, by the count of the segments in the window.
	var segs []segment
	level := topSummaryLevel
	for ; ; level++ {
		var err error
		if segs, err = summarySegments(ctx, tx, sq, si.id, level, lo, hi); err != nil {
			return err
		}
		var est int64
		for _, g := range segs {
			est += g.count
		}
		// A level the series is too short for (or whose segments miss
		// the window) has none: the next is tried.
		if len(segs) > 0 && est/buckets >= segmentCap(level) {
			break
		}
		if level == baseSummaryLevel {
			return exact()
		}
	}
	// Points at the window's edges, where a segment crosses them, come
	// from the chunks; the segments inside it from their summaries.
	var head, tail []store.ScalarPoint
	collect := func(dst *[]store.ScalarPoint, from, to int64) error {
		return scanScalarRange(ctx, tx.StmtContext(ctx, sq.chunksAsc).QueryContext, si.id, max(lo, from), min(hi, to), func(p store.ScalarPoint) { *dst = append(*dst, p) })
	}
	if g := &segs[0]; g.first() < lo || g.last() > hi {
		if err := collect(&head, g.first(), g.last()); err != nil {
			return err
		}
		segs = segs[1:]
	}
	if n := len(segs); n > 0 {
		if g := &segs[n-1]; g.last() > hi {
			if err := collect(&tail, g.first(), g.last()); err != nil {
				return err
			}
			segs = segs[:n-1]
		}
	}
	total := int64(len(head) + len(tail))
	for _, g := range segs {
		total += g.count
	}
	if total <= store.MaxExactBucketPoints*buckets {
		return exact()
	}
	var first, last int64
	switch {
	case len(head) > 0:
		first = head[0].Step
	case len(segs) > 0:
		first = segs[0].first()
	default:
		first = tail[0].Step
	}
	switch {
	case len(tail) > 0:
		last = tail[len(tail)-1].Step
	case len(segs) > 0:
		last = segs[len(segs)-1].last()
	default:
		last = head[len(head)-1].Step
	}
	b := downsample.NewBuckets(first, last, q.Buckets)
	for _, p := range head {
		b.Add(p)
	}
	for _, g := range segs {
		b.AddSummary(g.points, g.count)
	}
	for _, p := range tail {
		b.Add(p)
	}
	return fn(ts, b.Points())
}

// summarySegments returns the segments of a level of the series that
// hold steps of [lo, hi], in step order.
func summarySegments(ctx context.Context, tx *sql.Tx, sq *scalarStmts, seriesID int64, level int, lo, hi int64) ([]segment, error) {
	rows, err := tx.StmtContext(ctx, sq.chunksAsc).QueryContext(ctx, seriesID, lo, hi, level)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var segs []segment
	for rows.Next() {
		var b sql.RawBytes
		if err := rows.Scan(&b); err != nil {
			return nil, err
		}
		if segs, err = decodeSegments(b, segs); err != nil {
			return nil, err
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	kept := segs[:0]
	for _, g := range segs {
		if g.last() >= lo && g.first() <= hi {
			kept = append(kept, g)
		}
	}
	return kept, nil
}
