package spannerstore_test

import (
	"testing"
	"time"

	"cloud.google.com/go/spanner"

	"github.com/tbhub/tbhub/services/internal/storage/store"
	"github.com/tbhub/tbhub/services/internal/testenv/spanneremu"
)

// An unfinished blob whose row an older release wrote has no write time
// and is never swept; the statement docs/operations.md ("Upgrade") gives
// stamps it, and it is swept from then on.
func TestStampUnfinishedBlobsOfAnOlderRelease(t *testing.T) {
	db := spanneremu.NewDatabase(t)
	s := db.Store(t)
	ctx := t.Context()
	if err := s.CreateUser(ctx, store.User{ID: "u", Name: "u"}); err != nil {
		t.Fatal(err)
	}
	eid := store.NewExperimentID()
	if err := s.CreateExperiment(ctx, store.Experiment{ID: eid, Owner: "u", Visibility: store.VisibilityPrivate}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.GetOrCreateBlobSequence(ctx, eid, store.TimeSeries{Run: "r", Tag: "img"}, 1, 1, 1); err != nil {
		t.Fatal(err)
	}
	if err := s.PutBlob(ctx, eid, store.BlobRef{Run: "r", Tag: "img", Step: 1}, store.Blob{ObjectKey: "k", Size: 1, State: store.BlobStateUnfinalized}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Client.PartitionedUpdate(ctx, spanner.Statement{SQL: "UPDATE Blobs SET UnfinishedWriteTime = NULL WHERE TRUE"}); err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(time.Hour)
	if got, err := s.ListAbandonedBlobs(ctx, later, 10); err != nil || len(got) != 0 {
		t.Fatalf("a row without a write time: listed %+v, %v; want none", got, err)
	}
	// The statement of docs/operations.md, "Upgrade".
	if _, err := db.Client.PartitionedUpdate(ctx, spanner.Statement{
		SQL: "UPDATE Blobs SET UnfinishedWriteTime = CURRENT_TIMESTAMP()\nWHERE State = 1 AND UnfinishedWriteTime IS NULL"}); err != nil {
		t.Fatal(err)
	}
	if got, err := s.ListAbandonedBlobs(ctx, later, 10); err != nil || len(got) != 1 || got[0].ObjectKey != "k" {
		t.Errorf("after stamping: listed %+v, %v; want the blob", got, err)
	}
}
