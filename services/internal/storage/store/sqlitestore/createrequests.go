package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/tbhub/tbhub/services/internal/storage/store"
)

// CreateExperimentOnce implements store.Writer.
func (s *Store) CreateExperimentOnce(ctx context.Context, e store.Experiment, req store.CreateRequest) (string, error) {
	if err := req.Validate(); err != nil {
		return "", fmt.Errorf("sqlitestore.CreateExperimentOnce: %w", err)
	}
	if err := store.ValidateNewExperiment(e); err != nil {
		return "", fmt.Errorf("sqlitestore.CreateExperimentOnce: %w", err)
	}
	var eid string
	err := s.write(ctx, func(tx *sql.Tx) error {
		var err error
		eid, err = createdBy(ctx, tx, e.Owner, req.ID, req.Now)
		if err == nil || !errors.Is(err, store.ErrNotFound) {
			return err
		}
		eid = e.ID
		if err := s.insertExperiment(ctx, tx, e); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `INSERT OR REPLACE INTO create_requests (user_id, request_id, experiment_id, expire_time)
			VALUES (?, ?, ?, ?)`, e.Owner, req.ID, e.ID, nanos(req.Expire))
		return err
	})
	if err != nil {
		return "", fmt.Errorf("sqlitestore.CreateExperimentOnce: %w", err)
	}
	return eid, nil
}

// CreatedBy implements store.Writer.
func (s *Store) CreatedBy(ctx context.Context, userID, requestID string, now time.Time) (string, error) {
	var eid string
	err := s.read(ctx, func(tx *sql.Tx) error {
		var err error
		eid, err = createdBy(ctx, tx, userID, requestID, now)
		return err
	})
	if err != nil {
		return "", fmt.Errorf("sqlitestore.CreatedBy: %w", err)
	}
	return eid, nil
}

// createdBy reads the experiment a live create request record names.
func createdBy(ctx context.Context, tx *sql.Tx, userID, requestID string, now time.Time) (string, error) {
	var eid string
	err := tx.QueryRowContext(ctx, "SELECT experiment_id FROM create_requests WHERE user_id = ? AND request_id = ? AND expire_time > ?",
		userID, requestID, nanos(now)).Scan(&eid)
	if errors.Is(err, sql.ErrNoRows) {
		return "", fmt.Errorf("create request %q of user %q: %w", requestID, userID, store.ErrNotFound)
	}
	return eid, err
}

// DeleteExpiredCreateRequests implements store.Sweeper.
func (s *Store) DeleteExpiredCreateRequests(ctx context.Context, now time.Time, limit int) (int, error) {
	var n int64
	err := s.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM create_requests WHERE rowid IN
			(SELECT rowid FROM create_requests WHERE expire_time <= ? ORDER BY expire_time LIMIT ?)`, nanos(now), limit)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("sqlitestore.DeleteExpiredCreateRequests: %w", err)
	}
	return int(n), nil
}
