package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/tbhub/tbhub/services/internal/storage/store"
)

// ListRuns implements store.Reader.
func (s *Store) ListRuns(ctx context.Context, eid string) ([]store.Run, error) {
	runs, err := s.listRuns(ctx, eid, "", -1) // SQLite: a negative LIMIT is none
	if err != nil {
		return nil, fmt.Errorf("sqlitestore.ListRuns: %w", err)
	}
	return runs, nil
}

// ListRunsAfter implements store.Reader.
func (s *Store) ListRunsAfter(ctx context.Context, eid, after string, limit int) ([]store.Run, error) {
	if err := store.ValidatePageLimit(limit); err != nil {
		return nil, fmt.Errorf("sqlitestore.ListRunsAfter: %w", err)
	}
	runs, err := s.listRuns(ctx, eid, after, limit)
	if err != nil {
		return nil, fmt.Errorf("sqlitestore.ListRunsAfter: %w", err)
	}
	return runs, nil
}

// listRuns reads up to limit runs (negative: all) named after after, by
// name; SQLite's default collation compares text bytewise.
func (s *Store) listRuns(ctx context.Context, eid, after string, limit int) ([]store.Run, error) {
	var runs []store.Run
	err := s.read(ctx, func(tx *sql.Tx) error {
		if err := liveExperiment(ctx, tx, eid); err != nil {
			return err
		}
		rows, err := tx.QueryContext(ctx, `SELECT name, COALESCE(first_event_time, start_time) FROM runs
			WHERE experiment_id = ? AND name > ? ORDER BY name LIMIT ?`, eid, after, limit)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var r store.Run
			var start sql.NullFloat64
			if err := rows.Scan(&r.Name, &start); err != nil {
				return err
			}
			r.StartTime = start.Float64 // 0 when unknown
			runs = append(runs, r)
		}
		return rows.Err()
	})
	return runs, err
}

// CountRuns implements store.Reader.
func (s *Store) CountRuns(ctx context.Context, eid string, names []string) (int64, []string, error) {
	var total int64
	var missing []string
	err := s.read(ctx, func(tx *sql.Tx) error {
		if err := liveExperiment(ctx, tx, eid); err != nil {
			return err
		}
		missing = nil
		for _, name := range store.DistinctNames(names) {
			var one int
			err := tx.QueryRowContext(ctx, "SELECT 1 FROM runs WHERE experiment_id = ? AND name = ?", eid, name).Scan(&one)
			if errors.Is(err, sql.ErrNoRows) {
				missing = append(missing, name)
			} else if err != nil {
				return err
			}
		}
		if len(missing) == 0 && len(names) > 0 {
			return nil
		}
		return tx.QueryRowContext(ctx, "SELECT COUNT(*) FROM runs WHERE experiment_id = ?", eid).Scan(&total)
	})
	if err != nil {
		return 0, nil, fmt.Errorf("sqlitestore.CountRuns: %w", err)
	}
	return total, missing, nil
}

