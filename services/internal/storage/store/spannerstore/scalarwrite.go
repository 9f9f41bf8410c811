package spannerstore

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"

	"cloud.google.com/go/spanner"

	"github.com/tbhub/tbhub/services/internal/storage/scalarchunk"
	"github.com/tbhub/tbhub/services/internal/storage/store"
)

// Scalars are stored as ScalarChunks rows (DDL 0011): chunks of package
// scalarchunk, in its layout (scalarchunk/series.go) under the series'
// SeriesId. A write reads the chunks its steps fall into, merges, and
// writes back only the chunks it changed: an append, the usual write,
// reads and rewrites the last chunk of each level it reaches (their
// first steps are on the TimeSeries row, TimeSeries.HeadSteps) and
// inserts the chunks after it.
//
// Series written before this layout (SeriesId NULL) still have a row per
// point in ScalarPoints; the first write to such a series converts it in
// its transaction, and MigrateScalarChunks converts the others.

// chunkMutationsPerSeries bounds the mutations a commit spends on one
// series' chunk rows beside its points' share: a row per sample level (at
// most 61) and the level -1 chunk an append rewrites, 5 columns each, and
// a delete per chunk merged away.
const chunkMutationsPerSeries = 5 * 64

// chunkColumns are the columns of a ScalarChunks row.
var chunkColumns = []string{"ExperimentId", "SeriesId", "SampleLevel", "FirstStep", "Chunk"}

// storedChunk is a ScalarChunks row as a write reads it.
type storedChunk struct {
	first int64
	chunk []byte
}

// levelKey names the chunks of one series at one level.
type levelKey struct {
	id    int64
	level int
}

// headStep returns the first step of the series' last chunk at level.
func headStep(heads []spanner.NullInt64, level int) (int64, bool) {
	if i := headIndex(level); i >= 0 && i < len(heads) && heads[i].Valid {
		return heads[i].Int64, true
	}
	return 0, false
}

// setHeadStep records first as the first step of the last chunk at level.
func setHeadStep(heads []spanner.NullInt64, level int, first int64) []spanner.NullInt64 {
	i := headIndex(level)
	for len(heads) <= i {
		heads = append(heads, spanner.NullInt64{})
	}
	heads[i] = spanner.NullInt64{Int64: first, Valid: true}
	return heads
}

// chunkWriter collects one commit's chunk mutations.
type chunkWriter struct {
	eid string
	ms  []*spanner.Mutation
}

// insert writes points (sorted, one per step) as new chunks of (id, level),
// each full but the last, and returns the first step of the last; written
// holds the keys written, so that a delete of an old chunk at the same
// key is not needed.
func (w *chunkWriter) insert(id int64, level int, points []store.ScalarPoint, written map[int64]bool) (int64, error) {
	var last int64
	for len(points) > 0 {
		var a scalarchunk.Appender
		n, err := scalarchunk.Fill(&a, points)
		if err != nil {
			return 0, err
		}
		last = points[0].Step
		w.put(id, level, last, a.Bytes())
		written[last] = true
		points = points[n:]
	}
	return last, nil
}

func (w *chunkWriter) put(id int64, level int, first int64, chunk []byte) {
	w.ms = append(w.ms, spanner.InsertOrUpdate("ScalarChunks", chunkColumns, []any{w.eid, id, int64(level), first, chunk}))
}

// mergeLevel merges points (sorted by step, one per step) into the chunks
// of one level of a series and returns how many steps are new. stored are
// the level's chunks that start at or before the batch's last step, sorted
// (of those that start before its first step, only the last matters);
// legacy, if not nil, is the level's points in the old layout instead.
// head is the level's last chunk before the write; it returns the new one.
// Like the embedded store's writeScalarChunks, it rewrites only the chunks
// the batch's step range touches, and an append to a chunk not yet full
// extends it without re-encoding its points.
func (w *chunkWriter) mergeLevel(id int64, level int, stored []storedChunk, legacy []store.ScalarPoint, points []store.ScalarPoint, head int64, hasHead bool) (added, newHead int64, err error) {
	lo := points[0].Step
	start := 0 // the chunk that may hold lo: the last starting at or before it
	for i, c := range stored {
		if c.first <= lo {
			start = i
		}
	}
	old := stored[start:]
	if len(old) > 0 && old[0].first <= lo {
		h, err := scalarchunk.ReadHeader(old[0].chunk)
		if err != nil {
			return 0, 0, err
		}
		if h.LastStep < lo {
			// The first chunk ends before the batch begins.
			switch {
			case scalarchunk.Full(len(old[0].chunk), h.Count):
				old = old[1:] // full: leave it
			case len(old) == 1:
				// A chunk not full and nothing after it up to hi: the batch
				// extends it (a level's later chunks, if any, stay after).
				if err := w.extend(id, level, old[0], points, &newHead); err != nil {
					return 0, 0, err
				}
				if hasHead && head > newHead {
					newHead = head
				}
				return int64(len(points)), newHead, nil
			}
		}
	}
	oldPoints := legacy
	for _, c := range old {
		if oldPoints, err = scalarchunk.Decode(c.chunk, oldPoints); err != nil {
			return 0, 0, err
		}
	}
	merged := scalarchunk.Merge(oldPoints, points)
	written := map[int64]bool{}
	last, err := w.insert(id, level, merged, written)
	if err != nil {
		return 0, 0, err
	}
	headGone := false
	for _, c := range old {
		if !written[c.first] {
			w.ms = append(w.ms, spanner.Delete("ScalarChunks", spanner.Key{w.eid, id, int64(level), c.first}))
			headGone = headGone || (hasHead && c.first == head)
		}
	}
	newHead = last
	if hasHead && !headGone && head > last {
		newHead = head
	}
	return int64(len(merged) - len(oldPoints)), newHead, nil
}

