package scalarchunk

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/tbhub/tbhub/services/internal/storage/downsample"
	"github.com/tbhub/tbhub/services/internal/storage/store"
)

// Merge keeps one point per step, the newer one on a tie, in step order.
func TestMergeNewerWins(t *testing.T) {
	older := points([]int64{1, 3, 5, 7})
	newer := []store.ScalarPoint{{Step: 0, Value: 10}, {Step: 3, Value: 30}, {Step: 7, Value: 70}, {Step: 9, Value: 90}}
	got := Merge(older, newer)
	var steps []int64
	values := map[int64]float64{}
	for _, p := range got {
		steps = append(steps, p.Step)
		values[p.Step] = p.Value
	}
	if want := []int64{0, 1, 3, 5, 7, 9}; !slices.Equal(steps, want) {
		t.Fatalf("steps %v, want %v", steps, want)
	}
	if values[3] != 30 || values[7] != 70 || values[1] != older[0].Value {
		t.Errorf("values %v: the newer point of steps 3 and 7 must win, the older of step 1 stay", values)
	}
}

// The sample levels fed top-down to a Sampler, or every point ranked by
// LowestKeys, give downsample.Select's answer: the latest point and the
// k-1 others of smallest sample key.
func TestSamplerMatchesSelect(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{50, 1_000, 2_500, 20_000} {
		var all []store.ScalarPoint
		step := int64(0)
		for range n {
			step += 1 + r.Int64N(3)
			all = append(all, store.ScalarPoint{Step: step, WallTime: float64(step), Value: r.Float64()})
		}
		steps := make([]int64, n)
		for i, p := range all {
			steps[i] = p.Step
		}
		levels := SampleLevels(all)
		for _, k := range []int{2, 10, 100, 1_000} {
			want := downsample.Select(steps, k)
			latest := all[n-1]
			q := &store.Query{MaxPoints: int64(k)}
			s := NewSampler(q, all[0].Step, latest.Step, latest.Step, k-1)
			for l := len(levels) - 1; l >= MinSampleLevel; l-- {
				ps := levels[l]
				// Chunks of 7 points, fed last chunk first as a store reads them.
				for end := len(ps); end > 0; end -= 7 {
					chunk, err := Encode(ps[max(0, end-7):end])
					if err != nil {
						t.Fatal(err)
					}
					if more, err := s.Add(l, chunk); err != nil || !more {
						if err != nil {
							t.Fatal(err)
						}
						break
					}
				}
			}
			ranked := append(LowestKeys(slices.Clone(all[:n-1]), k-1), latest)
			if sampled, ok := s.Result(); ok {
				if got := stepsOf(append(sampled, latest)); !slices.Equal(got, want) {
					t.Errorf("n=%d k=%d: sampler chose %v, want %v", n, k, got, want)
				}
			} else if n >= 8*k*4 {
				t.Errorf("n=%d k=%d: the sample levels held fewer than %d points", n, k, k-1)
			}
			if got := stepsOf(ranked); !slices.Equal(got, want) {
				t.Errorf("n=%d k=%d: LowestKeys chose %v, want %v", n, k, got, want)
			}
		}
	}
}

func stepsOf(ps []store.ScalarPoint) []int64 {
	out := make([]int64, len(ps))
	for i, p := range ps {
		out[i] = p.Step
	}
	return out
}
