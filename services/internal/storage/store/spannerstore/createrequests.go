package spannerstore

import (
	"context"
	"fmt"
	"time"

	"cloud.google.com/go/spanner"
	"google.golang.org/grpc/codes"

	"github.com/tbhub/tbhub/services/internal/storage/store"
)

// CreateExperimentOnce implements store.Writer: the record is read and,
// if absent or expired, written with the experiment in one transaction,
// so two instances serving the same request concurrently create one
// experiment (the second transaction aborts, retries and reads the first's
// record).
func (s *Store) CreateExperimentOnce(ctx context.Context, e store.Experiment, req store.CreateRequest) (string, error) {
	s, release := s.acquire()
	defer release()
	if err := req.Validate(); err != nil {
		return "", fail("CreateExperimentOnce", err)
	}
	if err := store.ValidateNewExperiment(e); err != nil {
		return "", fail("CreateExperimentOnce", err)
	}
	var eid string
	_, err := s.client.ReadWriteTransaction(ctx, func(ctx context.Context, tx *spanner.ReadWriteTransaction) error {
		var found bool
		var err error
		eid, found, err = createdBy(ctx, tx, e.Owner, req.ID, req.Now)
		if err != nil || found {
			return err
		}
		eid = e.ID
		if err := insertExperiment(ctx, tx, e); err != nil {
			return err
		}
		return tx.BufferWrite([]*spanner.Mutation{spanner.InsertOrUpdate("CreateRequests",
			[]string{"UserId", "RequestId", "ExperimentId", "ExpireTime"},
			[]any{e.Owner, req.ID, e.ID, req.Expire})})
	})
	if err != nil {
		return "", fail("CreateExperimentOnce", err)
	}
	return eid, nil
}

// CreatedBy implements store.Writer.
func (s *Store) CreatedBy(ctx context.Context, userID, requestID string, now time.Time) (string, error) {
	s, release := s.acquire()
	defer release()
	tx := s.client.Single()
	defer tx.Close()
	eid, found, err := createdBy(ctx, tx, userID, requestID, now)
	if err == nil && !found {
		err = fmt.Errorf("create request %q of user %q: %w", requestID, userID, store.ErrNotFound)
	}
	if err != nil {
		return "", fail("CreatedBy", err)
	}
	return eid, nil
}

// createdBy reads the experiment a create request record names, if the
// record is live at now.
func createdBy(ctx context.Context, tx interface {
	ReadRow(context.Context, string, spanner.Key, []string) (*spanner.Row, error)
}, userID, requestID string, now time.Time) (string, bool, error) {
	row, err := tx.ReadRow(ctx, "CreateRequests", spanner.Key{userID, requestID}, []string{"ExperimentId", "ExpireTime"})
	if spanner.ErrCode(err) == codes.NotFound {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	var eid string
	var expire time.Time
	if err := row.Columns(&eid, &expire); err != nil {
		return "", false, err
	}
	if !expire.After(now) {
		return "", false, nil
	}
	return eid, true, nil
}

// DeleteExpiredCreateRequests implements store.Sweeper.
func (s *Store) DeleteExpiredCreateRequests(ctx context.Context, now time.Time, limit int) (int, error) {
	s, release := s.acquire()
	defer release()
	var n int
	_, err := s.client.ReadWriteTransaction(ctx, func(ctx context.Context, tx *spanner.ReadWriteTransaction) error {
		var dels []*spanner.Mutation
		err := tx.Query(ctx, spanner.Statement{
			SQL: `SELECT UserId, RequestId FROM CreateRequests@{FORCE_INDEX=CreateRequestsByExpiry}
				WHERE ExpireTime <= @now ORDER BY ExpireTime LIMIT @limit`,
			Params: map[string]any{"now": now, "limit": int64(limit)},
		}).Do(func(row *spanner.Row) error {
			var user, req string
			if err := row.Columns(&user, &req); err != nil {
				return err
			}
			dels = append(dels, spanner.Delete("CreateRequests", spanner.Key{user, req}))
			return nil
		})
		if err != nil {
			return err
		}
		n = len(dels)
		return tx.BufferWrite(dels)
	})
	if err != nil {
		return 0, fail("DeleteExpiredCreateRequests", err)
	}
	return n, nil
}
