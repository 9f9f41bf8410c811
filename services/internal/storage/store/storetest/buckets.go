package storetest

import (
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/tbhub/tbhub/services/internal/storage/downsample"
	"github.com/tbhub/tbhub/services/internal/storage/store"
)

// spikySeries is a noisy series over steps with a spike, a dip, NaNs and
// infinities among its points.
func spikySeries(r *rand.Rand, steps []int64) []store.ScalarPoint {
	ps := make([]store.ScalarPoint, len(steps))
	for i, st := range steps {
		v := math.Sin(float64(st)/50) + r.Float64()/10
		switch r.IntN(500) {
		case 0:
			v = math.NaN()
		case 1:
			v = math.Inf(1)
		case 2:
			v = math.Inf(-1)
		case 3:
			v = 1e6 * r.NormFloat64()
		}
		ps[i] = store.ScalarPoint{Step: st, WallTime: 1000 + float64(st)/3, Value: v}
	}
	return ps
}

// inWindow returns the written points (sorted) inside q's step window.
func inWindow(written []store.ScalarPoint, q store.Query) []store.ScalarPoint {
	var out []store.ScalarPoint
	for _, p := range written {
		if q.InWindow(p.Step, p.WallTime) {
			out = append(out, p)
		}
	}
	return out
}

// checkBuckets checks a bucketed read against the contract of
// store.Query.Buckets: exactly downsample.BucketPoints of the window when
// it holds at most store.MaxExactBucketPoints points per bucket; otherwise
// real points of the window, at most five per bucket, with the window's
// first and last points, its lowest and highest (earliest of ties) and its
// first NaN.
func checkBuckets(t *testing.T, what string, written []store.ScalarPoint, q store.Query, got []store.ScalarPoint) {
	t.Helper()
	window := inWindow(written, q)
	if len(window) <= store.MaxExactBucketPoints*q.Buckets {
		if want := downsample.BucketPoints(window, q.Buckets); !sameScalars(got, want) {
			t.Errorf("%s: %d buckets of %d points: got %d points %v, want %d %v", what, q.Buckets, len(window), len(got), clip(got), len(want), clip(want))
		}
		return
	}
	if len(got) > 5*q.Buckets {
		t.Errorf("%s: %d points for %d buckets", what, len(got), q.Buckets)
	}
	byStep := map[int64]store.ScalarPoint{}
	for _, p := range window {
		byStep[p.Step] = p
	}
	for _, p := range got {
		if w, ok := byStep[p.Step]; !ok || !sameScalars([]store.ScalarPoint{p}, []store.ScalarPoint{w}) {
			t.Fatalf("%s: point %+v is not a stored point of the window", what, p)
		}
	}
	var whole downsample.Summary
	for _, p := range window {
		whole.Add(p)
	}
	for _, p := range whole.Points(nil) {
		if !slices.ContainsFunc(got, func(g store.ScalarPoint) bool { return g.Step == p.Step }) {
			t.Errorf("%s: the window's first, last, extreme or NaN point %+v is missing from %d points", what, p, len(got))
		}
	}
}

func clip(ps []store.ScalarPoint) []store.ScalarPoint { return ps[:min(len(ps), 12)] }

