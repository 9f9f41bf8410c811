package spannerstore_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"cloud.google.com/go/spanner"

	"github.com/tbhub/tbhub/services/internal/storage/downsample"
	"github.com/tbhub/tbhub/services/internal/storage/store"
	"github.com/tbhub/tbhub/services/internal/storage/store/spannerstore"
	"github.com/tbhub/tbhub/services/internal/storage/store/sqlitestore"
	"github.com/tbhub/tbhub/services/internal/testenv/spanneremu"
)

// seriesAnswer is what a read returned for one series.
type seriesAnswer struct {
	run, tag string
	points   []store.ScalarPoint
}

// readAll reads q from s: every series' points, pages joined.
func readAll(t *testing.T, s store.Reader, eid string, q store.Query) []seriesAnswer {
	t.Helper()
	var out []seriesAnswer
	err := s.ReadScalars(t.Context(), eid, q, func(ts *store.TimeSeries, ps []store.ScalarPoint) error {
		if n := len(out); n > 0 && out[n-1].run == ts.Run && out[n-1].tag == ts.Tag {
			out[n-1].points = append(out[n-1].points, ps...)
			return nil
		}
		out = append(out, seriesAnswer{ts.Run, ts.Tag, append([]store.ScalarPoint(nil), ps...)})
		return nil
	})
	if err != nil {
		t.Fatalf("ReadScalars %+v: %v", q, err)
	}
	return out
}

// sameAnswers compares two reads, floats to the bit.
func sameAnswers(t *testing.T, what string, got, want []seriesAnswer) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d series, want %d", what, len(got), len(want))
	}
	for i := range got {
		g, w := got[i], want[i]
		if g.run != w.run || g.tag != w.tag || len(g.points) != len(w.points) {
			t.Fatalf("%s: series %d is %s/%s with %d points, want %s/%s with %d", what, i, g.run, g.tag, len(g.points), w.run, w.tag, len(w.points))
		}
		for j := range g.points {
			a, b := g.points[j], w.points[j]
			if a.Step != b.Step || math.Float64bits(a.WallTime) != math.Float64bits(b.WallTime) || math.Float64bits(a.Value) != math.Float64bits(b.Value) {
				t.Fatalf("%s: %s/%s point %d is %+v, want %+v", what, g.run, g.tag, j, a, b)
			}
		}
	}
}

// scalarQueries are reads of every mode: whole, latest only, sampled from
// the sample levels and from every point, step and wall-time windows.
func scalarQueries() map[string]store.Query {
	p := func(v int64) *int64 { return &v }
	w := 1.7e9 + 4000.0
	return map[string]store.Query{
		"all":              {MaxPoints: store.AllPoints},
		"latest":           {MaxPoints: 1},
		"k=10":             {MaxPoints: 10},
		"k=1000":           {MaxPoints: 1000},
		"k=7000":           {MaxPoints: 7000},
		"k=3000":           {MaxPoints: 3000},
		"from 5000, k=100": {MinStep: p(5000), MaxPoints: 100},
		"to 3000, k=100":   {MaxStep: p(3000), MaxPoints: 100},
		"to 3000, latest":  {MaxStep: p(3000), MaxPoints: 1},
		"1000-1100, k=50":  {MinStep: p(1000), MaxStep: p(1100), MaxPoints: 50},
		"2000-9000, all":   {MinStep: p(2000), MaxStep: p(9000), MaxPoints: store.AllPoints},
		"2000-9000, k=200": {MinStep: p(2000), MaxStep: p(9000), MaxPoints: 200},
		"wall, k=20":       {MaxWallTime: &w, MaxPoints: 20},
		"wall, latest":     {MaxWallTime: &w, MaxPoints: 1},
	}
}

