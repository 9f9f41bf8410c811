package spannerstore

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"

	"cloud.google.com/go/spanner"

	"github.com/tbhub/tbhub/services/internal/storage/downsample"
	"github.com/tbhub/tbhub/services/internal/storage/store"
)

// pointSpec describes one point table for the shared read path.
type pointSpec[P any] struct {
	class store.DataClass
	table string
	index string
	// baseColumns read a complete point from the table; indexColumns are
	// what the SampleKey index stores (also readable from the table).
	baseColumns  []string
	indexColumns []string
	// fromBase and fromIndex decode a point from a row of those columns,
	// after the leading columns that lead receives (RunName, Tag).
	fromBase  func(row *spanner.Row, lead ...any) (P, error)
	fromIndex func(row *spanner.Row, lead ...any) (P, error)
	step      func(*P) int64
	wallTime  func(*P) float64
	// fill completes points read through the index (tensors: their bytes);
	// nil when the index stores everything. sizeColumn, if not empty, is
	// the index column holding what fill will read of a point, in bytes:
	// sampled points are filled in batches of about maxFillBytes.
	fill       func(ctx context.Context, tx txReader, eid string, batch []seriesPoints[P]) error
	sizeColumn string
	// attach adds child rows to points however they were read (blob
	// sequences: their blobs); nil when there are none.
	attach func(ctx context.Context, tx txReader, eid string, batch []seriesPoints[P]) error
	// pageSize is how many points one visitor call carries when a read
	// returns every point of a window.
	pageSize int
}

// seriesPoints are points of one series, for fill, attach and the visitor.
type seriesPoints[P any] struct {
	series *store.TimeSeries
	points []P
}

// maxFillBytes is about how many bytes one fill read brings, so that a
// read holds no more than that (and one series' points) before the visitor
// sees them, and the visitor can stop a read that grows too big.
const maxFillBytes = 16 << 20

// indexedColumns are the columns of an index read: the series key, the
// size column if any, and the index's point columns.
func (sp *pointSpec[P]) indexedColumns() []string {
	if sp.sizeColumn == "" {
		return withSeries(sp.indexColumns)
	}
	return withSeries(append([]string{sp.sizeColumn}, sp.indexColumns...))
}

// sized is a point read through the index with its series and the value
// of its size column (0 without one).
type sized[P any] struct {
	point P
	ref   store.SeriesRef
	size  int64
}

// fromIndexed decodes a row of indexedColumns.
func (sp *pointSpec[P]) fromIndexed(row *spanner.Row) (sized[P], error) {
	var s sized[P]
	lead := []any{&s.ref.Run, &s.ref.Tag}
	if sp.sizeColumn != "" {
		lead = append(lead, &s.size)
	}
	var err error
	s.point, err = sp.fromIndex(row, lead...)
	return s, err
}

// withSeries prefixes a point read's columns with the series key columns,
// so that one read can return the points of many series.
func withSeries(columns []string) []string {
	return append([]string{"RunName", "Tag"}, columns...)
}

// readMode is how one series' points are read.
type readMode int

const (
	// readNone: the query selects no point of the series.
	readNone readMode = iota
	// readWhole: the window holds at most k points; all are streamed.
	readWhole
	// readNarrow: a window of fewer than 4k possible steps, read whole
	// (O(k)) and downsampled here.
	readNarrow
	// readSampled: the latest point of the window and the SampleKey index.
	readSampled
)

// seriesPlan is how one series is read: its step window [lo, hi] and mode.
type seriesPlan struct {
	sum    *store.SeriesSummary
	lo, hi int64
	mode   readMode
}

// stepWindow is q's step window over a series whose last step is maxStep:
// no point lies past it.
func stepWindow(q *store.Query, maxStep int64) (lo, hi int64) {
	lo, hi = math.MinInt64, maxStep
	if q.MinStep != nil {
		lo = *q.MinStep
	}
	if q.MaxStep != nil {
		hi = min(hi, *q.MaxStep)
	}
	return lo, hi
}

