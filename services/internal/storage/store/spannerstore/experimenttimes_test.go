package spannerstore_test

import (
	"slices"
	"testing"
	"time"

	"cloud.google.com/go/spanner"

	"github.com/tbhub/tbhub/services/internal/storage/store"
	"github.com/tbhub/tbhub/services/internal/storage/store/spannerstore"
	"github.com/tbhub/tbhub/services/internal/testenv/spanneremu"
)

// experimentTimes reads an experiment row's UpdateTime and DataTime.
func experimentTimes(t *testing.T, db *spanneremu.Database, eid string) (update time.Time, data spanner.NullTime) {
	t.Helper()
	row, err := db.Client.Single().ReadRow(t.Context(), "Experiments", spanner.Key{eid}, []string{"UpdateTime", "DataTime"})
	if err != nil {
		t.Fatal(err)
	}
	if err := row.Columns(&update, &data); err != nil {
		t.Fatal(err)
	}
	return update, data
}

func galleryIDs(t *testing.T, s store.Store) []string {
	t.Helper()
	list, err := s.ListPublicExperiments(t.Context(), store.PublicQuery{Limit: store.MaxPublicPage})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, e := range list {
		ids = append(ids, e.ID)
	}
	return ids
}

// onePoint is a scalar at step of run "r", tag "loss".
func onePoint(step int64) store.ScalarSeries {
	return store.ScalarSeries{Series: store.TimeSeries{Run: "r", Tag: "loss", PluginName: "scalars"},
		Points: []store.ScalarPoint{{Step: step, WallTime: 1, Value: 1}}}
}

func newPublicExperiment(t *testing.T, s store.Store, owner string) string {
	t.Helper()
	eid := store.NewExperimentID()
	if err := s.CreateExperiment(t.Context(), store.Experiment{ID: eid, Owner: owner, Visibility: store.VisibilityPublic}); err != nil {
		t.Fatal(err)
	}
	return eid
}

// Data writes move the experiment row's UpdateTime at most once per
// DataTimeStep, so concurrent writers of one experiment do not all write
// that row; the first data write always moves it, and one after the step
// moves it again.
func TestDataWritesMoveUpdateTimeOncePerStep(t *testing.T) {
	db := spanneremu.NewDatabase(t)
	s := spannerstore.New(db.Client, spannerstore.Options{SessionClients: []*spanner.Client{}, DataTimeStep: time.Hour})
	ctx := t.Context()
	if err := s.CreateUser(ctx, store.User{ID: "u", Name: "u"}); err != nil {
		t.Fatal(err)
	}
	eid := newPublicExperiment(t, s, "u")
	created, data := experimentTimes(t, db, eid)
	if data.Valid {
		t.Fatalf("DataTime of a new experiment = %v, want NULL", data)
	}
	write := func(step int64) {
		t.Helper()
		if err := s.WriteScalars(ctx, eid, []store.ScalarSeries{onePoint(step)}); err != nil {
			t.Fatal(err)
		}
	}
	write(1)
	first, data := experimentTimes(t, db, eid)
	if !data.Valid || !data.Time.Equal(first) || !first.After(created) {
		t.Fatalf("after the first write: UpdateTime %v, DataTime %v; want both the write's time, after creation %v", first, data, created)
	}
	// Within the step (an hour here): the row is not written again.
	for step := int64(2); step < 5; step++ {
		write(step)
	}
	if upd, d := experimentTimes(t, db, eid); !upd.Equal(first) || !d.Time.Equal(first) {
		t.Errorf("writes within the step moved the row: UpdateTime %v, DataTime %v; want %v", upd, d, first)
	}
	// A step later (DataTime set back by an hour): the next write moves it.
	if _, err := db.Client.Apply(ctx, []*spanner.Mutation{spanner.Update("Experiments",
		[]string{"ExperimentId", "DataTime"}, []any{eid, first.Add(-time.Hour)})}); err != nil {
		t.Fatal(err)
	}
	write(5)
	if upd, d := experimentTimes(t, db, eid); !upd.After(first) || !d.Time.Equal(upd) {
		t.Errorf("a write after the step: UpdateTime %v, DataTime %v; want both after %v", upd, d, first)
	}
}

// Experiments whose data was written by a release before DDL 0015 get
// their latest write's time from BackfillExperimentTimes, and the gallery
// sorts them by it.
func TestBackfillExperimentTimes(t *testing.T) {
	db := spanneremu.NewDatabase(t)
	s := db.Store(t)
	ctx := t.Context()
	if err := s.CreateUser(ctx, store.User{ID: "u", Name: "u"}); err != nil {
		t.Fatal(err)
	}
	old := newPublicExperiment(t, s, "u")
	newer := newPublicExperiment(t, s, "u")
	if err := s.WriteScalars(ctx, old, []store.ScalarSeries{onePoint(1)}); err != nil {
		t.Fatal(err)
	}
	// What the release before 0015 left: the write's time on the series only.
	if _, err := db.Client.PartitionedUpdate(ctx, spanner.Statement{
		SQL: "UPDATE Experiments SET UpdateTime = CreateTime, DataTime = NULL WHERE TRUE"}); err != nil {
		t.Fatal(err)
	}
	if got := galleryIDs(t, s); !slices.Equal(got, []string{newer, old}) {
		t.Fatalf("gallery before the backfill = %v, want %v (creation order)", got, []string{newer, old})
	}
	if n, err := s.BackfillExperimentTimes(ctx); err != nil || n != 1 {
		t.Fatalf("BackfillExperimentTimes = %d, %v; want 1 experiment (%s)", n, err, old)
	}
	if got := galleryIDs(t, s); !slices.Equal(got, []string{old, newer}) {
		t.Errorf("gallery after the backfill = %v, want %v (the write first)", got, []string{old, newer})
	}
	row, err := db.Client.Single().ReadRow(ctx, "TimeSeries", spanner.Key{old, "r", "loss"}, []string{"UpdateTime"})
	if err != nil {
		t.Fatal(err)
	}
	var written time.Time
	if err := row.Column(0, &written); err != nil {
		t.Fatal(err)
	}
	if upd, data := experimentTimes(t, db, old); !upd.Equal(written) || !data.Time.Equal(written) {
		t.Errorf("after the backfill: UpdateTime %v, DataTime %v; want the series' %v", upd, data, written)
	}
	if n, err := s.BackfillExperimentTimes(ctx); err != nil || n != 0 {
		t.Fatalf("BackfillExperimentTimes again = %d, %v; want 0", n, err)
	}
	if upd, _ := experimentTimes(t, db, old); !upd.Equal(written) {
		t.Errorf("a second backfill moved UpdateTime to %v, want %v", upd, written)
	}
}
