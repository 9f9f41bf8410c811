package spannerstore

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"cloud.google.com/go/spanner"

	"github.com/tbhub/tbhub/services/internal/storage/store"
)

// ListRuns implements store.Reader.
func (s *Store) ListRuns(ctx context.Context, eid string) ([]store.Run, error) {
	runs, err := s.listRuns(ctx, eid, spanner.Key{eid}.AsPrefix(), 0)
	if err != nil {
		return nil, fail("ListRuns", err)
	}
	return runs, nil
}

// ListRunsAfter implements store.Reader: the experiment's Runs rows after
// (eid, after), in key order, which is bytewise name order.
func (s *Store) ListRunsAfter(ctx context.Context, eid, after string, limit int) ([]store.Run, error) {
	if err := store.ValidatePageLimit(limit); err != nil {
		return nil, fail("ListRunsAfter", err)
	}
	runs, err := s.listRuns(ctx, eid, spanner.KeyRange{Start: spanner.Key{eid, after}, End: spanner.Key{eid}, Kind: spanner.OpenClosed}, int64(limit))
	if err != nil {
		return nil, fail("ListRunsAfter", err)
	}
	return runs, nil
}

// listRuns reads up to limit (0: all) of the experiment's runs in keys,
// sorted by name.
func (s *Store) listRuns(ctx context.Context, eid string, keys spanner.KeySet, limit int64) ([]store.Run, error) {
	s, release := s.acquire()
	defer release()
	runs := []store.Run{}
	err := s.readOnly(ctx, eid, func(tx *spanner.ReadOnlyTransaction) error {
		return tx.ReadWithOptions(ctx, "Runs", keys, []string{"RunName", "StartTime", "FirstEventTime"}, &spanner.ReadOptions{Limit: int(limit)}).Do(func(row *spanner.Row) error {
			var r store.Run
			var start, firstEvent spanner.NullFloat64
			if err := row.Columns(&r.Name, &start, &firstEvent); err != nil {
				return err
			}
			r.StartTime = start.Float64 // 0 while unknown
			if firstEvent.Valid {
				r.StartTime = firstEvent.Float64
			}
			runs = append(runs, r)
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(runs, func(a, b store.Run) int { return cmp.Compare(a.Name, b.Name) })
	return runs, nil
}

// CountRuns implements store.Reader: a read of the named Runs rows, by
// key, and a count of the experiment's if one is missing.
func (s *Store) CountRuns(ctx context.Context, eid string, names []string) (int64, []string, error) {
	s, release := s.acquire()
	defer release()
	var total int64
	var missing []string
	err := s.readOnly(ctx, eid, func(tx *spanner.ReadOnlyTransaction) error {
		wanted := store.DistinctNames(names)
		keys := make([]spanner.KeySet, len(wanted))
		for i, name := range wanted {
			keys[i] = spanner.Key{eid, name}
		}
		found := map[string]bool{}
		err := tx.Read(ctx, "Runs", spanner.KeySets(keys...), []string{"RunName"}).Do(func(row *spanner.Row) error {
			var name string
			if err := row.Column(0, &name); err != nil {
				return err
			}
			found[name] = true
			return nil
		})
		if err != nil {
			return err
		}
		missing = nil
		for _, name := range wanted {
			if !found[name] {
				missing = append(missing, name)
			}
		}
		if len(missing) == 0 && len(names) > 0 {
			return nil
		}
		row, err := singleRow(tx.Query(ctx, spanner.Statement{
			SQL:    "SELECT COUNT(*) FROM Runs WHERE ExperimentId = @eid",
			Params: map[string]any{"eid": eid},
		}))
		if err == nil {
			err = row.Columns(&total)
		}
		return err
	})
	if err != nil {
		return 0, nil, fail("CountRuns", err)
	}
	return total, missing, nil
}

// ListPlugins implements store.Reader.
func (s *Store) ListPlugins(ctx context.Context, eid string) ([]string, error) {
	s, release := s.acquire()
	defer release()
	plugins := []string{}
	err := s.readOnly(ctx, eid, func(tx *spanner.ReadOnlyTransaction) error {
		return tx.Read(ctx, "TimeSeries", spanner.Key{eid}.AsPrefix(), []string{"PluginName"}).Do(func(row *spanner.Row) error {
			var p string
			if err := row.Column(0, &p); err != nil {
				return err
			}
			plugins = append(plugins, p)
			return nil
		})
	})
	if err != nil {
		return nil, fail("ListPlugins", err)
	}
	slices.Sort(plugins)
	return slices.Compact(plugins), nil
}

// seriesColumns are the TimeSeries columns of a store.SeriesSummary, in the
// order scanSeries reads them.
var seriesColumns = []string{"RunName", "Tag", "PluginName", "SummaryMetadata", "DataClass", "DisplayName", "Description",
	"PointCount", "MaxStep", "MaxWallTime", "MaxLength"}

// seriesStatement is one query for the experiment's State and the series of
// class c (every class if DataClassUnknown) that f selects: a row per
// series, or one row with NULL series columns when none matches; no row if
// the experiment does not exist. The selection is made in SQL, so only the
// selected series (and their metadata) are read; on Spanner the run and tag
// lists become key ranges of the interleaved table.
//
// extra are further expressions to select after seriesColumns (of ts),
// from ts and the tables that joins (SQL) adds.
func seriesStatement(eid string, c store.DataClass, f store.Filter, extra []string, joins string) spanner.Statement {
	on := []string{"ts.ExperimentId = e.ExperimentId"}
	params := map[string]any{"eid": eid}
	if f.Empty() {
		on = append(on, "FALSE")
	}
	for _, in := range []struct {
		column, param string
		names         []string
	}{{"ts.RunName", "runs", f.Runs}, {"ts.Tag", "tags", f.Tags}, {"ts.PluginName", "plugins", f.Plugins}} {
		if in.names != nil {
			on = append(on, in.column+" IN UNNEST(@"+in.param+")")
			params[in.param] = in.names
		}
	}
	if c != store.DataClassUnknown {
		on = append(on, "ts.DataClass = @class")
		params["class"] = int64(c)
	}
	columns := "e.State, ts." + strings.Join(seriesColumns, ", ts.")
	if len(extra) > 0 {
		columns += ", " + strings.Join(extra, ", ")
	}
	return spanner.Statement{
		SQL: "SELECT " + columns +
			" FROM Experiments AS e LEFT JOIN TimeSeries AS ts ON " + strings.Join(on, " AND ") + joins +
			" WHERE e.ExperimentId = @eid",
		Params: params,
	}
}

// selectSeries runs seriesStatement: the selected series sorted by (run,
// tag), or store.ErrNotFound unless the experiment is live. It is the one
// read a listing needs, and the first of a point read.
func selectSeries(ctx context.Context, tx txReader, eid string, c store.DataClass, f store.Filter) ([]store.SeriesSummary, error) {
	var out []store.SeriesSummary
	err := querySeries(ctx, tx, eid, seriesStatement(eid, c, f, nil, ""), func(sum store.SeriesSummary, _ *spanner.Row) error {
		out = append(out, sum)
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b store.SeriesSummary) int {
		return cmp.Or(cmp.Compare(a.Run, b.Run), cmp.Compare(a.Tag, b.Tag))
	})
	return out, nil
}

// querySeries runs a seriesStatement and calls fn with each selected
// series and its row (whose columns after the State and seriesColumns are
// the statement's extra ones), or returns store.ErrNotFound unless the
// experiment is live.
func querySeries(ctx context.Context, tx txReader, eid string, stmt spanner.Statement, fn func(store.SeriesSummary, *spanner.Row) error) error {
	found := false
	err := tx.Query(ctx, stmt).Do(func(row *spanner.Row) error {
		var state string
		if err := row.Column(0, &state); err != nil {
			return err
		}
		if state != stateLive {
			return nil
		}
		found = true
		sum, ok, err := scanSeries(row, 1)
		if err != nil || !ok {
			return err // no error: the experiment has no selected series
		}
		return fn(sum, row)
	})
	if err != nil {
		return err
	}
	if !found {
		return fmt.Errorf("experiment %q: %w", eid, store.ErrNotFound)
	}
	return nil
}

// scanSeries reads the seriesColumns of row from column at on: false if
// they are NULL (a query's outer join matched no series).
func scanSeries(row *spanner.Row, at int) (store.SeriesSummary, bool, error) {
	var run, tag, plugin, display, desc spanner.NullString
	var class, count, maxStep, maxLength spanner.NullInt64
	var wall spanner.NullFloat64
	var metadata []byte
	for i, dst := range []any{&run, &tag, &plugin, &metadata, &class, &display, &desc, &count, &maxStep, &wall, &maxLength} {
		if err := row.Column(at+i, dst); err != nil {
			return store.SeriesSummary{}, false, err
		}
	}
	if !run.Valid {
		return store.SeriesSummary{}, false, nil
	}
	return store.SeriesSummary{
		TimeSeries: store.TimeSeries{Run: run.StringVal, Tag: tag.StringVal, PluginName: plugin.StringVal, SummaryMetadata: metadata,
			DataClass: store.DataClass(class.Int64), DisplayName: display.StringVal, Description: desc.StringVal},
		PointCount: count.Int64, MaxStep: maxStep.Int64, MaxWallTime: nullFloat(wall), MaxLength: maxLength.Int64,
	}, true, nil
}

// ListSeries implements store.Reader: one single-use read.
func (s *Store) ListSeries(ctx context.Context, eid string, c store.DataClass, f store.Filter) ([]store.SeriesSummary, error) {
	s, release := s.acquire()
	defer release()
	out, err := selectSeries(ctx, s.client.Single(), eid, c, f)
	return out, fail("ListSeries", err)
}

// scalarSpec reads scalar series of the legacy layout, a ScalarPoints row
// per point (scalarread.go reads the others).
var scalarSpec = &pointSpec[store.ScalarPoint]{
	class:        store.DataClassScalar,
	table:        "ScalarPoints",
	index:        "ScalarPointsBySampleKey",
	baseColumns:  []string{"Step", "WallTime", "Value"},
	indexColumns: []string{"Step", "WallTime", "Value"},
	fromBase:     scalarFromRow,
	fromIndex:    scalarFromRow,
	step:         func(p *store.ScalarPoint) int64 { return p.Step },
	wallTime:     func(p *store.ScalarPoint) float64 { return p.WallTime },
	pageSize:     10_000,
}

func scalarFromRow(row *spanner.Row, lead ...any) (store.ScalarPoint, error) {
	var p store.ScalarPoint
	err := row.Columns(append(lead, &p.Step, &p.WallTime, &p.Value)...)
	return p, err
}

// ReadScalars implements store.Reader.
func (s *Store) ReadScalars(ctx context.Context, eid string, q store.Query, fn store.ScalarVisitor) error {
	if q.Buckets > 0 {
		if err := store.CheckQuery(q); err != nil {
			return fmt.Errorf("spannerstore.ReadScalars: %w", err)
		}
		return s.readScalarBuckets(ctx, eid, q, fn)
	}
	s, release := s.acquire()
	defer release()
	if err := store.CheckQuery(q); err != nil {
		return fail("ReadScalars", err)
	}
	tx := s.client.ReadOnlyTransaction().WithBeginTransactionOption(spanner.InlinedBeginTransaction)
	defer tx.Close()
	return fail("ReadScalars", readScalars(ctx, tx, eid, &q, fn))
}

var tensorSpec = &pointSpec[store.TensorPoint]{
	class:        store.DataClassTensor,
	table:        "TensorPoints",
	index:        "TensorPointsBySampleKey",
	baseColumns:  []string{"Step", "WallTime", "DType", "Shape", "Tensor"},
	indexColumns: []string{"Step", "WallTime", "DType", "Shape"},
	fromBase: func(row *spanner.Row, lead ...any) (store.TensorPoint, error) {
		var p store.TensorPoint
		var dtype int64
		err := row.Columns(append(lead, &p.Step, &p.WallTime, &dtype, &p.Shape, &p.Tensor)...)
		p.DType = int32(dtype)
		return p, err
	},
	fromIndex: func(row *spanner.Row, lead ...any) (store.TensorPoint, error) {
		var p store.TensorPoint
		var dtype int64
		err := row.Columns(append(lead, &p.Step, &p.WallTime, &dtype, &p.Shape)...)
		p.DType = int32(dtype)
		return p, err
	},
	step:       func(p *store.TensorPoint) int64 { return p.Step },
	wallTime:   func(p *store.TensorPoint) float64 { return p.WallTime },
	fill:       fillTensors,
	sizeColumn: "TensorBytes",
	// Tensors can be large (up to Spanner's 10 MiB cell); keep pages small.
	pageSize: 64,
}

// pointKey names one point of an experiment.
type pointKey struct {
	run, tag string
	step     int64
}

// fillTensors reads the tensor bytes of sampled points, of every series in
// the batch, by primary key in one read.
func fillTensors(ctx context.Context, tx txReader, eid string, batch []seriesPoints[store.TensorPoint]) error {
	var keys []spanner.KeySet
	at := map[pointKey]*store.TensorPoint{}
	for _, b := range batch {
		for i := range b.points {
			keys = append(keys, spanner.Key{eid, b.series.Run, b.series.Tag, b.points[i].Step})
			at[pointKey{b.series.Run, b.series.Tag, b.points[i].Step}] = &b.points[i]
		}
	}
	return tx.Read(ctx, "TensorPoints", spanner.KeySets(keys...), []string{"RunName", "Tag", "Step", "Tensor"}).Do(func(row *spanner.Row) error {
		var k pointKey
		var tensor []byte
		if err := row.Columns(&k.run, &k.tag, &k.step, &tensor); err != nil {
			return err
		}
		if p := at[k]; p != nil {
			p.Tensor = tensor
		}
		return nil
	})
}

// ReadTensors implements store.Reader.
func (s *Store) ReadTensors(ctx context.Context, eid string, q store.Query, fn store.TensorVisitor) error {
	s, release := s.acquire()
	defer release()
	return readClass(ctx, s, "ReadTensors", eid, q, tensorSpec, fn)
}

func blobSequenceFromRow(row *spanner.Row, lead ...any) (store.BlobSequencePoint, error) {
	var p store.BlobSequencePoint
	err := row.Columns(append(lead, &p.Step, &p.WallTime, &p.Length)...)
	return p, err
}

var blobSequenceSpec = &pointSpec[store.BlobSequencePoint]{
	class:        store.DataClassBlobSequence,
	table:        "BlobSequences",
	index:        "BlobSequencesBySampleKey",
	baseColumns:  []string{"Step", "WallTime", "Length"},
	indexColumns: []string{"Step", "WallTime", "Length"},
	fromBase:     blobSequenceFromRow,
	fromIndex:    blobSequenceFromRow,
	step:         func(p *store.BlobSequencePoint) int64 { return p.Step },
	wallTime:     func(p *store.BlobSequencePoint) float64 { return p.WallTime },
	attach:       attachBlobs,
	pageSize:     1_000,
}

// attachBlobs reads the Blobs rows of the points' steps, of every series in
// the batch, in one read: per series one range over its points when they
// are many, else one prefix per step.
func attachBlobs(ctx context.Context, tx txReader, eid string, batch []seriesPoints[store.BlobSequencePoint]) error {
	var keys []spanner.KeySet
	for _, b := range batch {
		run, tag, pts := b.series.Run, b.series.Tag, b.points
		if len(pts) > 64 {
			keys = append(keys, spanner.KeyRange{
				Start: spanner.Key{eid, run, tag, pts[0].Step},
				End:   spanner.Key{eid, run, tag, pts[len(pts)-1].Step},
				Kind:  spanner.ClosedClosed,
			})
			continue
		}
		for i := range pts {
			keys = append(keys, spanner.Key{eid, run, tag, pts[i].Step}.AsPrefix())
		}
	}
	blobs, err := readBlobs(ctx, tx, spanner.KeySets(keys...))
	if err != nil {
		return err
	}
	for _, b := range batch {
		for i := range b.points {
			b.points[i].Blobs = blobs[pointKey{b.series.Run, b.series.Tag, b.points[i].Step}]
		}
	}
	return nil
}

// readBlobs reads Blobs rows, grouped by point and sorted by index.
func readBlobs(ctx context.Context, tx txReader, keys spanner.KeySet) (map[pointKey][]store.Blob, error) {
	out := map[pointKey][]store.Blob{}
	err := tx.Read(ctx, "Blobs", keys, append([]string{"RunName", "Tag", "Step"}, blobRowColumns...)).Do(func(row *spanner.Row) error {
		var k pointKey
		b, err := blobFromRow(row, &k.run, &k.tag, &k.step)
		out[k] = append(out[k], b)
		return err
	})
	for _, bs := range out {
		slices.SortFunc(bs, func(a, b store.Blob) int { return cmp.Compare(a.Index, b.Index) })
	}
	return out, err
}

// blobRowColumns are the columns blobFromRow reads after the lead ones.
var blobRowColumns = []string{"BlobIndex", "ObjectKey", "Size", "Crc32c", "State", "Generation"}

// blobFromRow reads a blob from the row's columns (blobRowColumns) after
// those lead receives (the blob's step at least).
func blobFromRow(row *spanner.Row, lead ...any) (store.Blob, error) {
	var b store.Blob
	var crc, state int64
	var gen spanner.NullInt64 // NULL in rows from before generations
	err := row.Columns(append(lead, &b.Index, &b.ObjectKey, &b.Size, &crc, &state, &gen)...)
	b.CRC32C, b.State, b.Generation = uint32(crc), store.BlobState(state), gen.Int64
	return b, err
}

// ReadBlobSequences implements store.Reader.
func (s *Store) ReadBlobSequences(ctx context.Context, eid string, q store.Query, fn store.BlobSequenceVisitor) error {
	s, release := s.acquire()
	defer release()
	return readClass(ctx, s, "ReadBlobSequences", eid, q, blobSequenceSpec, fn)
}

// GetBlob implements store.Reader.
func (s *Store) GetBlob(ctx context.Context, eid string, ref store.BlobRef) (store.Blob, error) {
	s, release := s.acquire()
	defer release()
	var b store.Blob
	err := s.readOnly(ctx, eid, func(tx *spanner.ReadOnlyTransaction) error {
		row, err := tx.ReadRow(ctx, "Blobs", spanner.Key{eid, ref.Run, ref.Tag, ref.Step, ref.Index},
			append([]string{"Step"}, blobRowColumns...))
		if err != nil {
			return err
		}
		var step int64
		b, err = blobFromRow(row, &step)
		return err
	})
	return b, fail("GetBlob", err)
}
