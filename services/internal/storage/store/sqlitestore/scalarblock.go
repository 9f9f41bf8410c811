package sqlitestore

import (
	"cmp"
	"context"
	"database/sql"
	"math"

	"github.com/tbhub/tbhub/services/internal/storage/downsample"
	"github.com/tbhub/tbhub/services/internal/storage/scalarchunk"
	"github.com/tbhub/tbhub/services/internal/storage/store"
)

// Scalars are stored in scalar_chunks (see schema.go) in the layout of
// package scalarchunk: chunks of one series at one sample level.
const (
	allLevels      = scalarchunk.AllLevels
	minSampleLevel = scalarchunk.MinSampleLevel
)

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
	for l, ps := range scalarchunk.SampleLevels(points) {
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
		case scalarchunk.Full(len(old[0].chunk), h.Count):
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
	merged := scalarchunk.Merge(oldPoints, points)
	return int64(len(merged) - len(oldPoints)), insertChunks(ctx, tx, seriesID, level, merged)
}

// appendToChunk appends points, all after the last step of c, to c until
// it is full, and the rest to new chunks.
func appendToChunk(ctx context.Context, tx *sql.Tx, seriesID int64, level int, c storedChunk, points []store.ScalarPoint) error {
	a, n, err := scalarchunk.Extend(c.chunk, points)
	if err != nil {
		return err
	}
	if !scalarchunk.Full(a.Size(), a.Len()) {
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
		n, err := scalarchunk.Fill(&a, points)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, insertChunkSQL(scalarchunk.Full(a.Size(), a.Len())), seriesID, level, points[0].Step, points[n-1].Step, a.Bytes()); err != nil {
			return err
		}
		points = points[n:]
	}
	return nil
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
		others = scalarchunk.LowestKeys(others, want)
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
	sampler := scalarchunk.NewSampler(q, lo, hi, except, want)
	for rows.Next() {
		var l int
		var chunk sql.RawBytes // valid until rows.Next: decoded before
		if err := rows.Scan(&l, &chunk); err != nil {
			return nil, false, err
		}
		more, err := sampler.Add(l, chunk)
		if err != nil {
			return nil, false, err
		}
		if !more {
			break
		}
	}
	if err := rows.Err(); err != nil {
		return nil, false, err
	}
	points, ok := sampler.Result()
	return points, ok, nil
}

// scalarStmts are the statements of scalar reads, prepared once on the read
// pool: a card reads a hundred series, and compiling a statement costs
// about as much as running it.
type scalarStmts struct {
	chunksAsc, chunksDesc, samples *sql.Stmt
	// boundsAsc and boundsDesc select the first_step and last_step of the
	// first (last) chunk of chunksAsc, without the chunk.
	boundsAsc, boundsDesc *sql.Stmt
}

func prepareScalarStmts(ctx context.Context, db *sql.DB) (*scalarStmts, error) {
	var sq scalarStmts
	inRange := " FROM scalar_chunks WHERE series_id = ?1 AND sample_level = ?4 AND first_step >= " +
		chunkStartSQL + " AND first_step <= ?3 ORDER BY first_step "
	for stmt, query := range map[**sql.Stmt]string{
		&sq.chunksAsc:  "SELECT chunk" + inRange + "ASC",
		&sq.chunksDesc: "SELECT chunk" + inRange + "DESC",
		&sq.boundsAsc:  "SELECT first_step, last_step" + inRange + "ASC LIMIT 1",
		&sq.boundsDesc: "SELECT first_step, last_step" + inRange + "DESC LIMIT 1",
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
