package sqlitestore

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"math"
	"math/bits"
	"slices"
	"strings"

	"github.com/tbhub/tbhub/services/internal/downsample"
	"github.com/tbhub/tbhub/services/internal/store"
)

// Scalars are stored in blocks (see schema.go). A block's encoding is the
// point count as a uvarint, then per point, in ascending step order: the
// step as a varint difference from the previous step (the first step
// itself), then the wall time's and the value's IEEE-754 bits as 8 bytes
// little-endian each.
const (
	// scalarBlockPoints is how many points a full block holds.
	scalarBlockPoints = 128
	// minSampleLevel is the lowest downsample.Level copied into
	// scalar_samples: one point in 2^4.
	minSampleLevel = 4
)

func appendScalarBlock(dst []byte, points []store.ScalarPoint) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(points)))
	var prev int64
	for _, p := range points {
		dst = binary.AppendVarint(dst, p.Step-prev)
		prev = p.Step
		dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(p.WallTime))
		dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(p.Value))
	}
	return dst
}

var errBadBlock = errors.New("sqlitestore: corrupt scalar block")

// decodeScalarBlock appends the points of block b to dst.
func decodeScalarBlock(b []byte, dst []store.ScalarPoint) ([]store.ScalarPoint, error) {
	n, w := binary.Uvarint(b)
	if w <= 0 || n > uint64(len(b)) {
		return dst, errBadBlock
	}
	b = b[w:]
	var step int64
	for range n {
		d, w := binary.Varint(b)
		if w <= 0 || len(b) < w+16 {
			return dst, errBadBlock
		}
		step += d
		dst = append(dst, store.ScalarPoint{
			Step:     step,
			WallTime: math.Float64frombits(binary.LittleEndian.Uint64(b[w:])),
			Value:    math.Float64frombits(binary.LittleEndian.Uint64(b[w+8:])),
		})
		b = b[w+16:]
	}
	if len(b) != 0 {
		return dst, errBadBlock
	}
	return dst, nil
}

// blockStartSQL selects, for series ?1 and step ?2, the first_step of the
// block that may hold ?2: the last block starting at or before it, or ?2
// itself if none does.
const blockStartSQL = "COALESCE((SELECT MAX(first_step) FROM scalar_blocks WHERE series_id = ?1 AND first_step <= ?2), ?2)"

