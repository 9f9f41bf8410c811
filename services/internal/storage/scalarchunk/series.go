package scalarchunk

import (
	"math"
	"math/bits"
	"slices"

	"github.com/tbhub/tbhub/services/internal/storage/downsample"
	"github.com/tbhub/tbhub/services/internal/storage/store"
)

// The layout of a series in chunks, the same in every store: each chunk
// holds consecutive points of one series at one sample level. Level
// AllLevels holds every point of the series, level L >= MinSampleLevel a
// copy of the points whose downsample.Level is exactly L, for downsampled
// reads. A chunk is full (Full) at MaxChunkBytes or MaxChunkPoints,
// whichever comes first; appends start a new chunk after a full one.
const (
	// MaxChunkBytes is about the size of a full chunk: one per 4 KB page
	// (SQLite's default page size, a row of at most 4,061 bytes stays on
	// its page) with the row's other columns and headers, four per 16 KB
	// page. A chunk passes it by the size of its last point, or more if
	// that point made the chunk rewrite itself in a wider form. Chunks of
	// a fixed 512 points (about 2.7 KB on a float32 loss) left a third of
	// every 4 KB page empty: 9.4 B per point instead of 6.6. On Spanner a
	// chunk is a row, and the size keeps an append's rewrite of the head
	// chunk to a few KB.
	MaxChunkBytes = 3_900
	// MaxChunkPoints bounds the points of a chunk, which a read decodes
	// whole: a constant series costs about 2.5 B per point.
	MaxChunkPoints = 1_024
	// AllLevels is the sample level of the chunks that hold every point.
	// Other negative levels are free for other summaries of a series.
	AllLevels = -1
	// MinSampleLevel is the lowest downsample.Level copied into sample
	// chunks: one point in 2^3, so that a read of k points from a series
	// of 8k or more finds them in the samples. One point in 2^4 cost 0.3
	// B per point less and made a read of 1,000 points from 10,000 decode
	// every point: 4 times the cost of one from 1,000,000.
	MinSampleLevel = 3
)

// Full tells whether a chunk of size bytes and count points is full:
// appends start a new chunk after it.
func Full(size, count int) bool {
	return size >= MaxChunkBytes || count >= MaxChunkPoints
}

// Fill appends points to a until it is full and returns how many it took.
func Fill(a *Appender, points []store.ScalarPoint) (int, error) {
	for i, p := range points {
		if Full(a.Size(), a.Len()) {
			return i, nil
		}
		if err := a.Append(p); err != nil {
			return i, err
		}
	}
	return len(points), nil
}

// Extend reopens chunk and appends points, all after its last step, until
// it is full; it returns the chunk and how many points it took.
func Extend(chunk []byte, points []store.ScalarPoint) (*Appender, int, error) {
	a, err := Reopen(chunk)
	if err != nil {
		return nil, 0, err
	}
	n, err := Fill(a, points)
	return a, n, err
}

// Merge merges two step-sorted point lists; on equal steps the point of
// newer wins (TensorBoard's last write wins).
func Merge(older, newer []store.ScalarPoint) []store.ScalarPoint {
	if len(older) == 0 {
		return newer
	}
	out := make([]store.ScalarPoint, 0, len(older)+len(newer))
	i, j := 0, 0
	for i < len(older) && j < len(newer) {
		switch a, b := older[i].Step, newer[j].Step; {
		case a < b:
			out = append(out, older[i])
			i++
		case a > b:
			out = append(out, newer[j])
			j++
		default:
			out = append(out, newer[j])
			i, j = i+1, j+1
		}
	}
	out = append(out, older[i:]...)
	return append(out, newer[j:]...)
}

// SampleLevels splits points (sorted by step) by sample level: element L
// holds, in step order, the points whose downsample.Level is L, for each L
// >= MinSampleLevel; the lower elements are empty.
func SampleLevels(points []store.ScalarPoint) [64][]store.ScalarPoint {
	var byLevel [64][]store.ScalarPoint
	for _, p := range points {
		if l := downsample.Level(p.Step); l >= MinSampleLevel {
			byLevel[l] = append(byLevel[l], p)
		}
	}
	return byLevel
}

