package storetest

import (
	"bytes"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/tbhub/tbhub/services/internal/storage/downsample"
	"github.com/tbhub/tbhub/services/internal/storage/store"
)

// sameScalars compares points exactly: values by their bits, so NaN equals
// NaN and -0 differs from 0; wall times NaN-aware.
func sameScalars(a, b []store.ScalarPoint) bool {
	return slices.EqualFunc(a, b, func(x, y store.ScalarPoint) bool {
		return x.Step == y.Step && math.Float64bits(x.Value) == math.Float64bits(y.Value) &&
			(x.WallTime == y.WallTime || (math.IsNaN(x.WallTime) && math.IsNaN(y.WallTime)))
	})
}

func testScalarsRoundTrip(t *testing.T, s store.Store) {
	c := ctx(t)
	eid := newExperiment(t, s)
	batch := []store.ScalarSeries{
		scalarSeries("train", "loss", 0, 0, 1, 2, 10, 20),
		scalarSeries("train", "acc", 1, 5, 6),
		scalarSeries("eval", "loss", 2, -3, 7),
	}
	batch[1].Series.SummaryMetadata = []byte{0x0a, 0x02, 0x08, 0x01}
	batch[1].Series.DisplayName, batch[1].Series.Description = "Accuracy", "top-1"
	must(t, "WriteScalars", s.WriteScalars(c, eid, batch))

	got := readScalars(t, s, eid, all(store.Filter{}))
	want := []store.SeriesRef{ref("eval", "loss"), ref("train", "acc"), ref("train", "loss")}
	if !slices.Equal(refs(got), want) {
		t.Fatalf("series = %v, want %v", refs(got), want)
	}
	for _, g := range got {
		i := slices.IndexFunc(batch, func(b store.ScalarSeries) bool { return refOf(&b.Series) == refOf(&g.TimeSeries) })
		if !sameScalars(g.Points, batch[i].Points) {
			t.Errorf("%v: points = %v, want %v", refOf(&g.TimeSeries), g.Points, batch[i].Points)
		}
		ws := batch[i].Series
		if g.PluginName != ws.PluginName || !bytes.Equal(g.SummaryMetadata, ws.SummaryMetadata) || g.DataClass != store.DataClassScalar ||
			g.DisplayName != ws.DisplayName || g.Description != ws.Description {
			t.Errorf("%v: series metadata = %+v, want %+v", refOf(&g.TimeSeries), g.TimeSeries, ws)
		}
	}

	list, err := s.ListSeries(c, eid, store.DataClassScalar, store.Filter{})
	must(t, "ListSeries", err)
	if len(list) != 3 {
		t.Fatalf("ListSeries returned %d series, want 3", len(list))
	}
	tl := list[2]
	if refOf(&tl.TimeSeries) != ref("train", "loss") || tl.PointCount != 5 || tl.MaxStep != 20 || tl.MaxWallTime != 1020 || tl.MaxLength != 0 {
		t.Errorf("ListSeries train/loss = %+v, want 5 points, max step 20, max wall time 1020", tl)
	}
	if el := list[0]; el.PointCount != 2 || el.MaxStep != 7 {
		t.Errorf("ListSeries eval/loss = %+v, want 2 points, max step 7", el)
	}
	other, err := s.ListSeries(c, eid, store.DataClassTensor, store.Filter{})
	must(t, "ListSeries tensors", err)
	if len(other) != 0 {
		t.Errorf("ListSeries of tensors = %v, want none", other)
	}

	// A batch entry without points creates nothing.
	must(t, "WriteScalars without points", s.WriteScalars(c, eid, []store.ScalarSeries{{Series: store.TimeSeries{Run: "empty", Tag: "x"}}}))
	runs, err := s.ListRuns(c, eid)
	must(t, "ListRuns", err)
	if names := mapSlice(runs, func(r *store.Run) string { return r.Name }); !slices.Equal(names, []string{"eval", "train"}) {
		t.Errorf("runs = %v, want [eval train]", names)
	}
	wantErr(t, "ReadScalars of unknown experiment",
		s.ReadScalars(c, store.NewExperimentID(), all(store.Filter{}), collect(t, scalarStep, new([]series[store.ScalarPoint]))), store.ErrNotFound)
}