func planSeries(sum *store.SeriesSummary, q *store.Query) seriesPlan {
	p := seriesPlan{sum: sum}
	p.lo, p.hi = stepWindow(q, sum.MaxStep)
	k := q.MaxPoints
	switch {
	case k == 0 || sum.PointCount == 0 || p.lo > p.hi:
		p.mode = readNone
	case k >= sum.PointCount:
		p.mode = readWhole
	case q.MinStep != nil && q.MaxStep != nil && uint64(p.hi)-uint64(p.lo) < 4*uint64(k):
		p.mode = readNarrow
	default:
		p.mode = readSampled
	}
	return p
}

// window is the primary-key range of the plan's step window.
func (p *seriesPlan) window(eid string) spanner.KeyRange {
	return spanner.KeyRange{
		Start: spanner.Key{eid, p.sum.Run, p.sum.Tag, p.lo},
		End:   spanner.Key{eid, p.sum.Run, p.sum.Tag, p.hi},
		Kind:  spanner.ClosedClosed,
	}
}

func (p *seriesPlan) ref() store.SeriesRef { return store.SeriesRef{Run: p.sum.Run, Tag: p.sum.Tag} }

// readClass runs one Read* method in one read-only transaction, with a
// number of Spanner calls that does not grow with the number of series:
// the query of selectSeries, which also begins the transaction; then, at
// once, one read of the windows of every series read whole (readWhole,
// readNarrow), and for the sampled ones one read of their latest points
// and one read of their SampleKey index ranges (rarely a few more ranges
// when a window admits few of a series' points); then for tensors one
// read of the sampled points' bytes per maxFillBytes of them (read as the
// visitor takes them, so a visitor can stop a read that grows too big),
// for blob sequences one read of the sampled points' blobs and one per
// page of whole reads.
func readClass[P any](ctx context.Context, s *Store, op, eid string, q store.Query, sp *pointSpec[P], fn func(*store.TimeSeries, []P) error) error {
	if err := store.CheckQuery(q); err != nil {
		return fail(op, err)
	}
	tx := s.client.ReadOnlyTransaction().WithBeginTransactionOption(spanner.InlinedBeginTransaction)
	defer tx.Close()
	series, err := selectSeries(ctx, tx, eid, sp.class, q.Filter)
	if err != nil {
		return fail(op, err)
	}
	return fail(op, readPoints(ctx, tx, eid, series, &q, sp, fn))
}

// readPoints reads the points of the series that q selects and calls fn
// for each series in order (see store's visitor contract).
func readPoints[P any](ctx context.Context, tx txReader, eid string, series []store.SeriesSummary, q *store.Query, sp *pointSpec[P], fn func(*store.TimeSeries, []P) error) error {
	plans := make([]seriesPlan, len(series))
	var sampled, windows []int
	for i := range series {
		plans[i] = planSeries(&series[i], q)
		switch plans[i].mode {
		case readSampled:
			sampled = append(sampled, i)
		case readWhole, readNarrow:
			windows = append(windows, i)
		}
	}

	// The sampled series are read beside the windows' stream; their
	// points wait until the stream reaches them.
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	var samples map[int]sample[P]
	var sampleErr error
	if len(sampled) > 0 {
		go func() {
			defer close(done)
			samples, sampleErr = sampleSeries(sctx, tx, eid, plans, sampled, q, sp)
		}()
	} else {
		close(done)
	}
	defer func() {
		cancel()
		<-done
	}()

	out := &emitter[P]{ctx: ctx, tx: tx, eid: eid, sp: sp, fn: fn}
	next := 0 // the first series not yet handed to out
	// emitBefore hands out the series before end that the stream does not
	// carry: sampled ones, and those with no point.
	emitBefore := func(end int) error {
		for ; next < end; next++ {
			var got sample[P]
			if plans[next].mode == readSampled {
				<-done
				if sampleErr != nil {
					return sampleErr
				}
				got = samples[next]
			}
			if err := out.push(&plans[next].sum.TimeSeries, got.points, false, sp.fill != nil, got.size); err != nil {
				return err
			}
		}
		return nil
	}

	if len(windows) > 0 {
		at := make(map[store.SeriesRef]int, len(windows))
		keys := make([]spanner.KeySet, len(windows))
		for j, i := range windows {
			at[plans[i].ref()] = i
			keys[j] = plans[i].window(eid)
		}
		cur := -1     // the series being streamed
		var page []P  // its points not yet handed out
		sent := false // whether a page of it was handed out
		finish := func() error {
			if cur < 0 {
				return nil
			}
			p := &plans[cur]
			var err error
			switch {
			case p.mode == readNarrow:
				err = out.push(&p.sum.TimeSeries, selectPoints(page, q.MaxPoints, sp), true, false, 0)
			case len(page) > 0 || !sent:
				err = out.push(&p.sum.TimeSeries, page, true, false, 0)
			}
			next, cur, page, sent = cur+1, -1, nil, false
			return err
		}
		err := tx.Read(ctx, sp.table, spanner.KeySets(keys...), withSeries(sp.baseColumns)).Do(func(row *spanner.Row) error {
			var ref store.SeriesRef
			pt, err := sp.fromBase(row, &ref.Run, &ref.Tag)
			if err != nil {
				return err
			}
			i, ok := at[ref]
			if !ok || i < next {
				return fmt.Errorf("read returned a row of series (%q, %q) out of order", ref.Run, ref.Tag)
			}
			if i != cur {
				if err := finish(); err != nil {
					return err
				}
				if err := emitBefore(i); err != nil {
					return err
				}
				cur = i
			}
			if !q.InWindow(sp.step(&pt), sp.wallTime(&pt)) {
				return nil
			}
			page = append(page, pt)
			if plans[cur].mode == readWhole && len(page) >= sp.pageSize {
				sent = true
				err := out.push(&plans[cur].sum.TimeSeries, page, true, false, 0)
				page = nil
				return err
			}
			return nil
		})
		if err != nil {
			return err
		}
		if err := finish(); err != nil {
			return err
		}
	}
	if err := emitBefore(len(plans)); err != nil {
		return err
	}
	return out.flush()
}

