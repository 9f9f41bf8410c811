package spannerstore

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"

	"cloud.google.com/go/spanner"
	"google.golang.org/grpc/codes"

	"github.com/tbhub/tbhub/services/internal/storage/downsample"
	"github.com/tbhub/tbhub/services/internal/storage/store"
)

// Mutation costs, counted as Spanner does: one per column written, plus one
// per column of each index entry the row adds (index key, primary key and
// STORING columns).
const (
	tensorRowCost = 10 + 9 // TensorPoints columns + TensorPointsBySampleKey entry
	seriesRowCost = 16     // a TimeSeries row written whole
	runRowCost    = 3      // a Runs row
)

// pointWrite is one point ready to write.
type pointWrite struct {
	step  int64
	wall  float64
	bytes int64             // tensor bytes; 0 for scalars
	value float64           // scalars: the value (m is nil)
	m     *spanner.Mutation // other classes: the point's row
}

// seriesWrite is the points of one series in one write call, one per step
// (the last given wins), sorted by step.
type seriesWrite struct {
	ts     store.TimeSeries
	points []pointWrite
}

// pointKind describes a point table for the shared write path.
type pointKind struct {
	class   store.DataClass
	table   string
	rowCost int
	// seriesCost is what a commit spends per series besides its
	// TimeSeries and Runs rows and rowCost per point.
	seriesCost int
	tensors    bool // keeps TimeSeries.TensorBytes
}

var (
	// Scalars go into chunks (scalarchunks.go): a point costs a fraction
	// of a mutation, bounded here by one; a series' sample levels cost up
	// to chunkMutationsPerSeries.
	scalarKind = pointKind{class: store.DataClassScalar, table: "ScalarChunks", rowCost: 1, seriesCost: chunkMutationsPerSeries}
	tensorKind = pointKind{class: store.DataClassTensor, table: "TensorPoints", rowCost: tensorRowCost, tensors: true}
)

// WriteScalars implements store.Writer.
func (s *Store) WriteScalars(ctx context.Context, eid string, batch []store.ScalarSeries) error {
	s, release := s.acquire()
	defer release()
	var writes []seriesWrite
	for _, b := range batch {
		ts := b.Series
		if err := store.CheckSeries(&ts, store.DataClassScalar); err != nil {
			return fail("WriteScalars", err)
		}
		points := make([]pointWrite, len(b.Points))
		for i, p := range b.Points {
			points[i] = pointWrite{step: p.Step, wall: p.WallTime, value: p.Value}
		}
		writes = append(writes, seriesWrite{ts: ts, points: points})
	}
	return fail("WriteScalars", s.writePoints(ctx, eid, scalarKind, writes))
}

var tensorColumns = []string{"ExperimentId", "RunName", "Tag", "Step", "SampleKey", "WallTime", "DType", "Shape", "Tensor", "TensorBytes"}

// WriteTensors implements store.Writer.
func (s *Store) WriteTensors(ctx context.Context, eid string, batch []store.TensorSeries) error {
	s, release := s.acquire()
	defer release()
	var writes []seriesWrite
	for _, b := range batch {
		ts := b.Series
		if err := store.CheckSeries(&ts, store.DataClassTensor); err != nil {
			return fail("WriteTensors", err)
		}
		points := make([]pointWrite, len(b.Points))
		for i, p := range b.Points {
			tensor := p.Tensor
			if tensor == nil {
				tensor = []byte{} // the column is NOT NULL
			}
			points[i] = pointWrite{step: p.Step, wall: p.WallTime, bytes: int64(len(tensor)), m: spanner.InsertOrUpdate("TensorPoints", tensorColumns,
				[]any{eid, ts.Run, ts.Tag, p.Step, downsample.SampleKey(p.Step), p.WallTime, int64(p.DType), p.Shape, tensor, int64(len(tensor))})}
		}
		writes = append(writes, seriesWrite{ts: ts, points: points})
	}
	return fail("WriteTensors", s.writePoints(ctx, eid, tensorKind, writes))
}

