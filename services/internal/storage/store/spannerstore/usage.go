package spannerstore

import (
	"context"
	"fmt"

	"cloud.google.com/go/spanner"
	"google.golang.org/grpc/codes"

	"github.com/tbhub/tbhub/services/internal/storage/store"
)

// usage is a user's UserUsage row. blobBytes is NULL on rows older than
// the column (DDL 0016), read as 0 until tbhub migrate counts it.
type usage struct{ points, experiments, blobBytes int64 }

var usageColumns = []string{"UserId", "Points", "Experiments", "BlobBytes"}

// readUsage reads the user's UserUsage row in tx; zero if the user has
// none yet. In a read-write transaction the read locks the row until the
// commit, so two commits of one user, from any instances, serialize on it
// and each sees the other's counts.
func readUsage(ctx context.Context, tx txReader, userID string) (usage, error) {
	row, err := tx.ReadRow(ctx, "UserUsage", spanner.Key{userID}, []string{"Points", "Experiments", "BlobBytes"})
	if spanner.ErrCode(err) == codes.NotFound {
		return usage{}, nil
	}
	if err != nil {
		return usage{}, err
	}
	var u usage
	var blobBytes spanner.NullInt64
	err = row.Columns(&u.points, &u.experiments, &blobBytes)
	u.blobBytes = blobBytes.Int64
	return u, err
}

func (u usage) mutation(userID string) *spanner.Mutation {
	return spanner.InsertOrUpdate("UserUsage", usageColumns, []any{userID, u.points, u.experiments, u.blobBytes})
}

// charge adds add to the user's usage in tx, refusing (a
// *store.QuotaError, nothing buffered) if that passes a quota of ctx.
func charge(ctx context.Context, tx *spanner.ReadWriteTransaction, userID string, add usage) error {
	u, err := readUsage(ctx, tx, userID)
	if err != nil {
		return err
	}
	q := store.QuotasOf(ctx)
	if err := store.CheckQuota(store.PointsQuotaName, q.Points, u.points, add.points); err != nil {
		return err
	}
	if err := store.CheckQuota(store.ExperimentsQuotaName, q.Experiments, u.experiments, add.experiments); err != nil {
		return err
	}
	if err := store.CheckQuota(store.BytesQuotaName, q.Bytes, u.blobBytes+q.OtherBytes, add.blobBytes); err != nil {
		return err
	}
	u.points += add.points
	u.experiments += add.experiments
	u.blobBytes += add.blobBytes
	return tx.BufferWrite([]*spanner.Mutation{u.mutation(userID)})
}

// chargePoints charges n new points to eid's owner: two reads and one
// mutation per commit, whatever its points.
func chargePoints(ctx context.Context, tx *spanner.ReadWriteTransaction, eid string, n int64) error {
	return chargeOwner(ctx, tx, eid, usage{points: n})
}

// chargeBlobBytes charges n bytes of blob rows (negative: rows shrunk or
// gone) to eid's owner, under the byte quota of ctx.
func chargeBlobBytes(ctx context.Context, tx *spanner.ReadWriteTransaction, eid string, n int64) error {
	return chargeOwner(ctx, tx, eid, usage{blobBytes: n})
}

// chargeOwner charges add to eid's owner; nothing if add is zero.
func chargeOwner(ctx context.Context, tx *spanner.ReadWriteTransaction, eid string, add usage) error {
	if add == (usage{}) {
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
	return charge(ctx, tx, owner, add)
}

// liveUsageSQL counts a user's live experiments, their points (from the
// series' totals; scalars and tensors) and their blob rows' bytes, as
// UserUsage counts them.
const liveUsageSQL = `SELECT
	(SELECT COALESCE(SUM(ts.PointCount), 0)
		FROM Experiments e JOIN TimeSeries ts ON ts.ExperimentId = e.ExperimentId
		WHERE e.OwnerId = @user AND e.State = @live AND ts.DataClass IN (1, 2)),
	(SELECT COUNT(*) FROM Experiments e WHERE e.OwnerId = @user AND e.State = @live),
	(SELECT COALESCE(SUM(b.Size), 0)
		FROM Experiments e JOIN Blobs b ON b.ExperimentId = e.ExperimentId
		WHERE e.OwnerId = @user AND e.State = @live)`

// BackfillUserUsage sets each user's UserUsage row from the user's live
// experiments and the totals of their series (the databases made before
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
		WHERE uu.Backfilled IS NULL OR NOT uu.Backfilled OR uu.BlobBytesBackfilled IS NULL OR NOT uu.BlobBytesBackfilled
		ORDER BY u.UserId`}).Do(func(row *spanner.Row) error {
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
			row, err := singleRow(tx.Query(ctx, spanner.Statement{SQL: liveUsageSQL,
				Params: map[string]any{"user": id, "live": stateLive}}))
			if err != nil {
				return err
			}
			var u usage
			if err := row.Columns(&u.points, &u.experiments, &u.blobBytes); err != nil {
				return err
			}
			return tx.BufferWrite([]*spanner.Mutation{u.mutation(id),
				spanner.Update("UserUsage", []string{"UserId", "Backfilled", "BlobBytesBackfilled"}, []any{id, true, true})})
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
