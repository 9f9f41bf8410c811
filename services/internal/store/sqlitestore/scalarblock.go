package sqlitestore

import (
	"cmp"
	"context"
	"database/sql"
	"math"
	"slices"

	"github.com/tbhub/tbhub/services/internal/downsample"
	"github.com/tbhub/tbhub/services/internal/scalarchunk"
	"github.com/tbhub/tbhub/services/internal/store"
)

// Scalars are stored in scalar_chunks (see schema.go), each row a
// scalarchunk of consecutive points of one series at one sample level:
// level allLevels holds every point of the series, level L >=
// minSampleLevel a copy of the points whose downsample.Level is exactly L,
// for downsampled reads. A chunk is full (chunkFull) at maxChunkBytes or
// maxChunkPoints, whichever comes first.
const (
	// maxChunkBytes is about the size of a full chunk: one per 4 KB page
	// (SQLite's default page size, a row of at most 4,061 bytes stays on
	// its page) with the row's other columns and headers, four per 16 KB
	// page. A chunk passes it by the size of its last point, or more if
	// that point made the chunk rewrite itself in a wider form. Chunks of
	// a fixed 512 points (about 2.7 KB on a float32 loss) left a third of
	// every 4 KB page empty: 9.4 B per point instead of 6.6.
	maxChunkBytes = 3_900
	// maxChunkPoints bounds the points of a chunk, which a read decodes
	// whole: a constant series costs about 2.5 B per point.
	maxChunkPoints = 1_024
	// allLevels is the sample_level of the chunks that hold every point.
	allLevels = -1
	// minSampleLevel is the lowest downsample.Level copied into sample
	// chunks: one point in 2^3, so that a read of k points from a series
	// of 8k or more finds them in the samples. One point in 2^4 cost 0.3
	// B per point less and made a read of 1,000 points from 10,000 decode
	// every point: 4 times the cost of one from 1,000,000.
	minSampleLevel = 3
)

// chunkFull tells whether a chunk of size bytes and count points is full:
// appends start a new chunk after it.
func chunkFull(size, count int) bool {
	return size >= maxChunkBytes || count >= maxChunkPoints
}

// chunkStartSQL selects, for series ?1, level ?4 and step ?2, the
// first_step of the chunk that may hold ?2: the last chunk starting at or
// before it, or ?2 itself if none does.
const chunkStartSQL = "COALESCE((SELECT MAX(first_step) FROM scalar_chunks WHERE series_id = ?1 AND sample_level = ?4 AND first_step <= ?2), ?2)"

// writeScalarPoints merges points (sorted by step, one per step) into the
// series' chunks and sample chunks and returns how many steps are new.
func writeScalarPoints(ctx context.Context, tx *sql.Tx, seriesID int64, points []store.ScalarPoint) (int64, error) {
	added, err := writeScalarChunks(ctx, tx, seriesID, allLevels, points)
	if err != nil {
		return 0, err
	}
	if err := updateScalarSummaries(ctx, tx, seriesID, points, added); err != nil {
		return 0, err
	}
	var byLevel [64][]store.ScalarPoint
	for _, p := range points {
		if l := downsample.Level(p.Step); l >= minSampleLevel {
			byLevel[l] = append(byLevel[l], p)
		}
	}
	for l, ps := range byLevel {
		if len(ps) > 0 {
			if _, err := writeScalarChunks(ctx, tx, seriesID, l, ps); err != nil {
				return 0, err
			}
		}
	}
	return added, nil
}

// storedChunk is one row of scalar_chunks.
type storedChunk struct {
	rowid, last int64
	chunk       []byte
}

