package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/tbhub/tbhub/services/internal/storage/store"
)

var _ store.AccessReader = (*Store)(nil)

// GetExperimentAccess implements store.AccessReader: two point reads.
func (s *Store) GetExperimentAccess(ctx context.Context, eid string) (store.Experiment, error) {
	var e store.Experiment
	err := s.read(ctx, func(tx *sql.Tx) error {
		var err error
		e, err = scanExperiment(tx.QueryRowContext(ctx,
			"SELECT "+experimentColumns+" FROM experiments WHERE id = ? AND deleted = 0", eid))
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("experiment %q: %w", eid, store.ErrNotFound)
		}
		if err != nil {
			return err
		}
		e.Readers, err = queryStrings(ctx, tx, "SELECT user_id FROM read_grants WHERE experiment_id = ? ORDER BY user_id", eid)
		return err
	})
	if err != nil {
		return store.Experiment{}, fmt.Errorf("sqlitestore.GetExperimentAccess: %w", err)
	}
	return e, nil
}