// writeScalarPoints merges points (sorted by step, one per step) into the
// series' blocks and samples and returns how many steps are new. It reads
// and rewrites only the blocks the batch's step range touches: for the
// usual append, the last, partly filled block.
func writeScalarPoints(ctx context.Context, tx *sql.Tx, ins *sampleInserts, seriesID int64, points []store.ScalarPoint) (int64, error) {
	lo, hi := points[0].Step, points[len(points)-1].Step
	rows, err := tx.QueryContext(ctx, "SELECT rowid, last_step, points FROM scalar_blocks WHERE series_id = ?1 AND first_step >= "+
		blockStartSQL+" AND first_step <= ?3 ORDER BY first_step", seriesID, lo, hi)
	if err != nil {
		return 0, err
	}
	var old []store.ScalarPoint
	var rowids []int64
	for rows.Next() {
		var rowid, last int64
		var blob []byte
		if err := rows.Scan(&rowid, &last, &blob); err != nil {
			rows.Close()
			return 0, err
		}
		if n, _ := binary.Uvarint(blob); len(rowids) == 0 && last < lo && n == scalarBlockPoints {
			continue // a full block wholly before the batch: leave it
		}
		rowids = append(rowids, rowid)
		if old, err = decodeScalarBlock(blob, old); err != nil {
			rows.Close()
			return 0, err
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, err
	}
	merged := mergeScalars(old, points)
	for _, id := range rowids {
		if _, err := tx.ExecContext(ctx, "DELETE FROM scalar_blocks WHERE rowid = ?", id); err != nil {
			return 0, err
		}
	}
	insert, err := tx.PrepareContext(ctx, "INSERT INTO scalar_blocks (series_id, first_step, last_step, points) VALUES (?, ?, ?, ?)")
	if err != nil {
		return 0, err
	}
	defer insert.Close()
	var buf []byte
	for start := 0; start < len(merged); start += scalarBlockPoints {
		block := merged[start:min(start+scalarBlockPoints, len(merged))]
		buf = appendScalarBlock(buf[:0], block)
		if _, err := insert.ExecContext(ctx, seriesID, block[0].Step, block[len(block)-1].Step, buf); err != nil {
			return 0, err
		}
	}
	if err := writeScalarSamples(ctx, tx, ins, seriesID, points); err != nil {
		return 0, err
	}
	return int64(len(merged) - len(old)), nil
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

// maxSampleRows is the most rows one INSERT into scalar_samples carries;
// statements for 1, 2, 4, ... maxSampleRows rows are prepared once.
const maxSampleRows = 64

// sampleInserts are those statements, by log2 of their row count.
type sampleInserts [7]*sql.Stmt

func sampleInsertSQL(rows int) string {
	return "INSERT INTO scalar_samples (series_id, sample_level, step, wall_bits, value_bits) VALUES " +
		strings.Repeat("(?, ?, ?, ?, ?), ", rows-1) + "(?, ?, ?, ?, ?)" +
		" ON CONFLICT DO UPDATE SET wall_bits = excluded.wall_bits, value_bits = excluded.value_bits"
}

// prepareSampleInserts prepares the statements on db (the writer).
func prepareSampleInserts(ctx context.Context, db *sql.DB) (*sampleInserts, error) {
	var ins sampleInserts
	for i := range ins {
		var err error
		if ins[i], err = db.PrepareContext(ctx, sampleInsertSQL(1<<i)); err != nil {
			return nil, err
		}
	}
	return &ins, nil
}

// writeScalarSamples upserts the points of sample level minSampleLevel and
// above into scalar_samples, through ins when it is not nil (during
// migrations it is, and statements are compiled as needed).
func writeScalarSamples(ctx context.Context, tx *sql.Tx, ins *sampleInserts, seriesID int64, points []store.ScalarPoint) error {
	args := make([]any, 0, 5*maxSampleRows)
	for _, p := range points {
		if l := downsample.Level(p.Step); l >= minSampleLevel {
			args = append(args, seriesID, l, p.Step, int64(math.Float64bits(p.WallTime)), int64(math.Float64bits(p.Value)))
		}
	}
	// Insert in chunks whose sizes are powers of two, largest first.
	for len(args) > 0 {
		i := min(bits.Len(uint(len(args)/5))-1, len(ins)-1)
		n := 5 << i
		var err error
		if ins != nil {
			_, err = tx.StmtContext(ctx, ins[i]).ExecContext(ctx, args[:n]...)
		} else {
			_, err = tx.ExecContext(ctx, sampleInsertSQL(1<<i), args[:n]...)
		}
		if err != nil {
			return err
		}
		args = args[n:]
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

// forEachScalarBlock calls fn with the decoded points of each block that
// may hold steps of [lo, hi], in step order (descending if reverse), until
// fn returns false or an error.
func forEachScalarBlock(ctx context.Context, tx *sql.Tx, seriesID, lo, hi int64, reverse bool, fn func([]store.ScalarPoint) (bool, error)) error {
	order := "ASC"
	if reverse {
		order = "DESC"
	}
	rows, err := tx.QueryContext(ctx, "SELECT points FROM scalar_blocks WHERE series_id = ?1 AND first_step >= "+
		blockStartSQL+" AND first_step <= ?3 ORDER BY first_step "+order, seriesID, lo, hi)
	if err != nil {
		return err
	}
	defer rows.Close()
	var points []store.ScalarPoint
	for rows.Next() {
		var blob []byte
		if err := rows.Scan(&blob); err != nil {
			return err
		}
		if points, err = decodeScalarBlock(blob, points[:0]); err != nil {
			return err
		}
		more, err := fn(points)
		if err != nil || !more {
			return err
		}
	}
	return rows.Err()
}

// readScalarSeries is readSeries for scalars: the same rule over blocks
// and samples.
func readScalarSeries(ctx context.Context, tx *sql.Tx, si *seriesInfo, q *store.Query, fn store.ScalarVisitor) error {
	ts := &si.TimeSeries
	if q.MaxPoints == 0 || si.PointCount == 0 {
		return fn(ts, nil)
	}
	lo, hi := stepBounds(q)
	if q.MaxPoints >= si.PointCount {
		return streamScalars(ctx, tx, si, q, lo, hi, fn)
	}
	var latest *store.ScalarPoint
	err := forEachScalarBlock(ctx, tx, si.id, lo, hi, true, func(points []store.ScalarPoint) (bool, error) {
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
		if others, ok, err = sampledScalars(ctx, tx, si.id, q, lo, hi, latest.Step, want); err != nil {
			return err
		}
	}
	if !ok {
		// Fewer sampled points in the window than wanted: the window holds
		// about 16·want points or fewer; take them from the blocks.
		others = make([]store.ScalarPoint, 0, min(si.PointCount, int64(want)<<(minSampleLevel+1)))
		err := forEachScalarBlock(ctx, tx, si.id, lo, hi, false, func(points []store.ScalarPoint) (bool, error) {
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
	points := append(others, *latest)
	slices.SortFunc(points, func(a, b store.ScalarPoint) int { return compareSteps(a.Step, b.Step) })
	return fn(ts, points)
}

// sampledScalars reads scalar_samples from the top level down and returns
// the want in-window points (other than step except) with the smallest
// keys. ok is false when the samples hold fewer than want such points, so
// that the answer must come from the blocks.
func sampledScalars(ctx context.Context, tx *sql.Tx, seriesID int64, q *store.Query, lo, hi, except int64, want int) ([]store.ScalarPoint, bool, error) {
	rows, err := tx.QueryContext(ctx, `SELECT sample_level, step, wall_bits, value_bits FROM scalar_samples
		WHERE series_id = ? AND step >= ? AND step <= ? AND step <> ? ORDER BY sample_level DESC`, seriesID, lo, hi, except)
	if err != nil {
		return nil, false, err
	}
	defer rows.Close()
	points := make([]store.ScalarPoint, 0, 2*want)
	level := math.MaxInt
	for rows.Next() {
		var l int
		var p store.ScalarPoint
		var wall, value int64
		if err := rows.Scan(&l, &p.Step, &wall, &value); err != nil {
			return nil, false, err
		}
		if l < level && len(points) >= want {
			break // every point of key below level l+1's bound is in
		}
		level = l
		p.WallTime, p.Value = math.Float64frombits(uint64(wall)), math.Float64frombits(uint64(value))
		if q.InWindow(p.Step, p.WallTime) {
			points = append(points, p)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, false, err
	}
	if len(points) < want {
		return points, false, nil
	}
	return smallestKeysFirst(points)[:want], true, nil
}

// lowestKeys returns the want points of points (at most all of them)
// with the smallest sample keys, in downsample.Less order. Points below the
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
	return smallestKeysFirst(points)[:min(want, len(points))]
}

// smallestKeysFirst sorts points in downsample.Less order, computing each
// key once.
func smallestKeysFirst(points []store.ScalarPoint) []store.ScalarPoint {
	type keyed struct {
		key int64
		p   store.ScalarPoint
	}
	ks := make([]keyed, len(points))
	for i, p := range points {
		ks[i] = keyed{downsample.SampleKey(p.Step), p}
	}
	slices.SortFunc(ks, func(a, b keyed) int {
		if c := compareSteps(a.key, b.key); c != 0 {
			return c
		}
		return compareSteps(a.p.Step, b.p.Step)
	})
	for i := range ks {
		points[i] = ks[i].p
	}
	return points
}

// streamScalars calls fn with the window's points in step order, in chunks
// of at most a few blocks, at least once.
func streamScalars(ctx context.Context, tx *sql.Tx, si *seriesInfo, q *store.Query, lo, hi int64, fn store.ScalarVisitor) error {
	buf := make([]store.ScalarPoint, 0, readChunk)
	called := false
	err := forEachScalarBlock(ctx, tx, si.id, lo, hi, false, func(points []store.ScalarPoint) (bool, error) {
		for _, p := range points {
			if p.Step > hi {
				return false, nil
			}
			if q.InWindow(p.Step, p.WallTime) {
				buf = append(buf, p)
			}
		}
		if len(buf) >= readChunk-scalarBlockPoints {
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

// migrateScalarBlocks moves the points of the version-1 table scalar_points
// into blocks and samples, series by series in step order, and drops it.
func migrateScalarBlocks(ctx context.Context, tx *sql.Tx) error {
	ids, err := queryStrings(ctx, tx, "SELECT DISTINCT CAST(series_id AS TEXT) FROM scalar_points")
	if err != nil {
		return err
	}
	for _, id := range ids {
		rows, err := tx.QueryContext(ctx, "SELECT series_id, step, wall_time, value_bits FROM scalar_points WHERE series_id = ? ORDER BY step", id)
		if err != nil {
			return err
		}
		var seriesID int64
		var points []store.ScalarPoint
		for rows.Next() {
			var p store.ScalarPoint
			var wall sql.NullFloat64
			var bits int64
			if err := rows.Scan(&seriesID, &p.Step, &wall, &bits); err != nil {
				rows.Close()
				return err
			}
			p.WallTime, p.Value = wallTimeOf(wall), math.Float64frombits(uint64(bits))
			points = append(points, p)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if _, err := writeScalarPoints(ctx, tx, nil, seriesID, points); err != nil {
			return err
		}
	}
	_, err = tx.ExecContext(ctx, "DROP TABLE scalar_points")
	return err
}