// selectPoints keeps the points of a window (in step order) that
// downsample.Select picks for k.
func selectPoints[P any](all []P, k int64, sp *pointSpec[P]) []P {
	steps := make([]int64, len(all))
	for i := range all {
		steps[i] = sp.step(&all[i])
	}
	chosen := downsample.Select(steps, int(min(k, int64(len(all)))))
	kept := all[:0]
	for i := range all {
		if _, ok := slices.BinarySearch(chosen, sp.step(&all[i])); ok {
			kept = append(kept, all[i])
		}
	}
	return kept
}

// emitter hands points to the visitor in the order pushed. Points whose
// child rows are still to be attached wait until pageSize of them are
// queued, and sampled points still to be filled until about maxFillBytes
// are, so that one read completes many series' points.
type emitter[P any] struct {
	ctx    context.Context
	tx     txReader
	eid    string
	sp     *pointSpec[P]
	fn     func(*store.TimeSeries, []P) error
	queue  []queued[P]
	queued int   // points queued
	bytes  int64 // size of the queued points still to fill
}

type queued[P any] struct {
	seriesPoints[P]
	attach, fill bool
}

// push queues points of one series; attach and fill say whether their
// child rows, or their fill, are still to be read; size is what fill
// will read.
func (e *emitter[P]) push(ts *store.TimeSeries, pts []P, attach, fill bool, size int64) error {
	e.queue = append(e.queue, queued[P]{seriesPoints[P]{ts, pts}, attach, fill})
	e.queued += len(pts)
	if fill {
		e.bytes += size
	}
	switch {
	case fill:
		if e.bytes < maxFillBytes {
			return nil
		}
	case e.sp.attach != nil:
		if e.queued < e.sp.pageSize {
			return nil
		}
	}
	return e.flush()
}

// flush completes the queued points and calls the visitor.
func (e *emitter[P]) flush() error {
	for _, c := range []struct {
		read func(context.Context, txReader, string, []seriesPoints[P]) error
		need func(*queued[P]) bool
	}{
		{e.sp.fill, func(q *queued[P]) bool { return q.fill }},
		{e.sp.attach, func(q *queued[P]) bool { return q.attach }},
	} {
		var batch []seriesPoints[P]
		for i := range e.queue {
			if c.need(&e.queue[i]) && len(e.queue[i].points) > 0 {
				batch = append(batch, e.queue[i].seriesPoints)
			}
		}
		if len(batch) > 0 && c.read != nil {
			if err := c.read(e.ctx, e.tx, e.eid, batch); err != nil {
				return err
			}
		}
	}
	for _, q := range e.queue {
		if err := e.fn(q.series, q.points); err != nil {
			return err
		}
	}
	clear(e.queue)
	e.queue, e.queued, e.bytes = e.queue[:0], 0, 0
	return nil
}

