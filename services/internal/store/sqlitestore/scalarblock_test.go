package sqlitestore

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/tbhub/tbhub/services/internal/downsample"
	"github.com/tbhub/tbhub/services/internal/store"
)

func TestScalarBlockRoundTrip(t *testing.T) {
	t.Parallel()
	points := []store.ScalarPoint{
		{Step: math.MinInt64, WallTime: math.NaN(), Value: math.Inf(-1)},
		{Step: -1, WallTime: 0, Value: math.Copysign(0, -1)},
		{Step: 0, WallTime: 1.5, Value: math.NaN()},
		{Step: math.MaxInt64, WallTime: math.Inf(1), Value: math.MaxFloat64},
	}
	got, err := decodeScalarBlock(appendScalarBlock(nil, points), nil)
	if err != nil {
		t.Fatal(err)
	}
	same := slices.EqualFunc(got, points, func(a, b store.ScalarPoint) bool {
		return a.Step == b.Step && math.Float64bits(a.WallTime) == math.Float64bits(b.WallTime) &&
			math.Float64bits(a.Value) == math.Float64bits(b.Value)
	})
	if !same {
		t.Errorf("round trip: got %v, want %v", got, points)
	}
	for _, bad := range [][]byte{nil, {5}, {1, 2}, append(appendScalarBlock(nil, points), 0)} {
		if _, err := decodeScalarBlock(bad, nil); err == nil {
			t.Errorf("decodeScalarBlock(%x) accepted a corrupt block", bad)
		}
	}
}

// TestScalarBlocksStayOrdered checks the layout invariant after random
// writes: per series, blocks of 1 to 128 points whose step ranges do not
// overlap, and samples for exactly the points of level 4 and up.
func TestScalarBlocksStayOrdered(t *testing.T) {
	t.Parallel()
	s := newTestStore(t)
	c := t.Context()
	eid := newTestExperiment(t, s)
	r := rand.New(rand.NewPCG(1, 2))
	steps := map[int64]bool{}
	for range 40 {
		var batch []store.ScalarPoint
		base := int64(r.IntN(5000))
		for range r.IntN(400) {
			st := base + int64(r.IntN(600))
			batch = append(batch, store.ScalarPoint{Step: st})
			steps[st] = true
		}
		if err := s.WriteScalars(c, eid, []store.ScalarSeries{{Series: store.TimeSeries{Run: "r", Tag: "x"}, Points: batch}}); err != nil {
			t.Fatal(err)
		}
	}
	rows, err := s.r.QueryContext(c, "SELECT first_step, last_step, points FROM scalar_blocks ORDER BY first_step")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	prevLast := int64(math.MinInt64)
	total := 0
	for rows.Next() {
		var first, last int64
		var blob []byte
		if err := rows.Scan(&first, &last, &blob); err != nil {
			t.Fatal(err)
		}
		points, err := decodeScalarBlock(blob, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(points) == 0 || len(points) > scalarBlockPoints || points[0].Step != first || points[len(points)-1].Step != last || first <= prevLast {
			t.Errorf("block [%d, %d] of %d points after a block ending at %d", first, last, len(points), prevLast)
		}
		if !slices.IsSortedFunc(points, func(a, b store.ScalarPoint) int { return compareSteps(a.Step, b.Step) }) {
			t.Errorf("block [%d, %d] is not sorted", first, last)
		}
		prevLast = last
		total += len(points)
	}
	if total != len(steps) {
		t.Errorf("blocks hold %d points, want %d", total, len(steps))
	}
	var samples, wantSamples int
	if err := s.r.QueryRowContext(c, "SELECT COUNT(*) FROM scalar_samples").Scan(&samples); err != nil {
		t.Fatal(err)
	}
	for st := range steps {
		if downsample.Level(st) >= minSampleLevel {
			wantSamples++
		}
	}
	if samples != wantSamples {
		t.Errorf("scalar_samples holds %d rows, want %d", samples, wantSamples)
	}
}
