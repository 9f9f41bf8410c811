package spannerstore_test

import (
	"testing"

	"cloud.google.com/go/spanner"

	"github.com/tbhub/tbhub/services/internal/storage/store"
	"github.com/tbhub/tbhub/services/internal/testenv/spanneremu"
)

// A database made before UserUsage existed (its rows removed here) gets
// each user's experiments and points counted by BackfillUserUsage, deleted experiments
// left out; a rerun skips the users done, and writes after it add to the
// backfilled count.
func TestBackfillUserUsage(t *testing.T) {
	db := spanneremu.NewDatabase(t)
	s := db.Store(t)
	ctx := t.Context()
	for _, id := range []string{"u-ada", "u-bob", "u-cy"} {
		if err := s.CreateUser(ctx, store.User{ID: id, Name: id[2:]}); err != nil {
			t.Fatal(err)
		}
	}
	write := func(owner string, points int) string {
		t.Helper()
		eid := store.NewExperimentID()
		if err := s.CreateExperiment(ctx, store.Experiment{ID: eid, Owner: owner, Visibility: store.VisibilityPrivate}); err != nil {
			t.Fatal(err)
		}
		b := store.ScalarSeries{Series: store.TimeSeries{Run: "r", Tag: "t", PluginName: "scalars", DataClass: store.DataClassScalar}}
		for i := range points {
			b.Points = append(b.Points, store.ScalarPoint{Step: int64(i), WallTime: 1, Value: 1})
		}
		if err := s.WriteScalars(ctx, eid, []store.ScalarSeries{b}); err != nil {
			t.Fatal(err)
		}
		tensors := store.TensorSeries{Series: store.TimeSeries{Run: "r", Tag: "h", PluginName: "histograms", DataClass: store.DataClassTensor},
			Points: []store.TensorPoint{{Step: 1, DType: 1, Tensor: []byte{1}}}}
		if err := s.WriteTensors(ctx, eid, []store.TensorSeries{tensors}); err != nil {
			t.Fatal(err)
		}
		return eid
	}
	write("u-ada", 30)
	write("u-ada", 20)
	gone := write("u-bob", 7)
	write("u-bob", 5)
	if err := s.DeleteExperiment(ctx, gone); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Client.Apply(ctx, []*spanner.Mutation{spanner.Delete("UserUsage", spanner.AllKeys())}); err != nil {
		t.Fatal(err)
	}
	usage := func(user string) store.Usage {
		t.Helper()
		u, err := s.UserUsage(ctx, user)
		if err != nil {
			t.Fatal(err)
		}
		return u
	}
	points := func(user string) int64 { return usage(user).Points }
	experiments := func(user string) int64 { return usage(user).Experiments }
	if got := points("u-ada"); got != 0 {
		t.Fatalf("before the backfill ada has %d points, want 0 (no row)", got)
	}
	// A write before the backfill adds to a row that does not know the
	// older points; the backfill overwrites it with the exact count.
	write("u-ada", 4)
	var calls []int64
	if err := s.BackfillUserUsage(ctx, func(done, total int64) { calls = append(calls, total) }); err != nil {
		t.Fatal(err)
	}
	if len(calls) != 3 {
		t.Errorf("backfill reported %d users, want 3", len(calls))
	}
	for user, want := range map[string]int64{"u-ada": 31 + 21 + 5, "u-bob": 6, "u-cy": 0} {
		if got := points(user); got != want {
			t.Errorf("%s after the backfill: %d points, want %d", user, got, want)
		}
	}
	for user, want := range map[string]int64{"u-ada": 3, "u-bob": 1, "u-cy": 0} {
		if got := experiments(user); got != want {
			t.Errorf("%s after the backfill: %d experiments, want %d", user, got, want)
		}
	}
	calls = nil
	if err := s.BackfillUserUsage(ctx, func(done, total int64) { calls = append(calls, total) }); err != nil {
		t.Fatal(err)
	}
	if len(calls) != 0 {
		t.Errorf("a rerun counted %d users again, want none", len(calls))
	}
	write("u-cy", 9)
	if got, n := points("u-cy"), experiments("u-cy"); got != 10 || n != 1 {
		t.Errorf("cy after a write: %d points in %d experiments, want 10 in 1", got, n)
	}

	// A row backfilled before BlobBytes existed (DDL 0016) gets its blob
	// rows counted by the next backfill, and only that row.
	eid := write("u-ada", 1)
	img := store.TimeSeries{Run: "r", Tag: "img", PluginName: "images"}
	if _, _, err := s.GetOrCreateBlobSequence(ctx, eid, img, 1, 1, 2); err != nil {
		t.Fatal(err)
	}
	for i, b := range []store.Blob{{ObjectKey: "a", Size: 70, State: store.BlobStateCurrent}, {ObjectKey: "b", Size: 30, State: store.BlobStateUnfinalized}} {
		if err := s.PutBlob(ctx, eid, store.BlobRef{Run: "r", Tag: "img", Step: 1, Index: int64(i)}, b); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.Client.Apply(ctx, []*spanner.Mutation{spanner.Update("UserUsage",
		[]string{"UserId", "BlobBytes", "BlobBytesBackfilled"}, []any{"u-ada", nil, nil})}); err != nil {
		t.Fatal(err)
	}
	if got := usage("u-ada").BlobBytes; got != 0 {
		t.Fatalf("ada's blob bytes with a NULL column: %d, want 0", got)
	}
	calls = nil
	if err := s.BackfillUserUsage(ctx, func(done, total int64) { calls = append(calls, total) }); err != nil {
		t.Fatal(err)
	}
	if got := usage("u-ada").BlobBytes; len(calls) != 1 || got != 100 {
		t.Errorf("a backfill after DDL 0016: %d users counted, ada has %d blob bytes; want 1 user, 100 bytes", len(calls), got)
	}
}
