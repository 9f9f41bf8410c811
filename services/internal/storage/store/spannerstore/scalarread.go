package spannerstore

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"math/bits"
	"runtime"
	"slices"
	"sync"

	"cloud.google.com/go/spanner"
	"google.golang.org/grpc/codes"

	"github.com/tbhub/tbhub/services/internal/storage/scalarchunk"
	"github.com/tbhub/tbhub/services/internal/storage/store"
)

// scalarSeries is a scalar series as a read plans it.
type scalarSeries struct {
	sum store.SeriesSummary
	// id is the series' SeriesId; NULL for a series of the legacy layout
	// (ScalarPoints rows), read by readPoints.
	id spanner.NullInt64
	// head is the first step of its last chunk of every point.
	head spanner.NullInt64
}

// selectScalarSeries is selectSeries for a scalar read: the same one
// query, which also reads each series' SeriesId and the first step of its
// last chunk. Where a step window starts and ends among the chunks is
// found by the chunk read (chunkPlan.locate), not here: a join finding
// it cost a scan of every chunk key of the experiment below the window,
// 150 ms for a window in the middle of a 10M-point series on the
// emulator.
func selectScalarSeries(ctx context.Context, tx txReader, eid string, q *store.Query) ([]scalarSeries, error) {
	if f := q.Filter; f.Runs != nil && f.Tags != nil && !f.Empty() && len(f.Runs)*len(f.Tags) <= maxNamedSeries {
		return readNamedSeries(ctx, tx, eid, f)
	}
	stmt := seriesStatement(eid, store.DataClassScalar, q.Filter, []string{"ts.SeriesId", "ts.HeadSteps[SAFE_OFFSET(0)]"}, "")
	var out []scalarSeries
	err := querySeries(ctx, tx, eid, stmt, func(sum store.SeriesSummary, row *spanner.Row) error {
		s := scalarSeries{sum: sum}
		if err := row.Column(1+len(seriesColumns), &s.id); err != nil {
			return err
		}
		if err := row.Column(2+len(seriesColumns), &s.head); err != nil {
			return err
		}
		out = append(out, s)
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b scalarSeries) int {
		return cmp.Or(cmp.Compare(a.sum.Run, b.sum.Run), cmp.Compare(a.sum.Tag, b.sum.Tag))
	})
	return out, nil
}

// maxNamedSeries bounds the series (runs × tags) a filter naming both
// may name for selectScalarSeries to read them by key.
const maxNamedSeries = 10_000

