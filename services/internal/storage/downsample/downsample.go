// Package downsample defines how tbhub reduces a time series to k points on
// the server, in a way a database can answer by reading O(k) rows.
//
// # The rule
//
// Every stored point carries a sample key, SampleKey(step): a fixed 64-bit
// mix of the step (one splitmix64 step), shifted right by one so that it
// is a non-negative int64 that every database can index and order. To
// downsample the points of a window to k:
//
//   - k = 0 gives nothing; k >= n gives every point;
//   - otherwise keep the point with the largest step (the latest, which
//     TensorBoard's read_last_scalars relies on) and the k-1 other points
//     with the smallest sample keys, ties broken by step;
//   - return them in step order.
//
// Select is the reference implementation of this rule; backends express it
// in their query language and their tests compare against Select.
//
// # Why this rule
//
// It meets what TensorBoard asks of downsampling:
//
//   - Always the latest point: by construction.
//   - Deterministic: the result is a function of the set of steps in the
//     window, nothing else (no seed, no insertion order, no wall clock).
//   - The same steps across tags: two series of a run whose step sets
//     coincide get exactly the same steps, so D(A)[i] and D(B)[i] are the
//     same step (TensorBoard's guarantee for charts that pair tags). Even
//     when the sets only overlap, the picks are coordinated: a step chosen
//     in one series is chosen in every series whose other keys are not
//     smaller, so growing series keep their earlier picks ("bottom-k"
//     sketching).
//   - Uniform: the mix behaves as a random permutation of steps, so the k-1
//     smallest keys are a uniform sample without replacement of the other
//     n-1 points, the same distribution as RustBoard's reservoir rule.
//   - O(k) reads: with an index on (series, sample key) the database reads
//     the first k-1 index entries of the series plus one seek for the
//     latest step, whatever n is. The cost is one int64 column and one
//     index entry per point, paid once at write time.
//
// The alternatives the storage issue left open do not:
//
//   - TABLESAMPLE (Spanner's BERNOULLI or RESERVOIR) draws a fresh random
//     sample on every query: not deterministic, not coordinated across
//     tags, and it samples after reading the table's rows, so the cost
//     grows with n. It also cannot promise the latest point.
//   - Bucketed downsampling in SQL (GROUP BY step * k / (max+1), one point
//     per bucket) is deterministic and coordinated, but it must read every
//     row of the window to group it: O(n). sqlitestore's benchmarks
//     measure both (docs/benchmarks.md, "Storage (embedded)"): reading
//     k = 1,000 of n = 10,000 / 100,000 / 1,000,000 points took about
//     5 / 60 / 990 ms bucketed, against 2 to 6 ms at every n by sample
//     key.
//
// # Levels: the same rule with an append-friendly index
//
// An index on (series, sample key) receives every insert at a random
// position, so a commit of many points dirties index pages all over it,
// and the cost of a write grows with the series (measured on SQLite: a
// tenfold drop in write throughput by a million points). Level groups keys
// by magnitude instead: Level(step) = L exactly when the key lies in
// [2^(62-L), 2^(63-L)), so half of all steps have level 0, a quarter level
// 1, and so on, and "level >= L" is the same set as "key < 2^(63-L)". An
// index on (series, level, step) receives inserts at the end of each
// level's step range, like the primary key, and still answers the rule in
// O(k): walk it from the highest level down, stop at the end of the first
// level by which at least k-1 points were seen (they are all the points
// with key below that level's bound, so they include the k-1 smallest),
// and keep the k-1 smallest keys of those at most about 2(k-1) points.
// Backends choose either index (sqlitestore keeps a copy of the points of
// level 3 and up, one in 8, in compressed chunks per level, and reads
// smaller windows whole); the rule and therefore the result is the same.
//
// A step window (min/max step, max wall time) is applied before sampling:
// the rule runs on the points inside the window. A backend walks the
// sample-key index and skips points outside the window, which reads about
// k·n/w entries for a window of w points, still independent of the rest
// of the series for the common case of a full or wide window.
package downsample

import (
	"cmp"
	"math/bits"
	"slices"
)

// SampleKey is the sample key stored with the point at step: splitmix64's
// output for the state uint64(step) (golden-ratio increment, then its
// finalizer), shifted right by one so that it fits a non-negative int64. It is part of the storage format: changing it
// would require rewriting every point row.
func SampleKey(step int64) int64 {
	z := uint64(step) + 0x9e3779b97f4a7c15
	z ^= z >> 30
	z *= 0xbf58476d1ce4e5b9
	z ^= z >> 27
	z *= 0x94d049bb133111eb
	z ^= z >> 31
	return int64(z >> 1)
}

// Level is the sample level of step: the number of leading zero bits of
// SampleKey(step) after its always-zero sign bit, 0 to 62 (63 only for a
// key of 0). Level(s) >= L if and only if SampleKey(s) < 2^(63-L).
func Level(step int64) int {
	return bits.LeadingZeros64(uint64(SampleKey(step))) - 1
}

// Less orders steps by the sample rule: smaller SampleKey first, then
// smaller step. It is the order of a (sample_key, step) index.
func Less(a, b int64) bool {
	ka, kb := SampleKey(a), SampleKey(b)
	return ka < kb || (ka == kb && a < b)
}

// Select applies the rule to a set of steps and returns the chosen steps in
// ascending order. Duplicate steps count once; steps need not be sorted and
// are not modified. k <= 0 selects nothing.
func Select(steps []int64, k int) []int64 {
	if k <= 0 || len(steps) == 0 {
		return []int64{}
	}
	all := slices.Clone(steps)
	slices.Sort(all)
	all = slices.Compact(all)
	if k >= len(all) {
		return all
	}
	latest := all[len(all)-1]
	others := all[:len(all)-1]
	slices.SortFunc(others, func(a, b int64) int {
		if c := cmp.Compare(SampleKey(a), SampleKey(b)); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	out := append(others[:k-1:k-1], latest)
	slices.Sort(out)
	return out
}