// Sampler is the top-down sample selection of a downsampled read: fed the
// sample chunks of one series from the top level down (and within a level
// in descending step order, as an index read backwards gives them), it
// keeps the in-window points other than one step and, once it holds at
// least want of them, the want with the smallest sample keys. Every point
// of a level has a smaller key than every point of the levels below, so
// the answer is the same whatever the store.
type Sampler struct {
	q       *store.Query
	lo, hi  int64
	except  int64
	want    int
	points  []store.ScalarPoint
	level   int   // the level being read
	above   int   // the points of levels above level
	runs    []int // where each level's points, in step order, begin
	chunks  []int // where each chunk of level begins, from above
	stopped bool
}

// NewSampler starts a selection of want points of q's window [lo, hi]
// other than the step except (the window's latest point).
func NewSampler(q *store.Query, lo, hi, except int64, want int) *Sampler {
	return &Sampler{q: q, lo: lo, hi: hi, except: except, want: want, points: make([]store.ScalarPoint, 0, 2*want), level: math.MaxInt}
}

// Add takes the next chunk, of sample level level. It returns false,
// without reading the chunk, once the levels above level hold enough
// points: the caller stops feeding.
func (s *Sampler) Add(level int, chunk []byte) (bool, error) {
	if s.stopped {
		return false, nil
	}
	if level < s.level {
		ascendChunks(s.points[s.above:], s.chunks)
		s.chunks = s.chunks[:0]
		if len(s.points) >= s.want {
			s.stopped = true // every point of key below level+1's bound is in
			return false, nil
		}
		s.level, s.above = level, len(s.points)
		s.runs = append(s.runs, s.above)
	}
	s.chunks = append(s.chunks, len(s.points)-s.above)
	return true, Visit(chunk, s.lo, s.hi, func(ps []store.ScalarPoint) error {
		for _, p := range ps {
			if p.Step != s.except && s.q.InWindow(p.Step, p.WallTime) {
				s.points = append(s.points, p)
			}
		}
		return nil
	})
}

// Result returns the want points with the smallest keys, in step order.
// ok is false when the chunks held fewer than want such points, so that
// the answer must come from the chunks of all points.
func (s *Sampler) Result() (points []store.ScalarPoint, ok bool) {
	if len(s.points) < s.want {
		return nil, false
	}
	ascendChunks(s.points[s.above:], s.chunks) // the last level, unless done in Add
	s.chunks = s.chunks[:0]
	// The points of the levels above the last one read have smaller keys
	// than those of the last: only the last level's are ranked.
	points = append(s.points[:s.above], SmallestKeyPoints(s.points[s.above:], s.want-s.above)...)
	return mergeRuns(points, s.runs), true
}

// ascendChunks puts the points of one level, read chunk by chunk in
// descending step order (the sample index read backwards) and each chunk's
// points in ascending order, in ascending step order: level holds the
// chunks, starting at the indexes starts.
func ascendChunks(level []store.ScalarPoint, starts []int) {
	if len(starts) < 2 {
		return
	}
	slices.Reverse(level)
	end := len(level)
	for i := len(starts) - 1; i >= 0; i-- {
		// The chunk [starts[i], end) is now at [len-end, len-starts[i]),
		// reversed.
		slices.Reverse(level[len(level)-end : len(level)-starts[i]])
		end = starts[i]
	}
}

