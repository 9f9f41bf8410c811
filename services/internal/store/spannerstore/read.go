package spannerstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"cloud.google.com/go/spanner"

	"github.com/tbhub/tbhub/services/internal/downsample"
	"github.com/tbhub/tbhub/services/internal/store"
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

var seriesColumns = []string{"RunName", "Tag", "PluginName", "SummaryMetadata", "DataClass", "DisplayName", "Description",
	"PointCount", "MaxStep", "MaxWallTime", "MaxLength"}

// listSeries reads the series of class c (all if DataClassUnknown) that f
// selects, sorted by (run, tag). It reads only the runs, or the exact
// (run, tag) keys, that f names.
func listSeries(ctx context.Context, tx txReader, eid string, c store.DataClass, f store.Filter) ([]store.SeriesSummary, error) {
	if f.Empty() {
		return nil, nil
	}
	var keys spanner.KeySet = spanner.Key{eid}.AsPrefix()
	switch {
	case f.Runs != nil && f.Tags != nil && len(f.Runs)*len(f.Tags) <= 10_000:
		var ks []spanner.KeySet
		for _, run := range f.Runs {
			for _, tag := range f.Tags {
				ks = append(ks, seriesKey(eid, run, tag))
			}
		}
		keys = spanner.KeySets(ks...)
	case f.Runs != nil:
		var ks []spanner.KeySet
		for _, run := range f.Runs {
			ks = append(ks, spanner.Key{eid, run}.AsPrefix())
		}
		keys = spanner.KeySets(ks...)
	}
	var out []store.SeriesSummary
	err := tx.Read(ctx, "TimeSeries", keys, seriesColumns).Do(func(row *spanner.Row) error {
		var sum store.SeriesSummary
		var class int64
		var wall spanner.NullFloat64
		if err := row.Columns(&sum.Run, &sum.Tag, &sum.PluginName, &sum.SummaryMetadata, &class, &sum.DisplayName, &sum.Description,
			&sum.PointCount, &sum.MaxStep, &wall, &sum.MaxLength); err != nil {
			return err
		}
		sum.DataClass = store.DataClass(class)
		sum.MaxWallTime = nullFloat(wall)
		if (c == store.DataClassUnknown || sum.DataClass == c) && f.Match(&sum.TimeSeries) {
			out = append(out, sum)
		}
		return nil
	})
	slices.SortFunc(out, func(a, b store.SeriesSummary) int {
		return cmp.Or(cmp.Compare(a.Run, b.Run), cmp.Compare(a.Tag, b.Tag))
	})
	// Duplicate names in the filter can name one key twice.
	out = slices.CompactFunc(out, func(a, b store.SeriesSummary) bool { return a.Run == b.Run && a.Tag == b.Tag })
	return out, err
}

// ListSeries implements store.Reader.
func (s *Store) ListSeries(ctx context.Context, eid string, c store.DataClass, f store.Filter) ([]store.SeriesSummary, error) {
	s, release := s.acquire()
	defer release()
	var out []store.SeriesSummary
	err := s.readOnly(ctx, eid, func(tx *spanner.ReadOnlyTransaction) error {
		var err error
		out, err = listSeries(ctx, tx, eid, c, f)
		return err
	})
	return out, fail("ListSeries", err)
}

// pointSpec describes one point table for the shared read path.
type pointSpec[P any] struct {
	class store.DataClass
	table string
	index string
	// baseColumns read a complete point from the table; indexColumns are
	// what the SampleKey index stores (also readable from the table).
	baseColumns  []string
	indexColumns []string
	fromBase     func(*spanner.Row) (P, error)
	fromIndex    func(*spanner.Row) (P, error)
	step         func(*P) int64
	wallTime     func(*P) float64
	// fill completes points read through the index (tensors: their bytes);
	// nil when the index stores everything.
	fill func(ctx context.Context, tx txReader, eid string, ts *store.TimeSeries, pts []P) error
	// attach adds child rows to points however they were read (blob
	// sequences: their blobs); nil when there are none.
	attach func(ctx context.Context, tx txReader, eid string, ts *store.TimeSeries, pts []P) error
	// pageSize is how many points one visitor call carries when a read
	// returns every point of a window.
	pageSize int
}

// readClass runs one Read* method: it selects the series and reads each.
func readClass[P any](ctx context.Context, s *Store, op, eid string, q store.Query, sp *pointSpec[P], fn func(*store.TimeSeries, []P) error) error {
	if err := store.CheckQuery(q); err != nil {
		return fail(op, err)
	}
	err := s.readOnly(ctx, eid, func(tx *spanner.ReadOnlyTransaction) error {
		series, err := listSeries(ctx, tx, eid, sp.class, q.Filter)
		if err != nil {
			return err
		}
		for i := range series {
			if err := readSeries(ctx, tx, eid, &series[i], q, sp, fn); err != nil {
				return err
			}
		}
		return nil
	})
	return fail(op, err)
}