func testIdempotentRewrites(t *testing.T, s store.Store) {
	c := ctx(t)
	eid := newExperiment(t, s)
	batch := []store.ScalarSeries{scalarSeries("r", "a", 0, stepRange(0, 50)...), scalarSeries("r", "b", 0, 3, 4)}
	tensors := []store.TensorSeries{{Series: store.TimeSeries{Run: "r", Tag: "t"}, Points: []store.TensorPoint{
		{Step: 1, DType: 1, Tensor: []byte("abc")}, {Step: 2, DType: 1, Tensor: []byte("defg")},
	}}}
	must(t, "WriteScalars", s.WriteScalars(c, eid, batch))
	must(t, "WriteTensors", s.WriteTensors(c, eid, tensors))
	before := readScalars(t, s, eid, all(store.Filter{}))
	e1, err := s.GetExperiment(c, eid)
	must(t, "GetExperiment", err)
	for range 2 {
		must(t, "WriteScalars again", s.WriteScalars(c, eid, batch))
		must(t, "WriteTensors again", s.WriteTensors(c, eid, tensors))
	}
	after := readScalars(t, s, eid, all(store.Filter{}))
	if !reflect.DeepEqual(before, after) {
		t.Errorf("rewrite changed the data:\nbefore %v\nafter  %v", before, after)
	}
	e2, err := s.GetExperiment(c, eid)
	must(t, "GetExperiment", err)
	if e2.NumScalars != 52 || e1.NumScalars != 52 || e2.NumTensors != 2 || e2.TotalTensorBytes != 7 || e2.NumTags != 3 || e2.NumRuns != 1 {
		t.Errorf("counts after rewrites = %+v, want 52 scalars, 2 tensors of 7 bytes, 3 tags, 1 run", e2)
	}

	// Rewriting a step with another value replaces the point; the count
	// stays and the tensor bytes follow the new size.
	must(t, "WriteScalars replace", s.WriteScalars(c, eid, []store.ScalarSeries{{Series: batch[0].Series,
		Points: []store.ScalarPoint{{Step: 10, WallTime: 5, Value: -1}, {Step: 50, WallTime: 5, Value: 7}}}}))
	must(t, "WriteTensors replace", s.WriteTensors(c, eid, []store.TensorSeries{{Series: tensors[0].Series,
		Points: []store.TensorPoint{{Step: 2, DType: 2, Shape: []int64{1}, Tensor: []byte("x")}}}}))
	got := readScalars(t, s, eid, all(store.Filter{Tags: []string{"a"}}))
	if len(got) != 1 || len(got[0].Points) != 51 {
		t.Fatalf("after replace: %d series, want 1 with 51 points", len(got))
	}
	if p := got[0].Points[10]; p.Step != 10 || p.Value != -1 || p.WallTime != 5 {
		t.Errorf("step 10 after replace = %+v, want value -1, wall time 5", p)
	}
	e3, err := s.GetExperiment(c, eid)
	must(t, "GetExperiment", err)
	if e3.NumScalars != 53 || e3.TotalTensorBytes != 4 || e3.NumTensors != 2 {
		t.Errorf("counts after replace = %+v, want 53 scalars, 4 tensor bytes, 2 tensors", e3)
	}
}