// extend appends points, all after the last step of c, to c until it is
// full, and the rest to new chunks; *head receives the new last chunk.
func (w *chunkWriter) extend(id int64, level int, c storedChunk, points []store.ScalarPoint, head *int64) error {
	a, n, err := scalarchunk.Extend(c.chunk, points)
	if err != nil {
		return err
	}
	w.put(id, level, c.first, a.Bytes())
	*head = c.first
	if n < len(points) {
		*head, err = w.insert(id, level, points[n:], map[int64]bool{})
	}
	return err
}

// allocateSeriesIDs reserves n series ids of the experiment: it reads and
// advances Experiments.NextSeriesId.
func allocateSeriesIDs(ctx context.Context, tx *spanner.ReadWriteTransaction, eid string, n int) (int64, *spanner.Mutation, error) {
	row, err := tx.ReadRow(ctx, "Experiments", spanner.Key{eid}, []string{"NextSeriesId"})
	if err != nil {
		return 0, nil, err
	}
	var next spanner.NullInt64
	if err := row.Column(0, &next); err != nil {
		return 0, nil, err
	}
	first := max(next.Int64, 1)
	return first, spanner.Update("Experiments", []string{"ExperimentId", "NextSeriesId"}, []any{eid, first + int64(n)}), nil
}

// readLegacyScalars reads the ScalarPoints rows of the series refs, by
// series.
func readLegacyScalars(ctx context.Context, tx txReader, eid string, refs []store.SeriesRef) (map[store.SeriesRef][]store.ScalarPoint, error) {
	out := map[store.SeriesRef][]store.ScalarPoint{}
	if len(refs) == 0 {
		return out, nil
	}
	keys := make([]spanner.KeySet, len(refs))
	for i, r := range refs {
		keys[i] = seriesKey(eid, r.Run, r.Tag).AsPrefix()
	}
	err := tx.Read(ctx, "ScalarPoints", spanner.KeySets(keys...), []string{"RunName", "Tag", "Step", "WallTime", "Value"}).Do(func(row *spanner.Row) error {
		var r store.SeriesRef
		p, err := scalarFromRow(row, &r.Run, &r.Tag)
		out[r] = append(out[r], p)
		return err
	})
	for _, ps := range out {
		slices.SortFunc(ps, func(a, b store.ScalarPoint) int { return cmpStep(a.Step, b.Step) })
	}
	return out, err
}

