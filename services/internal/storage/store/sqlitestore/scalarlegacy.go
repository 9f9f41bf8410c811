package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"math"
	"math/bits"
	"strings"

	"github.com/tbhub/tbhub/services/internal/storage/downsample"
	"github.com/tbhub/tbhub/services/internal/storage/store"
)

// The scalar layout of versions 3 to 9, kept to read and convert databases
// of those versions: scalar_blocks held blocks of up to 128 points, and
// scalar_samples a row per point of downsample.Level 4 and up. A block's
// encoding is the point count as a uvarint, then per point, in ascending
// step order: the step as a varint difference from the previous step (the
// first step itself), then the wall time's and the value's IEEE-754 bits
// as 8 bytes little-endian each: 17 B per point and more.
const (
	v3BlockPoints    = 128
	v3MinSampleLevel = 4
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

// decodeScalarBlock appends the points of version-3 block b to dst.
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

// maxSampleRows is the most rows one INSERT into scalar_samples carries.
const maxSampleRows = 64

func sampleInsertSQL(rows int) string {
	return "INSERT INTO scalar_samples (series_id, sample_level, step, wall_bits, value_bits) VALUES " +
		strings.Repeat("(?, ?, ?, ?, ?), ", rows-1) + "(?, ?, ?, ?, ?)" +
		" ON CONFLICT DO UPDATE SET wall_bits = excluded.wall_bits, value_bits = excluded.value_bits"
}

// writeV3Blocks writes points, a whole series in step order, as version-3
// blocks and samples.
func writeV3Blocks(ctx context.Context, tx *sql.Tx, seriesID int64, points []store.ScalarPoint) error {
	var buf []byte
	for start := 0; start < len(points); start += v3BlockPoints {
		block := points[start:min(start+v3BlockPoints, len(points))]
		buf = appendScalarBlock(buf[:0], block)
		if _, err := tx.ExecContext(ctx, "INSERT INTO scalar_blocks (series_id, first_step, last_step, points) VALUES (?, ?, ?, ?)",
			seriesID, block[0].Step, block[len(block)-1].Step, buf); err != nil {
			return err
		}
	}
	args := make([]any, 0, 5*maxSampleRows)
	for _, p := range points {
		if l := downsample.Level(p.Step); l >= v3MinSampleLevel {
			args = append(args, seriesID, l, p.Step, int64(math.Float64bits(p.WallTime)), int64(math.Float64bits(p.Value)))
		}
	}
	// Insert in chunks whose sizes are powers of two, largest first.
	for len(args) > 0 {
		n := 5 << min(bits.Len(uint(len(args)/5))-1, 6)
		if _, err := tx.ExecContext(ctx, sampleInsertSQL(n/5), args[:n]...); err != nil {
			return err
		}
		args = args[n:]
	}
	return nil
}

// migrateScalarBlocks moves the points of the version-1 table scalar_points
// into version-3 blocks and samples, series by series in step order, and
// drops it.
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
		if err := writeV3Blocks(ctx, tx, seriesID, points); err != nil {
			return err
		}
	}
	_, err = tx.ExecContext(ctx, "DROP TABLE scalar_points")
	return err
}

// v10BatchPoints is about how many points one transaction of the version-10
// conversion moves: whole series, at least one.
const v10BatchPoints = 200_000

// convertScalarBlocks is one batch of the version-10 conversion: it moves
// whole series from scalar_blocks to scalar_chunks (rebuilding their
// samples there) and deletes their old blocks and samples, until about
// v10BatchPoints points have moved. done is true once scalar_blocks is
// empty; it and scalar_samples are then dropped. A conversion stopped
// between batches resumes where it stopped: converted series are no longer
// in scalar_blocks.
func convertScalarBlocks(ctx context.Context, tx *sql.Tx) (done bool, err error) {
	return convertScalarBatch(ctx, tx, v10BatchPoints)
}

// convertScalarBatch is convertScalarBlocks with a batch of about
// batchPoints points.
func convertScalarBatch(ctx context.Context, tx *sql.Tx, batchPoints int) (done bool, err error) {
	moved := 0
	for moved < batchPoints {
		var seriesID int64
		err := tx.QueryRowContext(ctx, "SELECT series_id FROM scalar_blocks ORDER BY series_id LIMIT 1").Scan(&seriesID)
		if errors.Is(err, sql.ErrNoRows) {
			_, err := tx.ExecContext(ctx, "DROP TABLE scalar_blocks; DROP TABLE scalar_samples")
			return err == nil, err
		}
		if err != nil {
			return false, err
		}
		rows, err := tx.QueryContext(ctx, "SELECT points FROM scalar_blocks WHERE series_id = ? ORDER BY first_step", seriesID)
		if err != nil {
			return false, err
		}
		var points []store.ScalarPoint
		for rows.Next() {
			var blob []byte
			if err := rows.Scan(&blob); err != nil {
				rows.Close()
				return false, err
			}
			if points, err = decodeScalarBlock(blob, points); err != nil {
				rows.Close()
				return false, err
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return false, err
		}
		if len(points) > 0 {
			if _, err := writeScalarPoints(ctx, tx, seriesID, points); err != nil {
				return false, err
			}
		}
		for _, q := range []string{"DELETE FROM scalar_blocks WHERE series_id = ?", "DELETE FROM scalar_samples WHERE series_id = ?"} {
			if _, err := tx.ExecContext(ctx, q, seriesID); err != nil {
				return false, err
			}
		}
		moved += len(points) + 1
	}
	return false, nil
}