func testLaterEntriesWin(t *testing.T, s store.Store) {
	c := ctx(t)
	eid := newExperiment(t, s)
	ts := store.TimeSeries{Run: "r", Tag: "x"}
	// Unsorted, with a step repeated inside one entry and across entries of
	// the same call.
	must(t, "WriteScalars", s.WriteScalars(c, eid, []store.ScalarSeries{
		{Series: ts, Points: []store.ScalarPoint{{Step: 5, Value: 1}, {Step: 2, Value: 1}, {Step: 5, Value: 2}}},
		{Series: ts, Points: []store.ScalarPoint{{Step: 2, Value: 3}, {Step: 9, Value: 3}}},
	}))
	got := readScalars(t, s, eid, all(store.Filter{}))
	want := []store.ScalarPoint{{Step: 2, Value: 3}, {Step: 5, Value: 2}, {Step: 9, Value: 3}}
	if len(got) != 1 || !sameScalars(got[0].Points, want) {
		t.Errorf("got %+v, want %v", got, want)
	}
	list, err := s.ListSeries(c, eid, store.DataClassScalar, store.Filter{})
	must(t, "ListSeries", err)
	if len(list) != 1 || list[0].PointCount != 3 {
		t.Errorf("ListSeries = %+v, want one series of 3 points", list)
	}
}

func testMetadataFirstWriteWins(t *testing.T, s store.Store) {
	c := ctx(t)
	eid := newExperiment(t, s)
	first := store.TimeSeries{Run: "r", Tag: "x", PluginName: "scalars", SummaryMetadata: []byte("first"), DisplayName: "one"}
	second := store.TimeSeries{Run: "r", Tag: "x", PluginName: "other", SummaryMetadata: []byte("second"), DisplayName: "two", Description: "d"}
	must(t, "WriteScalars first", s.WriteScalars(c, eid, []store.ScalarSeries{{Series: first, Points: []store.ScalarPoint{{Step: 1}}}}))
	must(t, "WriteScalars second", s.WriteScalars(c, eid, []store.ScalarSeries{{Series: second, Points: []store.ScalarPoint{{Step: 2}}}}))
	list, err := s.ListSeries(c, eid, store.DataClassUnknown, store.Filter{})
	must(t, "ListSeries", err)
	if len(list) != 1 {
		t.Fatalf("ListSeries = %d series, want 1", len(list))
	}
	g := list[0]
	if g.PluginName != "scalars" || string(g.SummaryMetadata) != "first" || g.DisplayName != "one" || g.Description != "" || g.PointCount != 2 {
		t.Errorf("series = %+v, want the first write's metadata and 2 points", g)
	}
}

func testDataClassConflict(t *testing.T, s store.Store) {
	c := ctx(t)
	eid := newExperiment(t, s)
	must(t, "WriteTensors", s.WriteTensors(c, eid, []store.TensorSeries{{Series: store.TimeSeries{Run: "r", Tag: "t"}, Points: []store.TensorPoint{{Step: 1}}}}))
	err := s.WriteScalars(c, eid, []store.ScalarSeries{scalarSeries("r", "fresh", 0, 1, 2), scalarSeries("r", "t", 0, 1)})
	wantErr(t, "scalars into a tensor series", err, store.ErrFailedPrecondition)
	_, _, err = s.GetOrCreateBlobSequence(c, eid, store.TimeSeries{Run: "r", Tag: "t"}, 1, 0, 1)
	wantErr(t, "blob sequence into a tensor series", err, store.ErrFailedPrecondition)
	list, err := s.ListSeries(c, eid, store.DataClassUnknown, store.Filter{})
	must(t, "ListSeries", err)
	if len(list) != 1 || list[0].Tag != "t" || list[0].DataClass != store.DataClassTensor {
		t.Errorf("after the failed batch: series %+v, want only the tensor series", list)
	}
}