// mergeRuns sorts points by step, points being runs already sorted that
// begin at the indexes runs (the first at 0): a merge of a few dozen
// chunks' points instead of a sort of points. runs is overwritten.
func mergeRuns(points []store.ScalarPoint, runs []int) []store.ScalarPoint {
	buf := make([]store.ScalarPoint, len(points))
	for len(runs) > 1 {
		next := runs[:0]
		for i := 0; i < len(runs); i += 2 {
			lo, mid, hi := runs[i], len(points), len(points)
			if i+1 < len(runs) {
				mid = runs[i+1]
			}
			if i+2 < len(runs) {
				hi = runs[i+2]
			}
			a, b, out := points[lo:mid], points[mid:hi], buf[lo:lo]
			for len(a) > 0 && len(b) > 0 {
				if a[0].Step < b[0].Step {
					out, a = append(out, a[0]), a[1:]
				} else {
					out, b = append(out, b[0]), b[1:]
				}
			}
			rest := buf[lo+len(out) : hi] // what one side has left goes after
			copy(rest[copy(rest, a):], b)
			next = append(next, lo)
		}
		points, buf, runs = buf, points, next
	}
	return points
}

// LowestKeys returns the want points of points (at most all of them)
// with the smallest sample keys, in their order in points (step order
// when points are). A point's level (downsample.Level) orders it before
// every point of a lower level, so each key is computed once, the levels
// counted, and only the keys of the one level cut by want are sorted: a
// few hundred of a window of thousands. points is reordered.
func LowestKeys(points []store.ScalarPoint, want int) []store.ScalarPoint {
	if want <= 0 {
		return nil
	}
	if want >= len(points) {
		return points
	}
	keys := make([]int64, len(points))
	var perLevel [64]int
	for i, p := range points {
		k := downsample.SampleKey(p.Step)
		keys[i] = k
		perLevel[levelOfKey(k)]++
	}
	// cut is the highest level by which want points are seen; above are
	// the points of the levels over it, all in.
	cut, above := 0, 0
	for l := len(perLevel) - 1; l >= 0; l-- {
		if above+perLevel[l] >= want {
			cut = l
			break
		}
		above += perLevel[l]
	}
	need := want - above // of level cut
	var ranked []int64
	if need < perLevel[cut] {
		ranked = make([]int64, 0, perLevel[cut])
		for _, k := range keys {
			if levelOfKey(k) == cut {
				ranked = append(ranked, k)
			}
		}
		slices.Sort(ranked)
	}
	kept := points[:0]
	if ranked == nil { // the whole of level cut is in
		for i, p := range points {
			if levelOfKey(keys[i]) >= cut {
				kept = append(kept, p)
			}
		}
		return kept
	}
	return keepSmallest(points, keys, ranked, need)
}

// levelOfKey is downsample.Level of a step whose SampleKey is key.
func levelOfKey(key int64) int { return bits.LeadingZeros64(uint64(key)) - 1 }

// SmallestKeyPoints returns the n points of points with the smallest keys
// in downsample.Less order (smallest sample key, then smallest step), in
// their order in points, reusing points. It sorts the keys alone: a card
// of 100 series ranks tens of thousands of points.
func SmallestKeyPoints(points []store.ScalarPoint, n int) []store.ScalarPoint {
	if n >= len(points) {
		return points
	}
	if n <= 0 {
		return points[:0]
	}
	keys := make([]int64, len(points))
	for i, p := range points {
		keys[i] = downsample.SampleKey(p.Step)
	}
	sorted := slices.Clone(keys)
	slices.Sort(sorted)
	return keepSmallest(points, keys, sorted, n)
}

// keepSmallest keeps, in order, the points (keys[i] the key of points[i])
// of key below ranked[n-1], and of those of key ranked[n-1] (two steps may
// share a key) the smallest steps, as many as make n from ranked: ranked
// is the sorted keys of the points in contention, every other point's key
// being below ranked[0] or above ranked[n-1]. It reuses points.
func keepSmallest(points []store.ScalarPoint, keys, ranked []int64, n int) []store.ScalarPoint {
	cutoff := ranked[n-1]
	below, _ := slices.BinarySearch(ranked, cutoff)
	var ties []int64
	for i, p := range points {
		if keys[i] == cutoff {
			ties = append(ties, p.Step)
		}
	}
	slices.Sort(ties)
	lastTie := ties[n-below-1]
	kept := points[:0]
	for i, p := range points {
		if k := keys[i]; k < cutoff || (k == cutoff && p.Step <= lastTie) {
			kept = append(kept, p)
		}
	}
	return kept
}