func testBucketedReads(t *testing.T, s store.Store) {
	c := ctx(t)
	eid := newExperiment(t, s)
	r := rand.New(rand.NewPCG(21, 22))
	ts := store.TimeSeries{Run: "r", Tag: "x", PluginName: "scalars", DataClass: store.DataClassScalar}

	// A short series: every answer exact.
	short := spikySeries(r, irregularSteps(3000))
	short[1234].Value = 1e9 // one spike among 3,000
	must(t, "WriteScalars", s.WriteScalars(c, eid, []store.ScalarSeries{{Series: store.TimeSeries{Run: "a", Tag: "x"}, Points: short}}))
	last := short[len(short)-1].Step
	for _, w := range []struct{ min, max *int64 }{
		{nil, nil}, {ptr(int64(100)), nil}, {nil, ptr(int64(500))}, {ptr(int64(-5)), ptr(int64(1234))},
		{ptr(int64(-40)), ptr(int64(-40))}, {ptr(int64(10)), ptr(int64(9))}, {ptr(last + 1), nil},
	} {
		for _, b := range []int{1, 3, 12, 100, 999, 5000} {
			q := store.Query{Filter: store.Filter{Runs: []string{"a"}}, MinStep: w.min, MaxStep: w.max, Buckets: b, MaxPoints: 7}
			got := readScalars(t, s, eid, q)
			if len(got) != 1 {
				t.Fatalf("%d series, want 1 (a series with no point in the window is still visited)", len(got))
			}
			checkBuckets(t, fmt.Sprintf("window [%v, %v], %d buckets", deref(w.min), deref(w.max), b), short, q, got[0].Points)
		}
	}
	wantErr(t, "negative buckets", s.ReadScalars(c, eid, store.Query{Buckets: -1}, func(*store.TimeSeries, []store.ScalarPoint) error { return nil }), store.ErrInvalidArgument)
	wantErr(t, "buckets with a wall-time bound", s.ReadScalars(c, eid, store.Query{Buckets: 10, MaxWallTime: ptr(5.0)}, func(*store.TimeSeries, []store.ScalarPoint) error { return nil }), store.ErrInvalidArgument)

	// A long series written in appends, then rewritten here and there:
	// buckets of thousands of points, which a backend may answer from
	// summaries.
	const n = 20_000
	model := map[int64]store.ScalarPoint{}
	long := spikySeries(r, stepRange(0, n))
	for i := 0; i < n; i += 1500 {
		batch := long[i:min(n, i+1500)]
		must(t, "WriteScalars", s.WriteScalars(c, eid, []store.ScalarSeries{{Series: ts, Points: batch}}))
	}
	for _, p := range long {
		model[p.Step] = p
	}
	check := func(what string) {
		t.Helper()
		want := slices.SortedFunc(maps.Values(model), func(a, b store.ScalarPoint) int { return int(a.Step - b.Step) })
		for _, b := range []int{1, 8, 40, 77, 100} {
			for _, w := range []struct{ min, max *int64 }{{nil, nil}, {ptr(int64(777)), ptr(int64(n - 1234))}, {ptr(int64(-50)), ptr(int64(5000))}} {
				q := store.Query{Filter: store.Filter{Runs: []string{"r"}}, MinStep: w.min, MaxStep: w.max, Buckets: b}
				got := readScalars(t, s, eid, q)
				checkBuckets(t, fmt.Sprintf("%s: window [%v, %v], %d buckets", what, deref(w.min), deref(w.max), b), want, q, got[0].Points)
			}
		}
	}
	check("appended")
	for round := range 6 {
		// A spike above every value so far, a rewrite of the current
		// highest point, and steps before, between and after the others.
		var batch []store.ScalarPoint
		center := int64(r.IntN(n))
		for range 1 + r.IntN(400) {
			st := center + int64(r.NormFloat64()*300)
			if round%3 == 2 {
				st = -st / 7 // before the first step, and between steps
			}
			p := store.ScalarPoint{Step: st, WallTime: float64(round), Value: r.Float64()}
			batch = append(batch, p)
			model[st] = p
		}
		var top store.ScalarPoint
		for _, p := range model {
			if !math.IsNaN(p.Value) && p.Value > top.Value {
				top = p
			}
		}
		lower := store.ScalarPoint{Step: top.Step, WallTime: top.WallTime, Value: -1}
		spike := store.ScalarPoint{Step: n + int64(round), WallTime: 1, Value: 1e12 * float64(round+1)}
		batch = append(batch, lower, spike)
		model[lower.Step], model[spike.Step] = lower, spike
		must(t, "WriteScalars", s.WriteScalars(c, eid, []store.ScalarSeries{{Series: ts, Points: batch}}))
		check(fmt.Sprintf("rewrite %d", round))
	}
}

func deref(p *int64) any {
	if p == nil {
		return "-"
	}
	return *p
}