// readNamedSeries is selectScalarSeries for a filter naming its runs and
// tags, as a card's read does: a read of the experiment's State, then one
// of the TimeSeries rows by key, plugins and class checked here. On the
// emulator the two reads cost about 8 ms for a card of 100 runs where the
// query cost 13–20 ms (it compiles and joins).
func readNamedSeries(ctx context.Context, tx txReader, eid string, f store.Filter) ([]scalarSeries, error) {
	row, err := tx.ReadRow(ctx, "Experiments", spanner.Key{eid}, []string{"State"})
	if spanner.ErrCode(err) == codes.NotFound {
		return nil, fmt.Errorf("experiment %q: %w", eid, store.ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	var state string
	if err := row.Column(0, &state); err != nil {
		return nil, err
	}
	if state != stateLive {
		return nil, fmt.Errorf("experiment %q: %w", eid, store.ErrNotFound)
	}
	var keys []spanner.KeySet
	seen := map[[2]string]bool{}
	for _, run := range f.Runs {
		for _, tag := range f.Tags {
			if !seen[[2]string{run, tag}] {
				seen[[2]string{run, tag}] = true
				keys = append(keys, spanner.Key{eid, run, tag})
			}
		}
	}
	var out []scalarSeries
	columns := append(slices.Clone(seriesColumns), "SeriesId", "HeadSteps")
	err = tx.Read(ctx, "TimeSeries", spanner.KeySets(keys...), columns).Do(func(row *spanner.Row) error {
		sum, _, err := scanSeries(row, 0)
		if err != nil || sum.DataClass != store.DataClassScalar || !f.Match(&sum.TimeSeries) {
			return err
		}
		s := scalarSeries{sum: sum}
		var heads []spanner.NullInt64
		if err := row.Columns(append(make([]any, len(seriesColumns)), &s.id, &heads)...); err != nil {
			return err
		}
		if len(heads) > 0 {
			s.head = heads[0]
		}
		out = append(out, s)
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b scalarSeries) int {
		return cmp.Or(cmp.Compare(a.sum.Run, b.sum.Run), cmp.Compare(a.sum.Tag, b.sum.Tag))
	})
	return out, nil
}

// chunkMode is how one series' chunks are read.
type chunkMode int

const (
	// chunksNone: the query selects no point of the series.
	chunksNone chunkMode = iota
	// chunksWhole: every point of the window, streamed.
	chunksWhole
	// chunksWindow: every point of the window, downsampled here: the
	// window holds too few points for the sample levels to have k.
	chunksWindow
	// chunksSampled: the chunk with the window's latest point, and the
	// sample levels from level up.
	chunksSampled
)

// chunkPlan is how one series is read.
type chunkPlan struct {
	s      *scalarSeries
	lo, hi int64
	mode   chunkMode
	level  int // chunksSampled: the lowest sample level read
	// from is the first step of the plan's read of chunks of all points,
	// which ends at hi: stepsBack from find, far enough back to hold the
	// chunk with the step find if steps are dense (locate checks it).
	// math.MinInt64 reads from the series' first chunk. A sampled plan
	// whose window ends at the series' end reads only its last chunk
	// (the head) instead: find is not used then.
	from, find int64
	// points is the answer once known: all of it for chunksSampled and
	// chunksWindow, the window's chunks for chunksWhole.
	points []store.ScalarPoint
	chunks []storedChunk
}

// planChunks plans the read of a chunked series. A downsampled read of k
// points reads the sample levels expected to hold k + 4√k + 16 of the
// window's points (four standard deviations more than k, as
// walkSampleKeys sizes its first range: a level L holds each point with
// probability 2^-L), the window's points at level -1 when fewer than
// that would come from level scalarchunk.MinSampleLevel up.
func planChunks(s *scalarSeries, q *store.Query) chunkPlan {
	p := chunkPlan{s: s}
	p.lo, p.hi = stepWindow(q, s.sum.MaxStep)
	k := q.MaxPoints
	switch {
	case k == 0 || s.sum.PointCount == 0 || p.lo > p.hi:
		p.mode = chunksNone
		return p
	case k >= s.sum.PointCount:
		p.mode = chunksWhole
		p.findWindow()
		return p
	}
	// The points the window is expected to hold, if steps are dense.
	window := float64(s.sum.PointCount)
	if span := float64(s.sum.MaxStep) + 1; q.MinStep != nil || q.MaxStep != nil {
		window *= min(1, (float64(p.hi)-max(float64(p.lo), 0)+1)/max(span, 1))
	}
	want := float64(k-1) + 4*math.Sqrt(float64(k-1)) + 16
	p.mode, p.level = chunksWindow, -1
	if k == 1 {
		p.mode = chunksSampled
	} else if ratio := window / want; ratio >= 1<<scalarchunk.MinSampleLevel {
		p.mode, p.level = chunksSampled, bits.Len64(uint64(ratio))-1
	}
	if p.mode == chunksSampled {
		p.find = p.hi
		p.from = stepsBack(&s.sum, scalarchunk.MaxChunkPoints, p.hi)
	} else {
		p.findWindow()
	}
	return p
}

// findWindow sets the plan to read its window's chunks of all points:
// from the one holding lo.
func (p *chunkPlan) findWindow() {
	p.find, p.from = p.lo, math.MinInt64
	if p.lo > math.MinInt64 {
		p.from = stepsBack(&p.s.sum, scalarchunk.MaxChunkPoints, p.lo)
	}
}

// windowKeys is the key range of the plan's read of chunks of all points.
func (p *chunkPlan) windowKeys(eid string) spanner.KeySet {
	id := p.s.id.Int64
	return spanner.KeyRange{Start: spanner.Key{eid, id, int64(scalarchunk.AllLevels), p.from}, End: spanner.Key{eid, id, int64(scalarchunk.AllLevels), p.hi}, Kind: spanner.ClosedClosed}
}

// headOnly tells whether the plan reads only the series' last chunk of
// all points: a sampled read whose window ends at the series' end.
func (p *chunkPlan) headOnly() bool {
	return p.mode == chunksSampled && p.hi >= p.s.sum.MaxStep
}

// keys is what the first read of the plan reads.
func (p *chunkPlan) keys(eid string) []spanner.KeySet {
	id := p.s.id.Int64
	switch p.mode {
	case chunksWhole, chunksWindow:
		return []spanner.KeySet{p.windowKeys(eid)}
	case chunksSampled:
		ks := []spanner.KeySet{p.windowKeys(eid)}
		if p.headOnly() {
			ks[0] = spanner.Key{eid, id, int64(scalarchunk.AllLevels), p.s.head.Int64}
		}
		if p.level >= 0 {
			ks = append(ks, spanner.KeyRange{Start: spanner.Key{eid, id, int64(p.level)}, End: spanner.Key{eid, id}, Kind: spanner.ClosedClosed})
		}
		return ks
	}
	return nil
}

// locate keeps of the plan's chunks of all points in got those it needs,
// the window's from the chunk holding lo, or for a sampled read the
// chunk holding the window's latest point (the last starting at or
// before hi). It returns false when the read may have started past that
// chunk (the steps before find are sparser than the series' mean): the
// chunks are then to be found by edgeChunksSQL, and got is left as is.
func (p *chunkPlan) locate(got map[levelKey][]storedChunk) bool {
	if p.mode == chunksNone || p.headOnly() {
		return true
	}
	k := levelKey{p.s.id.Int64, scalarchunk.AllLevels}
	cs := got[k]
	j := lastStartAtOrBefore(cs, p.find)
	switch {
	case j < 0 && p.from > math.MinInt64:
		return false
	case p.mode == chunksSampled && j < 0:
		p.mode = chunksNone // no point at or before hi
	case p.mode == chunksSampled:
		got[k] = cs[j : j+1]
	default:
		got[k] = cs[max(j, 0):]
	}
	return true
}

// lastStartAtOrBefore is the index of the last chunk of cs (in step
// order) that starts at or before step, or -1.
func lastStartAtOrBefore(cs []storedChunk, step int64) int {
	j, _ := slices.BinarySearchFunc(cs, step, func(c storedChunk, step int64) int {
		return cmp.Compare(c.first, step+1) // c.first <= step sorts before
	})
	return j - 1
}

// locateWindows runs locate on plans, and for the plans whose read missed
// the chunk they needed, edgeChunksSQL in one query: got then holds the
// chunks it found (none for a plan of no chunk starting at or before its
// find, whose read had every chunk it needs).
func locateWindows(ctx context.Context, tx txReader, eid string, plans []*chunkPlan, got map[levelKey][]storedChunk) error {
	var missed []edgeRange
	byEdge := map[edgeRange]*chunkPlan{}
	for _, p := range plans {
		if !p.locate(got) {
			e := edgeRange{ID: p.s.id.Int64, Lo: p.find, Hi: p.hi}
			missed = append(missed, e)
			byEdge[e] = p
		}
	}
	if len(missed) == 0 {
		return nil
	}
	found, err := queryEdgeChunks(ctx, tx, eid, missed)
	if err != nil {
		return err
	}
	for _, e := range missed {
		p := byEdge[e]
		if cs := found[e]; len(cs) > 0 {
			got[levelKey{e.ID, scalarchunk.AllLevels}] = cs
		}
		p.from = math.MinInt64 // got holds what the read from the series' start would
		p.locate(got)
	}
	return nil
}

// readChunks reads the chunks of keys in one read, by series and level,
// each level's in step order.
func readChunks(ctx context.Context, tx txReader, keys []spanner.KeySet) (map[levelKey][]storedChunk, error) {
	return readChunkRows(ctx, tx, keys, nil)
}

// readChunkRows is readChunks calling each, if not nil, with every chunk
// as the read streams it.
func readChunkRows(ctx context.Context, tx txReader, keys []spanner.KeySet, each func(levelKey, storedChunk)) (map[levelKey][]storedChunk, error) {
	out := map[levelKey][]storedChunk{}
	if len(keys) == 0 {
		return out, nil
	}
	err := tx.Read(ctx, "ScalarChunks", spanner.KeySets(keys...), []string{"SeriesId", "SampleLevel", "FirstStep", "Chunk"}).Do(func(row *spanner.Row) error {
		var k levelKey
		var level int64
		var c storedChunk
		if err := row.Columns(&k.id, &level, &c.first, &c.chunk); err != nil {
			return err
		}
		k.level = int(level)
		out[k] = append(out[k], c)
		if each != nil {
			each(k, c)
		}
		return nil
	})
	for _, cs := range out {
		slices.SortFunc(cs, func(a, b storedChunk) int { return cmp.Compare(a.first, b.first) })
	}
	return out, err
}

// chunkRef names a chunk of all points of a series.
type chunkRef struct{ id, first int64 }

// decodedChunk is the in-window points of one chunk, once decoded.
type decodedChunk struct {
	points []store.ScalarPoint
	err    error
}

// readWindowChunks is readChunks for plans: the chunks of all points of
// the plans that rank their whole window (chunksWindow) are decoded as
// the read streams them, on as many goroutines as Go runs at once, so
// that decoding overlaps the network and uses every core. It returns
// them decoded too, by chunk.
func readWindowChunks(ctx context.Context, tx txReader, q *store.Query, plans []chunkPlan, keys []spanner.KeySet) (map[levelKey][]storedChunk, map[chunkRef]*decodedChunk, error) {
	window := map[int64]*chunkPlan{}
	for i := range plans {
		if plans[i].mode == chunksWindow {
			window[plans[i].s.id.Int64] = &plans[i]
		}
	}
	decoded := map[chunkRef]*decodedChunk{}
	if len(window) == 0 {
		got, err := readChunks(ctx, tx, keys)
		return got, decoded, err
	}
	type job struct {
		d     *decodedChunk
		p     *chunkPlan
		chunk []byte
	}
	jobs := make(chan job, 64)
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for j := range jobs {
				j.d.points, j.d.err = j.p.chunkPoints(q, nil, j.chunk)
			}
		})
	}
	got, err := readChunkRows(ctx, tx, keys, func(k levelKey, c storedChunk) {
		if p := window[k.id]; p != nil && k.level == scalarchunk.AllLevels {
			d := &decodedChunk{}
			decoded[chunkRef{k.id, c.first}] = d
			jobs <- job{d, p, c.chunk}
		}
	})
	close(jobs)
	wg.Wait()
	return got, decoded, err
}