// scalarWrites is a history of writes to three series: appends in
// uploader-sized batches across chunk boundaries, a rewrite of old steps
// in the middle (new values win), a sparse series with float64 values and
// special floats, and a batch with a step given twice (the last wins).
func scalarWrites() [][]store.ScalarSeries {
	r := rand.New(rand.NewPCG(1, 2))
	series := func(run, tag string, steps []int64, value func(int64) float64) store.ScalarSeries {
		ps := make([]store.ScalarPoint, len(steps))
		for i, st := range steps {
			ps[i] = store.ScalarPoint{Step: st, WallTime: 1.7e9 + float64(st)*0.5, Value: value(st)}
		}
		return store.ScalarSeries{Series: store.TimeSeries{Run: run, Tag: tag, PluginName: "scalars"}, Points: ps}
	}
	span := func(from, to, every int64) []int64 {
		var out []int64
		for st := from; st < to; st += every {
			out = append(out, st)
		}
		return out
	}
	loss := func(st int64) float64 { return float64(float32(math.Exp(-float64(st) / 3000))) }
	var out [][]store.ScalarSeries
	for from := int64(0); from < 12_000; from += 1_700 {
		out = append(out, []store.ScalarSeries{
			series("a", "loss", span(from, from+1_700, 1), loss),
			series("b", "acc", span(from*3, (from+1_700)*3, 3), func(int64) float64 { return r.NormFloat64() }),
		})
	}
	special := []float64{math.NaN(), math.Inf(1), math.Inf(-1), math.Copysign(0, -1)}
	out = append(out,
		[]store.ScalarSeries{series("a", "loss", span(3_000, 6_500, 7), func(st int64) float64 { return -float64(st) })},
		[]store.ScalarSeries{series("c", "sparse", span(0, 20_000, 9), func(st int64) float64 { return special[st%4] })},
		[]store.ScalarSeries{
			series("c", "sparse", []int64{20_007, 99}, func(int64) float64 { return 1 }),
			series("c", "sparse", []int64{99}, func(int64) float64 { return 2 }),
		},
	)
	return out
}

// The Spanner store's chunks answer every read mode exactly as the
// embedded store does for the same writes, floats to the bit: the same
// downsampling, the same last-write-wins.
func TestScalarChunksMatchEmbeddedStore(t *testing.T) {
	ctx := t.Context()
	sp := spanneremu.NewDatabase(t).Store(t)
	lite, err := sqlitestore.Open(ctx, filepath.Join(t.TempDir(), "tbhub.db"), sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lite.Close() })
	eids := map[store.Store]string{}
	for _, s := range []store.Store{sp, lite} {
		eids[s] = newExperiment(t, s)
		for i, batch := range scalarWrites() {
			if err := s.WriteScalars(ctx, eids[s], batch); err != nil {
				t.Fatalf("write %d: %v", i, err)
			}
		}
	}
	for name, q := range scalarQueries() {
		sameAnswers(t, name, readAll(t, sp, eids[sp], q), readAll(t, lite, eids[lite], q))
	}
	// The counters follow the chunks.
	for _, s := range []store.Store{sp, lite} {
		series, err := s.ListSeries(ctx, eids[s], store.DataClassScalar, store.Filter{})
		if err != nil {
			t.Fatal(err)
		}
		for _, sum := range series {
			n := 0
			for _, a := range readAll(t, s, eids[s], store.Query{Filter: store.Filter{Runs: []string{sum.Run}, Tags: []string{sum.Tag}}, MaxPoints: store.AllPoints}) {
				n += len(a.points)
			}
			if int64(n) != sum.PointCount {
				t.Errorf("%T %s/%s: PointCount %d, %d points stored", s, sum.Run, sum.Tag, sum.PointCount, n)
			}
		}
	}
}

