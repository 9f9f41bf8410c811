package store

import (
	"context"
	"fmt"
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