// readSeries reads one series' points selected by q; see the package
// comment for the three ways.
func readSeries[P any](ctx context.Context, tx txReader, eid string, sum *store.SeriesSummary, q store.Query, sp *pointSpec[P], fn func(*store.TimeSeries, []P) error) error {
	ts := &sum.TimeSeries
	k := q.MaxPoints
	lo, hi := int64(math.MinInt64), sum.MaxStep // no point lies past MaxStep
	if q.MinStep != nil {
		lo = *q.MinStep
	}
	if q.MaxStep != nil {
		hi = min(hi, *q.MaxStep)
	}
	if k == 0 || sum.PointCount == 0 || lo > hi {
		return fn(ts, nil)
	}
	window := spanner.KeyRange{
		Start: spanner.Key{eid, ts.Run, ts.Tag, lo},
		End:   spanner.Key{eid, ts.Run, ts.Tag, hi},
		Kind:  spanner.ClosedClosed,
	}
	switch {
	case k >= sum.PointCount:
		// The window holds at most k points: all of them, streamed.
		return readWindow(ctx, tx, eid, ts, window, q, sp, fn)
	case q.MinStep != nil && q.MaxStep != nil && uint64(hi)-uint64(lo) < 4*uint64(k):
		// A window of fewer than 4k possible steps: reading it is O(k).
		var all []P
		err := readWindow(ctx, tx, eid, ts, window, q, sp, func(_ *store.TimeSeries, pts []P) error {
			all = append(all, pts...)
			return nil
		})
		if err != nil {
			return err
		}
		steps := make([]int64, len(all))
		for i := range all {
			steps[i] = sp.step(&all[i])
		}
		chosen := downsample.Select(steps, int(k))
		kept := all[:0]
		for i := range all {
			if _, ok := slices.BinarySearch(chosen, sp.step(&all[i])); ok {
				kept = append(kept, all[i])
			}
		}
		return fn(ts, kept)
	}
	pts, err := sample(ctx, tx, eid, sum, lo, hi, q, sp)
	if err != nil {
		return err
	}
	if len(pts) > 0 && sp.fill != nil {
		if err := sp.fill(ctx, tx, eid, ts, pts); err != nil {
			return err
		}
	}
	if len(pts) > 0 && sp.attach != nil {
		if err := sp.attach(ctx, tx, eid, ts, pts); err != nil {
			return err
		}
	}
	return fn(ts, pts)
}

// readWindow streams every point of the key range that q's wall-time bound
// admits, in step order, pageSize points per call of fn (at least one call).
func readWindow[P any](ctx context.Context, tx txReader, eid string, ts *store.TimeSeries, window spanner.KeyRange, q store.Query, sp *pointSpec[P], fn func(*store.TimeSeries, []P) error) error {
	var page []P
	called := false
	emit := func() error {
		if sp.attach != nil && len(page) > 0 {
			if err := sp.attach(ctx, tx, eid, ts, page); err != nil {
				return err
			}
		}
		called = true
		err := fn(ts, page)
		page = page[:0]
		return err
	}
	err := tx.Read(ctx, sp.table, window, sp.baseColumns).Do(func(row *spanner.Row) error {
		p, err := sp.fromBase(row)
		if err != nil {
			return err
		}
		if !q.InWindow(sp.step(&p), sp.wallTime(&p)) {
			return nil
		}
		page = append(page, p)
		if len(page) >= sp.pageSize {
			return emit()
		}
		return nil
	})
	if err != nil {
		return err
	}
	if len(page) > 0 || !called {
		return emit()
	}
	return nil
}