// writeScalarChunks merges points (sorted by step, one per step) into the
// chunks of one level of a series and returns how many steps are new. It
// reads and rewrites only the chunks the batch's step range touches; the
// usual append, after the last chunk, reopens that chunk if it is not full
// and appends to it without re-encoding its points.
func writeScalarChunks(ctx context.Context, tx *sql.Tx, seriesID int64, level int, points []store.ScalarPoint) (int64, error) {
	lo, hi := points[0].Step, points[len(points)-1].Step
	rows, err := tx.QueryContext(ctx, "SELECT rowid, last_step, chunk FROM scalar_chunks WHERE series_id = ?1 AND sample_level = ?4 AND first_step >= "+
		chunkStartSQL+" AND first_step <= ?3 ORDER BY first_step", seriesID, lo, hi, level)
	if err != nil {
		return 0, err
	}
	var old []storedChunk
	for rows.Next() {
		var c storedChunk
		if err := rows.Scan(&c.rowid, &c.last, &c.chunk); err != nil {
			rows.Close()
			return 0, err
		}
		old = append(old, c)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, err
	}
	if len(old) > 0 && old[0].last < lo {
		// The first chunk ends before the batch begins.
		h, err := scalarchunk.ReadHeader(old[0].chunk)
		if err != nil {
			return 0, err
		}
		switch {
		case chunkFull(len(old[0].chunk), h.Count):
			old = old[1:] // full: leave it
		case len(old) == 1:
			return int64(len(points)), appendToChunk(ctx, tx, seriesID, level, old[0], points)
		}
	}
	var oldPoints []store.ScalarPoint
	for _, c := range old {
		if oldPoints, err = scalarchunk.Decode(c.chunk, oldPoints); err != nil {
			return 0, err
		}
		if _, err := tx.ExecContext(ctx, "DELETE FROM scalar_chunks WHERE rowid = ?", c.rowid); err != nil {
			return 0, err
		}
	}
	merged := mergeScalars(oldPoints, points)
	return int64(len(merged) - len(oldPoints)), insertChunks(ctx, tx, seriesID, level, merged)
}

// appendToChunk appends points, all after the last step of c, to c until
// it is full, and the rest to new chunks.
func appendToChunk(ctx context.Context, tx *sql.Tx, seriesID int64, level int, c storedChunk, points []store.ScalarPoint) error {
	a, err := scalarchunk.Reopen(c.chunk)
	if err != nil {
		return err
	}
	n, err := fillChunk(a, points)
	if err != nil {
		return err
	}
	if !chunkFull(a.Size(), a.Len()) {
		_, err := tx.ExecContext(ctx, "UPDATE scalar_chunks SET last_step = ?, chunk = ? WHERE rowid = ?", points[n-1].Step, a.Bytes(), c.rowid)
		return err
	}
	// Full: it moves from the chunks being filled to the full ones.
	if _, err := tx.ExecContext(ctx, "DELETE FROM scalar_chunks WHERE rowid = ?", c.rowid); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, insertChunkSQL(true), seriesID, level, a.Header().FirstStep, points[n-1].Step, a.Bytes()); err != nil {
		return err
	}
	return insertChunks(ctx, tx, seriesID, level, points[n:])
}

// fillChunk appends points to a until it is full and returns how many it
// took.
func fillChunk(a *scalarchunk.Appender, points []store.ScalarPoint) (int, error) {
	for i, p := range points {
		if chunkFull(a.Size(), a.Len()) {
			return i, nil
		}
		if err := a.Append(p); err != nil {
			return i, err
		}
	}
	return len(points), nil
}

// insertChunkSQL inserts a row of scalar_chunks (series_id, sample_level,
// first_step, last_step, chunk). Its rowid places it in the table's
// b-tree: a full chunk, never rewritten by an append, after every other row
// (rowid above 0), where rows appended in rowid order fill pages
// completely; a chunk not yet full, which appends rewrite until it is,
// before them (rowid below 0), so that the page splits its growth causes
// stay among such chunks instead of leaving the pages of full chunks half
// empty. A series' chunk being filled at a level takes the rowid
// -(series_id·128 + level + 2) if it is free (a batch that rewrote earlier
// steps may leave more than one chunk not full; the others go below every
// row): the next one takes the space its predecessor left, and a series'
// chunks being filled lie together, a few pages that a write to it dirties.
func insertChunkSQL(full bool) string {
	rowid := `(SELECT CASE WHEN EXISTS (SELECT 1 FROM scalar_chunks WHERE rowid = -(?1 * 128 + ?2 + 2))
		THEN (SELECT MIN(-1, IFNULL(MIN(rowid), 0) - 1) FROM scalar_chunks) ELSE -(?1 * 128 + ?2 + 2) END)`
	if full {
		rowid = "(SELECT MAX(1, IFNULL(MAX(rowid), 0) + 1) FROM scalar_chunks)"
	}
	return "INSERT INTO scalar_chunks (rowid, series_id, sample_level, first_step, last_step, chunk) VALUES (" + rowid + ", ?1, ?2, ?3, ?4, ?5)"
}