// sample is the chosen points of one sampled series, in step order, and
// the sum of their sizes (pointSpec.sizeColumn).
type sample[P any] struct {
	points []P
	size   int64
}

// sampleSeries applies the downsample rule to the windows of the series
// plans[i], i in idx, each of more than k points: the latest point in the
// window, and the first k-1 other in-window entries of the SampleKey
// index. The two reads run at once; then attach completes the chosen
// points in one read for all series (fill is left to the emitter, which
// reads in batches of bounded size).
func sampleSeries[P any](ctx context.Context, tx txReader, eid string, plans []seriesPlan, idx []int, q *store.Query, sp *pointSpec[P]) (map[int]sample[P], error) {
	k := q.MaxPoints
	var walked map[int][]sized[P]
	walkErr := make(chan error, 1)
	go func() {
		var err error
		if k > 1 {
			walked, err = walkSampleKeys(ctx, tx, eid, plans, idx, q, sp)
		}
		walkErr <- err
	}()
	latest, err := latestPoints(ctx, tx, eid, plans, idx, q, sp)
	if werr := <-walkErr; err == nil {
		err = werr
	}
	if err != nil {
		return nil, err
	}
	out := make(map[int]sample[P], len(idx))
	var batch []seriesPoints[P]
	for _, i := range idx {
		last, ok := latest[i]
		if !ok {
			continue // no point in the window
		}
		lastStep := sp.step(&last.point)
		got := sample[P]{points: make([]P, 0, k), size: last.size}
		for _, p := range walked[i] {
			if int64(len(got.points)) == k-1 {
				break
			}
			if sp.step(&p.point) != lastStep {
				got.points = append(got.points, p.point)
				got.size += p.size
			}
		}
		got.points = append(got.points, last.point)
		slices.SortFunc(got.points, func(a, b P) int { return cmp.Compare(sp.step(&a), sp.step(&b)) })
		out[i] = got
		batch = append(batch, seriesPoints[P]{&plans[i].sum.TimeSeries, got.points})
	}
	if len(batch) > 0 && sp.attach != nil {
		if err := sp.attach(ctx, tx, eid, batch); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// latestPoints reads the latest in-window point of each series plans[i],
// i in idx. It walks the windows backwards from their ends in step ranges,
// one read per round for all series: the first range of an open-ended
// window (no wall-time bound, the window ends at the series' MaxStep) is
// that one step, a point read; other windows start with a range expected
// to hold about 16 points and double it while it holds no admitted point.
// Series with no point in their window are absent from the result.
func latestPoints[P any](ctx context.Context, tx txReader, eid string, plans []seriesPlan, idx []int, q *store.Query, sp *pointSpec[P]) (map[int]sized[P], error) {
	type walk struct {
		i    int
		plan *seriesPlan
		hi   int64  // the end of the range still to read
		span uint64 // steps in the next range
		last bool   // the next range reaches the window's start
	}
	walks := make(map[store.SeriesRef]*walk, len(idx))
	pending := make([]*walk, 0, len(idx))
	for _, i := range idx {
		p := &plans[i]
		w := &walk{i: i, plan: p, hi: p.hi, span: 1}
		if q.MaxWallTime != nil || p.hi != p.sum.MaxStep {
			w.span = uint64(16 * max(1, float64(p.sum.MaxStep)/float64(max(p.sum.PointCount, 1))))
		}
		walks[p.ref()] = w
		pending = append(pending, w)
	}
	out := make(map[int]sized[P], len(idx))
	for len(pending) > 0 {
		keys := make([]spanner.KeySet, len(pending))
		for j, w := range pending {
			lo := w.plan.lo
			if w.last = uint64(w.hi)-uint64(lo) < w.span; !w.last {
				lo = w.hi - int64(w.span-1)
			}
			keys[j] = spanner.KeyRange{
				Start: spanner.Key{eid, w.plan.sum.Run, w.plan.sum.Tag, lo},
				End:   spanner.Key{eid, w.plan.sum.Run, w.plan.sum.Tag, w.hi},
				Kind:  spanner.ClosedClosed,
			}
			w.hi = lo - 1
		}
		err := tx.Read(ctx, sp.table, spanner.KeySets(keys...), sp.indexedColumns()).Do(func(row *spanner.Row) error {
			p, err := sp.fromIndexed(row)
			if err != nil {
				return err
			}
			// Rows ascend by step: the last admitted one is the latest.
			if w := walks[p.ref]; w != nil && q.InWindow(sp.step(&p.point), sp.wallTime(&p.point)) {
				out[w.i] = p
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		short := pending[:0]
		for _, w := range pending {
			if _, found := out[w.i]; !found && !w.last {
				w.span = min(2*w.span, 1<<63)
				short = append(short, w)
			}
		}
		pending = short
	}
	return out, nil
}

// walkSampleKeys reads the SampleKey index entries of each series plans[i],
// i in idx, in index order (SampleKey, then step), until it holds k of the
// series' in-window entries or the series' index ends; one read per round
// for all series.
//
// It reads the index in SampleKey ranges rather than with a row limit: keys
// are uniform over [0, 2^63), so the number of a series' n entries in a
// range is binomial; the first range, sized to hold k + 4√k + 16 of them
// on average (four standard deviations more than k), almost always holds
// the k wanted, and each further round doubles the span of the series
// still short. The reads stay
// O(k) per series on any engine, including the emulator, which applies a
// read's limit only after scanning the whole key range. A step window
// admitting w of the n points makes the walk read about k·n/w entries, in
// about log2(n/w) rounds.
func walkSampleKeys[P any](ctx context.Context, tx txReader, eid string, plans []seriesPlan, idx []int, q *store.Query, sp *pointSpec[P]) (map[int][]sized[P], error) {
	const keySpace = float64(1 << 63)
	k := q.MaxPoints
	type walk struct {
		i    int
		plan *seriesPlan
		from int64
		span float64
		last bool
		got  []sized[P]
	}
	walks := make(map[store.SeriesRef]*walk, len(idx))
	pending := make([]*walk, 0, len(idx))
	for _, i := range idx {
		p := &plans[i]
		w := &walk{i: i, plan: p, span: keySpace * (float64(k) + 4*math.Sqrt(float64(k)) + 16) / float64(max(p.sum.PointCount, 1))}
		walks[p.ref()] = w
		pending = append(pending, w)
	}
	for len(pending) > 0 {
		keys := make([]spanner.KeySet, len(pending))
		for j, w := range pending {
			run, tag := w.plan.sum.Run, w.plan.sum.Tag
			r := spanner.KeyRange{Start: spanner.Key{eid, run, tag, w.from}, Kind: spanner.ClosedOpen}
			if w.last = w.span >= keySpace-float64(w.from); w.last {
				r.End, r.Kind = spanner.Key{eid, run, tag}, spanner.ClosedClosed // to the end of the series
			} else {
				r.End = spanner.Key{eid, run, tag, w.from + int64(w.span)}
			}
			keys[j] = r
		}
		err := tx.ReadWithOptions(ctx, sp.table, spanner.KeySets(keys...), sp.indexedColumns(), &spanner.ReadOptions{Index: sp.index}).Do(func(row *spanner.Row) error {
			p, err := sp.fromIndexed(row)
			if err != nil {
				return err
			}
			w := walks[p.ref]
			if w == nil || int64(len(w.got)) >= k {
				return nil
			}
			if st := sp.step(&p.point); st >= w.plan.lo && st <= w.plan.hi && q.InWindow(st, sp.wallTime(&p.point)) {
				w.got = append(w.got, p)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		short := pending[:0]
		for _, w := range pending {
			if int64(len(w.got)) < k && !w.last {
				w.from += int64(w.span)
				w.span *= 2
				short = append(short, w)
			}
		}
		pending = short
	}
	out := make(map[int][]sized[P], len(walks))
	for _, w := range walks {
		out[w.i] = w.got
	}
	return out, nil
}