// writeLegacyScalars writes points as the store wrote them before
// scalar chunks (DDL 0011): a ScalarPoints row per point, a TimeSeries row
// without SeriesId.
func writeLegacyScalars(t *testing.T, client *spanner.Client, eid string, b store.ScalarSeries) {
	t.Helper()
	maxStep, maxWall := int64(0), math.NaN()
	ms := []*spanner.Mutation{spanner.InsertOrUpdate("Runs", []string{"ExperimentId", "RunName", "StartTime"}, []any{eid, b.Series.Run, 1.7e9})}
	var points []*spanner.Mutation
	for _, p := range b.Points {
		maxStep = max(maxStep, p.Step)
		if math.IsNaN(maxWall) || p.WallTime > maxWall {
			maxWall = p.WallTime
		}
		points = append(points, spanner.InsertOrUpdate("ScalarPoints", []string{"ExperimentId", "RunName", "Tag", "Step", "SampleKey", "WallTime", "Value"},
			[]any{eid, b.Series.Run, b.Series.Tag, p.Step, downsample.SampleKey(p.Step), p.WallTime, p.Value}))
	}
	ms = append(ms, spanner.Insert("TimeSeries",
		[]string{"ExperimentId", "RunName", "Tag", "PluginName", "SummaryMetadata", "DataClass", "DisplayName", "Description",
			"PointCount", "MaxStep", "MaxWallTime", "MaxLength", "TensorBytes", "BlobCount", "BlobBytes", "UpdateTime"},
		[]any{eid, b.Series.Run, b.Series.Tag, b.Series.PluginName, []byte(nil), int64(store.DataClassScalar), "", "",
			int64(len(b.Points)), maxStep, maxWall, int64(0), int64(0), int64(0), int64(0), spanner.CommitTimestamp}))
	if _, err := client.Apply(t.Context(), append(ms, points...)); err != nil {
		t.Fatal(err)
	}
}