// insertChunks writes points (sorted, one per step) as new chunks, each
// full but the last.
func insertChunks(ctx context.Context, tx *sql.Tx, seriesID int64, level int, points []store.ScalarPoint) error {
	for len(points) > 0 {
		var a scalarchunk.Appender
		n, err := fillChunk(&a, points)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, insertChunkSQL(chunkFull(a.Size(), a.Len())), seriesID, level, points[0].Step, points[n-1].Step, a.Bytes()); err != nil {
			return err
		}
		points = points[n:]
	}
	return nil
}

// mergeScalars merges two step-sorted point lists; on equal steps the
// point of newer wins.
func mergeScalars(older, newer []store.ScalarPoint) []store.ScalarPoint {
	if len(older) == 0 {
		return newer
	}
	out := make([]store.ScalarPoint, 0, len(older)+len(newer))
	i, j := 0, 0
	for i < len(older) && j < len(newer) {
		switch a, b := older[i].Step, newer[j].Step; {
		case a < b:
			out = append(out, older[i])
			i++
		case a > b:
			out = append(out, newer[j])
			j++
		default:
			out = append(out, newer[j])
			i, j = i+1, j+1
		}
	}
	out = append(out, older[i:]...)
	return append(out, newer[j:]...)
}

// stepBounds returns q's step window with absent bounds made explicit.
func stepBounds(q *store.Query) (lo, hi int64) {
	lo, hi = math.MinInt64, math.MaxInt64
	if q.MinStep != nil {
		lo = *q.MinStep
	}
	if q.MaxStep != nil {
		hi = *q.MaxStep
	}
	return lo, hi
}

// forEachScalarBlock calls fn with the decoded points of each chunk (of
// all levels) that may hold steps of [lo, hi], in step order (descending if
// reverse), until fn returns false or an error.
func forEachScalarBlock(ctx context.Context, tx *sql.Tx, sq *scalarStmts, seriesID, lo, hi int64, reverse bool, fn func([]store.ScalarPoint) (bool, error)) error {
	stmt := sq.chunksAsc
	if reverse {
		stmt = sq.chunksDesc
	}
	rows, err := tx.StmtContext(ctx, stmt).QueryContext(ctx, seriesID, lo, hi, allLevels)
	if err != nil {
		return err
	}
	defer rows.Close()
	var points []store.ScalarPoint
	for rows.Next() {
		var chunk sql.RawBytes // valid until rows.Next: decoded before
		if err := rows.Scan(&chunk); err != nil {
			return err
		}
		if points, err = scalarchunk.Decode(chunk, points[:0]); err != nil {
			return err
		}
		more, err := fn(points)
		if err != nil || !more {
			return err
		}
	}
	return rows.Err()
}

