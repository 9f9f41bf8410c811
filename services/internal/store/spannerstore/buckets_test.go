package spannerstore_test

import (
	"errors"
	"testing"

	"cloud.google.com/go/spanner"

	"github.com/tbhub/tbhub/services/internal/store"
	"github.com/tbhub/tbhub/services/internal/store/spannerstore"
	"github.com/tbhub/tbhub/services/internal/testenv/spanneremu"
)

// A bucketed read on Spanner reads the window's points: past
// Options.MaxBucketedPoints it is refused with ErrFailedPrecondition; a
// window within the bound is answered.
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
	b := store.ScalarSeries{Series: store.TimeSeries{Run: "r", Tag: "x", DataClass: store.DataClassScalar}}
	for i := range 150 {
		b.Points = append(b.Points, store.ScalarPoint{Step: int64(i), WallTime: 1, Value: float64(i)})
	}
	if err := st.WriteScalars(c, eid, []store.ScalarSeries{b}); err != nil {
		t.Fatal(err)
	}
	count := func(q store.Query) (int, error) {
		n := 0
		err := st.ReadScalars(c, eid, q, func(_ *store.TimeSeries, ps []store.ScalarPoint) error {
			n += len(ps)
			return nil
		})
		return n, err
	}
	if _, err := count(store.Query{Buckets: 10}); !errors.Is(err, store.ErrFailedPrecondition) {
		t.Errorf("150 points with a bound of 100: %v, want ErrFailedPrecondition", err)
	}
	lo := int64(100)
	if n, err := count(store.Query{Buckets: 100, MinStep: &lo}); err != nil || n != 50 {
		t.Errorf("50 points in 100 buckets: %d points, %v; want all 50", n, err)
	}
}
