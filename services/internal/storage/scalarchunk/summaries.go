package scalarchunk

import (
	"encoding/binary"
	"errors"
	"math"

	"github.com/tbhub/tbhub/services/internal/storage/downsample"
	"github.com/tbhub/tbhub/services/internal/storage/store"
)

// # Summaries
//
// Bucketed reads (store.Query.Buckets) of long series are answered from
// summaries kept beside the chunks, at sample levels below AllLevels:
// level BaseSummaryLevel cuts a series into segments of about 256
// consecutive points, each level above it (more negative) into segments
// of 8 times as many, up to TopSummaryLevel (131,072 points). Each level
// cuts independently. A segment is kept as its count and
// downsample.Summary's points (at most five); a row packs up to
// SegmentsPerRow consecutive segments of one level, its first and last
// steps being its first and last segment's. A read picks the coarsest
// level whose segments hold no more points than a bucket
// (LevelFitsBuckets), so it reads about the same number of segments, a
// few per bucket, whatever the series' length, and decodes points only
// at the window's edges (BucketsFromSegments).
//
// A segment owns the steps from its first to the next segment's first:
// a step inserted between two segments (a rewrite) joins the earlier
// one, so segment boundaries, once made, never move. Appends fill the
// last segment up to its capacity, then start new ones; a write that
// touches stored steps recomputes the segments it touches from the
// chunks of all points (TouchedSegments; a rewritten step can not be
// taken out of a summary), letting them grow past their capacity rather
// than split. The stores keep the rows; the rules are here.
const (
	BaseSummaryLevel = -2
	TopSummaryLevel  = -5
	SegmentsPerRow   = 64
	// LevelMinSegments is how many segments of a level a series must
	// fill before the level is kept (KeepsLevel): a series of fewer than
	// 16,384 points has no summaries and a bucketed read decodes it whole.
	LevelMinSegments = 64
)

// SegmentCap is the number of points after which appends start a new
// segment at level: store.MaxExactBucketPoints at the base level, 8
// times more at each level above.
func SegmentCap(level int) int64 {
	return store.MaxExactBucketPoints << (3 * (BaseSummaryLevel - level))
}

// KeepsLevel tells whether a series of total points keeps summaries at
// level: at least LevelMinSegments of its segments.
func KeepsLevel(level int, total int64) bool {
	return level <= BaseSummaryLevel && level >= TopSummaryLevel && total >= LevelMinSegments*SegmentCap(level)
}

// ErrCorruptSummary is returned for a summary row that does not decode.
var ErrCorruptSummary = errors.New("scalarchunk: corrupt summary row")

// Segment is a run of consecutive points of a series summarized.
type Segment struct {
	Count  int64
	Points []store.ScalarPoint // downsample.Summary's, at least one
}

// First is the step of the segment's first point.
func (g *Segment) First() int64 { return g.Points[0].Step }

// Last is the step of the segment's last point.
func (g *Segment) Last() int64 { return g.Points[len(g.Points)-1].Step }

// AppendSegments encodes segs as one row: per segment its count and
// number of points (uvarints), then per point its step (a varint, the
// difference from the previous point's), wall time and value (float64
// bits, little-endian).
func AppendSegments(dst []byte, segs []Segment) []byte {
	var prev int64
	for _, g := range segs {
		dst = binary.AppendUvarint(dst, uint64(g.Count))
		dst = binary.AppendUvarint(dst, uint64(len(g.Points)))
		for _, p := range g.Points {
			dst = binary.AppendVarint(dst, p.Step-prev) // wraps, as decoding does
			prev = p.Step
			dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(p.WallTime))
			dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(p.Value))
		}
	}
	return dst
}

// DecodeSegments appends the segments of a row to dst.
func DecodeSegments(b []byte, dst []Segment) ([]Segment, error) {
	var prev int64
	uvarint := func() (uint64, bool) {
		v, n := binary.Uvarint(b)
		b = b[max(n, 0):]
		return v, n > 0
	}
	for len(b) > 0 {
		count, ok1 := uvarint()
		n, ok2 := uvarint()
		if !ok1 || !ok2 || n == 0 || n > 5 {
			return dst, ErrCorruptSummary
		}
		g := Segment{Count: int64(count), Points: make([]store.ScalarPoint, n)}
		for i := range g.Points {
			d, k := binary.Varint(b)
			if k <= 0 || len(b) < k+16 {
				return dst, ErrCorruptSummary
			}
			prev += d
			g.Points[i] = store.ScalarPoint{
				Step:     prev,
				WallTime: math.Float64frombits(binary.LittleEndian.Uint64(b[k:])),
				Value:    math.Float64frombits(binary.LittleEndian.Uint64(b[k+8:])),
			}
			b = b[k+16:]
		}
		dst = append(dst, g)
	}
	return dst, nil
}

// Segmenter cuts points, added in step order, into segments (Out): a new
// one starts at each of Bounds and, after the last bound, if Open,
// whenever the current one holds Cap points.
type Segmenter struct {
	Cap    int64
	Bounds []int64
	Open   bool
	Out    []Segment
	cur    downsample.Summary
}

// Resume continues the segment g: the points added next join it.
func (s *Segmenter) Resume(g Segment) { s.cur.AddSummary(g.Points, g.Count) }

// Add adds the point after those added before.
func (s *Segmenter) Add(p store.ScalarPoint) {
	for len(s.Bounds) > 0 && p.Step >= s.Bounds[0] {
		s.Flush()
		s.Bounds = s.Bounds[1:]
	}
	if len(s.Bounds) == 0 && s.Open && s.cur.Count >= s.Cap {
		s.Flush()
	}
	s.cur.Add(p)
}

