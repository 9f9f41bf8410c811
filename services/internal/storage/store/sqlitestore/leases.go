package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/tbhub/tbhub/services/internal/storage/store"
)

// TakeLease implements store.Sweeper.
func (s *Store) TakeLease(ctx context.Context, name, holder string, now time.Time, ttl time.Duration) (bool, error) {
	if err := store.ValidateLease(name, holder, ttl); err != nil {
		return false, fmt.Errorf("sqlitestore.TakeLease: %w", err)
	}
	held := false
	err := s.write(ctx, func(tx *sql.Tx) error {
		var owner string
		var expire int64
		err := tx.QueryRowContext(ctx, "SELECT holder, expire_time FROM leases WHERE name = ?", name).Scan(&owner, &expire)
		switch {
		case errors.Is(err, sql.ErrNoRows):
		case err != nil:
			return err
		case owner != holder && expire > nanos(now):
			held = false
			return nil
		}
		held = true
		_, err = tx.ExecContext(ctx, "INSERT OR REPLACE INTO leases (name, holder, expire_time) VALUES (?, ?, ?)",
			name, holder, nanos(now.Add(ttl)))
		return err
	})
	if err != nil {
		return false, fmt.Errorf("sqlitestore.TakeLease %q: %w", name, err)
	}
	return held, nil
}

// ReleaseLease implements store.Sweeper.
func (s *Store) ReleaseLease(ctx context.Context, name, holder string) error {
	err := s.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, "DELETE FROM leases WHERE name = ? AND holder = ?", name, holder)
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlitestore.ReleaseLease %q: %w", name, err)
	}
	return nil
}