func testInvalidWrites(t *testing.T, s store.Store) {
	c := ctx(t)
	eid := newExperiment(t, s)
	wantErr(t, "empty run", s.WriteScalars(c, eid, []store.ScalarSeries{scalarSeries("", "x", 0, 1)}), store.ErrInvalidArgument)
	wantErr(t, "empty tag", s.WriteScalars(c, eid, []store.ScalarSeries{scalarSeries("r", "", 0, 1)}), store.ErrInvalidArgument)
	wrong := scalarSeries("r", "x", 0, 1)
	wrong.Series.DataClass = store.DataClassTensor
	wantErr(t, "scalars declared as tensors", s.WriteScalars(c, eid, []store.ScalarSeries{wrong}), store.ErrInvalidArgument)
	wantErr(t, "tensors declared as scalars", s.WriteTensors(c, eid, []store.TensorSeries{{Series: store.TimeSeries{Run: "r", Tag: "x", DataClass: store.DataClassScalar}, Points: []store.TensorPoint{{Step: 1}}}}), store.ErrInvalidArgument)
	_, _, err := s.GetOrCreateBlobSequence(c, eid, store.TimeSeries{Run: "r", Tag: "b"}, 1, 0, -1)
	wantErr(t, "negative sequence length", err, store.ErrInvalidArgument)
	wantErr(t, "unknown experiment", s.WriteScalars(c, store.NewExperimentID(), []store.ScalarSeries{scalarSeries("r", "x", 0, 1)}), store.ErrNotFound)
	wantErr(t, "negative downsample", s.ReadScalars(c, eid, store.Query{MaxPoints: -1}, collect(t, scalarStep, new([]series[store.ScalarPoint]))), store.ErrInvalidArgument)
	list, err := s.ListSeries(c, eid, store.DataClassUnknown, store.Filter{})
	must(t, "ListSeries", err)
	if len(list) != 0 {
		t.Errorf("invalid writes created series: %+v", list)
	}
}

func testFilters(t *testing.T, s store.Store) {
	c := ctx(t)
	eid := newExperiment(t, s)
	var batch []store.ScalarSeries
	for _, run := range []string{"a", "b", "c"} {
		for _, tag := range []string{"x", "y"} {
			b := scalarSeries(run, tag, 0, 1, 2, 3)
			if tag == "y" {
				b.Series.PluginName = "custom"
			}
			batch = append(batch, b)
		}
	}
	must(t, "WriteScalars", s.WriteScalars(c, eid, batch))
	must(t, "WriteTensors", s.WriteTensors(c, eid, []store.TensorSeries{{Series: store.TimeSeries{Run: "a", Tag: "z", PluginName: "histograms"}, Points: []store.TensorPoint{{Step: 1}}}}))

	none := []string{}
	for _, tc := range []struct {
		name string
		f    store.Filter
		want []store.SeriesRef
	}{
		{"all", store.Filter{}, []store.SeriesRef{ref("a", "x"), ref("a", "y"), ref("b", "x"), ref("b", "y"), ref("c", "x"), ref("c", "y")}},
		{"runs", store.Filter{Runs: []string{"c", "a"}}, []store.SeriesRef{ref("a", "x"), ref("a", "y"), ref("c", "x"), ref("c", "y")}},
		{"tags", store.Filter{Tags: []string{"y"}}, []store.SeriesRef{ref("a", "y"), ref("b", "y"), ref("c", "y")}},
		{"runs and tags", store.Filter{Runs: []string{"b"}, Tags: []string{"x", "nope"}}, []store.SeriesRef{ref("b", "x")}},
		{"plugin", store.Filter{Plugins: []string{"custom"}}, []store.SeriesRef{ref("a", "y"), ref("b", "y"), ref("c", "y")}},
		{"plugins", store.Filter{Plugins: []string{"custom", "scalars"}, Runs: []string{"a"}}, []store.SeriesRef{ref("a", "x"), ref("a", "y")}},
		{"empty runs", store.Filter{Runs: none}, nil},
		{"empty tags", store.Filter{Tags: none}, nil},
		{"empty plugins", store.Filter{Plugins: none}, nil},
		{"empty runs, some tags", store.Filter{Runs: none, Tags: []string{"x"}}, nil},
		{"unknown run", store.Filter{Runs: []string{"zzz"}}, nil},
		{"other class's plugin", store.Filter{Plugins: []string{"histograms"}}, nil},
	} {
		list, err := s.ListSeries(c, eid, store.DataClassScalar, tc.f)
		must(t, tc.name+": ListSeries", err)
		if got := mapSlice(list, func(s *store.SeriesSummary) store.SeriesRef { return refOf(&s.TimeSeries) }); !slices.Equal(got, tc.want) {
			t.Errorf("%s: ListSeries = %v, want %v", tc.name, got, tc.want)
		}
		for _, k := range []int64{0, 2, store.AllPoints} {
			q := store.Query{Filter: tc.f, MaxPoints: k}
			got := readScalars(t, s, eid, q)
			if !slices.Equal(refs(got), tc.want) {
				t.Errorf("%s, k=%d: ReadScalars series = %v, want %v", tc.name, k, refs(got), tc.want)
			}
			for _, g := range got {
				if want := min(k, 3); int64(len(g.Points)) != want {
					t.Errorf("%s, k=%d: %v has %d points, want %d", tc.name, k, refOf(&g.TimeSeries), len(g.Points), want)
				}
			}
		}
	}
	list, err := s.ListSeries(c, eid, store.DataClassUnknown, store.Filter{Runs: []string{"a"}})
	must(t, "ListSeries every class", err)
	if got := mapSlice(list, func(s *store.SeriesSummary) store.SeriesRef { return refOf(&s.TimeSeries) }); !slices.Equal(got, []store.SeriesRef{ref("a", "x"), ref("a", "y"), ref("a", "z")}) {
		t.Errorf("ListSeries of every class in run a = %v", got)
	}
}