// readScalarSeries is readSeries for scalars: the same rule over chunks
// and sample chunks.
func readScalarSeries(ctx context.Context, tx *sql.Tx, sq *scalarStmts, si *seriesInfo, q *store.Query, fn store.ScalarVisitor) error {
	ts := &si.TimeSeries
	if q.MaxPoints == 0 || si.PointCount == 0 {
		return fn(ts, nil)
	}
	lo, hi := stepBounds(q)
	if q.MaxPoints >= si.PointCount {
		return streamScalars(ctx, tx, sq, si, q, lo, hi, fn)
	}
	var latest *store.ScalarPoint
	err := forEachScalarBlock(ctx, tx, sq, si.id, lo, hi, true, func(points []store.ScalarPoint) (bool, error) {
		for i := len(points) - 1; i >= 0; i-- {
			if q.InWindow(points[i].Step, points[i].WallTime) {
				latest = &store.ScalarPoint{}
				*latest = points[i]
				return false, nil
			}
			if points[i].Step < lo {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil || latest == nil {
		if err != nil {
			return err
		}
		return fn(ts, nil)
	}
	want := int(q.MaxPoints - 1)
	var others []store.ScalarPoint
	ok := false
	if si.PointCount >= int64(want)<<minSampleLevel {
		// The samples are expected to hold enough of the window.
		var err error
		if others, ok, err = sampledScalars(ctx, tx, sq, si.id, q, lo, hi, latest.Step, want); err != nil {
			return err
		}
	}
	// others is in step order, and every step of it is below latest's.
	if !ok {
		// Fewer sampled points in the window than wanted: the window holds
		// about 8·want points or fewer; take them from the chunks of all points.
		others = make([]store.ScalarPoint, 0, min(si.PointCount, int64(want)<<(minSampleLevel+1)))
		err := forEachScalarBlock(ctx, tx, sq, si.id, lo, hi, false, func(points []store.ScalarPoint) (bool, error) {
			for _, p := range points {
				if q.InWindow(p.Step, p.WallTime) && p.Step != latest.Step {
					others = append(others, p)
				}
			}
			return true, nil
		})
		if err != nil {
			return err
		}
		others = lowestKeys(others, want)
	}
	return fn(ts, append(others, *latest))
}

// sampledScalars reads the sample chunks from the top level down and
// returns the want in-window points (other than step except) with the
// smallest keys, in step order. ok is false when the samples hold fewer than want such
// points, so that the answer must come from the chunks of all points.
func sampledScalars(ctx context.Context, tx *sql.Tx, sq *scalarStmts, seriesID int64, q *store.Query, lo, hi, except int64, want int) ([]store.ScalarPoint, bool, error) {
	rows, err := tx.StmtContext(ctx, sq.samples).QueryContext(ctx, seriesID, minSampleLevel, lo, hi)
	if err != nil {
		return nil, false, err
	}
	defer rows.Close()
	points := make([]store.ScalarPoint, 0, 2*want)
	level, above := math.MaxInt, 0 // above: the points of levels above level
	var runs []int                 // where each level's points, in step order, begin
	var chunks []int               // where each chunk of level begins, from above
	for rows.Next() {
		var l int
		var chunk sql.RawBytes // valid until rows.Next: decoded before
		if err := rows.Scan(&l, &chunk); err != nil {
			return nil, false, err
		}
		if l < level {
			ascendChunks(points[above:], chunks)
			chunks = chunks[:0]
			if len(points) >= want {
				break // every point of key below level l+1's bound is in
			}
			level, above = l, len(points)
			runs = append(runs, above)
		}
		chunks = append(chunks, len(points)-above)
		err := scalarchunk.Visit(chunk, lo, hi, func(ps []store.ScalarPoint) error {
			for _, p := range ps {
				if p.Step != except && q.InWindow(p.Step, p.WallTime) {
					points = append(points, p)
				}
			}
			return nil
		})
		if err != nil {
			return nil, false, err
		}
	}
	if err := rows.Err(); err != nil {
		return nil, false, err
	}
	if len(points) < want {
		return points, false, nil
	}
	ascendChunks(points[above:], chunks) // the last level, unless done above
	// The points of the levels above the last one read have smaller keys
	// than those of the last: only the last level's are ranked.
	points = append(points[:above], smallestKeyPoints(points[above:], want-above)...)
	return mergeRuns(points, runs), true, nil
}

// ascendChunks puts the points of one level, read chunk by chunk in
// descending step order (the sample index read backwards) and each chunk's
// points in ascending order, in ascending step order: level holds the
// chunks, starting at the indexes starts.
func ascendChunks(level []store.ScalarPoint, starts []int) {
	if len(starts) < 2 {
		return
	}
	slices.Reverse(level)
	end := len(level)
	for i := len(starts) - 1; i >= 0; i-- {
		// The chunk [starts[i], end) is now at [len-end, len-starts[i]),
		// reversed.
		slices.Reverse(level[len(level)-end : len(level)-starts[i]])
		end = starts[i]
	}
}

// mergeRuns sorts points by step, points being runs already sorted that
// begin at the indexes runs (the first at 0): a merge of a few dozen
// chunks' points instead of a sort of points. runs is overwritten.
func mergeRuns(points []store.ScalarPoint, runs []int) []store.ScalarPoint {
	buf := make([]store.ScalarPoint, len(points))
	for len(runs) > 1 {
		next := runs[:0]
		for i := 0; i < len(runs); i += 2 {
			lo, mid, hi := runs[i], len(points), len(points)
			if i+1 < len(runs) {
				mid = runs[i+1]
			}
			if i+2 < len(runs) {
				hi = runs[i+2]
			}
			a, b, out := points[lo:mid], points[mid:hi], buf[lo:lo]
			for len(a) > 0 && len(b) > 0 {
				if a[0].Step < b[0].Step {
					out, a = append(out, a[0]), a[1:]
				} else {
					out, b = append(out, b[0]), b[1:]
				}
			}
			rest := buf[lo+len(out) : hi] // what one side has left goes after
			copy(rest[copy(rest, a):], b)
			next = append(next, lo)
		}
		points, buf, runs = buf, points, next
	}
	return points
}

// lowestKeys returns the want points of points (at most all of them)
// with the smallest sample keys, in no particular order. Points below the
// highest level by which want points are seen cannot be among them, so it
// sorts only the others: about 2·want points, whatever len(points) is.
// points is reordered.
func lowestKeys(points []store.ScalarPoint, want int) []store.ScalarPoint {
	if want <= 0 {
		return nil
	}
	if len(points) > 2*want {
		var perLevel [64]int
		for _, p := range points {
			perLevel[downsample.Level(p.Step)]++
		}
		cut, seen := 0, 0
		for l := len(perLevel) - 1; l >= 0; l-- {
			if seen += perLevel[l]; seen >= want {
				cut = l
				break
			}
		}
		kept := points[:0]
		for _, p := range points {
			if downsample.Level(p.Step) >= cut {
				kept = append(kept, p)
			}
		}
		points = kept
	}
	return smallestKeyPoints(points, min(want, len(points)))
}

// scalarStmts are the statements of scalar reads, prepared once on the read
// pool: a card reads a hundred series, and compiling a statement costs
// about as much as running it.
type scalarStmts struct {
	chunksAsc, chunksDesc, samples *sql.Stmt
}

func prepareScalarStmts(ctx context.Context, db *sql.DB) (*scalarStmts, error) {
	var sq scalarStmts
	chunks := "SELECT chunk FROM scalar_chunks WHERE series_id = ?1 AND sample_level = ?4 AND first_step >= " +
		chunkStartSQL + " AND first_step <= ?3 ORDER BY first_step "
	for stmt, query := range map[**sql.Stmt]string{
		&sq.chunksAsc:  chunks + "ASC",
		&sq.chunksDesc: chunks + "DESC",
		&sq.samples: `SELECT sample_level, chunk FROM scalar_chunks
			WHERE series_id = ? AND sample_level >= ? AND last_step >= ? AND first_step <= ? ORDER BY sample_level DESC, first_step DESC`,
	} {
		var err error
		if *stmt, err = db.PrepareContext(ctx, query); err != nil {
			return nil, err
		}
	}
	return &sq, nil
}

// smallestKeyPoints returns the n points of points with the smallest keys in
// downsample.Less order (smallest sample key, then smallest step), in
// their order in points, reusing points. It sorts the keys alone: a card
// of 100 series ranks tens of thousands of points.
func smallestKeyPoints(points []store.ScalarPoint, n int) []store.ScalarPoint {
	if n >= len(points) {
		return points
	}
	if n <= 0 {
		return points[:0]
	}
	keys := make([]int64, len(points))
	for i, p := range points {
		keys[i] = downsample.SampleKey(p.Step)
	}
	sorted := slices.Clone(keys)
	slices.Sort(sorted)
	cutoff := sorted[n-1]
	below, _ := slices.BinarySearch(sorted, cutoff)
	// Points of key cutoff: the n-below smallest steps of them are in.
	var ties []int64
	for i, p := range points {
		if keys[i] == cutoff {
			ties = append(ties, p.Step)
		}
	}
	slices.Sort(ties)
	ties = ties[:n-below]
	kept := points[:0]
	for i, p := range points {
		if keys[i] < cutoff || (keys[i] == cutoff && p.Step <= ties[len(ties)-1]) {
			kept = append(kept, p)
		}
	}
	return kept
}

// streamScalars calls fn with the window's points in step order, in slices
// of at most a few chunks, at least once.
func streamScalars(ctx context.Context, tx *sql.Tx, sq *scalarStmts, si *seriesInfo, q *store.Query, lo, hi int64, fn store.ScalarVisitor) error {
	buf := make([]store.ScalarPoint, 0, readChunk)
	called := false
	err := forEachScalarBlock(ctx, tx, sq, si.id, lo, hi, false, func(points []store.ScalarPoint) (bool, error) {
		for _, p := range points {
			if p.Step > hi {
				return false, nil
			}
			if q.InWindow(p.Step, p.WallTime) {
				buf = append(buf, p)
			}
		}
		if len(buf) >= readChunk {
			called = true
			err := fn(&si.TimeSeries, buf)
			buf = buf[:0]
			return err == nil, err
		}
		return true, nil
	})
	if err != nil {
		return err
	}
	if len(buf) > 0 || !called {
		return fn(&si.TimeSeries, buf)
	}
	return nil
}

// compareSteps and compareKeys order steps by value and by sample key.
func compareSteps(a, b int64) int { return cmp.Compare(a, b) }

func compareKeys(a, b int64) int {
	switch {
	case a == b:
		return 0
	case downsample.Less(a, b):
		return -1
	}
	return 1
}
