package spannerstore_test

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"testing"

	"cloud.google.com/go/spanner"

	"github.com/tbhub/tbhub/services/internal/storage/store"
	"github.com/tbhub/tbhub/services/internal/storage/store/spannerstore"
	"github.com/tbhub/tbhub/services/internal/storage/store/sqlitestore"
)

func bitsEqual(a, b store.ScalarPoint) bool {
	return a.Step == b.Step && math.Float64bits(a.WallTime) == math.Float64bits(b.WallTime) && math.Float64bits(a.Value) == math.Float64bits(b.Value)
}

// Long series appended on Spanner keep the embedded store's summaries: a
// bucketed read of many points per bucket gives the embedded store's
// answer, in at most 4 Spanner calls; a write of earlier steps drops the
// series' summaries and its reads are exact.
func TestSummaryBuckets(t *testing.T) {
	sp, calls, commits, eid := countingStore(t)
	ctx := t.Context()
	lite, leid := embeddedStore(t)

	const n = 50_000
	all := map[string][]store.ScalarPoint{}
	for _, tag := range []string{"x", "y"} {
		for i := range int64(n) {
			v := math.Sin(float64(i) / 1000)
			switch {
			case tag == "x" && i == 31_337:
				v = 1e9
			case tag == "y" && i == 7_777:
				v = math.NaN()
			}
			all[tag] = append(all[tag], store.ScalarPoint{Step: 2 * i, WallTime: float64(i), Value: v})
		}
	}
	for from := 0; from < n; from += 3000 {
		var batch []store.ScalarSeries
		for _, tag := range []string{"x", "y"} {
			batch = append(batch, store.ScalarSeries{Series: store.TimeSeries{Run: "r", Tag: tag, PluginName: "scalars"}, Points: all[tag][from:min(n, from+3000)]})
		}
		for _, s := range []store.Store{sp, lite} {
			e := eid
			if s == store.Store(lite) {
				e = leid
			}
			if err := s.WriteScalars(ctx, e, batch); err != nil {
				t.Fatal(err)
			}
		}
	}
	read := func(s store.Store, e string, q store.Query) map[string][]store.ScalarPoint {
		t.Helper()
		got := map[string][]store.ScalarPoint{}
		err := s.ReadScalars(ctx, e, q, func(ts *store.TimeSeries, ps []store.ScalarPoint) error {
			got[ts.Tag] = append(got[ts.Tag], ps...)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	var rows int64
	err := commits.client.Single().Query(ctx, spanner.Statement{
		SQL:    "SELECT COUNT(*) FROM ScalarChunks WHERE ExperimentId = @eid AND SampleLevel < -1",
		Params: map[string]any{"eid": eid},
	}).Do(func(r *spanner.Row) error { return r.Columns(&rows) })
	if err != nil {
		t.Fatal(err)
	}
	if rows == 0 {
		t.Fatal("no summary rows on Spanner after 50,000 points per series")
	}
	windows := []struct{ min, max *int64 }{{nil, nil}, {ptr(int64(777)), ptr(int64(90_001))}, {ptr(int64(20_000)), ptr(int64(80_000))}}
	for _, w := range windows {
		for _, b := range []int{1, 7, 40, 100} {
			q := store.Query{MinStep: w.min, MaxStep: w.max, Buckets: b}
			what := fmt.Sprintf("window [%v, %v], %d buckets", show(w.min), show(w.max), b)
			calls.take()
			got := read(sp, eid, q)
			byCall := calls.String()
			if _, total := calls.take(); total > 4 {
				t.Errorf("%s: %d Spanner calls (%s), want at most 4", what, total, byCall)
			}
			want := read(lite, leid, q)
			for _, tag := range []string{"x", "y"} {
				if !slices.EqualFunc(got[tag], want[tag], bitsEqual) {
					t.Errorf("%s, series %s: Spanner %d points, the embedded store %d", what, tag, len(got[tag]), len(want[tag]))
				}
			}
		}
	}
	// Writes of earlier steps (a rewrite, new steps between stored ones,
	// a spike far from the end) update the summaries as the embedded
	// store's.
	for _, rewrite := range [][]store.ScalarPoint{
		{{Step: 101, WallTime: 5, Value: -3}, {Step: 5000, WallTime: 5, Value: 7}},
		{{Step: 33_333, WallTime: 6, Value: 2e9}, {Step: 60_000, WallTime: 6, Value: math.Inf(1)}},
		{{Step: 99_990, WallTime: 7, Value: -2e9}, {Step: 99_999, WallTime: 7, Value: 0}},
	} {
		batch := []store.ScalarSeries{{Series: store.TimeSeries{Run: "r", Tag: "x"}, Points: rewrite}}
		if err := sp.WriteScalars(ctx, eid, batch); err != nil {
			t.Fatal(err)
		}
		if err := lite.WriteScalars(ctx, leid, batch); err != nil {
			t.Fatal(err)
		}
		for _, w := range windows {
			for _, b := range []int{1, 7, 40} {
				q := store.Query{MinStep: w.min, MaxStep: w.max, Buckets: b, Filter: store.Filter{Tags: []string{"x"}}}
				if got, want := read(sp, eid, q)["x"], read(lite, leid, q)["x"]; !slices.EqualFunc(got, want, bitsEqual) {
					t.Errorf("after writing %v, window [%v, %v], %d buckets: Spanner %v, the embedded store %v", rewrite, show(w.min), show(w.max), b, got, want)
				}
			}
		}
	}
}

func show(p *int64) any {
	if p == nil {
		return "-"
	}
	return *p
}

// A series whose summaries a write dropped gets them back from
// SummarizeScalars, one series per transaction with progress, as the
// embedded store builds them for the same points written at once; a
// rerun finds nothing left.
func TestSummarizeScalars(t *testing.T) {
	sp, _, commits, eid := countingStore(t)
	ctx := t.Context()
	ts := store.TimeSeries{Run: "r", Tag: "x", PluginName: "scalars"}
	var points []store.ScalarPoint
	for i := range int64(40_000) {
		points = append(points, store.ScalarPoint{Step: i, WallTime: float64(i), Value: math.Cos(float64(i) / 300)})
	}
	points[12_345].Value = -1e6
	for from := 0; from < len(points); from += 5000 {
		if err := sp.WriteScalars(ctx, eid, []store.ScalarSeries{{Series: ts, Points: points[from : from+5000]}}); err != nil {
			t.Fatal(err)
		}
	}
	// A step before the first: the write drops the summaries.
	early := store.ScalarPoint{Step: -5, WallTime: 9, Value: 1e6}
	if err := sp.WriteScalars(ctx, eid, []store.ScalarSeries{{Series: ts, Points: []store.ScalarPoint{early}}}); err != nil {
		t.Fatal(err)
	}
	points = append([]store.ScalarPoint{early}, points...)
	summaryRows := func() int64 {
		var n int64
		err := commits.client.Single().Query(ctx, spanner.Statement{
			SQL:    "SELECT COUNT(*) FROM ScalarChunks WHERE ExperimentId = @eid AND SampleLevel < -1",
			Params: map[string]any{"eid": eid},
		}).Do(func(r *spanner.Row) error { return r.Columns(&n) })
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := summaryRows(); n != 0 {
		t.Fatalf("%d summary rows after a rewrite, want them dropped", n)
	}
	var seen []spannerstore.ConversionProgress
	if err := sp.SummarizeScalars(ctx, func(p spannerstore.ConversionProgress) { seen = append(seen, p) }); err != nil {
		t.Fatal(err)
	}
	if want := []spannerstore.ConversionProgress{{Series: 1, TotalSeries: 1, Points: 40_001, TotalPoints: 40_001}}; !slices.Equal(seen, want) {
		t.Errorf("progress %v, want %v", seen, want)
	}
	if summaryRows() == 0 {
		t.Fatal("no summary rows after SummarizeScalars")
	}
	seen = nil
	if err := sp.SummarizeScalars(ctx, func(p spannerstore.ConversionProgress) { seen = append(seen, p) }); err != nil || len(seen) != 0 {
		t.Errorf("a rerun: %v, progress %v; want nothing left", err, seen)
	}
	lite, leid := embeddedStore(t)
	if err := lite.WriteScalars(ctx, leid, []store.ScalarSeries{{Series: ts, Points: points}}); err != nil {
		t.Fatal(err)
	}
	for _, b := range []int{1, 10, 100} {
		var got, want []store.ScalarPoint
		for _, r := range []struct {
			s   store.Store
			eid string
			out *[]store.ScalarPoint
		}{{sp, eid, &got}, {lite, leid, &want}} {
			err := r.s.ReadScalars(ctx, r.eid, store.Query{Buckets: b}, func(_ *store.TimeSeries, ps []store.ScalarPoint) error {
				*r.out = append(*r.out, ps...)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		if !slices.EqualFunc(got, want, bitsEqual) {
			t.Errorf("%d buckets: Spanner %v, the embedded store %v", b, got, want)
		}
	}
}

// Where steps are sparse before a zoomed window (or it starts before the
// series), the reads started near the window miss the rows and chunks it
// starts in and read again: the answer is still the embedded store's.
func TestSummaryBucketsSparse(t *testing.T) {
	sp, calls, _, eid := countingStore(t)
	ctx := t.Context()
	lite, leid := embeddedStore(t)
	var points []store.ScalarPoint
	add := func(step int64) {
		points = append(points, store.ScalarPoint{Step: step, WallTime: float64(len(points)), Value: math.Sin(float64(step) / 77)})
	}
	for st := range int64(10_000) {
		add(st)
	}
	for st := int64(10_000); st < 30_000; st += 2000 {
		add(st)
	}
	for st := int64(30_000); st < 70_000; st++ {
		add(st)
	}
	ts := store.TimeSeries{Run: "r", Tag: "x", PluginName: "scalars"}
	for from := 0; from < len(points); from += 4000 {
		batch := []store.ScalarSeries{{Series: ts, Points: points[from:min(len(points), from+4000)]}}
		if err := sp.WriteScalars(ctx, eid, batch); err != nil {
			t.Fatal(err)
		}
		if err := lite.WriteScalars(ctx, leid, batch); err != nil {
			t.Fatal(err)
		}
	}
	for _, w := range []struct{ min, max int64 }{{30_100, 60_000}, {-100, 50_000}, {12_345, 69_000}} {
		for _, b := range []int{1, 7, 40} {
			q := store.Query{MinStep: ptr(w.min), MaxStep: ptr(w.max), Buckets: b}
			var got, want []store.ScalarPoint
			calls.take()
			for _, r := range []struct {
				s   store.Store
				eid string
				out *[]store.ScalarPoint
			}{{sp, eid, &got}, {lite, leid, &want}} {
				err := r.s.ReadScalars(ctx, r.eid, q, func(_ *store.TimeSeries, ps []store.ScalarPoint) error {
					*r.out = append(*r.out, ps...)
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
			}
			if !slices.EqualFunc(got, want, bitsEqual) {
				t.Errorf("window [%d, %d], %d buckets: Spanner %v, the embedded store %v", w.min, w.max, b, got, want)
			}
			t.Logf("window [%d, %d], %d buckets: %s", w.min, w.max, b, calls)
		}
	}
}

// embeddedStore is an embedded store in a temporary folder, closed at the
// test's end, and an experiment in it: the reference a Spanner answer is
// compared with.
func embeddedStore(t *testing.T) (*sqlitestore.Store, string) {
	lite, err := sqlitestore.Open(t.Context(), filepath.Join(t.TempDir(), "db"), sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lite.Close() })
	return lite, newExperiment(t, lite)
}
