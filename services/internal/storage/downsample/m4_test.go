package downsample

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/tbhub/tbhub/services/internal/storage/store"
)

func m4Series(r *rand.Rand, n int) []store.ScalarPoint {
	ps := make([]store.ScalarPoint, n)
	step := int64(-5)
	for i := range ps {
		step += 1 + r.Int64N(3)
		v := float64(r.IntN(7)) // ties on purpose
		switch r.IntN(40) {
		case 0:
			v = math.NaN()
		case 1:
			v = math.Inf(1)
		case 2:
			v = math.Inf(-1)
		case 3:
			v = math.Copysign(0, -1)
		}
		ps[i] = store.ScalarPoint{Step: step, WallTime: float64(i), Value: v}
	}
	return ps
}

func samePoints(a, b []store.ScalarPoint) bool {
	return slices.EqualFunc(a, b, func(x, y store.ScalarPoint) bool {
		return x.Step == y.Step && x.WallTime == y.WallTime && math.Float64bits(x.Value) == math.Float64bits(y.Value)
	})
}

// TestSummaryComposes: summarizing runs, then the runs' summaries, equals
// summarizing every point; the stores' summaries rely on it.
func TestSummaryComposes(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		ps := m4Series(r, 1+r.IntN(300))
		var whole, parts Summary
		for _, p := range ps {
			whole.Add(p)
		}
		for rest := ps; len(rest) > 0; {
			k := min(len(rest), 1+r.IntN(40))
			var run Summary
			for _, p := range rest[:k] {
				run.Add(p)
			}
			parts.AddSummary(run.Points(nil), run.Count)
			rest = rest[k:]
		}
		if got, want := parts.Points(nil), whole.Points(nil); !samePoints(got, want) || parts.Count != whole.Count {
			t.Fatalf("composed %v (%d), want %v (%d)", got, parts.Count, want, whole.Count)
		}
	}
}

// TestBucketPoints checks the rule against its definition: each bucket's
// first, last, lowest, highest (earliest of ties) and first NaN.
func TestBucketPoints(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 200 {
		ps := m4Series(r, 1+r.IntN(500))
		n := 1 + r.IntN(60)
		got := BucketPoints(ps, n)
		lo, hi := ps[0].Step, ps[len(ps)-1].Step
		width := (hi-lo)/int64(n) + 1
		var want []store.ScalarPoint
		for start := 0; start < len(ps); {
			b := (ps[start].Step - lo) / width
			end := start
			for end < len(ps) && (ps[end].Step-lo)/width == b {
				end++
			}
			keep := map[int]bool{start: true, end - 1: true}
			low, high, nan := -1, -1, -1
			for i := start; i < end; i++ {
				v := ps[i].Value
				if math.IsNaN(v) {
					if nan < 0 {
						nan = i
					}
					continue
				}
				if low < 0 || v < ps[low].Value {
					low = i
				}
				if high < 0 || v > ps[high].Value {
					high = i
				}
			}
			for _, i := range []int{low, high, nan} {
				if i >= 0 {
					keep[i] = true
				}
			}
			for i := start; i < end; i++ {
				if keep[i] {
					want = append(want, ps[i])
				}
			}
			start = end
		}
		if !samePoints(got, want) {
			t.Fatalf("%d points in %d buckets: got %v, want %v", len(ps), n, got, want)
		}
		if len(got) > 5*n {
			t.Fatalf("%d points for %d buckets", len(got), n)
		}
	}
}