// mergeSeries folds the entries of one call into one per series, in order
// of first appearance, keeping the first entry's metadata (first write wins)
// and, per step, the last point given. Entries without points are dropped.
func mergeSeries(writes []seriesWrite) []seriesWrite {
	type key struct{ run, tag string }
	index := map[key]int{}
	var out []seriesWrite
	for _, w := range writes {
		if len(w.points) == 0 {
			continue
		}
		k := key{w.ts.Run, w.ts.Tag}
		i, ok := index[k]
		if !ok {
			i = len(out)
			index[k] = i
			out = append(out, seriesWrite{ts: w.ts})
		}
		out[i].points = append(out[i].points, w.points...)
	}
	for i := range out {
		ps := out[i].points
		// A stable sort keeps the given order among equal steps; the last
		// of each run of equal steps is the one to keep.
		slices.SortStableFunc(ps, func(a, b pointWrite) int { return cmp.Compare(a.step, b.step) })
		kept := ps[:0]
		for j := range ps {
			if j+1 < len(ps) && ps[j+1].step == ps[j].step {
				continue
			}
			kept = append(kept, ps[j])
		}
		out[i].points = kept
	}
	return out
}

// writePoints writes merged series in commits that fit Spanner's limits.
// Before anything is written it checks, in one snapshot, that the
// experiment is live and that no series exists with another data class, so
// such a batch changes nothing. Each commit re-checks both for its own
// series.
func (s *Store) writePoints(ctx context.Context, eid string, kind pointKind, writes []seriesWrite) error {
	writes = mergeSeries(writes)
	if len(writes) == 0 {
		tx := s.client.Single()
		return checkLive(ctx, tx, eid)
	}
	if err := s.precheck(ctx, eid, kind.class, writes); err != nil {
		return err
	}
	for _, chunk := range s.chunks(kind, writes) {
		_, err := s.client.ReadWriteTransaction(ctx, func(ctx context.Context, tx *spanner.ReadWriteTransaction) error {
			if kind.class == store.DataClassScalar {
				return s.applyScalarChunks(ctx, tx, eid, chunk, false)
			}
			return s.applyChunk(ctx, tx, eid, kind, chunk)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

func (s *Store) precheck(ctx context.Context, eid string, class store.DataClass, writes []seriesWrite) error {
	tx := s.client.ReadOnlyTransaction()
	defer tx.Close()
	if err := checkLive(ctx, tx, eid); err != nil {
		return err
	}
	keys := spanner.KeySets()
	for _, w := range writes {
		keys = spanner.KeySets(keys, seriesKey(eid, w.ts.Run, w.ts.Tag))
	}
	return tx.Read(ctx, "TimeSeries", keys, []string{"RunName", "Tag", "DataClass"}).Do(func(row *spanner.Row) error {
		var run, tag string
		var c int64
		if err := row.Columns(&run, &tag, &c); err != nil {
			return err
		}
		if store.DataClass(c) != class {
			return fmt.Errorf("series (%q, %q) holds %v, not %v: %w", run, tag, store.DataClass(c), class, store.ErrFailedPrecondition)
		}
		return nil
	})
}

// chunks cuts writes into commits of at most maxMutations mutations and
// maxBytes payload bytes, splitting a series across commits if needed.
func (s *Store) chunks(kind pointKind, writes []seriesWrite) [][]seriesWrite {
	var out [][]seriesWrite
	var cur []seriesWrite
	cost, size := 0, 0
	flush := func() {
		if len(cur) > 0 {
			out = append(out, cur)
		}
		cur, cost, size = nil, 0, 0
	}
	for _, w := range writes {
		ps := w.points
		for len(ps) > 0 {
			fixed := seriesRowCost + runRowCost + kind.seriesCost
			if cost+fixed+kind.rowCost > s.maxMutations || (size > 0 && size+int(ps[0].bytes) > s.maxBytes) {
				flush()
			}
			cost += fixed
			n := 0
			for n < len(ps) && cost+kind.rowCost <= s.maxMutations && (n == 0 && size == 0 || size+int(ps[n].bytes) <= s.maxBytes) {
				cost += kind.rowCost
				size += int(ps[n].bytes)
				n++
			}
			if n > 0 {
				cur = append(cur, seriesWrite{ts: w.ts, points: ps[:n]})
			}
			ps = ps[n:]
			if len(ps) > 0 {
				flush()
			}
		}
	}
	flush()
	return out
}

// seriesState is the stored running facts of one series.
type seriesState struct {
	exists      bool
	class       store.DataClass
	pointCount  int64
	maxStep     int64
	maxWallTime float64 // NaN while none
	maxLength   int64
	tensorBytes int64
	blobCount   int64
	blobBytes   int64
	// Scalars: the series' id in ScalarChunks (NULL: a series of the
	// legacy layout, or of another class) and the first step of its last
	// chunk at each level (headSteps[level+1]).
	seriesID  spanner.NullInt64
	headSteps []spanner.NullInt64
}

var seriesStateColumns = []string{"RunName", "Tag", "DataClass", "PointCount", "MaxStep", "MaxWallTime", "MaxLength", "TensorBytes", "BlobCount", "BlobBytes", "SeriesId", "HeadSteps"}

func seriesStateFromRow(row *spanner.Row) (run, tag string, st seriesState, err error) {
	var c int64
	var wall spanner.NullFloat64
	err = row.Columns(&run, &tag, &c, &st.pointCount, &st.maxStep, &wall, &st.maxLength, &st.tensorBytes, &st.blobCount, &st.blobBytes, &st.seriesID, &st.headSteps)
	st.exists, st.class, st.maxWallTime = true, store.DataClass(c), nullFloat(wall)
	return run, tag, st, err
}

// mutation writes the state back: the whole row for a new series (with ts's
// metadata), only the counters for an existing one.
func (st *seriesState) mutation(eid string, ts *store.TimeSeries) *spanner.Mutation {
	wall := spanner.NullFloat64{Float64: st.maxWallTime, Valid: !math.IsNaN(st.maxWallTime)}
	if !st.exists {
		cols, vals := st.newRow(eid, ts)
		return spanner.Insert("TimeSeries", cols, vals)
	}
	return spanner.Update("TimeSeries",
		[]string{"ExperimentId", "RunName", "Tag", "PointCount", "MaxStep", "MaxWallTime", "MaxLength", "TensorBytes", "BlobCount", "BlobBytes", "UpdateTime"},
		[]any{eid, ts.Run, ts.Tag, st.pointCount, st.maxStep, wall, st.maxLength, st.tensorBytes, st.blobCount, st.blobBytes, spanner.CommitTimestamp})
}

// newRow is the columns and values of a new series' row.
func (st *seriesState) newRow(eid string, ts *store.TimeSeries) ([]string, []any) {
	wall := spanner.NullFloat64{Float64: st.maxWallTime, Valid: !math.IsNaN(st.maxWallTime)}
	return []string{"ExperimentId", "RunName", "Tag", "PluginName", "SummaryMetadata", "DataClass", "DisplayName", "Description",
			"PointCount", "MaxStep", "MaxWallTime", "MaxLength", "TensorBytes", "BlobCount", "BlobBytes", "UpdateTime"},
		[]any{eid, ts.Run, ts.Tag, ts.PluginName, ts.SummaryMetadata, int64(ts.DataClass), ts.DisplayName, ts.Description,
			st.pointCount, st.maxStep, wall, st.maxLength, st.tensorBytes, st.blobCount, st.blobBytes, spanner.CommitTimestamp}
}

// see adds a written point's step and wall time to the facts.
func (st *seriesState) see(step int64, wall float64) {
	if st.pointCount == 0 || step > st.maxStep {
		st.maxStep = step
	}
	if !math.IsNaN(wall) && (math.IsNaN(st.maxWallTime) || wall > st.maxWallTime) {
		st.maxWallTime = wall
	}
}

// runStarts collects the smallest non-NaN wall time written per run.
type runStarts map[string]float64

func (r runStarts) see(run string, wall float64) {
	if cur, ok := r[run]; !ok || (!math.IsNaN(wall) && (math.IsNaN(cur) || wall < cur)) {
		r[run] = wall
	}
}

// mutations reads the runs' current start times in tx and returns the
// inserts and updates that create missing runs and lower start times.
func (r runStarts) mutations(ctx context.Context, tx txReader, eid string) ([]*spanner.Mutation, error) {
	keys := spanner.KeySets()
	for run := range r {
		keys = spanner.KeySets(keys, spanner.Key{eid, run})
	}
	stored := map[string]spanner.NullFloat64{}
	err := tx.Read(ctx, "Runs", keys, []string{"RunName", "StartTime"}).Do(func(row *spanner.Row) error {
		var run string
		var start spanner.NullFloat64
		if err := row.Columns(&run, &start); err != nil {
			return err
		}
		stored[run] = start
		return nil
	})
	if err != nil {
		return nil, err
	}
	var ms []*spanner.Mutation
	for run, wall := range r {
		start, exists := stored[run]
		newStart := spanner.NullFloat64{Float64: wall, Valid: !math.IsNaN(wall)}
		switch {
		case !exists:
			ms = append(ms, spanner.Insert("Runs", []string{"ExperimentId", "RunName", "StartTime"}, []any{eid, run, newStart}))
		case newStart.Valid && (!start.Valid || wall < start.Float64):
			ms = append(ms, spanner.Update("Runs", []string{"ExperimentId", "RunName", "StartTime"}, []any{eid, run, newStart}))
		}
	}
	return ms, nil
}

// readSeriesStates reads the series rows of refs in tx.
func readSeriesStates(ctx context.Context, tx txReader, eid string, refs []store.SeriesRef) (map[store.SeriesRef]*seriesState, error) {
	keys := spanner.KeySets()
	out := map[store.SeriesRef]*seriesState{}
	for _, r := range refs {
		keys = spanner.KeySets(keys, seriesKey(eid, r.Run, r.Tag))
		out[r] = &seriesState{maxWallTime: math.NaN()}
	}
	err := tx.Read(ctx, "TimeSeries", keys, seriesStateColumns).Do(func(row *spanner.Row) error {
		run, tag, st, err := seriesStateFromRow(row)
		out[store.SeriesRef{Run: run, Tag: tag}] = &st
		return err
	})
	return out, err
}

// readChunkStates checks in tx that the experiment is live and reads the
// series rows of a commit's series, whose refs it returns in order. With
// newData the commit adds data, which moves the experiment's update time
// (Store.checkLiveForData); a conversion of stored points does not.
func (s *Store) readChunkStates(ctx context.Context, tx *spanner.ReadWriteTransaction, eid string, chunk []seriesWrite, newData bool) ([]store.SeriesRef, map[store.SeriesRef]*seriesState, error) {
	check := s.checkLiveForData
	if !newData {
		check = func(ctx context.Context, tx *spanner.ReadWriteTransaction, eid string) error {
			return checkLive(ctx, tx, eid)
		}
	}
	if err := check(ctx, tx, eid); err != nil {
		return nil, nil, err
	}
	refs := make([]store.SeriesRef, len(chunk))
	for i, w := range chunk {
		refs[i] = store.SeriesRef{Run: w.ts.Run, Tag: w.ts.Tag}
	}
	states, err := readSeriesStates(ctx, tx, eid, refs)
	return refs, states, err
}

// applyChunk writes one commit's worth of points. It may run more than once
// (Spanner retries aborted transactions); it derives everything from what
// it reads in tx.
func (s *Store) applyChunk(ctx context.Context, tx *spanner.ReadWriteTransaction, eid string, kind pointKind, chunk []seriesWrite) error {
	refs, states, err := s.readChunkStates(ctx, tx, eid, chunk, true)
	if err != nil {
		return err
	}

	// Points that may already exist: only steps up to a series' MaxStep.
	// Appends, the common case, read nothing here.
	type pointKey struct {
		store.SeriesRef
		step int64
	}
	existing := map[pointKey]int64{} // -> stored TensorBytes
	keys := spanner.KeySets()
	anyKey := false
	for i, w := range chunk {
		st := states[refs[i]]
		if st.exists && st.class != kind.class {
			return fmt.Errorf("series (%q, %q) holds %v, not %v: %w", w.ts.Run, w.ts.Tag, st.class, kind.class, store.ErrFailedPrecondition)
		}
		if !st.exists || st.pointCount == 0 {
			continue
		}
		for _, p := range w.points {
			if p.step <= st.maxStep {
				keys = spanner.KeySets(keys, spanner.Key{eid, w.ts.Run, w.ts.Tag, p.step})
				anyKey = true
			}
		}
	}
	if anyKey {
		cols := []string{"RunName", "Tag", "Step"}
		if kind.tensors {
			cols = append(cols, "TensorBytes")
		}
		err := tx.Read(ctx, kind.table, keys, cols).Do(func(row *spanner.Row) error {
			var k pointKey
			var n int64
			dst := []any{&k.Run, &k.Tag, &k.step}
			if kind.tensors {
				dst = append(dst, &n)
			}
			if err := row.Columns(dst...); err != nil {
				return err
			}
			existing[k] = n
			return nil
		})
		if err != nil {
			return err
		}
	}

	// Parents before children: Spanner checks an interleaved row's parent
	// in mutation order.
	starts := runStarts{}
	var seriesMs, pointMs []*spanner.Mutation
	var newPoints int64
	for i, w := range chunk {
		st := states[refs[i]]
		for _, p := range w.points {
			old, found := existing[pointKey{refs[i], p.step}]
			st.see(p.step, p.wall)
			if !found {
				st.pointCount++
				newPoints++
			}
			st.tensorBytes += p.bytes - old
			starts.see(w.ts.Run, p.wall)
			pointMs = append(pointMs, p.m)
		}
		seriesMs = append(seriesMs, st.mutation(eid, &w.ts))
	}
	ms, err := starts.mutations(ctx, tx, eid)
	if err != nil {
		return err
	}
	if err := chargePoints(ctx, tx, eid, newPoints); err != nil {
		return err
	}
	ms = append(ms, seriesMs...)
	return tx.BufferWrite(append(ms, pointMs...))
}

var blobSequenceColumns = []string{"ExperimentId", "RunName", "Tag", "Step", "SampleKey", "WallTime", "Length"}

// PutRuns implements store.Writer: one commit inserts the missing runs
// and records the given start times.
func (s *Store) PutRuns(ctx context.Context, eid string, runs []store.Run) error {
	starts, err := store.CheckRuns(runs)
	if err != nil {
		return fail("PutRuns", err)
	}
	s, release := s.acquire()
	defer release()
	_, err = s.client.ReadWriteTransaction(ctx, func(ctx context.Context, tx *spanner.ReadWriteTransaction) error {
		if err := checkLive(ctx, tx, eid); err != nil {
			return err
		}
		keys := spanner.KeySets()
		for run := range starts {
			keys = spanner.KeySets(keys, spanner.Key{eid, run})
		}
		exists := map[string]bool{}
		err := tx.Read(ctx, "Runs", keys, []string{"RunName"}).Do(func(row *spanner.Row) error {
			var run string
			if err := row.Columns(&run); err != nil {
				return err
			}
			exists[run] = true
			return nil
		})
		if err != nil {
			return err
		}
		var ms []*spanner.Mutation
		for run, start := range starts {
			switch {
			case !exists[run]:
				first := spanner.NullFloat64{Float64: start, Valid: !math.IsNaN(start)}
				ms = append(ms, spanner.Insert("Runs", []string{"ExperimentId", "RunName", "FirstEventTime"}, []any{eid, run, first}))
			case !math.IsNaN(start):
				ms = append(ms, spanner.Update("Runs", []string{"ExperimentId", "RunName", "FirstEventTime"}, []any{eid, run, start}))
			}
		}
		return tx.BufferWrite(ms)
	})
	return fail("PutRuns", err)
}

// GetOrCreateBlobSequence implements store.Writer.
func (s *Store) GetOrCreateBlobSequence(ctx context.Context, eid string, series store.TimeSeries, step int64, wallTime float64, length int64) (store.BlobSequencePoint, []store.Blob, error) {
	s, release := s.acquire()
	defer release()
	if length < 0 {
		return store.BlobSequencePoint{}, nil, fail("GetOrCreateBlobSequence", fmt.Errorf("length %d: %w", length, store.ErrInvalidArgument))
	}
	if err := store.CheckSeries(&series, store.DataClassBlobSequence); err != nil {
		return store.BlobSequencePoint{}, nil, fail("GetOrCreateBlobSequence", err)
	}
	var point store.BlobSequencePoint
	var replaced []store.Blob
	_, err := s.client.ReadWriteTransaction(ctx, func(ctx context.Context, tx *spanner.ReadWriteTransaction) error {
		replaced = nil
		if err := s.checkLiveForData(ctx, tx, eid); err != nil {
			return err
		}
		ref := store.SeriesRef{Run: series.Run, Tag: series.Tag}
		states, err := readSeriesStates(ctx, tx, eid, []store.SeriesRef{ref})
		if err != nil {
			return err
		}
		st := states[ref]
		if st.exists && st.class != store.DataClassBlobSequence {
			return fmt.Errorf("series (%q, %q) holds %v, not blob sequences: %w", series.Run, series.Tag, st.class, store.ErrFailedPrecondition)
		}
		key := spanner.Key{eid, series.Run, series.Tag, step}
		row, err := tx.ReadRow(ctx, "BlobSequences", key, []string{"Step", "WallTime", "Length"})
		exists := err == nil
		if err != nil && spanner.ErrCode(err) != codes.NotFound {
			return err
		}
		var ms []*spanner.Mutation
		if exists {
			if point, err = blobSequenceFromRow(row); err != nil {
				return err
			}
			blobs, err := readBlobs(ctx, tx, key.AsPrefix())
			if err != nil {
				return err
			}
			point.Blobs = blobs[pointKey{series.Run, series.Tag, step}]
			if store.SameWallTime(point.WallTime, wallTime) && point.Length == length {
				return nil
			}
			// A rewrite of the step: drop its blobs and take the new shape.
			replaced = point.Blobs
			var rowBytes int64
			for _, b := range replaced {
				rowBytes += b.Size
				if b.State == store.BlobStateCurrent {
					st.blobCount--
					st.blobBytes -= b.Size
				}
			}
			if err := chargeBlobBytes(ctx, tx, eid, -rowBytes); err != nil {
				return err
			}
			ms = append(ms, spanner.Delete("Blobs", key.AsPrefix()),
				spanner.Update("BlobSequences", []string{"ExperimentId", "RunName", "Tag", "Step", "WallTime", "Length"},
					[]any{eid, series.Run, series.Tag, step, wallTime, length}))
		} else {
			st.pointCount++
			ms = append(ms, spanner.Insert("BlobSequences", blobSequenceColumns,
				[]any{eid, series.Run, series.Tag, step, downsample.SampleKey(step), wallTime, length}))
		}
		point = store.BlobSequencePoint{Step: step, WallTime: wallTime, Length: length}
		st.see(step, wallTime)
		st.maxLength = max(st.maxLength, length)
		starts := runStarts{}
		starts.see(series.Run, wallTime)
		runMs, err := starts.mutations(ctx, tx, eid)
		if err != nil {
			return err
		}
		return tx.BufferWrite(append(append(runMs, st.mutation(eid, &series)), ms...))
	})
	if err != nil {
		return store.BlobSequencePoint{}, nil, fail("GetOrCreateBlobSequence", err)
	}
	return point, replaced, nil
}

var blobColumns = []string{"ExperimentId", "RunName", "Tag", "Step", "BlobIndex", "ObjectKey", "Size", "Crc32c", "State", "UnfinishedWriteTime", "Generation"}

// PutBlob implements store.Writer. The series' BlobCount and BlobBytes
// follow the row's state: only current blobs count. An unfinished row
// records its commit time (UnfinishedWriteTime); a current one none.
func (s *Store) PutBlob(ctx context.Context, eid string, ref store.BlobRef, b store.Blob) error {
	return s.putBlob(ctx, eid, ref, b, nil)
}

// PutBlobIf implements store.Writer: the row is read and written in one
// read-write transaction, which Spanner serializes against every other
// writer of the row.
func (s *Store) PutBlobIf(ctx context.Context, eid string, ref store.BlobRef, b store.Blob, want store.BlobMatch) error {
	return s.putBlob(ctx, eid, ref, b, &want)
}

// putBlob writes the row of a blob, if want is nil or holds.
func (s *Store) putBlob(ctx context.Context, eid string, ref store.BlobRef, b store.Blob, want *store.BlobMatch) error {
	s, release := s.acquire()
	defer release()
	if b.State != store.BlobStateUnfinalized && b.State != store.BlobStateCurrent {
		return fail("PutBlob", fmt.Errorf("blob state %d: %w", b.State, store.ErrInvalidArgument))
	}
	if ref.Index < 0 {
		return fail("PutBlob", fmt.Errorf("blob index %d: %w", ref.Index, store.ErrInvalidArgument))
	}
	_, err := s.client.ReadWriteTransaction(ctx, func(ctx context.Context, tx *spanner.ReadWriteTransaction) error {
		if err := s.checkLiveForData(ctx, tx, eid); err != nil {
			return err
		}
		row, err := tx.ReadRow(ctx, "BlobSequences", spanner.Key{eid, ref.Run, ref.Tag, ref.Step}, []string{"Length"})
		if spanner.ErrCode(err) == codes.NotFound {
			return fmt.Errorf("blob sequence (%q, %q, %d): %w", ref.Run, ref.Tag, ref.Step, store.ErrNotFound)
		}
		if err != nil {
			return err
		}
		var length int64
		if err := row.Column(0, &length); err != nil {
			return err
		}
		if ref.Index >= length {
			return fmt.Errorf("blob index %d of a sequence of %d: %w", ref.Index, length, store.ErrInvalidArgument)
		}
		sref := store.SeriesRef{Run: ref.Run, Tag: ref.Tag}
		states, err := readSeriesStates(ctx, tx, eid, []store.SeriesRef{sref})
		if err != nil {
			return err
		}
		st := states[sref]
		row, err = tx.ReadRow(ctx, "Blobs", spanner.Key{eid, ref.Run, ref.Tag, ref.Step, ref.Index}, []string{"Size", "State", "Generation"})
		var old *store.Blob
		switch {
		case err == nil:
			var size, state int64
			var gen spanner.NullInt64
			if err := row.Columns(&size, &state, &gen); err != nil {
				return err
			}
			old = &store.Blob{Size: size, State: store.BlobState(state), Generation: gen.Int64}
		case spanner.ErrCode(err) != codes.NotFound:
			return err
		}
		if want != nil {
			if err := store.CheckBlobMatch(old, b, *want); err != nil {
				return err
			}
		}
		if old != nil && old.State == store.BlobStateCurrent {
			st.blobCount--
			st.blobBytes -= old.Size
		}
		if b.State == store.BlobStateCurrent {
			st.blobCount++
			st.blobBytes += b.Size
		}
		grown := b.Size
		if old != nil {
			grown -= old.Size
		}
		if err := chargeBlobBytes(ctx, tx, eid, grown); err != nil {
			return err
		}
		ts := store.TimeSeries{Run: ref.Run, Tag: ref.Tag}
		var unfinishedWrite any = spanner.NullTime{}
		if b.State == store.BlobStateUnfinalized {
			unfinishedWrite = spanner.CommitTimestamp
		}
		return tx.BufferWrite([]*spanner.Mutation{
			spanner.InsertOrUpdate("Blobs", blobColumns,
				[]any{eid, ref.Run, ref.Tag, ref.Step, ref.Index, b.ObjectKey, b.Size, int64(b.CRC32C), int64(b.State), unfinishedWrite, b.Generation}),
			st.mutation(eid, &ts),
		})
	})
	return fail("PutBlob", err)
}