// legacyRows counts the ScalarPoints rows left.
func legacyRows(t *testing.T, client *spanner.Client) int64 {
	t.Helper()
	var n int64
	err := client.Single().Query(t.Context(), spanner.Statement{SQL: "SELECT COUNT(*) FROM ScalarPoints"}).Do(func(r *spanner.Row) error { return r.Column(0, &n) })
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// Series written in the old layout read the same before and after a write
// converts one and MigrateScalarChunks the others, and as the same points
// written in chunks; an interrupted migration resumes with what is left.
func TestLegacyScalarsConvert(t *testing.T) {
	ctx := t.Context()
	db := spanneremu.NewDatabase(t)
	s := db.Store(t)
	legacy, chunked := newExperiment(t, s), store.NewExperimentID()
	if err := s.CreateExperiment(ctx, store.Experiment{ID: chunked, Owner: "u", Visibility: store.VisibilityPrivate}); err != nil {
		t.Fatal(err)
	}
	// The final state of each series of scalarWrites up to step 1,500 (the
	// emulator is slow on rows: a few thousand per second), written whole.
	final := map[[2]string]map[int64]store.ScalarPoint{}
	var order [][2]string
	for _, batch := range scalarWrites() {
		for _, b := range batch {
			k := [2]string{b.Series.Run, b.Series.Tag}
			if final[k] == nil {
				final[k] = map[int64]store.ScalarPoint{}
				order = append(order, k)
			}
			for _, p := range b.Points {
				if p.Step < 1_500 {
					final[k][p.Step] = p
				}
			}
		}
	}
	var runs []string
	for i := range 2 {
		runs = append(runs, fmt.Sprintf("old%d", i))
	}
	for _, run := range runs {
		for _, k := range order {
			var ps []store.ScalarPoint
			for _, p := range final[k] {
				ps = append(ps, p)
			}
			b := store.ScalarSeries{Series: store.TimeSeries{Run: run + k[0], Tag: k[1], PluginName: "scalars"}, Points: ps}
			writeLegacyScalars(t, db.Client, legacy, b)
			if err := s.WriteScalars(ctx, chunked, []store.ScalarSeries{b}); err != nil {
				t.Fatal(err)
			}
		}
	}
	check := func(stage string) {
		t.Helper()
		for name, q := range scalarQueries() {
			sameAnswers(t, stage+", "+name, readAll(t, s, legacy, q), readAll(t, s, chunked, q))
		}
	}
	check("legacy layout")

	// A write to a legacy series converts it: its rows go.
	before := legacyRows(t, db.Client)
	more := store.ScalarSeries{Series: store.TimeSeries{Run: runs[0] + "a", Tag: "loss", PluginName: "scalars"},
		Points: []store.ScalarPoint{{Step: 50, WallTime: 1, Value: 7}, {Step: 30_000, WallTime: 2, Value: 8}}}
	for _, eid := range []string{legacy, chunked} {
		if err := s.WriteScalars(ctx, eid, []store.ScalarSeries{more}); err != nil {
			t.Fatal(err)
		}
	}
	if after := legacyRows(t, db.Client); after != before-int64(len(final[[2]string{"a", "loss"}])) {
		t.Errorf("after a write to one legacy series %d ScalarPoints rows, want %d", after, before-int64(len(final[[2]string{"a", "loss"}])))
	}
	check("one series converted by a write")

	// A migration stopped after two series, then resumed.
	stop, cancel := context.WithCancel(ctx)
	var seen []spannerstore.ConversionProgress
	err := s.MigrateScalarChunks(stop, func(p spannerstore.ConversionProgress) {
		seen = append(seen, p)
		if p.Series == 2 {
			cancel()
		}
	})
	if !errors.Is(err, context.Canceled) || len(seen) != 2 {
		t.Fatalf("interrupted migration: err %v after %d series, want context.Canceled after 2", err, len(seen))
	}
	total := int64(len(runs)*len(order) - 1)
	if seen[0].TotalSeries != total {
		t.Errorf("first migration found %d series to convert, want %d", seen[0].TotalSeries, total)
	}
	check("two series migrated")
	var resumed []spannerstore.ConversionProgress
	if err := s.MigrateScalarChunks(ctx, func(p spannerstore.ConversionProgress) { resumed = append(resumed, p) }); err != nil {
		t.Fatal(err)
	}
	if len(resumed) == 0 || resumed[0].TotalSeries != total-2 || resumed[len(resumed)-1].Series != total-2 ||
		resumed[len(resumed)-1].Points != resumed[len(resumed)-1].TotalPoints {
		t.Errorf("resumed migration: progress %+v, want %d series to the end", resumed, total-2)
	}
	if n := legacyRows(t, db.Client); n != 0 {
		t.Errorf("%d ScalarPoints rows left after the migration", n)
	}
	check("migrated")
	if err := s.MigrateScalarChunks(ctx, func(p spannerstore.ConversionProgress) { t.Errorf("a third migration converted %+v", p) }); err != nil {
		t.Fatal(err)
	}
}

// A step window whose ends fall where the steps before them are much
// sparser than the series' mean (the chunk holding the end starts further
// back than a read sized by the mean reaches) reads as the embedded store
// does, in every read mode; so does a window starting before the series.
func TestStepWindowsInSparseSteps(t *testing.T) {
	ctx := t.Context()
	sp, _, eid := countedStore(t)
	lite, leid := embeddedStore(t)
	// 100,000 dense steps, then 2,000 steps 1,000 apart: the mean is
	// about 21 steps per point, the sparse chunks span about a million.
	var points []store.ScalarPoint
	for st := range int64(100_000) {
		points = append(points, store.ScalarPoint{Step: st, WallTime: 1.7e9 + float64(st), Value: math.Sin(float64(st) / 50)})
	}
	for i := range int64(2_000) {
		st := 100_000 + 1_000*i
		points = append(points, store.ScalarPoint{Step: st, WallTime: 1.7e9 + float64(st), Value: float64(i)})
	}
	ts := store.TimeSeries{Run: "r", Tag: "x", PluginName: "scalars"}
	for from := 0; from < len(points); from += 20_000 {
		batch := []store.ScalarSeries{{Series: ts, Points: points[from:min(len(points), from+20_000)]}}
		for s, e := range map[store.Store]string{sp: eid, lite: leid} {
			if err := s.WriteScalars(ctx, e, batch); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, w := range []struct{ min, max int64 }{{1_500_500, 1_600_000}, {1_500_500, 1_500_900}, {50_000, 1_700_321}, {-5, 40}, {2_000_000, 3_000_000}} {
		// k = 20,000 and 30,000 of [50,000, 1,700,321] rank every point
		// of the window (51,600; 80,000 estimated from the mean density).
		for _, k := range []int64{store.AllPoints, 1, 10, 1000, 20_000, 30_000} {
			q := store.Query{MinStep: ptr(w.min), MaxStep: ptr(w.max), MaxPoints: k}
			sameAnswers(t, fmt.Sprintf("window [%d, %d], k=%d", w.min, w.max, k), readAll(t, sp, eid, q), readAll(t, lite, leid, q))
		}
		q := store.Query{MaxStep: ptr(w.max), MaxPoints: 1}
		sameAnswers(t, fmt.Sprintf("up to %d, latest", w.max), readAll(t, sp, eid, q), readAll(t, lite, leid, q))
	}
}