func cmpStep(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// scalarMutation writes a scalar series' facts: the whole row for a new
// series, else only what a write changes; the series' UpdateTime unless
// the write is a conversion (convert), which changes no data.
func (st *seriesState) scalarMutation(eid string, ts *store.TimeSeries, newID, convert bool) *spanner.Mutation {
	if !st.exists {
		cols, vals := st.newRow(eid, ts)
		return spanner.Insert("TimeSeries", append(cols, "SeriesId", "HeadSteps"), append(vals, st.seriesID, st.headSteps))
	}
	wall := spanner.NullFloat64{Float64: st.maxWallTime, Valid: !math.IsNaN(st.maxWallTime)}
	cols := []string{"ExperimentId", "RunName", "Tag", "PointCount", "MaxStep", "MaxWallTime", "HeadSteps"}
	vals := []any{eid, ts.Run, ts.Tag, st.pointCount, st.maxStep, wall, st.headSteps}
	if !convert {
		cols, vals = append(cols, "UpdateTime"), append(vals, spanner.CommitTimestamp)
	}
	if newID {
		cols, vals = append(cols, "SeriesId"), append(vals, st.seriesID)
	}
	return spanner.Update("TimeSeries", cols, vals)
}

// applyScalarChunks writes one commit's worth of scalar points into
// chunks. Like applyChunk, it may run more than once and derives
// everything from what it reads in tx: the series rows, then in one read
// the chunks the points fall into (and the old rows of series still in the
// legacy layout).
//
// With convert, chunk names series without points, to convert from the
// legacy layout if they still are in it (MigrateScalarChunks).
func (s *Store) applyScalarChunks(ctx context.Context, tx *spanner.ReadWriteTransaction, eid string, chunk []seriesWrite, convert bool) error {
	refs, states, err := s.readChunkStates(ctx, tx, eid, chunk, !convert)
	if err != nil {
		return err
	}
	var ms []*spanner.Mutation
	var fresh []int // series without an id: new, or legacy
	var legacy []store.SeriesRef
	for i, w := range chunk {
		st := states[refs[i]]
		if st.exists && st.class != store.DataClassScalar {
			return fmt.Errorf("series (%q, %q) holds %v, not %v: %w", w.ts.Run, w.ts.Tag, st.class, store.DataClassScalar, store.ErrFailedPrecondition)
		}
		if convert && (!st.exists || st.seriesID.Valid) {
			continue // gone, or converted since it was listed
		}
		if !st.seriesID.Valid {
			fresh = append(fresh, i)
			if st.exists && st.pointCount > 0 {
				legacy = append(legacy, refs[i])
			}
		}
	}
	if len(fresh) > 0 {
		first, m, err := allocateSeriesIDs(ctx, tx, eid, len(fresh))
		if err != nil {
			return err
		}
		ms = append(ms, m)
		for j, i := range fresh {
			states[refs[i]].seriesID = spanner.NullInt64{Int64: first + int64(j), Valid: true}
		}
	}

	// The chunks the points fall into: for an append (every step after the
	// series' last), the last chunk of each level it reaches, by key; for
	// a write of earlier steps, each such level's chunks up to its last
	// step. Chunks of other series than the batch's would need their own
	// key ranges; there are none.
	var keys []spanner.KeySet
	byLevel := make([][64][]store.ScalarPoint, len(chunk))
	all := make([][]store.ScalarPoint, len(chunk))
	for i, w := range chunk {
		st := states[refs[i]]
		ps := make([]store.ScalarPoint, len(w.points))
		for j, p := range w.points {
			ps[j] = store.ScalarPoint{Step: p.step, WallTime: p.wall, Value: p.value}
		}
		all[i], byLevel[i] = ps, scalarchunk.SampleLevels(ps)
		if !st.exists || len(ps) == 0 || slices.Contains(legacy, refs[i]) {
			continue
		}
		id, hi := st.seriesID.Int64, ps[len(ps)-1].Step
		appending := st.pointCount == 0 || ps[0].Step > st.maxStep
		for level := scalarchunk.AllLevels; level < 64; level++ {
			if level >= 0 && len(byLevel[i][level]) == 0 {
				continue
			}
			if !appending {
				keys = append(keys, spanner.KeyRange{Start: spanner.Key{eid, id, int64(level)}, End: spanner.Key{eid, id, int64(level), hi}, Kind: spanner.ClosedClosed})
			} else if head, ok := headStep(st.headSteps, level); ok {
				keys = append(keys, spanner.Key{eid, id, int64(level), head})
			}
		}
		keys = append(keys, summaryKeys(eid, id, st, ps, appending)...)
	}
	stored, err := readChunks(ctx, tx, keys)
	if err != nil {
		return err
	}
	old, err := readLegacyScalars(ctx, tx, eid, legacy)
	if err != nil {
		return err
	}

	// Parents before children: the TimeSeries rows go before the chunks
	// only for readability; ScalarChunks' parent is the experiment.
	starts := runStarts{}
	var seriesMs []*spanner.Mutation
	var newPoints int64 // steps the series did not hold: what the usage counts
	cw := &chunkWriter{eid: eid}
	for i, w := range chunk {
		st := states[refs[i]]
		if convert && !slices.Contains(fresh, i) {
			continue
		}
		id := st.seriesID.Int64
		isLegacy := slices.Contains(legacy, refs[i])
		appending := !isLegacy && (st.pointCount == 0 || len(all[i]) == 0 || all[i][0].Step > st.maxStep)
		var oldLevels [64][]store.ScalarPoint
		if isLegacy {
			// Converted in this commit: its rows go, its points join the
			// batch's in chunks.
			ms = append(ms, spanner.Delete("ScalarPoints", seriesKey(eid, w.ts.Run, w.ts.Tag).AsPrefix()))
			oldLevels = scalarchunk.SampleLevels(old[refs[i]])
		}
		for level := scalarchunk.AllLevels; level < 64; level++ {
			ps, legacyPs := all[i], old[refs[i]]
			if level >= 0 {
				ps, legacyPs = byLevel[i][level], oldLevels[level]
			}
			var added, newHead int64
			var err error
			switch {
			case len(ps) > 0:
				cs := stored[levelKey{id, level}]
				head, hasHead := headStep(st.headSteps, level)
				added, newHead, err = cw.mergeLevel(id, level, cs, legacyPs, ps, head, hasHead)
			case len(legacyPs) > 0:
				newHead, err = cw.insert(id, level, legacyPs, map[int64]bool{})
			default:
				continue
			}
			if err != nil {
				return err
			}
			st.headSteps = setHeadStep(st.headSteps, level, newHead)
			if level == scalarchunk.AllLevels {
				st.pointCount += added
				newPoints += added
			}
		}
		if err := cw.summaries(ctx, tx, id, st, all[i], appending, stored); err != nil {
			return err
		}
		for _, p := range w.points {
			st.see(p.step, p.wall)
			starts.see(w.ts.Run, p.wall)
		}
		seriesMs = append(seriesMs, st.scalarMutation(eid, &w.ts, slices.Contains(fresh, i), convert))
	}
	runMs, err := starts.mutations(ctx, tx, eid)
	if err != nil {
		return err
	}
	if !convert { // a conversion moves points the usage counts already
		if err := chargePoints(ctx, tx, eid, newPoints); err != nil {
			return err
		}
	}
	ms = append(append(append(ms, runMs...), seriesMs...), cw.ms...)
	return tx.BufferWrite(ms)
}

// ConversionProgress is how far MigrateScalarChunks is: series and their
// points converted, of the totals it found to convert.
type ConversionProgress struct {
	Series, TotalSeries int64
	Points, TotalPoints int64
}

// MigrateScalarChunks converts the scalar series of live experiments
// still in the legacy layout (a ScalarPoints row per point, no SeriesId)
// to chunks, one series per transaction, calling progress after each. It
// is resumable: a rerun finds only the series left, and a series a write
// converted meanwhile is skipped. Servers keep serving while it runs: a
// read sees a series in one layout or the other, in its snapshot.
func (s *Store) MigrateScalarChunks(ctx context.Context, progress func(ConversionProgress)) error {
	s, release := s.acquire()
	defer release()
	type legacySeries struct {
		eid    string
		ts     store.TimeSeries
		points int64
	}
	var todo []legacySeries
	var p ConversionProgress
	err := s.client.Single().Query(ctx, spanner.Statement{
		SQL: `SELECT ts.ExperimentId, ts.RunName, ts.Tag, ts.PointCount
			FROM Experiments AS e JOIN TimeSeries AS ts ON ts.ExperimentId = e.ExperimentId
			WHERE e.State = @live AND ts.DataClass = @scalar AND ts.SeriesId IS NULL`,
		Params: map[string]any{"live": stateLive, "scalar": int64(store.DataClassScalar)},
	}).Do(func(row *spanner.Row) error {
		var l legacySeries
		if err := row.Columns(&l.eid, &l.ts.Run, &l.ts.Tag, &l.points); err != nil {
			return err
		}
		todo = append(todo, l)
		p.TotalSeries++
		p.TotalPoints += l.points
		return nil
	})
	if err != nil {
		return fail("MigrateScalarChunks", err)
	}
	for _, l := range todo {
		if err := ctx.Err(); err != nil {
			return fail("MigrateScalarChunks", err) // stopped between two series
		}
		_, err := s.client.ReadWriteTransaction(ctx, func(ctx context.Context, tx *spanner.ReadWriteTransaction) error {
			err := s.applyScalarChunks(ctx, tx, l.eid, []seriesWrite{{ts: l.ts}}, true)
			if errors.Is(err, store.ErrNotFound) {
				return nil // the experiment was deleted meanwhile
			}
			return err
		})
		if err != nil {
			return fail("MigrateScalarChunks", fmt.Errorf("series (%q, %q) of experiment %s: %w", l.ts.Run, l.ts.Tag, l.eid, err))
		}
		p.Series++
		p.Points += l.points
		if progress != nil {
			progress(p)
		}
	}
	return nil
}
