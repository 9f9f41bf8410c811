package downsample

import (
	"math"

	"github.com/tbhub/tbhub/services/internal/storage/store"
)

// # Bucketed reads (M4)
//
// Beside the sample rule, a chart may ask for a series reduced to the
// points that draw it faithfully: the window's steps cut into B buckets of
// equal step width, and of each bucket its extreme points (the M4 rule of
// Jugel et al., VLDB 2014), so that no spike, NaN or ±Inf is lost at any
// zoom. Summary is the reduction of one run of consecutive points and
// Buckets applies it bucket by bucket; both stores answer a
// store.Query with Buckets through them.

// Summary keeps, of points added in step order, the ones that stand for
// them all: the first, the last, the lowest and the highest value (NaN
// aside, so -Inf and +Inf are extremes; the earliest point wins a tie, -0
// and +0 tie) and the first NaN. At most five points, fewer when roles
// coincide.
//
// The reduction composes: adding a run's Points, then the next run's,
// gives the Points of adding every point of both runs. Stores keep
// summaries of fixed runs of points and answer from them.
type Summary struct {
	Count                    int64 // points added
	first, last, lo, hi, nan store.ScalarPoint
	hasRange, hasNaN         bool
}

// Add counts p, whose step is above every step added before.
func (s *Summary) Add(p store.ScalarPoint) {
	if s.Count == 0 {
		s.first = p
	}
	s.Count++
	s.last = p
	switch v := p.Value; {
	case math.IsNaN(v):
		if !s.hasNaN {
			s.nan, s.hasNaN = p, true
		}
	case !s.hasRange:
		s.lo, s.hi, s.hasRange = p, p, true
	case v < s.lo.Value:
		s.lo = p
	case v > s.hi.Value:
		s.hi = p
	}
}

// AddSummary counts the count points that points (a Summary's Points) stand
// for, all after every step added before.
func (s *Summary) AddSummary(points []store.ScalarPoint, count int64) {
	n := s.Count
	for _, p := range points {
		s.Add(p)
	}
	s.Count = n + count
}

// Points appends the summary's points to dst in step order, each once.
func (s *Summary) Points(dst []store.ScalarPoint) []store.ScalarPoint {
	if s.Count == 0 {
		return dst
	}
	var cand [5]store.ScalarPoint
	c := append(cand[:0], s.first)
	if s.hasRange {
		c = append(c, s.lo, s.hi)
	}
	if s.hasNaN {
		c = append(c, s.nan)
	}
	c = append(c, s.last)
	// Insertion sort by step, dropping repeats: at most five points.
	start := len(dst)
	for _, p := range c {
		i := len(dst)
		for i > start && dst[i-1].Step > p.Step {
			i--
		}
		if i > start && dst[i-1].Step == p.Step {
			continue
		}
		dst = append(dst, store.ScalarPoint{})
		copy(dst[i+1:], dst[i:])
		dst[i] = p
	}
	return dst
}

// Reset empties s.
func (s *Summary) Reset() { *s = Summary{} }

// Buckets reduces the points of the step window [lo, hi] to n buckets of
// equal step width (the last may be narrower) and each bucket to its
// Summary. Points (or summaries) are added in step order; Points returns
// the buckets' points in step order.
type Buckets struct {
	lo     int64
	width  uint64
	bucket int64 // of cur; -1 before the first point
	cur    Summary
	out    []store.ScalarPoint
}

// NewBuckets returns Buckets for the window [lo, hi] (lo <= hi) and n >= 1
// buckets.
func NewBuckets(lo, hi int64, n int) *Buckets {
	// uint64 arithmetic: hi-lo may not fit an int64.
	return &Buckets{lo: lo, width: uint64(hi-lo)/uint64(n) + 1, bucket: -1}
}

// Of returns the bucket of step, which is in the window.
func (b *Buckets) Of(step int64) int64 { return int64(uint64(step-b.lo) / b.width) }

func (b *Buckets) enter(bucket int64) {
	if bucket != b.bucket {
		b.out = b.cur.Points(b.out)
		b.cur.Reset()
		b.bucket = bucket
	}
}

// Add adds one point of the window.
func (b *Buckets) Add(p store.ScalarPoint) {
	b.enter(b.Of(p.Step))
	b.cur.Add(p)
}

// AddSummary adds the Points of a Summary of count points to the bucket of
// its first point's step, whatever buckets its later points fall in: a
// store answering from summaries moves the bucket's end to the end of the
// last summary that starts in it.
func (b *Buckets) AddSummary(points []store.ScalarPoint, count int64) {
	if len(points) == 0 {
		return
	}
	b.enter(b.Of(points[0].Step))
	b.cur.AddSummary(points, count)
}

// Points returns the reduced points, in step order.
func (b *Buckets) Points() []store.ScalarPoint {
	b.enter(-1)
	return b.out
}

// BucketPoints reduces points, sorted by step, to n buckets across their
// own steps: the reference answer of a bucketed read of a window holding
// exactly these points.
func BucketPoints(points []store.ScalarPoint, n int) []store.ScalarPoint {
	if len(points) == 0 || n < 1 {
		return nil
	}
	b := NewBuckets(points[0].Step, points[len(points)-1].Step, n)
	for _, p := range points {
		b.Add(p)
	}
	return b.Points()
}
