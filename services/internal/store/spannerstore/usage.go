package spannerstore

import (
	"context"
	"fmt"

	"cloud.google.com/go/spanner"
	"google.golang.org/grpc/codes"

	"github.com/tbhub/tbhub/services/internal/store"
)

// usedPoints reads the user's UserUsage.Points in tx; 0 if the user has
// no row yet.
func usedPoints(ctx context.Context, tx txReader, userID string) (int64, error) {
	row, err := tx.ReadRow(ctx, "UserUsage", spanner.Key{userID}, []string{"Points"})
	if spanner.ErrCode(err) == codes.NotFound {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	var n int64
	return n, row.Columns(&n)
}

// chargePoints adds n points to the usage of eid's owner in tx, refusing
// (a *store.QuotaError, nothing buffered) if that passes the points quota
// of ctx. The read of the usage row locks it until the commit, so two
// commits of one user, from any instances, serialize on it and each sees
// the other's points: the check is exact. Two reads and one mutation per
// commit, whatever its points.
func chargePoints(ctx context.Context, tx *spanner.ReadWriteTransaction, eid string, n int64) error {
	if n == 0 {
		return nil
	}
	row, err := tx.ReadRow(ctx, "Experiments", spanner.Key{eid}, []string{"OwnerId"})
	if err != nil {
		return err
	}
	var owner string
	if err := row.Columns(&owner); err != nil {
		return err
	}
	used, err := usedPoints(ctx, tx, owner)
	if err != nil {
		return err
	}
	if err := store.CheckPointsQuota(ctx, used, n); err != nil {
		return err
	}
	return tx.BufferWrite([]*spanner.Mutation{spanner.InsertOrUpdate("UserUsage",
		[]string{"UserId", "Points"}, []any{owner, used + n})})
}

// livePointsSQL counts the points of eid's series from their totals, as
// UserUsage.Points counts them: scalars and tensors.
const livePointsSQL = `SELECT COALESCE(SUM(ts.PointCount), 0)
	FROM Experiments e JOIN TimeSeries ts ON ts.ExperimentId = e.ExperimentId
	WHERE e.OwnerId = @user AND e.State = @live AND ts.DataClass IN (1, 2)`

// BackfillUserUsage sets each user's UserUsage.Points from the totals of
// the series of the user's live experiments (the databases made before
// the row existed), one user per read-write transaction, which reads the
// series it sums and so serializes with the user's writes: the count is
// exact however many servers write meanwhile. It is resumable: users
// already backfilled are skipped. progress is called after each user.
func (s *Store) BackfillUserUsage(ctx context.Context, progress func(done, total int64)) error {
	s, release := s.acquire()
	defer release()
	var users []string
	err := s.client.Single().Query(ctx, spanner.Statement{SQL: `SELECT u.UserId FROM Users u
		LEFT JOIN UserUsage uu ON uu.UserId = u.UserId
		WHERE uu.Backfilled IS NULL OR NOT uu.Backfilled ORDER BY u.UserId`}).Do(func(row *spanner.Row) error {
		var id string
		if err := row.Columns(&id); err != nil {
			return err
		}
		users = append(users, id)
		return nil
	})
	if err != nil {
		return fail("BackfillUserUsage", err)
	}
	for i, id := range users {
		_, err := s.client.ReadWriteTransaction(ctx, func(ctx context.Context, tx *spanner.ReadWriteTransaction) error {
			row, err := singleRow(tx.Query(ctx, spanner.Statement{SQL: livePointsSQL,
				Params: map[string]any{"user": id, "live": stateLive}}))
			if err != nil {
				return err
			}
			var points int64
			if err := row.Columns(&points); err != nil {
				return err
			}
			return tx.BufferWrite([]*spanner.Mutation{spanner.InsertOrUpdate("UserUsage",
				[]string{"UserId", "Points", "Backfilled"}, []any{id, points, true})})
		})
		if err != nil {
			return fail("BackfillUserUsage", fmt.Errorf("user %q: %w", id, err))
		}
		if progress != nil {
			progress(int64(i+1), int64(len(users)))
		}
	}
	return nil
}