// ListPlugins implements store.Reader.
func (s *Store) ListPlugins(ctx context.Context, eid string) ([]string, error) {
	var plugins []string
	err := s.read(ctx, func(tx *sql.Tx) error {
		if err := liveExperiment(ctx, tx, eid); err != nil {
			return err
		}
		var err error
		plugins, err = queryStrings(ctx, tx, "SELECT DISTINCT plugin FROM series WHERE experiment_id = ? ORDER BY plugin", eid)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("sqlitestore.ListPlugins: %w", err)
	}
	return plugins, nil
}

// seriesInfo is a selected series and its row id.
type seriesInfo struct {
	id int64
	store.SeriesSummary
}

// nameSet turns a filter set into a JSON array for json_each, or NULL for
// "all".
func nameSet(names []string) (any, error) {
	if names == nil {
		return nil, nil
	}
	b, err := json.Marshal(names)
	return string(b), err
}

// selectSeries returns the series of class c (all if unknown) matching f,
// sorted by (run, tag).
func selectSeries(ctx context.Context, tx *sql.Tx, eid string, c store.DataClass, f store.Filter) ([]seriesInfo, error) {
	if f.Empty() {
		return nil, nil
	}
	runs, err := nameSet(f.Runs)
	if err != nil {
		return nil, err
	}
	tags, err := nameSet(f.Tags)
	if err != nil {
		return nil, err
	}
	plugins, err := nameSet(f.Plugins)
	if err != nil {
		return nil, err
	}
	rows, err := tx.QueryContext(ctx, `SELECT id, run, tag, plugin, metadata, data_class, display_name, description,
			point_count, max_step, max_wall_time, max_length
		FROM series WHERE experiment_id = ?1 AND (?2 = 0 OR data_class = ?2)
			AND (?3 IS NULL OR run IN (SELECT value FROM json_each(?3)))
			AND (?4 IS NULL OR tag IN (SELECT value FROM json_each(?4)))
			AND (?5 IS NULL OR plugin IN (SELECT value FROM json_each(?5)))
		ORDER BY run, tag`, eid, c, runs, tags, plugins)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []seriesInfo
	for rows.Next() {
		var si seriesInfo
		var maxWall sql.NullFloat64
		if err := rows.Scan(&si.id, &si.Run, &si.Tag, &si.PluginName, &si.SummaryMetadata, &si.DataClass,
			&si.DisplayName, &si.Description, &si.PointCount, &si.MaxStep, &maxWall, &si.MaxLength); err != nil {
			return nil, err
		}
		si.MaxWallTime = wallTimeOf(maxWall)
		if si.PointCount == 0 {
			si.MaxWallTime = 0
		}
		out = append(out, si)
	}
	return out, rows.Err()
}

// ListSeries implements store.Reader.
func (s *Store) ListSeries(ctx context.Context, eid string, c store.DataClass, f store.Filter) ([]store.SeriesSummary, error) {
	var out []store.SeriesSummary
	err := s.read(ctx, func(tx *sql.Tx) error {
		if err := liveExperiment(ctx, tx, eid); err != nil {
			return err
		}
		series, err := selectSeries(ctx, tx, eid, c, f)
		for _, si := range series {
			out = append(out, si.SeriesSummary)
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("sqlitestore.ListSeries: %w", err)
	}
	return out, nil
}

// pointTable describes how one class of points is stored.
type pointTable[P any] struct {
	table   string // the table; its downsampling index is table+"_sample"
	columns string // selected columns, step first
	// scan reads a row of columns into a point, then any extra columns
	// into extra.
	scan func(rows *sql.Rows, p *P, extra ...any) error
	step func(*P) int64
	// complete, if set, fills in what the row alone does not hold (the
	// blobs of blob-sequence points).
	complete func(ctx context.Context, tx *sql.Tx, seriesID int64, points []P) error
}

var tensorTable = pointTable[store.TensorPoint]{
	table:   "tensor_points",
	columns: "step, wall_time, dtype, shape, tensor",
	scan: func(rows *sql.Rows, p *store.TensorPoint, extra ...any) error {
		var wall sql.NullFloat64
		var shape []byte
		if err := rows.Scan(append([]any{&p.Step, &wall, &p.DType, &shape, &p.Tensor}, extra...)...); err != nil {
			return err
		}
		p.WallTime, p.Shape = wallTimeOf(wall), decodeShape(shape)
		return nil
	},
	step: func(p *store.TensorPoint) int64 { return p.Step },
}

var blobSequenceTable = pointTable[store.BlobSequencePoint]{
	table:   "blob_sequences",
	columns: "step, wall_time, length",
	scan: func(rows *sql.Rows, p *store.BlobSequencePoint, extra ...any) error {
		var wall sql.NullFloat64
		if err := rows.Scan(append([]any{&p.Step, &wall, &p.Length}, extra...)...); err != nil {
			return err
		}
		p.WallTime, p.Blobs = wallTimeOf(wall), nil
		return nil
	},
	step: func(p *store.BlobSequencePoint) int64 { return p.Step },
	complete: func(ctx context.Context, tx *sql.Tx, seriesID int64, points []store.BlobSequencePoint) error {
		for i := range points {
			blobs, err := blobsAt(ctx, tx, seriesID, points[i].Step)
			if err != nil {
				return err
			}
			points[i].Blobs = blobs
		}
		return nil
	},
}

// blobsAt returns the blob rows of one blob-sequence point, by index.
func blobsAt(ctx context.Context, tx *sql.Tx, seriesID, step int64) ([]store.Blob, error) {
	rows, err := tx.QueryContext(ctx, `SELECT idx, object_key, size, crc32c, state, generation FROM blobs
		WHERE series_id = ? AND step = ? ORDER BY idx`, seriesID, step)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var blobs []store.Blob
	for rows.Next() {
		var b store.Blob
		var crc int64
		if err := rows.Scan(&b.Index, &b.ObjectKey, &b.Size, &crc, &b.State, &b.Generation); err != nil {
			return nil, err
		}
		b.CRC32C = uint32(crc)
		blobs = append(blobs, b)
	}
	return blobs, rows.Err()
}

// ReadScalars implements store.Reader. Downsampled and bucketed series
// come from the scalar cache when it holds them (see scalarCache).
func (s *Store) ReadScalars(ctx context.Context, eid string, q store.Query, fn store.ScalarVisitor) error {
	gen := s.scalars.gen(eid)
	err := readPoints(ctx, s, eid, store.DataClassScalar, q, func(tx *sql.Tx, si *seriesInfo) error {
		read := readScalarSeries
		switch {
		case q.Buckets > 0:
			read = readScalarBuckets
		case q.MaxPoints == 0 || q.MaxPoints >= si.PointCount:
			return readScalarSeries(ctx, tx, s.scalarStmts, si, &q, fn)
		}
		key := newScalarKey(eid, si, &q)
		if points, ok := s.scalars.get(key, gen, si); ok {
			return fn(&si.TimeSeries, points)
		}
		return read(ctx, tx, s.scalarStmts, si, &q, func(ts *store.TimeSeries, points []store.ScalarPoint) error {
			s.scalars.put(key, gen, si, points)
			return fn(ts, points)
		})
	})
	if err != nil {
		return fmt.Errorf("sqlitestore.ReadScalars: %w", err)
	}
	return nil
}

// ReadTensors implements store.Reader.
func (s *Store) ReadTensors(ctx context.Context, eid string, q store.Query, fn store.TensorVisitor) error {
	err := readPoints(ctx, s, eid, store.DataClassTensor, q, func(tx *sql.Tx, si *seriesInfo) error {
		return readSeries(ctx, tx, tensorTable, si, &q, fn)
	})
	if err != nil {
		return fmt.Errorf("sqlitestore.ReadTensors: %w", err)
	}
	return nil
}

// ReadBlobSequences implements store.Reader.
func (s *Store) ReadBlobSequences(ctx context.Context, eid string, q store.Query, fn store.BlobSequenceVisitor) error {
	err := readPoints(ctx, s, eid, store.DataClassBlobSequence, q, func(tx *sql.Tx, si *seriesInfo) error {
		return readSeries(ctx, tx, blobSequenceTable, si, &q, fn)
	})
	if err != nil {
		return fmt.Errorf("sqlitestore.ReadBlobSequences: %w", err)
	}
	return nil
}

// readPoints reads every selected series of one class in one snapshot,
// calling readOne for each.
func readPoints(ctx context.Context, s *Store, eid string, c store.DataClass, q store.Query, readOne func(*sql.Tx, *seriesInfo) error) error {
	if err := store.CheckQuery(q); err != nil {
		return err
	}
	return s.read(ctx, func(tx *sql.Tx) error {
		if err := liveExperiment(ctx, tx, eid); err != nil {
			return err
		}
		series, err := selectSeries(ctx, tx, eid, c, q.Filter)
		if err != nil {
			return err
		}
		for i := range series {
			if err := readOne(tx, &series[i]); err != nil {
				return err
			}
		}
		return nil
	})
}

// windowSQL is the WHERE condition and arguments of q's step and wall-time
// window. A NULL (NaN) wall time fails "wall_time <= ?", as NaN fails
// Query.InWindow.
func windowSQL(q *store.Query) (string, []any) {
	var b strings.Builder
	var args []any
	if q.MinStep != nil {
		b.WriteString(" AND step >= ?")
		args = append(args, *q.MinStep)
	}
	if q.MaxStep != nil {
		b.WriteString(" AND step <= ?")
		args = append(args, *q.MaxStep)
	}
	if q.MaxWallTime != nil {
		b.WriteString(" AND wall_time <= ?")
		args = append(args, wallTimeArg(*q.MaxWallTime))
	}
	return b.String(), args
}

// readChunk is how many points one visitor call carries when streaming.
const readChunk = 1024

// readSeries reads one series' window. When the window may hold more than
// q.MaxPoints points it downsamples with the sample-key index: one seek
// for the latest point and the first MaxPoints-1 index entries in the
// window, so O(k) rows whatever the series' length. Otherwise it streams
// the window in step order.
func readSeries[P any, V ~func(*store.TimeSeries, []P) error](ctx context.Context, tx *sql.Tx, t pointTable[P], si *seriesInfo, q *store.Query, fn V) error {
	ts := &si.TimeSeries
	if q.MaxPoints == 0 || si.PointCount == 0 {
		return fn(ts, nil)
	}
	window, wargs := windowSQL(q)
	args := append([]any{si.id}, wargs...)
	if q.MaxPoints >= si.PointCount {
		return streamSeries(ctx, tx, t, si, "SELECT "+t.columns+" FROM "+t.table+
			" WHERE series_id = ?"+window+" ORDER BY step", args, fn)
	}
	latest, err := queryPoints(ctx, tx, t, "SELECT "+t.columns+" FROM "+t.table+
		" WHERE series_id = ?"+window+" ORDER BY step DESC LIMIT 1", args, nil)
	if err != nil || len(latest) == 0 {
		if err != nil {
			return err
		}
		return fn(ts, nil)
	}
	points, err := smallestKeys(ctx, tx, t, "SELECT "+t.columns+", sample_level FROM "+t.table+
		" INDEXED BY "+t.table+"_sample WHERE series_id = ?"+window+" AND step <> ? ORDER BY sample_level DESC",
		append(args, t.step(&latest[0])), q.MaxPoints-1)
	if err != nil {
		return err
	}
	points = append(points, latest[0])
	slices.SortFunc(points, func(a, b P) int { return compareSteps(t.step(&a), t.step(&b)) })
	if t.complete != nil {
		if err := t.complete(ctx, tx, si.id, points); err != nil {
			return err
		}
	}
	return fn(ts, points)
}

// smallestKeys returns the want points of a query that come first in
// downsample.Less order. The query must return its points by descending
// sample level, the level as an extra last column. It reads the levels
// from the top until the end of the first level by which want points were
// seen: those are every point whose key is below that level's bound, so
// they hold the want smallest keys; about 2·want rows in all.
func smallestKeys[P any](ctx context.Context, tx *sql.Tx, t pointTable[P], query string, args []any, want int64) ([]P, error) {
	rows, err := tx.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var points []P
	level := math.MaxInt
	for rows.Next() {
		var p P
		var l int
		if err := t.scan(rows, &p, &l); err != nil {
			return nil, err
		}
		if l < level && int64(len(points)) >= want {
			break
		}
		level = l
		points = append(points, p)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	slices.SortFunc(points, func(a, b P) int { return compareKeys(t.step(&a), t.step(&b)) })
	return points[:min(int64(len(points)), want)], nil
}

// queryPoints runs a point query and appends its rows to dst.
func queryPoints[P any](ctx context.Context, tx *sql.Tx, t pointTable[P], query string, args []any, dst []P) ([]P, error) {
	rows, err := tx.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var p P
		if err := t.scan(rows, &p); err != nil {
			return nil, err
		}
		dst = append(dst, p)
	}
	return dst, rows.Err()
}

// streamSeries calls fn with chunks of the query's rows, at least once.
func streamSeries[P any, V ~func(*store.TimeSeries, []P) error](ctx context.Context, tx *sql.Tx, t pointTable[P], si *seriesInfo, query string, args []any, fn V) error {
	rows, err := tx.QueryContext(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	buf := make([]P, 0, min(readChunk, si.PointCount))
	called := false
	flush := func() error {
		if t.complete != nil {
			if err := t.complete(ctx, tx, si.id, buf); err != nil {
				return err
			}
		}
		called = true
		err := fn(&si.TimeSeries, buf)
		buf = buf[:0]
		return err
	}
	for rows.Next() {
		var p P
		if err := t.scan(rows, &p); err != nil {
			return err
		}
		buf = append(buf, p)
		if len(buf) == readChunk {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if len(buf) > 0 || !called {
		return flush()
	}
	return nil
}

// GetBlob implements store.Reader.
func (s *Store) GetBlob(ctx context.Context, eid string, ref store.BlobRef) (store.Blob, error) {
	var b store.Blob
	err := s.read(ctx, func(tx *sql.Tx) error {
		if err := liveExperiment(ctx, tx, eid); err != nil {
			return err
		}
		r, err := findBlobSeries(ctx, tx, eid, ref)
		if err != nil {
			return err
		}
		var crc int64
		err = tx.QueryRowContext(ctx, `SELECT idx, object_key, size, crc32c, state, generation FROM blobs
			WHERE series_id = ? AND step = ? AND idx = ?`, r.id, ref.Step, ref.Index).
			Scan(&b.Index, &b.ObjectKey, &b.Size, &crc, &b.State, &b.Generation)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("blob %+v: %w", ref, store.ErrNotFound)
		}
		b.CRC32C = uint32(crc)
		return err
	})
	if err != nil {
		return store.Blob{}, fmt.Errorf("sqlitestore.GetBlob: %w", err)
	}
	return b, nil
}
