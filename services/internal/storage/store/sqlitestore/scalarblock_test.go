package sqlitestore

import (
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/tbhub/tbhub/services/internal/storage/downsample"
	"github.com/tbhub/tbhub/services/internal/storage/scalarchunk"
	"github.com/tbhub/tbhub/services/internal/storage/store"
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
// writes (appends, rewrites of earlier steps, batches spanning chunks): per
// series and sample level, chunks of 1 to scalarchunk.MaxChunkPoints points whose
// step ranges do not overlap; every step once at level -1, and exactly the
// steps of downsample.Level 4 and up in the chunks of their level, with the
// last value written for the step.
func TestScalarBlocksStayOrdered(t *testing.T) {
	t.Parallel()
	s := newTestStore(t)
	c := t.Context()
	eid := newTestExperiment(t, s)
	r := rand.New(rand.NewPCG(1, 2))
	steps := map[int64]float64{}
	for i := range 60 {
		var batch []store.ScalarPoint
		base := int64(r.IntN(5000))
		if i%3 == 0 {
			base = int64(6000 + 300*i) // an append
		}
		for range r.IntN(1200) {
			st := base + int64(r.IntN(1500))
			v := r.Float64()
			batch = append(batch, store.ScalarPoint{Step: st, Value: v})
			steps[st] = v
		}
		if err := s.WriteScalars(c, eid, []store.ScalarSeries{{Series: store.TimeSeries{Run: "r", Tag: "x"}, Points: batch}}); err != nil {
			t.Fatal(err)
		}
	}
	rows, err := s.r.QueryContext(c, "SELECT sample_level, first_step, last_step, chunk FROM scalar_chunks ORDER BY sample_level, first_step")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	prevLevel, prevLast := math.MinInt, int64(math.MinInt64)
	perLevel := map[int]int{}
	for rows.Next() {
		var level int
		var first, last int64
		var chunk []byte
		if err := rows.Scan(&level, &first, &last, &chunk); err != nil {
			t.Fatal(err)
		}
		points, err := scalarchunk.Decode(chunk, nil)
		if err != nil {
			t.Fatal(err)
		}
		if level != prevLevel {
			prevLevel, prevLast = level, math.MinInt64
		}
		if len(points) == 0 || len(points) > scalarchunk.MaxChunkPoints || points[0].Step != first || points[len(points)-1].Step != last || first <= prevLast {
			t.Errorf("level %d: chunk [%d, %d] of %d points after a chunk ending at %d", level, first, last, len(points), prevLast)
		}
		for _, p := range points {
			v, ok := steps[p.Step]
			if !ok || v != p.Value || (level != allLevels && downsample.Level(p.Step) != level) {
				t.Errorf("level %d holds step %d = %v (written: %v, %v; level %d)", level, p.Step, p.Value, v, ok, downsample.Level(p.Step))
			}
		}
		prevLast = last
		perLevel[level] += len(points)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	want := map[int]int{allLevels: len(steps)}
	for st := range steps {
		if l := downsample.Level(st); l >= minSampleLevel {
			want[l]++
		}
	}
	if !maps.Equal(perLevel, want) {
		t.Errorf("points per level = %v, want %v", perLevel, want)
	}
}

// TestDownsampleManyChunksPerLevel checks downsampled reads against
// downsample.Select on a series long enough that its sample levels span
// several chunks each (read backwards, then put in step order), with
// irregular steps, a rewritten range and step windows.
func TestDownsampleManyChunksPerLevel(t *testing.T) {
	t.Parallel()
	s := newTestStore(t)
	c := t.Context()
	eid := newTestExperiment(t, s)
	r := rand.New(rand.NewPCG(5, 6))
	var points []store.ScalarPoint
	step := int64(0)
	for range 80_000 {
		step += 1 + int64(r.IntN(3))
		points = append(points, store.ScalarPoint{Step: step, WallTime: 1.7e9 + float64(step), Value: r.NormFloat64()})
	}
	series := store.TimeSeries{Run: "r", Tag: "x", PluginName: "scalars"}
	for start := 0; start < len(points); start += 7_000 {
		if err := s.WriteScalars(c, eid, []store.ScalarSeries{{Series: series, Points: points[start:min(start+7_000, len(points))]}}); err != nil {
			t.Fatal(err)
		}
	}
	// Rewrite a range in the middle: its chunks are re-chunked.
	for i := 30_000; i < 31_000; i++ {
		points[i].Value = float64(i)
	}
	if err := s.WriteScalars(c, eid, []store.ScalarSeries{{Series: series, Points: points[30_000:31_000]}}); err != nil {
		t.Fatal(err)
	}
	var chunks int
	if err := s.r.QueryRowContext(c, "SELECT COUNT(*) FROM scalar_chunks WHERE sample_level = ?", minSampleLevel).Scan(&chunks); err != nil || chunks < 3 {
		t.Fatalf("level %d has %d chunks (%v), want several", minSampleLevel, chunks, err)
	}
	byStep := map[int64]store.ScalarPoint{}
	for _, p := range points {
		byStep[p.Step] = p
	}
	ptr := func(v int64) *int64 { return &v }
	for _, k := range []int64{1, 2, 10, 500, 2_000, 5_000, 9_000, 20_000} {
		for _, window := range [][2]*int64{{nil, nil}, {ptr(20_000), nil}, {nil, ptr(150_000)}, {ptr(50_000), ptr(120_000)}} {
			q := store.Query{MaxPoints: k, MinStep: window[0], MaxStep: window[1]}
			lo, hi := stepBounds(&q)
			var steps []int64
			for _, p := range points {
				if p.Step >= lo && p.Step <= hi {
					steps = append(steps, p.Step)
				}
			}
			want := downsample.Select(steps, int(k))
			s.scalars.wrote(eid)
			var got []store.ScalarPoint
			err := s.ReadScalars(c, eid, q, func(_ *store.TimeSeries, ps []store.ScalarPoint) error {
				got = append(got, ps...)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(want) {
				t.Errorf("k=%d window [%d, %d]: %d points, want %d", k, lo, hi, len(got), len(want))
				continue
			}
			for i, p := range got {
				if p.Step != want[i] || p != byStep[p.Step] {
					t.Errorf("k=%d window [%d, %d]: point %d = %+v, want step %d = %+v", k, lo, hi, i, p, want[i], byStep[want[i]])
					break
				}
			}
		}
	}
}
