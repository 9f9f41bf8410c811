package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/tbhub/tbhub/services/internal/storage/downsample"
	"github.com/tbhub/tbhub/services/internal/storage/store"
)

// seriesRow is what a write needs to know about a series row.
type seriesRow struct {
	id      int64
	class   store.DataClass
	count   int64
	maxStep int64
	maxWall sql.NullFloat64
}

// hasStepAtOrAfter reports whether some stored point may have a step >= step,
// i.e. whether writing step could overwrite an existing point.
func (r *seriesRow) hasStepAtOrAfter(step int64) bool {
	return r.count > 0 && r.maxStep >= step
}

// findSeries reads the series row of (eid, run, tag); found is false if
// there is none.
func findSeries(ctx context.Context, tx *sql.Tx, eid, run, tag string) (r seriesRow, found bool, err error) {
	err = tx.QueryRowContext(ctx, `SELECT id, data_class, point_count, max_step, max_wall_time
		FROM series WHERE experiment_id = ? AND run = ? AND tag = ?`, eid, run, tag).
		Scan(&r.id, &r.class, &r.count, &r.maxStep, &r.maxWall)
	if errors.Is(err, sql.ErrNoRows) {
		return seriesRow{}, false, nil
	}
	return r, err == nil, err
}

// findBlobSeries returns the blob-sequence series of ref, or
// store.ErrNotFound.
func findBlobSeries(ctx context.Context, tx *sql.Tx, eid string, ref store.BlobRef) (seriesRow, error) {
	r, found, err := findSeries(ctx, tx, eid, ref.Run, ref.Tag)
	if err == nil && (!found || r.class != store.DataClassBlobSequence) {
		err = fmt.Errorf("blob sequence (%q, %q): %w", ref.Run, ref.Tag, store.ErrNotFound)
	}
	return r, err
}