// Flush ends the current segment, if it holds any point.
func (s *Segmenter) Flush() {
	if s.cur.Count > 0 {
		s.Out = append(s.Out, Segment{Count: s.cur.Count, Points: s.cur.Points(nil)})
		s.cur.Reset()
	}
}

// RowFull tells whether a row of a level packing segs is full (sealed):
// SegmentsPerRow segments, the last one at capacity unless more follow.
func RowFull(level int, segs []Segment, more bool) bool {
	return len(segs) == SegmentsPerRow && (more || segs[len(segs)-1].Count >= SegmentCap(level))
}

// PackRows cuts segs into rows of at most SegmentsPerRow segments, in
// order, calling fn with each and whether it is full.
func PackRows(level int, segs []Segment, fn func(row []Segment, full bool) error) error {
	for len(segs) > 0 {
		row := segs[:min(len(segs), SegmentsPerRow)]
		if err := fn(row, RowFull(level, row, len(segs) > len(row))); err != nil {
			return err
		}
		segs = segs[len(row):]
	}
	return nil
}

// Touched is the part of a level's stored segments a write of the steps
// [lo, hi] (not an append) recomputes: segments I0..I1, from the chunks'
// points in [From, To], cut by Segmenter.
type Touched struct {
	I0, I1   int
	From, To int64
	Segmenter
}

// TouchedSegments plans the recomputation of segs (consecutive segments of
// a level, at least one; end is the last step the last one owns, open
// whether it is the level's last) after a write of the steps [lo, hi].
func TouchedSegments(level int, segs []Segment, end int64, open bool, lo, hi int64) Touched {
	ownEnd := func(i int) int64 {
		if i+1 < len(segs) {
			return segs[i+1].First() - 1
		}
		return end
	}
	t := Touched{}
	for t.I0 < len(segs)-1 && ownEnd(t.I0) < lo {
		t.I0++
	}
	t.I1 = t.I0
	for t.I1 < len(segs)-1 && segs[t.I1+1].First() <= hi {
		t.I1++
	}
	t.From, t.To = segs[t.I0].First(), ownEnd(t.I1)
	if t.I0 == 0 {
		t.From = min(t.From, lo)
	}
	t.Segmenter = Segmenter{Cap: SegmentCap(level), Open: open && t.I1 == len(segs)-1}
	for i := t.I0 + 1; i <= t.I1; i++ {
		t.Bounds = append(t.Bounds, segs[i].First())
	}
	return t
}

// Replace returns segs with the touched ones replaced by the recomputed
// ones (t.Out, after Flush).
func (t *Touched) Replace(segs []Segment) []Segment {
	return append(append(segs[:t.I0:t.I0], t.Out...), segs[t.I1+1:]...)
}

// SegmentsIn returns the segments of segs holding steps of [lo, hi].
func SegmentsIn(segs []Segment, lo, hi int64) []Segment {
	kept := segs[:0]
	for _, g := range segs {
		if g.Last() >= lo && g.First() <= hi {
			kept = append(kept, g)
		}
	}
	return kept
}

// LevelFitsBuckets tells whether segs, a level's segments in a window,
// are fine enough to answer buckets: a level the series is too short for
// (or whose segments miss the window) has none, and the next finer one is
// to be tried.
func LevelFitsBuckets(level int, segs []Segment, buckets int) bool {
	var est int64
	for _, g := range segs {
		est += g.Count
	}
	return len(segs) > 0 && est/int64(buckets) >= SegmentCap(level)
}

// EdgeSegments splits segs, a level's segments holding steps of [lo, hi],
// into those inside the window and the ones crossing its ends, whose
// points (head, tail: from, to) are to be read from the chunks.
func EdgeSegments(segs []Segment, lo, hi int64) (inside []Segment, head, tail *Segment) {
	if g := &segs[0]; g.First() < lo || g.Last() > hi {
		head, segs = g, segs[1:]
	}
	if n := len(segs); n > 0 {
		if g := &segs[n-1]; g.Last() > hi {
			tail, segs = g, segs[:n-1]
		}
	}
	return segs, head, tail
}

// SummedCount is the number of points head, segs and tail stand for; at
// most store.MaxExactBucketPoints per bucket, a store answers the window
// exactly instead of from the segments.
func SummedCount(head []store.ScalarPoint, segs []Segment, tail []store.ScalarPoint) int64 {
	total := int64(len(head) + len(tail))
	for _, g := range segs {
		total += g.Count
	}
	return total
}

// BucketsFromSegments is a bucketed answer of the window's points head
// (before segs), the segments inside it and tail (after them): at least
// one of the three non-empty.
func BucketsFromSegments(head []store.ScalarPoint, segs []Segment, tail []store.ScalarPoint, buckets int) []store.ScalarPoint {
	var first, last int64
	switch {
	case len(head) > 0:
		first = head[0].Step
	case len(segs) > 0:
		first = segs[0].First()
	default:
		first = tail[0].Step
	}
	switch {
	case len(tail) > 0:
		last = tail[len(tail)-1].Step
	case len(segs) > 0:
		last = segs[len(segs)-1].Last()
	default:
		last = head[len(head)-1].Step
	}
	b := downsample.NewBuckets(first, last, buckets)
	for _, p := range head {
		b.Add(p)
	}
	for _, g := range segs {
		b.AddSummary(g.Points, g.Count)
	}
	for _, p := range tail {
		b.Add(p)
	}
	return b.Points()
}

// AddSegment adds a segment of a finer level, after those added before:
// a level is built from the one below it (summaries compose), a new
// segment starting once the current one holds Cap points.
func (s *Segmenter) AddSegment(g Segment) {
	if s.Open && s.cur.Count >= s.Cap {
		s.Flush()
	}
	s.cur.AddSummary(g.Points, g.Count)
}