// checkDownsample compares one read series with downsample.Select applied
// to the steps that fall in q's window.
func checkDownsample(t *testing.T, what string, written []store.ScalarPoint, q store.Query, got []store.ScalarPoint) {
	t.Helper()
	byStep := map[int64]store.ScalarPoint{}
	var inWindow []int64
	for _, p := range written {
		if q.InWindow(p.Step, p.WallTime) {
			inWindow = append(inWindow, p.Step)
			byStep[p.Step] = p
		}
	}
	k := int(min(q.MaxPoints, math.MaxInt32))
	wantSteps := downsample.Select(inWindow, k)
	if gotSteps := stepsOf(got, scalarStep); !slices.Equal(gotSteps, wantSteps) {
		t.Errorf("%s: steps %v, want %v", what, abbreviate(gotSteps), abbreviate(wantSteps))
		return
	}
	for _, p := range got {
		if w := byStep[p.Step]; !sameScalars([]store.ScalarPoint{p}, []store.ScalarPoint{w}) {
			t.Errorf("%s: point %+v, want %+v", what, p, w)
		}
	}
}

func abbreviate(s []int64) string {
	if len(s) <= 12 {
		return fmt.Sprint(s)
	}
	return fmt.Sprintf("%v ... %v (%d steps)", s[:6], s[len(s)-6:], len(s))
}

// irregularSteps returns n distinct steps with uneven gaps, some negative.
func irregularSteps(n int) []int64 {
	steps := make([]int64, n)
	st := int64(-40)
	for i := range steps {
		steps[i] = st
		st += 1 + int64(i%7)*int64(i%3)
	}
	return steps
}

