package spannerstore_test

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"testing"

	"cloud.google.com/go/spanner"

	"github.com/tbhub/tbhub/services/internal/downsample"
	"github.com/tbhub/tbhub/services/internal/store"
	"github.com/tbhub/tbhub/services/internal/store/sqlitestore"
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
	lite, err := sqlitestore.Open(ctx, filepath.Join(t.TempDir(), "db"), sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer lite.Close()
	leid := newExperiment(t, lite)

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
	err = commits.client.Single().Query(ctx, spanner.Statement{
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
	// A rewrite of earlier steps: exact answers.
	rewrite := []store.ScalarPoint{{Step: 101, WallTime: 5, Value: -3}, {Step: 5000, WallTime: 5, Value: 7}}
	if err := sp.WriteScalars(ctx, eid, []store.ScalarSeries{{Series: store.TimeSeries{Run: "r", Tag: "x"}, Points: rewrite}}); err != nil {
		t.Fatal(err)
	}
	model := map[int64]store.ScalarPoint{}
	for _, p := range append(slices.Clone(all["x"]), rewrite...) {
		model[p.Step] = p
	}
	var points []store.ScalarPoint
	for _, p := range model {
		points = append(points, p)
	}
	slices.SortFunc(points, func(a, b store.ScalarPoint) int { return int(a.Step - b.Step) })
	got := read(sp, eid, store.Query{Buckets: 10, Filter: store.Filter{Tags: []string{"x"}}})
	if want := downsample.BucketPoints(points, 10); !slices.EqualFunc(got["x"], want, bitsEqual) {
		t.Errorf("after a rewrite: %v, want %v", got["x"], want)
	}
}

func show(p *int64) any {
	if p == nil {
		return "-"
	}
	return *p
}
