package spannerstore_test

import (
	"slices"
	"testing"

	"cloud.google.com/go/spanner"

	"github.com/tbhub/tbhub/services/internal/storage/downsample"
	"github.com/tbhub/tbhub/services/internal/storage/store"
	"github.com/tbhub/tbhub/services/internal/storage/store/spannerstore"
	"github.com/tbhub/tbhub/services/internal/testenv/spanneremu"
)

// A bucketed read on Spanner reads a series' window exactly up to
// Options.MaxBucketedPoints; a series whose window holds more is answered
// from a sampled read instead of failing the card, and its neighbours
// within the bound stay exact.
func TestBucketedReadBound(t *testing.T) {
	db := spanneremu.NewDatabase(t)
	st := spannerstore.New(db.Client, spannerstore.Options{MaxBucketedPoints: 100, SessionClients: []*spanner.Client{}})
	c := t.Context()
	if err := st.CreateUser(c, store.User{ID: "u", Name: "u"}); err != nil {
		t.Fatal(err)
	}
	eid := store.NewExperimentID()
	if err := st.CreateExperiment(c, store.Experiment{ID: eid, Owner: "u", Visibility: store.VisibilityPrivate}); err != nil {
		t.Fatal(err)
	}
	long := store.ScalarSeries{Series: store.TimeSeries{Run: "r", Tag: "x", DataClass: store.DataClassScalar}}
	for i := range 1000 {
		long.Points = append(long.Points, store.ScalarPoint{Step: int64(i), WallTime: 1, Value: float64(i % 7)})
	}
	short := store.ScalarSeries{Series: store.TimeSeries{Run: "r", Tag: "y", DataClass: store.DataClassScalar}}
	for i := range 60 {
		short.Points = append(short.Points, store.ScalarPoint{Step: int64(i), WallTime: 1, Value: float64(i)})
	}
	// Sparse then dense: a window on its dense end holds more points than
	// its step span suggests.
	dense := store.ScalarSeries{Series: store.TimeSeries{Run: "r", Tag: "z", DataClass: store.DataClassScalar}}
	for i := range 10 {
		dense.Points = append(dense.Points, store.ScalarPoint{Step: int64(i), WallTime: 1, Value: 1})
	}
	for i := range 200 {
		dense.Points = append(dense.Points, store.ScalarPoint{Step: 10_000 + int64(i), WallTime: 1, Value: float64(i)})
	}
	if err := st.WriteScalars(c, eid, []store.ScalarSeries{long, short, dense}); err != nil {
		t.Fatal(err)
	}
	read := func(q store.Query) map[string][]store.ScalarPoint {
		t.Helper()
		got := map[string][]store.ScalarPoint{}
		err := st.ReadScalars(c, eid, q, func(ts *store.TimeSeries, ps []store.ScalarPoint) error {
			got[ts.Tag] = append(got[ts.Tag], ps...)
			return nil
		})
		if err != nil {
			t.Fatalf("ReadScalars(%+v): %v", q, err)
		}
		return got
	}
	got := read(store.Query{Buckets: 10})
	// The long series: a sampled answer, at most five real points per
	// bucket, ascending, ending at the latest point.
	ps := got["x"]
	if len(ps) == 0 || len(ps) > 50 {
		t.Fatalf("1000 points past a bound of 100 in 10 buckets: %d points, want 1..50", len(ps))
	}
	for i, p := range ps {
		if p != long.Points[p.Step] || (i > 0 && p.Step <= ps[i-1].Step) {
			t.Fatalf("point %d = %+v: not a stored point in step order", i, p)
		}
	}
	if last := ps[len(ps)-1]; last.Step != 999 {
		t.Errorf("last point step %d, want the latest, 999", last.Step)
	}
	// The short one: exact.
	if want := downsample.BucketPoints(short.Points, 10); !slices.Equal(got["y"], want) {
		t.Errorf("short series: %v, want %v", got["y"], want)
	}
	lo := int64(950)
	got = read(store.Query{Buckets: 100, MinStep: &lo})
	if want := downsample.BucketPoints(long.Points[950:], 100); !slices.Equal(got["x"], want) {
		t.Errorf("50 points in 100 buckets: %v, want all 50", got["x"])
	}
	lo = 10_000
	got = read(store.Query{Buckets: 10, MinStep: &lo})
	if ps := got["z"]; len(ps) == 0 || len(ps) > 50 || ps[0].Step < lo || ps[len(ps)-1].Step != 10_199 {
		t.Errorf("200 dense points past a bound of 100: %v, want 1..50 points of the window ending at 10199", ps)
	}
}