func testStepWindows(t *testing.T, s store.Store) {
	c := ctx(t)
	eid := newExperiment(t, s)
	b := scalarSeries("r", "x", 0, irregularSteps(3000)...)
	must(t, "WriteScalars", s.WriteScalars(c, eid, []store.ScalarSeries{b}))
	last := b.Points[len(b.Points)-1].Step
	for _, tc := range []struct {
		name     string
		min, max *int64
		wall     *float64
	}{
		{"min", ptr(int64(100)), nil, nil},
		{"max", nil, ptr(int64(500)), nil},
		{"min and max", ptr(int64(-5)), ptr(int64(1234)), nil},
		{"one step", ptr(int64(-40)), ptr(int64(-40)), nil},
		{"empty window", ptr(int64(10)), ptr(int64(9)), nil},
		{"past the end", ptr(last + 1), nil, nil},
		{"wall time", nil, nil, ptr(1000 + 700.0)},
		{"all bounds", ptr(int64(50)), ptr(last), ptr(1000 + float64(last) - 100)},
	} {
		for _, k := range []int64{0, 1, 7, 100, 2999, store.AllPoints} {
			q := store.Query{MinStep: tc.min, MaxStep: tc.max, MaxWallTime: tc.wall, MaxPoints: k}
			got := readScalars(t, s, eid, q)
			if len(got) != 1 {
				t.Fatalf("%s, k=%d: %d series, want 1 (a series with no point in the window is still visited)", tc.name, k, len(got))
			}
			checkDownsample(t, fmt.Sprintf("%s, k=%d", tc.name, k), b.Points, q, got[0].Points)
		}
	}
}

func testDownsampleRule(t *testing.T, s store.Store) {
	c := ctx(t)
	eid := newExperiment(t, s)
	const n = 5000
	b := scalarSeries("r", "x", 0, irregularSteps(n)...)
	must(t, "WriteScalars", s.WriteScalars(c, eid, []store.ScalarSeries{b}))
	for _, k := range []int64{1, 2, 3, 10, 1000, n - 1, n, n + 1} {
		q := store.Query{MaxPoints: k}
		got := readScalars(t, s, eid, q)
		if len(got) != 1 {
			t.Fatalf("k=%d: %d series, want 1", k, len(got))
		}
		checkDownsample(t, fmt.Sprintf("k=%d", k), b.Points, q, got[0].Points)
		// The latest point is always there; reads are deterministic.
		if pts := got[0].Points; pts[len(pts)-1].Step != b.Points[n-1].Step {
			t.Errorf("k=%d: last point is step %d, want the latest step %d", k, pts[len(pts)-1].Step, b.Points[n-1].Step)
		}
		if again := readScalars(t, s, eid, q); !reflect.DeepEqual(again, got) {
			t.Errorf("k=%d: a second read chose other points", k)
		}
	}
	// Appending points keeps earlier picks that still rank among the
	// smallest keys: the sample is a function of the step set.
	more := scalarSeries("r", "x", 0, stepRange(b.Points[n-1].Step+1, b.Points[n-1].Step+2000)...)
	must(t, "WriteScalars more", s.WriteScalars(c, eid, []store.ScalarSeries{more}))
	q := store.Query{MaxPoints: 100}
	got := readScalars(t, s, eid, q)
	checkDownsample(t, "after append", append(slices.Clone(b.Points), more.Points...), q, got[0].Points)
}

func testDownsampleSameStepsAcrossTags(t *testing.T, s store.Store) {
	c := ctx(t)
	eid := newExperiment(t, s)
	steps := irregularSteps(2000)
	a, b := scalarSeries("r", "a", 0, steps...), scalarSeries("r", "b", 10, steps...)
	// Different wall times and values, written in another order: only the
	// steps matter.
	for i := range b.Points {
		b.Points[i].WallTime += 0.5
	}
	slices.Reverse(b.Points)
	must(t, "WriteScalars", s.WriteScalars(c, eid, []store.ScalarSeries{a}))
	must(t, "WriteScalars", s.WriteScalars(c, eid, []store.ScalarSeries{b}))
	for _, k := range []int64{1, 5, 50, 500} {
		got := readScalars(t, s, eid, store.Query{MaxPoints: k})
		if len(got) != 2 {
			t.Fatalf("k=%d: %d series, want 2", k, len(got))
		}
		sa, sb := stepsOf(got[0].Points, scalarStep), stepsOf(got[1].Points, scalarStep)
		if !slices.Equal(sa, sb) || int64(len(sa)) != k {
			t.Errorf("k=%d: tags with the same steps got %v and %v", k, abbreviate(sa), abbreviate(sb))
		}
	}
}

