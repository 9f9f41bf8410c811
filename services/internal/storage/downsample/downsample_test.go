package downsample

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// The sample key is part of the storage format: these values were computed
// independently (Python, from the splitmix64 definition) and must never
// change.
func TestSampleKeyIsFixed(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		step int64
		want int64
	}{
		{0, 8147104208329303767},
		{1, 5225608189600411232},
		{-1, 8245168133484221968},
		{1000, 2166052499522740388},
		{math.MaxInt64, 1527823816519176019},
	} {
		if got := SampleKey(tc.step); got != tc.want {
			t.Errorf("SampleKey(%d) = %d, want %d", tc.step, got, tc.want)
		}
	}
}

func TestSampleKeyNonNegative(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	for range 100000 {
		step := int64(r.Uint64())
		if k := SampleKey(step); k < 0 {
			t.Fatalf("SampleKey(%d) = %d < 0", step, k)
		}
	}
}

func seq(lo, hi int64) []int64 {
	var s []int64
	for i := lo; i < hi; i++ {
		s = append(s, i)
	}
	return s
}

func TestSelectEdges(t *testing.T) {
	t.Parallel()
	steps := []int64{5, 3, 9, 3, 1}
	if got := Select(steps, 0); len(got) != 0 {
		t.Errorf("k=0: got %v, want none", got)
	}
	if got := Select(steps, -1); len(got) != 0 {
		t.Errorf("k=-1: got %v, want none", got)
	}
	if got := Select(nil, 5); len(got) != 0 {
		t.Errorf("no steps: got %v, want none", got)
	}
	want := []int64{1, 3, 5, 9}
	for _, k := range []int{4, 5, 100} {
		if got := Select(steps, k); !slices.Equal(got, want) {
			t.Errorf("k=%d >= n: got %v, want %v", k, got, want)
		}
	}
	if !slices.Equal(steps, []int64{5, 3, 9, 3, 1}) {
		t.Errorf("Select modified its input: %v", steps)
	}
	if got := Select(steps, 1); !slices.Equal(got, []int64{9}) {
		t.Errorf("k=1: got %v, want only the latest step", got)
	}
}

func TestSelectRule(t *testing.T) {
	t.Parallel()
	steps := seq(-50, 950)
	const k = 37
	got := Select(steps, k)
	if len(got) != k || !slices.IsSorted(got) {
		t.Fatalf("got %d steps (sorted %v), want %d sorted", len(got), slices.IsSorted(got), k)
	}
	if got[k-1] != 949 {
		t.Errorf("latest step 949 missing: last is %d", got[k-1])
	}
	// Every other chosen step has a smaller key than every step left out.
	var maxChosen int64 = math.MinInt64
	for _, s := range got[:k-1] {
		maxChosen = max(maxChosen, SampleKey(s))
	}
	for _, s := range steps[:len(steps)-1] {
		if !slices.Contains(got, s) && SampleKey(s) < maxChosen {
			t.Errorf("step %d (key %d) left out although chosen keys reach %d", s, SampleKey(s), maxChosen)
		}
	}
}

func TestSelectDependsOnlyOnTheSet(t *testing.T) {
	t.Parallel()
	steps := seq(0, 5000)
	want := Select(steps, 100)
	r := rand.New(rand.NewPCG(3, 4))
	shuffled := slices.Clone(steps)
	r.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	shuffled = append(shuffled, shuffled[:100]...) // duplicates count once
	if got := Select(shuffled, 100); !slices.Equal(got, want) {
		t.Errorf("same set in another order chose other steps")
	}
}

// A step chosen from a series stays chosen in any sub-series that holds it
// (unless it became that sub-series' latest, which is chosen anyway): the
// coordination that keeps charts of related tags aligned and keeps earlier
// picks as a series grows.
func TestSelectIsCoordinatedAcrossSubsets(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(5, 6))
	full := seq(0, 20000)
	for trial := range 20 {
		var sub []int64
		for _, s := range full {
			if r.IntN(3) > 0 {
				sub = append(sub, s)
			}
		}
		if trial%2 == 1 {
			sub = sub[:len(sub)/2] // a series that has not grown as far yet
		}
		const k = 200
		fromFull, fromSub := Select(full, k), Select(sub, k)
		for _, s := range fromFull {
			if slices.Contains(sub, s) && !slices.Contains(fromSub, s) {
				t.Fatalf("trial %d: step %d chosen in the full series and present in the subset, but not chosen there", trial, s)
			}
		}
	}
}

// The chosen steps spread evenly over the series: each tenth of a long
// series receives close to a tenth of the sample.
func TestSelectIsUniform(t *testing.T) {
	t.Parallel()
	const n, k = 1_000_000, 10_001
	got := Select(seq(0, n), k)
	var deciles [10]int
	for _, s := range got[:k-1] {
		deciles[s*10/n]++
	}
	// Binomial(10000, 0.1): mean 1000, standard deviation 30; allow 5 sigma.
	for i, c := range deciles {
		if c < 850 || c > 1150 {
			t.Errorf("decile %d holds %d of %d sampled steps, want about %d", i, c, k-1, (k-1)/10)
		}
	}
}

func TestLevelBoundsTheKey(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(7, 8))
	counts := map[int]int{}
	for range 200000 {
		step := int64(r.Uint64())
		l, k := Level(step), SampleKey(step)
		if l < 0 || l > 63 {
			t.Fatalf("Level(%d) = %d outside 0..63", step, l)
		}
		for _, bound := range []int{l, l + 1} {
			below := bound > 0 && bound <= 63 && k < int64(1)<<(63-bound) || bound == 0
			if (l >= bound) != below {
				t.Fatalf("step %d: key %d, level %d: level >= %d is %v but key < 2^%d is %v", step, k, l, bound, l >= bound, 63-bound, below)
			}
		}
		counts[l]++
	}
	// Half the steps at level 0, a quarter at level 1, an eighth at 2.
	for l, want := range []int{100000, 50000, 25000} {
		if c := counts[l]; c < want*9/10 || c > want*11/10 {
			t.Errorf("level %d holds %d of 200000 steps, want about %d", l, c, want)
		}
	}
}