// ensureSeries returns the row of ts, creating it (and its run) with ts's
// metadata if absent: first write wins. An existing series of another data
// class is store.ErrFailedPrecondition.
func ensureSeries(ctx context.Context, tx *sql.Tx, eid string, ts *store.TimeSeries) (seriesRow, error) {
	r, found, err := findSeries(ctx, tx, eid, ts.Run, ts.Tag)
	if err != nil {
		return seriesRow{}, err
	}
	if found {
		if r.class != ts.DataClass {
			return seriesRow{}, fmt.Errorf("series (%q, %q) holds %v, not %v: %w",
				ts.Run, ts.Tag, r.class, ts.DataClass, store.ErrFailedPrecondition)
		}
		return r, nil
	}
	if _, err := tx.ExecContext(ctx, "INSERT OR IGNORE INTO runs (experiment_id, name) VALUES (?, ?)", eid, ts.Run); err != nil {
		return seriesRow{}, err
	}
	err = tx.QueryRowContext(ctx, `INSERT INTO series
		(experiment_id, run, tag, plugin, metadata, data_class, display_name, description)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
		eid, ts.Run, ts.Tag, ts.PluginName, ts.SummaryMetadata, ts.DataClass, ts.DisplayName, ts.Description).
		Scan(&r.id)
	r.class = ts.DataClass
	return r, err
}

// pointFacts are the running totals one series' write adds.
type pointFacts struct {
	added    int64   // points that did not exist before
	bytes    int64   // change of total_bytes
	maxStep  int64   // largest step written
	maxWall  float64 // largest wall time written; NaN if none
	minWall  float64 // smallest wall time written; NaN if none
	maxLen   int64   // largest blob-sequence length written
	anyPoint bool
}

func newFacts() pointFacts {
	return pointFacts{maxWall: math.NaN(), minWall: math.NaN(), maxStep: math.MinInt64}
}

func (f *pointFacts) see(step int64, wall float64) {
	f.anyPoint = true
	f.maxStep = max(f.maxStep, step)
	if !math.IsNaN(wall) {
		if math.IsNaN(f.maxWall) || wall > f.maxWall {
			f.maxWall = wall
		}
		if math.IsNaN(f.minWall) || wall < f.minWall {
			f.minWall = wall
		}
	}
}

// record adds f to the series row, the run's start time and the
// experiment's update time.
func (s *Store) record(ctx context.Context, tx *sql.Tx, eid, run string, r seriesRow, f pointFacts) error {
	if !f.anyPoint {
		return nil
	}
	maxStep := f.maxStep
	if r.count > 0 {
		maxStep = max(maxStep, r.maxStep)
	}
	maxWall := wallTimeOf(r.maxWall)
	if math.IsNaN(maxWall) || f.maxWall > maxWall {
		maxWall = f.maxWall
	}
	if _, err := tx.ExecContext(ctx, `UPDATE series SET point_count = point_count + ?, max_step = ?,
		max_wall_time = ?, total_bytes = total_bytes + ?, max_length = max(max_length, ?) WHERE id = ?`,
		f.added, maxStep, wallTimeArg(maxWall), f.bytes, f.maxLen, r.id); err != nil {
		return err
	}
	if !math.IsNaN(f.minWall) {
		if _, err := tx.ExecContext(ctx, `UPDATE runs SET start_time = ?1
			WHERE experiment_id = ?2 AND name = ?3 AND (start_time IS NULL OR start_time > ?1)`,
			f.minWall, eid, run); err != nil {
			return err
		}
	}
	_, err := tx.ExecContext(ctx, "UPDATE experiments SET update_time = ? WHERE id = ?", nanos(s.now()), eid)
	return err
}

// lastPerStep returns the points sorted by step with one point per step, the
// last one given for it (later entries win). Already strictly increasing
// input, the common case, is returned as is.
func lastPerStep[P any](points []P, step func(*P) int64) []P {
	increasing := true
	for i := 1; i < len(points); i++ {
		if step(&points[i-1]) >= step(&points[i]) {
			increasing = false
			break
		}
	}
	if increasing {
		return points
	}
	out := slices.Clone(points)
	slices.SortStableFunc(out, func(a, b P) int { return compareSteps(step(&a), step(&b)) })
	w := 0
	for i := range out {
		if i+1 < len(out) && step(&out[i]) == step(&out[i+1]) {
			continue // a later entry has the same step
		}
		out[w] = out[i]
		w++
	}
	return out[:w]
}

// existingSize reports whether (series, step) has a row in table and the
// stored size sizeExpr computes for it.
func existingSize(ctx context.Context, tx *sql.Tx, table, sizeExpr string, seriesID, step int64) (bool, int64, error) {
	var size int64
	err := tx.QueryRowContext(ctx, "SELECT "+sizeExpr+" FROM "+table+" WHERE series_id = ? AND step = ?", seriesID, step).Scan(&size)
	if errors.Is(err, sql.ErrNoRows) {
		return false, 0, nil
	}
	return err == nil, size, err
}

// WriteScalars implements store.Writer. The whole batch is one transaction.
func (s *Store) WriteScalars(ctx context.Context, eid string, batch []store.ScalarSeries) error {
	// After the commit (or failure): cached reads of eid are stale.
	defer s.scalars.wrote(eid)
	err := writeBatch(ctx, s, eid, store.DataClassScalar, batch, scalarBatchSeries, func(tx *sql.Tx) (int64, error) {
		var added int64
		for _, b := range batch {
			points := lastPerStep(b.Points, func(p *store.ScalarPoint) int64 { return p.Step })
			if len(points) == 0 {
				continue
			}
			r, err := ensureSeries(ctx, tx, eid, &b.Series)
			if err != nil {
				return 0, err
			}
			f := newFacts()
			for _, p := range points {
				f.see(p.Step, p.WallTime)
			}
			if f.added, err = writeScalarPoints(ctx, tx, r.id, points); err != nil {
				return 0, err
			}
			if err := s.record(ctx, tx, eid, b.Series.Run, r, f); err != nil {
				return 0, err
			}
			added += f.added
		}
		return added, nil
	})
	if err != nil {
		return fmt.Errorf("sqlitestore.WriteScalars: %w", err)
	}
	return nil
}

// writeBatch validates a write batch of class c and runs body in one write
// transaction, after creating every series of the batch that has points:
// a data-class conflict anywhere fails the whole batch before any point is
// written. Bodies read each series row again when they reach it, because
// the same series may appear twice in a batch. body returns the points it
// added (rewrites of stored steps add none), which are charged to the
// owner's usage in the same transaction, under the points quota of ctx.
func writeBatch[B any](ctx context.Context, s *Store, eid string, c store.DataClass, batch []B,
	series func(*B) (*store.TimeSeries, int), body func(*sql.Tx) (int64, error)) error {
	for i := range batch {
		ts, _ := series(&batch[i])
		if err := store.CheckSeries(ts, c); err != nil {
			return err
		}
	}
	return s.write(ctx, func(tx *sql.Tx) error {
		if err := liveExperiment(ctx, tx, eid); err != nil {
			return err
		}
		for i := range batch {
			if ts, points := series(&batch[i]); points > 0 {
				if _, err := ensureSeries(ctx, tx, eid, ts); err != nil {
					return err
				}
			}
		}
		added, err := body(tx)
		if err != nil {
			return err
		}
		return chargePoints(ctx, tx, eid, added)
	})
}

// chargePoints adds n points to the usage of eid's owner, refusing (a
// *store.QuotaError; the caller rolls back) if that passes the points
// quota of ctx.
func chargePoints(ctx context.Context, tx *sql.Tx, eid string, n int64) error {
	return chargeOwner(ctx, tx, eid, "points", store.PointsQuotaName, store.QuotasOf(ctx).Points, 0, n)
}

// addBlobBytes adds n bytes of blob rows (negative: rows shrunk or gone)
// to the usage of eid's owner, refusing growth (a *store.QuotaError; the
// caller rolls back) that passes the byte quota of ctx, counted with the
// other stored bytes ctx says the owner has.
func addBlobBytes(ctx context.Context, tx *sql.Tx, eid string, n int64) error {
	q := store.QuotasOf(ctx)
	return chargeOwner(ctx, tx, eid, "blob_bytes", store.BytesQuotaName, q.Bytes, q.OtherBytes, n)
}

// chargeOwner is chargeUsageBeside of eid's owner; nothing if n is 0.
func chargeOwner(ctx context.Context, tx *sql.Tx, eid, column, quota string, limit, beside, n int64) error {
	if n == 0 {
		return nil
	}
	var owner string
	if err := tx.QueryRowContext(ctx, "SELECT owner FROM experiments WHERE id = ?", eid).Scan(&owner); err != nil {
		return err
	}
	return chargeUsageBeside(ctx, tx, owner, column, quota, limit, beside, n)
}

// chargeUsage adds n to column of user's usage row, refusing (a
// *store.QuotaError; the caller rolls back) if that passes limit (0:
// none). The write transaction holds the database's only writer, so the
// check is exact.
func chargeUsage(ctx context.Context, tx *sql.Tx, user, column, quota string, limit, n int64) error {
	return chargeUsageBeside(ctx, tx, user, column, quota, limit, 0, n)
}

// chargeUsageBeside is chargeUsage of a quota that also counts beside,
// which the row does not keep.
func chargeUsageBeside(ctx context.Context, tx *sql.Tx, user, column, quota string, limit, beside, n int64) error {
	var used int64
	err := tx.QueryRowContext(ctx, "SELECT "+column+" FROM user_usage WHERE user_id = ?", user).Scan(&used)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return err
	}
	if err := store.CheckQuota(quota, limit, used+beside, n); err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, "INSERT INTO user_usage (user_id, "+column+") VALUES (?1, ?2) "+
		"ON CONFLICT (user_id) DO UPDATE SET "+column+" = "+column+" + ?2", user, n)
	return err
}

func scalarBatchSeries(b *store.ScalarSeries) (*store.TimeSeries, int) {
	return &b.Series, len(b.Points)
}
func tensorBatchSeries(b *store.TensorSeries) (*store.TimeSeries, int) {
	return &b.Series, len(b.Points)
}

// encodeShape stores a tensor shape as consecutive little-endian int64s.
func encodeShape(shape []int64) []byte {
	b := make([]byte, 0, 8*len(shape))
	for _, d := range shape {
		b = binary.LittleEndian.AppendUint64(b, uint64(d))
	}
	return b
}

func decodeShape(b []byte) []int64 {
	shape := make([]int64, len(b)/8)
	for i := range shape {
		shape[i] = int64(binary.LittleEndian.Uint64(b[8*i:]))
	}
	return shape
}

// WriteTensors implements store.Writer. The whole batch is one transaction.
func (s *Store) WriteTensors(ctx context.Context, eid string, batch []store.TensorSeries) error {
	err := writeBatch(ctx, s, eid, store.DataClassTensor, batch, tensorBatchSeries, func(tx *sql.Tx) (added int64, err error) {
		insert, err := tx.PrepareContext(ctx, `INSERT INTO tensor_points
			(series_id, step, sample_level, wall_time, dtype, shape, tensor) VALUES (?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (series_id, step) DO UPDATE SET wall_time = excluded.wall_time,
			dtype = excluded.dtype, shape = excluded.shape, tensor = excluded.tensor`)
		if err != nil {
			return 0, err
		}
		defer insert.Close()
		for _, b := range batch {
			points := lastPerStep(b.Points, func(p *store.TensorPoint) int64 { return p.Step })
			if len(points) == 0 {
				continue
			}
			r, err := ensureSeries(ctx, tx, eid, &b.Series)
			if err != nil {
				return 0, err
			}
			f := newFacts()
			for _, p := range points {
				f.see(p.Step, p.WallTime)
				f.added++
				f.bytes += int64(len(p.Tensor))
				if r.hasStepAtOrAfter(p.Step) {
					found, old, err := existingSize(ctx, tx, "tensor_points", "length(tensor)", r.id, p.Step)
					if err != nil {
						return 0, err
					}
					if found {
						f.added--
						f.bytes -= old
					}
				}
				tensor := p.Tensor
				if tensor == nil {
					tensor = []byte{} // NOT NULL: an empty TensorProto serializes to no bytes
				}
				if _, err := insert.ExecContext(ctx, r.id, p.Step, downsample.Level(p.Step), wallTimeArg(p.WallTime),
					p.DType, encodeShape(p.Shape), tensor); err != nil {
					return 0, err
				}
			}
			if err := s.record(ctx, tx, eid, b.Series.Run, r, f); err != nil {
				return 0, err
			}
			added += f.added
		}
		return added, nil
	})
	if err != nil {
		return fmt.Errorf("sqlitestore.WriteTensors: %w", err)
	}
	return nil
}

// PutRuns implements store.Writer.
func (s *Store) PutRuns(ctx context.Context, eid string, runs []store.Run) error {
	starts, err := store.CheckRuns(runs)
	if err != nil {
		return fmt.Errorf("sqlitestore.PutRuns: %w", err)
	}
	err = s.write(ctx, func(tx *sql.Tx) error {
		if err := liveExperiment(ctx, tx, eid); err != nil {
			return err
		}
		for run, start := range starts {
			if _, err := tx.ExecContext(ctx, "INSERT OR IGNORE INTO runs (experiment_id, name) VALUES (?, ?)", eid, run); err != nil {
				return err
			}
			if math.IsNaN(start) {
				continue
			}
			if _, err := tx.ExecContext(ctx, "UPDATE runs SET first_event_time = ? WHERE experiment_id = ? AND name = ?", start, eid, run); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("sqlitestore.PutRuns: %w", err)
	}
	return nil
}

// GetOrCreateBlobSequence implements store.Writer.
func (s *Store) GetOrCreateBlobSequence(ctx context.Context, eid string, ts store.TimeSeries, step int64, wallTime float64, length int64) (store.BlobSequencePoint, []store.Blob, error) {
	if err := store.CheckSeries(&ts, store.DataClassBlobSequence); err != nil {
		return store.BlobSequencePoint{}, nil, fmt.Errorf("sqlitestore.GetOrCreateBlobSequence: %w", err)
	}
	if length < 0 {
		return store.BlobSequencePoint{}, nil, fmt.Errorf("sqlitestore.GetOrCreateBlobSequence: length %d: %w", length, store.ErrInvalidArgument)
	}
	var out store.BlobSequencePoint
	var replaced []store.Blob
	err := s.write(ctx, func(tx *sql.Tx) error {
		replaced = nil
		if err := liveExperiment(ctx, tx, eid); err != nil {
			return err
		}
		r, err := ensureSeries(ctx, tx, eid, &ts)
		if err != nil {
			return err
		}
		var wall sql.NullFloat64
		err = tx.QueryRowContext(ctx, "SELECT wall_time, length FROM blob_sequences WHERE series_id = ? AND step = ?", r.id, step).
			Scan(&wall, &out.Length)
		exists := err == nil
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		if exists {
			out.Step, out.WallTime = step, wallTimeOf(wall)
			if out.Blobs, err = blobsAt(ctx, tx, r.id, step); err != nil {
				return err
			}
			if store.SameWallTime(out.WallTime, wallTime) && out.Length == length {
				return nil
			}
			// A rewrite of the step: drop its blobs and take the new shape.
			replaced = out.Blobs
			var count, bytes, rowBytes int64
			for _, b := range replaced {
				rowBytes += b.Size
				if b.State == store.BlobStateCurrent {
					count, bytes = count+1, bytes+b.Size
				}
			}
			if err := addBlobBytes(ctx, tx, eid, -rowBytes); err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, "DELETE FROM blobs WHERE series_id = ? AND step = ?", r.id, step); err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, "UPDATE series SET blob_count = blob_count - ?, total_bytes = total_bytes - ? WHERE id = ?",
				count, bytes, r.id); err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, "UPDATE blob_sequences SET wall_time = ?, length = ? WHERE series_id = ? AND step = ?",
				wallTimeArg(wallTime), length, r.id, step); err != nil {
				return err
			}
		} else if _, err := tx.ExecContext(ctx, `INSERT INTO blob_sequences (series_id, step, sample_level, wall_time, length)
			VALUES (?, ?, ?, ?, ?)`, r.id, step, downsample.Level(step), wallTimeArg(wallTime), length); err != nil {
			return err
		}
		f := newFacts()
		f.see(step, wallTime)
		f.maxLen = length
		if !exists {
			f.added = 1
		}
		out = store.BlobSequencePoint{Step: step, WallTime: wallTime, Length: length}
		return s.record(ctx, tx, eid, ts.Run, r, f)
	})
	if err != nil {
		return store.BlobSequencePoint{}, nil, fmt.Errorf("sqlitestore.GetOrCreateBlobSequence: %w", err)
	}
	return out, replaced, nil
}

// PutBlob implements store.Writer. ref.Index names the slot; b.Index is
// ignored.
func (s *Store) PutBlob(ctx context.Context, eid string, ref store.BlobRef, b store.Blob) error {
	return s.putBlob(ctx, eid, ref, b, nil)
}

// PutBlobIf implements store.Writer.
func (s *Store) PutBlobIf(ctx context.Context, eid string, ref store.BlobRef, b store.Blob, want store.BlobMatch) error {
	return s.putBlob(ctx, eid, ref, b, &want)
}

// putBlob writes the row of a blob, if want is nil or holds.
func (s *Store) putBlob(ctx context.Context, eid string, ref store.BlobRef, b store.Blob, want *store.BlobMatch) error {
	if b.State != store.BlobStateUnfinalized && b.State != store.BlobStateCurrent {
		return fmt.Errorf("sqlitestore.PutBlob: state %d: %w", b.State, store.ErrInvalidArgument)
	}
	if b.Size < 0 || b.ObjectKey == "" {
		return fmt.Errorf("sqlitestore.PutBlob: size %d, object key %q: %w", b.Size, b.ObjectKey, store.ErrInvalidArgument)
	}
	err := s.write(ctx, func(tx *sql.Tx) error {
		if err := liveExperiment(ctx, tx, eid); err != nil {
			return err
		}
		r, err := findBlobSeries(ctx, tx, eid, ref)
		if err != nil {
			return err
		}
		var length int64
		err = tx.QueryRowContext(ctx, "SELECT length FROM blob_sequences WHERE series_id = ? AND step = ?", r.id, ref.Step).Scan(&length)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("blob sequence (%q, %q) step %d: %w", ref.Run, ref.Tag, ref.Step, store.ErrNotFound)
		}
		if err != nil {
			return err
		}
		if ref.Index < 0 || ref.Index >= length {
			return fmt.Errorf("blob index %d outside sequence of length %d: %w", ref.Index, length, store.ErrInvalidArgument)
		}
		var count, bytes int64
		if b.State == store.BlobStateCurrent {
			count, bytes = 1, b.Size
		}
		var old store.Blob
		err = tx.QueryRowContext(ctx, "SELECT state, size, generation FROM blobs WHERE series_id = ? AND step = ? AND idx = ?",
			r.id, ref.Step, ref.Index).Scan(&old.State, &old.Size, &old.Generation)
		var oldRow *store.Blob
		switch {
		case errors.Is(err, sql.ErrNoRows):
		case err != nil:
			return err
		default:
			oldRow = &old
		}
		if want != nil {
			if err := store.CheckBlobMatch(oldRow, b, *want); err != nil {
				return err
			}
		}
		if oldRow != nil && old.State == store.BlobStateCurrent {
			count, bytes = count-1, bytes-old.Size
		}
		grown := b.Size
		if oldRow != nil {
			grown -= old.Size
		}
		if err := addBlobBytes(ctx, tx, eid, grown); err != nil {
			return err
		}
		var unfinishedWrite any // NULL for a current blob
		if b.State == store.BlobStateUnfinalized {
			unfinishedWrite = nanos(s.now())
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO blobs (series_id, step, idx, object_key, size, crc32c, state, unfinished_write_time, generation)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (series_id, step, idx) DO UPDATE SET
			object_key = excluded.object_key, size = excluded.size, crc32c = excluded.crc32c, state = excluded.state,
			unfinished_write_time = excluded.unfinished_write_time, generation = excluded.generation`,
			r.id, ref.Step, ref.Index, b.ObjectKey, b.Size, int64(b.CRC32C), b.State, unfinishedWrite, b.Generation); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, "UPDATE series SET blob_count = blob_count + ?, total_bytes = total_bytes + ? WHERE id = ?",
			count, bytes, r.id); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, "UPDATE experiments SET update_time = ? WHERE id = ?", nanos(s.now()), eid)
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlitestore.PutBlob: %w", err)
	}
	return nil
}
