package store

import (
	"context"
	"fmt"
	"time"
)

// Sweep finishes the deletion of up to limit deleted experiments and returns
// how many it purged. For each it deletes every blob object named by a blob
// row, through deleteObject (which must treat a missing object as success),
// and then the rows: the reverse of the write order, so an interrupted sweep
// leaves rows that point at objects that may be gone, never objects that no
// row names. Running it again resumes.
func Sweep(ctx context.Context, s Sweeper, deleteObject func(ctx context.Context, key string) error, limit int) (int, error) {
	eids, err := s.ListDeletedExperiments(ctx, limit)
	if err != nil {
		return 0, fmt.Errorf("store.Sweep: %w", err)
	}
	for i, eid := range eids {
		err := s.ListObjectKeys(ctx, eid, func(key string) error {
			return deleteObject(ctx, key)
		})
		if err != nil {
			return i, fmt.Errorf("store.Sweep: objects of %s: %w", eid, err)
		}
		if err := s.PurgeExperiment(ctx, eid); err != nil {
			return i, fmt.Errorf("store.Sweep: rows of %s: %w", eid, err)
		}
	}
	return len(eids), nil
}

// SweepAbandonedBlobs removes up to limit unfinished blobs whose row was
// last written before the given time: uploads started and never finished,
// whose client is gone. It returns how many it removed. For each, the row
// goes first, and only if it is still unfinished and still that old
// (DeleteAbandonedBlob), then the object through deleteObject (which must
// treat a missing object as success, and should leave an object of another
// generation than the row's). So a blob a stream resumed since it
// was listed keeps its row and object; an interrupted sweep leaves at
// worst an object no row names, which the experiment's purge removes with
// its key prefix.
//
// claim, if not nil, is asked first for each blob and may refuse it (a
// stream of this process is writing it; the blob is skipped); a claim
// granted is released once the object is deleted, so that no stream of
// this process starts on the blob in between.
//
// The caller picks a time far enough back that no stream of another
// process can still be writing a blob whose row was written before it: a
// stream that resumes a blob rewrites its row when it starts (package
// writer), and a stream lasts at most the blob stream timeout.
func SweepAbandonedBlobs(ctx context.Context, s Sweeper, deleteObject func(ctx context.Context, b AbandonedBlob) error,
	claim func(AbandonedBlob) (release func(), ok bool), before time.Time, limit int) (int, error) {
	blobs, err := s.ListAbandonedBlobs(ctx, before, limit)
	if err != nil {
		return 0, fmt.Errorf("store.SweepAbandonedBlobs: %w", err)
	}
	n := 0
	for _, b := range blobs {
		removed, err := removeAbandonedBlob(ctx, s, deleteObject, claim, b, before)
		if err != nil {
			return n, fmt.Errorf("store.SweepAbandonedBlobs: %w", err)
		}
		if removed {
			n++
		}
	}
	return n, nil
}

func removeAbandonedBlob(ctx context.Context, s Sweeper, deleteObject func(ctx context.Context, b AbandonedBlob) error,
	claim func(AbandonedBlob) (release func(), ok bool), b AbandonedBlob, before time.Time) (bool, error) {
	if claim != nil {
		release, ok := claim(b)
		if !ok {
			return false, nil
		}
		defer release()
	}
	deleted, err := s.DeleteAbandonedBlob(ctx, b.Experiment, b.Ref, before)
	if err != nil || !deleted {
		return false, err
	}
	if err := deleteObject(ctx, b); err != nil {
		return false, fmt.Errorf("object %s: %w", b.ObjectKey, err)
	}
	return true, nil
}