// chunkPoints appends to dst the in-window points of chunk. [p.lo, p.hi]
// is q's step window, so only a wall-time bound leaves points to drop.
func (p *chunkPlan) chunkPoints(q *store.Query, dst []store.ScalarPoint, chunk []byte) ([]store.ScalarPoint, error) {
	n := len(dst)
	dst, err := scalarchunk.AppendRange(dst, chunk, p.lo, p.hi)
	if q.MaxWallTime == nil {
		return dst, err
	}
	kept := dst[:n]
	for _, pt := range dst[n:] {
		if q.InWindow(pt.Step, pt.WallTime) {
			kept = append(kept, pt)
		}
	}
	return kept, err
}

// windowPoints is the in-window points of chunks (those of p's series at
// level AllLevels, in step order), decoded here or taken from decoded.
func (p *chunkPlan) windowPoints(q *store.Query, chunks []storedChunk, decoded map[chunkRef]*decodedChunk) ([]store.ScalarPoint, error) {
	id := p.s.id.Int64
	if len(chunks) == 1 {
		if d := decoded[chunkRef{id, chunks[0].first}]; d != nil {
			return d.points, d.err
		}
	}
	n := 0
	for _, c := range chunks {
		if d := decoded[chunkRef{id, c.first}]; d != nil {
			n += len(d.points)
		}
	}
	out := make([]store.ScalarPoint, 0, n)
	for _, c := range chunks {
		d := decoded[chunkRef{id, c.first}]
		if d == nil {
			var err error
			if out, err = p.chunkPoints(q, out, c.chunk); err != nil {
				return nil, err
			}
			continue
		}
		if d.err != nil {
			return nil, d.err
		}
		out = append(out, d.points...)
	}
	return out, nil
}