// sample applies the downsample rule to the window [lo, hi] of a series
// with more than k points: the latest point in the window, then the
// SampleKey index from its start (walkSampleKeys), skipping points outside
// the window, until k-1 others are found. Points come back in step order, as the index stores
// them (fill completes them).
func sample[P any](ctx context.Context, tx txReader, eid string, sum *store.SeriesSummary, lo, hi int64, q store.Query, sp *pointSpec[P]) ([]P, error) {
	ts := &sum.TimeSeries
	k := q.MaxPoints
	var latest *P
	if q.MaxWallTime == nil && hi == sum.MaxStep {
		// The latest point is the series' last one, a point read.
		row, err := tx.ReadRow(ctx, sp.table, spanner.Key{eid, ts.Run, ts.Tag, hi}, sp.indexColumns)
		if err != nil {
			return nil, err
		}
		p, err := sp.fromIndex(row)
		if err != nil {
			return nil, err
		}
		latest = &p
	} else {
		// Walk the window backwards to its last admitted point.
		it := tx.Query(ctx, spanner.Statement{
			SQL: fmt.Sprintf("SELECT %s FROM %s WHERE ExperimentId = @eid AND RunName = @run AND Tag = @tag AND Step BETWEEN @lo AND @hi ORDER BY Step DESC",
				strings.Join(sp.indexColumns, ", "), sp.table),
			Params: map[string]any{"eid": eid, "run": ts.Run, "tag": ts.Tag, "lo": lo, "hi": hi},
		})
		err := it.Do(func(row *spanner.Row) error {
			p, err := sp.fromIndex(row)
			if err != nil {
				return err
			}
			if q.InWindow(sp.step(&p), sp.wallTime(&p)) {
				latest = &p
				return errStop
			}
			return nil
		})
		if err != nil && err != errStop {
			return nil, err
		}
	}
	if latest == nil {
		return nil, nil
	}
	latestStep := sp.step(latest)
	out := make([]P, 0, k)
	if k > 1 {
		err := walkSampleKeys(ctx, tx, eid, sum, sp, k, func(p *P) bool {
			st := sp.step(p)
			if st == latestStep || st < lo || st > hi || !q.InWindow(st, sp.wallTime(p)) {
				return true
			}
			out = append(out, *p)
			return int64(len(out)) < k-1
		})
		if err != nil {
			return nil, err
		}
	}
	out = append(out, *latest)
	slices.SortFunc(out, func(a, b P) int { return cmp.Compare(sp.step(&a), sp.step(&b)) })
	return out, nil
}

// walkSampleKeys visits the series' SampleKey index entries in index order
// (SampleKey, then step) until visit returns false or the index ends.
//
// It reads the index in SampleKey ranges rather than with a row limit: keys
// are uniform over [0, 2^63), so the first range, sized to hold about 1.5k
// of the series' n entries, almost always holds the k-1 points wanted, and
// each further range doubles the span. The reads stay O(k) on any engine,
// including the emulator, which applies a read's limit only after scanning
// the whole key range. A step window admitting w of the n points makes the
// walk read about k·n/w entries.
func walkSampleKeys[P any](ctx context.Context, tx txReader, eid string, sum *store.SeriesSummary, sp *pointSpec[P], k int64, visit func(*P) bool) error {
	const keySpace = float64(1 << 63)
	span := keySpace * (1.5*float64(k) + 16) / float64(max(sum.PointCount, 1))
	from := int64(0)
	for {
		r := spanner.KeyRange{Start: spanner.Key{eid, sum.Run, sum.Tag, from}, Kind: spanner.ClosedOpen}
		last := span >= keySpace-float64(from)
		if last {
			r.End, r.Kind = spanner.Key{eid, sum.Run, sum.Tag}, spanner.ClosedClosed // to the end of the series
		} else {
			r.End = spanner.Key{eid, sum.Run, sum.Tag, from + int64(span)}
		}
		more := true
		err := tx.ReadWithOptions(ctx, sp.table, r, sp.indexColumns, &spanner.ReadOptions{Index: sp.index}).Do(func(row *spanner.Row) error {
			p, err := sp.fromIndex(row)
			if err != nil {
				return err
			}
			if more = visit(&p); !more {
				return errStop
			}
			return nil
		})
		if err != nil && err != errStop {
			return err
		}
		if !more || last {
			return nil
		}
		from += int64(span)
		span *= 2
	}
}

// errStop ends an iteration early; it never leaves this package.
var errStop = errors.New("spannerstore: stop iteration")

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

func scalarFromRow(row *spanner.Row) (store.ScalarPoint, error) {
	var p store.ScalarPoint
	err := row.Columns(&p.Step, &p.WallTime, &p.Value)
	return p, err
}

// ReadScalars implements store.Reader.
func (s *Store) ReadScalars(ctx context.Context, eid string, q store.Query, fn store.ScalarVisitor) error {
	s, release := s.acquire()
	defer release()
	return readClass(ctx, s, "ReadScalars", eid, q, scalarSpec, fn)
}

