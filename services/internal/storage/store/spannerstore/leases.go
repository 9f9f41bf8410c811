package spannerstore

import (
	"context"
	"fmt"
	"time"

	"cloud.google.com/go/spanner"
	"google.golang.org/grpc/codes"

	"github.com/tbhub/tbhub/services/internal/storage/store"
)

// TakeLease implements store.Sweeper: the row is read and written in one
// read-write transaction, so a racing instance's transaction aborts,
// retries and finds the lease held.
func (s *Store) TakeLease(ctx context.Context, name, holder string, now time.Time, ttl time.Duration) (bool, error) {
	s, release := s.acquire()
	defer release()
	if err := store.ValidateLease(name, holder, ttl); err != nil {
		return false, fail("TakeLease", err)
	}
	var held bool
	_, err := s.client.ReadWriteTransaction(ctx, func(ctx context.Context, tx *spanner.ReadWriteTransaction) error {
		held = false
		row, err := tx.ReadRow(ctx, "Leases", spanner.Key{name}, []string{"Holder", "ExpireTime"})
		if err != nil && spanner.ErrCode(err) != codes.NotFound {
			return err
		}
		if err == nil {
			var owner string
			var expire time.Time
			if err := row.Columns(&owner, &expire); err != nil {
				return err
			}
			if owner != holder && expire.After(now) {
				return nil
			}
		}
		held = true
		return tx.BufferWrite([]*spanner.Mutation{spanner.InsertOrUpdate("Leases",
			[]string{"Name", "Holder", "ExpireTime"}, []any{name, holder, now.Add(ttl)})})
	})
	if err != nil {
		return false, fail("TakeLease", fmt.Errorf("lease %q: %w", name, err))
	}
	return held, nil
}

// ReleaseLease implements store.Sweeper.
func (s *Store) ReleaseLease(ctx context.Context, name, holder string) error {
	s, release := s.acquire()
	defer release()
	_, err := s.client.ReadWriteTransaction(ctx, func(ctx context.Context, tx *spanner.ReadWriteTransaction) error {
		row, err := tx.ReadRow(ctx, "Leases", spanner.Key{name}, []string{"Holder"})
		if spanner.ErrCode(err) == codes.NotFound {
			return nil
		}
		if err != nil {
			return err
		}
		var owner string
		if err := row.Columns(&owner); err != nil || owner != holder {
			return err
		}
		return tx.BufferWrite([]*spanner.Mutation{spanner.Delete("Leases", spanner.Key{name})})
	})
	return fail("ReleaseLease", err)
}