// sampleWindow is the downsample rule over every point of the window (in
// step order): the latest and the k-1 others of smallest sample keys.
func sampleWindow(points []store.ScalarPoint, k int64) []store.ScalarPoint {
	if len(points) == 0 {
		return nil
	}
	latest := points[len(points)-1]
	others := scalarchunk.LowestKeys(points[:len(points)-1], int(k-1))
	return append(others, latest)
}

// resolve computes the answer of a plan from its first read: false if it
// needs the window's points at level -1 (chunksWindow) instead.
func (p *chunkPlan) resolve(q *store.Query, got map[levelKey][]storedChunk, decoded map[chunkRef]*decodedChunk) (bool, error) {
	id := p.s.id.Int64
	switch p.mode {
	case chunksWhole:
		p.chunks = got[levelKey{id, scalarchunk.AllLevels}]
		return true, nil
	case chunksWindow:
		all, err := p.windowPoints(q, got[levelKey{id, scalarchunk.AllLevels}], decoded)
		p.points = sampleWindow(all, q.MaxPoints)
		return true, err
	case chunksSampled:
		last, err := p.windowPoints(q, got[levelKey{id, scalarchunk.AllLevels}], decoded)
		if err != nil || len(last) == 0 {
			return false, err // the latest point is further back
		}
		latest := last[len(last)-1]
		want := int(q.MaxPoints - 1)
		if want == 0 {
			p.points = []store.ScalarPoint{latest}
			return true, nil
		}
		var levels []levelKey
		for k := range got {
			if k.id == id && k.level >= p.level {
				levels = append(levels, k)
			}
		}
		slices.SortFunc(levels, func(a, b levelKey) int { return cmp.Compare(b.level, a.level) })
		sampler := scalarchunk.NewSampler(q, p.lo, p.hi, latest.Step, want)
	feed:
		for _, l := range levels {
			cs := got[l]
			for i := len(cs) - 1; i >= 0; i-- {
				more, err := sampler.Add(l.level, cs[i].chunk)
				if err != nil {
					return false, err
				}
				if !more {
					break feed
				}
			}
		}
		others, ok := sampler.Result()
		if !ok {
			return false, nil
		}
		p.points = append(others, latest)
		return true, nil
	}
	return true, nil
}