func testSpecialFloats(t *testing.T, s store.Store) {
	c := ctx(t)
	eid := newExperiment(t, s)
	negZero := math.Copysign(0, -1)
	points := []store.ScalarPoint{
		{Step: 1, WallTime: 1, Value: math.NaN()},
		{Step: 2, WallTime: 2, Value: math.Inf(1)},
		{Step: 3, WallTime: 3, Value: math.Inf(-1)},
		{Step: 4, WallTime: 4, Value: negZero},
		{Step: 5, WallTime: 5, Value: math.MaxFloat64},
		{Step: 6, WallTime: 6, Value: math.SmallestNonzeroFloat64},
		{Step: 7, WallTime: math.NaN(), Value: 1},
		{Step: 8, WallTime: math.Inf(1), Value: 2},
	}
	must(t, "WriteScalars", s.WriteScalars(c, eid, []store.ScalarSeries{{Series: store.TimeSeries{Run: "r", Tag: "x"}, Points: points}}))
	got := readScalars(t, s, eid, all(store.Filter{}))
	if len(got) != 1 || !sameScalars(got[0].Points, points) {
		t.Errorf("special floats: got %v, want %v", got, points)
	}
	for _, k := range []int64{3, 8} {
		q := store.Query{MaxPoints: k}
		got := readScalars(t, s, eid, q)
		checkDownsample(t, fmt.Sprintf("special floats, k=%d", k), points, q, got[0].Points)
	}
	q := store.Query{MaxWallTime: ptr(5.0), MaxPoints: store.AllPoints}
	got = readScalars(t, s, eid, q)
	checkDownsample(t, "special floats, wall-time window", points, q, got[0].Points)
}

// testRandomRewrites writes batches of random steps, overlapping earlier
// ones, before, inside and after them, and compares every read with a
// model of what was written.
func testRandomRewrites(t *testing.T, s store.Store) {
	c := ctx(t)
	eid := newExperiment(t, s)
	r := rand.New(rand.NewPCG(11, 12))
	model := map[int64]store.ScalarPoint{}
	ts := store.TimeSeries{Run: "r", Tag: "x"}
	for round := range 25 {
		center := int64(r.IntN(3000))
		var batch []store.ScalarPoint
		for range 1 + r.IntN(300) {
			st := center + int64(r.NormFloat64()*float64(50+round*20))
			p := store.ScalarPoint{Step: st, WallTime: float64(round), Value: r.Float64()}
			batch = append(batch, p)
			model[st] = p // later entries win
		}
		must(t, "WriteScalars", s.WriteScalars(c, eid, []store.ScalarSeries{{Series: ts, Points: batch}}))
		want := slices.Collect(maps.Values(model))
		slices.SortFunc(want, func(a, b store.ScalarPoint) int { return int(a.Step - b.Step) })
		got := readScalars(t, s, eid, all(store.Filter{}))
		if len(got) != 1 || !sameScalars(got[0].Points, want) {
			t.Fatalf("round %d: read back %d points, want %d as written", round, len(got[0].Points), len(want))
		}
		list, err := s.ListSeries(c, eid, store.DataClassScalar, store.Filter{})
		must(t, "ListSeries", err)
		if list[0].PointCount != int64(len(want)) || list[0].MaxStep != want[len(want)-1].Step {
			t.Fatalf("round %d: ListSeries = %+v, want %d points up to step %d", round, list[0], len(want), want[len(want)-1].Step)
		}
		q := store.Query{MaxPoints: 1 + int64(r.IntN(200)), MinStep: ptr(int64(r.IntN(1000)))}
		got = readScalars(t, s, eid, q)
		checkDownsample(t, fmt.Sprintf("round %d", round), want, q, got[0].Points)
	}
}