var tensorSpec = &pointSpec[store.TensorPoint]{
	class:        store.DataClassTensor,
	table:        "TensorPoints",
	index:        "TensorPointsBySampleKey",
	baseColumns:  []string{"Step", "WallTime", "DType", "Shape", "Tensor"},
	indexColumns: []string{"Step", "WallTime", "DType", "Shape"},
	fromBase: func(row *spanner.Row) (store.TensorPoint, error) {
		var p store.TensorPoint
		var dtype int64
		err := row.Columns(&p.Step, &p.WallTime, &dtype, &p.Shape, &p.Tensor)
		p.DType = int32(dtype)
		return p, err
	},
	fromIndex: func(row *spanner.Row) (store.TensorPoint, error) {
		var p store.TensorPoint
		var dtype int64
		err := row.Columns(&p.Step, &p.WallTime, &dtype, &p.Shape)
		p.DType = int32(dtype)
		return p, err
	},
	step:     func(p *store.TensorPoint) int64 { return p.Step },
	wallTime: func(p *store.TensorPoint) float64 { return p.WallTime },
	fill:     fillTensors,
	// Tensors can be large (up to Spanner's 10 MiB cell); keep pages small.
	pageSize: 64,
}

// fillTensors reads the tensor bytes of sampled points by primary key, in
// one read.
func fillTensors(ctx context.Context, tx txReader, eid string, ts *store.TimeSeries, pts []store.TensorPoint) error {
	var keys []spanner.KeySet
	at := map[int64]int{}
	for i := range pts {
		keys = append(keys, spanner.Key{eid, ts.Run, ts.Tag, pts[i].Step})
		at[pts[i].Step] = i
	}
	return tx.Read(ctx, "TensorPoints", spanner.KeySets(keys...), []string{"Step", "Tensor"}).Do(func(row *spanner.Row) error {
		var step int64
		var tensor []byte
		if err := row.Columns(&step, &tensor); err != nil {
			return err
		}
		pts[at[step]].Tensor = tensor
		return nil
	})
}

// ReadTensors implements store.Reader.
func (s *Store) ReadTensors(ctx context.Context, eid string, q store.Query, fn store.TensorVisitor) error {
	s, release := s.acquire()
	defer release()
	return readClass(ctx, s, "ReadTensors", eid, q, tensorSpec, fn)
}

func blobSequenceFromRow(row *spanner.Row) (store.BlobSequencePoint, error) {
	var p store.BlobSequencePoint
	err := row.Columns(&p.Step, &p.WallTime, &p.Length)
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

// attachBlobs reads the Blobs rows of the points' steps: one range over
// the page when the points are many, else one prefix per step.
func attachBlobs(ctx context.Context, tx txReader, eid string, ts *store.TimeSeries, pts []store.BlobSequencePoint) error {
	var keys spanner.KeySet
	if len(pts) > 64 {
		keys = spanner.KeyRange{
			Start: spanner.Key{eid, ts.Run, ts.Tag, pts[0].Step},
			End:   spanner.Key{eid, ts.Run, ts.Tag, pts[len(pts)-1].Step},
			Kind:  spanner.ClosedClosed,
		}
	} else {
		var ks []spanner.KeySet
		for i := range pts {
			ks = append(ks, spanner.Key{eid, ts.Run, ts.Tag, pts[i].Step}.AsPrefix())
		}
		keys = spanner.KeySets(ks...)
	}
	blobs, err := readBlobs(ctx, tx, keys)
	if err != nil {
		return err
	}
	for i := range pts {
		pts[i].Blobs = blobs[pts[i].Step]
	}
	return nil
}

// readBlobs reads Blobs rows, grouped by step and sorted by index.
func readBlobs(ctx context.Context, tx txReader, keys spanner.KeySet) (map[int64][]store.Blob, error) {
	out := map[int64][]store.Blob{}
	err := tx.Read(ctx, "Blobs", keys, []string{"Step", "BlobIndex", "ObjectKey", "Size", "Crc32c", "State"}).Do(func(row *spanner.Row) error {
		var step int64
		b, err := blobFromRow(row, &step)
		out[step] = append(out[step], b)
		return err
	})
	for _, bs := range out {
		slices.SortFunc(bs, func(a, b store.Blob) int { return cmp.Compare(a.Index, b.Index) })
	}
	return out, err
}

func blobFromRow(row *spanner.Row, step *int64) (store.Blob, error) {
	var b store.Blob
	var crc, state int64
	err := row.Columns(step, &b.Index, &b.ObjectKey, &b.Size, &crc, &state)
	b.CRC32C, b.State = uint32(crc), store.BlobState(state)
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
			[]string{"Step", "BlobIndex", "ObjectKey", "Size", "Crc32c", "State"})
		if err != nil {
			return err
		}
		var step int64
		b, err = blobFromRow(row, &step)
		return err
	})
	return b, fail("GetBlob", err)
}