// readChunkedScalars reads series of the chunk layout, in batches of about
// maxFillBytes of chunks: per batch one read of every series' chunks (the
// window's, or the latest point's and the sample levels'), and one more
// for the series whose samples held too few points of their window.
func readChunkedScalars(ctx context.Context, tx txReader, eid string, series []scalarSeries, q *store.Query, fn store.ScalarVisitor) error {
	for len(series) > 0 {
		n, bytes := 0, int64(0)
		for n < len(series) && (n == 0 || bytes < maxFillBytes) {
			bytes += 8 * min(series[n].sum.PointCount, max(q.MaxPoints, 1)*16)
			n++
		}
		batch := series[:n]
		series = series[n:]
		plans := make([]chunkPlan, len(batch))
		var keys []spanner.KeySet
		for i := range batch {
			plans[i] = planChunks(&batch[i], q)
			keys = append(keys, plans[i].keys(eid)...)
		}
		all := make([]*chunkPlan, len(plans))
		for i := range plans {
			all[i] = &plans[i]
		}
		got, decoded, err := readWindowChunks(ctx, tx, q, plans, keys)
		if err == nil {
			err = locateWindows(ctx, tx, eid, all, got)
		}
		if err != nil {
			return err
		}
		var again []*chunkPlan
		keys = keys[:0]
		for _, p := range all {
			ok, err := p.resolve(q, got, decoded)
			if err != nil {
				return err
			}
			if !ok {
				p.mode = chunksWindow
				p.findWindow()
				again = append(again, p)
				keys = append(keys, p.windowKeys(eid))
			}
		}
		if len(again) > 0 {
			got, decoded, err := readWindowChunks(ctx, tx, q, plans, keys)
			if err == nil {
				err = locateWindows(ctx, tx, eid, again, got)
			}
			if err != nil {
				return err
			}
			for _, p := range again {
				if _, err := p.resolve(q, got, decoded); err != nil {
					return err
				}
			}
		}
		for i := range plans {
			if err := plans[i].emit(q, fn); err != nil {
				return err
			}
		}
	}
	return nil
}

// emit calls fn with the plan's answer: a whole window in pages of
// scalarSpec.pageSize points, at least one call.
func (p *chunkPlan) emit(q *store.Query, fn store.ScalarVisitor) error {
	ts := &p.s.sum.TimeSeries
	if p.mode != chunksWhole {
		return fn(ts, p.points)
	}
	var page []store.ScalarPoint
	sent := false
	for _, c := range p.chunks {
		var err error
		if page, err = p.chunkPoints(q, page, c.chunk); err != nil {
			return err
		}
		if len(page) >= scalarSpec.pageSize {
			if err := fn(ts, page); err != nil {
				return err
			}
			page, sent = nil, true
		}
	}
	if len(page) > 0 || !sent {
		return fn(ts, page)
	}
	return nil
}

// readScalars reads the series q selects in tx: those of the chunk layout
// with readChunkedScalars, those of the legacy layout with readPoints,
// each run of neighbours of one layout at once, so that the visitor sees
// the series in order.
func readScalars(ctx context.Context, tx txReader, eid string, q *store.Query, fn store.ScalarVisitor) error {
	series, err := selectScalarSeries(ctx, tx, eid, q)
	if err != nil {
		return err
	}
	return readSelectedScalars(ctx, tx, eid, series, q, fn)
}

// readSelectedScalars is readScalars of series already selected.
func readSelectedScalars(ctx context.Context, tx txReader, eid string, series []scalarSeries, q *store.Query, fn store.ScalarVisitor) error {
	legacy := func(s *scalarSeries) bool { return !s.id.Valid && s.sum.PointCount > 0 }
	for len(series) > 0 {
		n := 1
		for n < len(series) && legacy(&series[n]) == legacy(&series[0]) {
			n++
		}
		run := series[:n]
		series = series[n:]
		if !legacy(&run[0]) {
			if err := readChunkedScalars(ctx, tx, eid, run, q, fn); err != nil {
				return err
			}
			continue
		}
		sums := make([]store.SeriesSummary, len(run))
		for i := range run {
			sums[i] = run[i].sum
		}
		if err := readPoints(ctx, tx, eid, sums, q, scalarSpec, fn); err != nil {
			return err
		}
	}
	return nil
}
