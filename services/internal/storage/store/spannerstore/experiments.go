package spannerstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"cloud.google.com/go/spanner"
	"google.golang.org/grpc/codes"

	"github.com/tbhub/tbhub/services/internal/storage/store"
)

// CreateUser implements store.Writer.
func (s *Store) CreateUser(ctx context.Context, u store.User) error {
	s, release := s.acquire()
	defer release()
	if u.ID == "" || u.Name == "" {
		return fail("CreateUser", fmt.Errorf("user id and name must be non-empty: %w", store.ErrInvalidArgument))
	}
	_, err := s.client.ReadWriteTransaction(ctx, func(ctx context.Context, tx *spanner.ReadWriteTransaction) error {
		_, err := tx.ReadRowUsingIndex(ctx, "Users", "UsersByName", spanner.Key{u.Name}, []string{"UserId"})
		if err == nil {
			return fmt.Errorf("user name %q: %w", u.Name, store.ErrAlreadyExists)
		}
		if spanner.ErrCode(err) != codes.NotFound {
			return err
		}
		// Insert fails with AlreadyExists if the id is taken.
		return tx.BufferWrite([]*spanner.Mutation{spanner.Insert("Users",
			[]string{"UserId", "Name", "DisplayName", "CreateTime"},
			[]any{u.ID, u.Name, nullIfEmpty(u.DisplayName), spanner.CommitTimestamp})})
	})
	return fail("CreateUser", err)
}

var userColumns = []string{"UserId", "Name", "DisplayName", "CreateTime"}

// nullIfEmpty stores an empty optional string as NULL.
func nullIfEmpty(s string) spanner.NullString {
	return spanner.NullString{StringVal: s, Valid: s != ""}
}

func userFromRow(row *spanner.Row) (store.User, error) {
	var u store.User
	var display spanner.NullString
	err := row.Columns(&u.ID, &u.Name, &display, &u.CreateTime)
	u.DisplayName = display.StringVal
	return u, err
}

// GetUser implements store.Reader.
func (s *Store) GetUser(ctx context.Context, id string) (store.User, error) {
	s, release := s.acquire()
	defer release()
	row, err := s.client.Single().ReadRow(ctx, "Users", spanner.Key{id}, userColumns)
	if err != nil {
		return store.User{}, fail("GetUser", err)
	}
	u, err := userFromRow(row)
	return u, fail("GetUser", err)
}

// GetUserByName implements store.Reader.
func (s *Store) GetUserByName(ctx context.Context, name string) (store.User, error) {
	s, release := s.acquire()
	defer release()
	tx := s.client.ReadOnlyTransaction()
	defer tx.Close()
	row, err := tx.ReadRowUsingIndex(ctx, "Users", "UsersByName", spanner.Key{name}, []string{"UserId"})
	if err != nil {
		return store.User{}, fail("GetUserByName", err)
	}
	var id string
	if err := row.Column(0, &id); err != nil {
		return store.User{}, fail("GetUserByName", err)
	}
	row, err = tx.ReadRow(ctx, "Users", spanner.Key{id}, userColumns)
	if err != nil {
		return store.User{}, fail("GetUserByName", err)
	}
	u, err := userFromRow(row)
	return u, fail("GetUserByName", err)
}

// CreateExperiment implements store.Writer.
func (s *Store) CreateExperiment(ctx context.Context, e store.Experiment) error {
	s, release := s.acquire()
	defer release()
	if err := store.ValidateNewExperiment(e); err != nil {
		return fail("CreateExperiment", err)
	}
	_, err := s.client.ReadWriteTransaction(ctx, func(ctx context.Context, tx *spanner.ReadWriteTransaction) error {
		return insertExperiment(ctx, tx, e)
	})
	return fail("CreateExperiment", err)
}

// insertExperiment buffers the insert of e, whose ID and visibility are
// valid, after checking its owner exists; the commit fails with
// AlreadyExists if the ID is taken.
func insertExperiment(ctx context.Context, tx *spanner.ReadWriteTransaction, e store.Experiment) error {
	if _, err := tx.ReadRow(ctx, "Users", spanner.Key{e.Owner}, []string{"UserId"}); err != nil {
		if spanner.ErrCode(err) == codes.NotFound {
			return fmt.Errorf("owner %q: %w", e.Owner, store.ErrNotFound)
		}
		return err
	}
	if err := charge(ctx, tx, e.Owner, usage{experiments: 1}); err != nil {
		return err
	}
	return tx.BufferWrite([]*spanner.Mutation{spanner.Insert("Experiments",
		[]string{"ExperimentId", "Name", "Description", "OwnerId", "Visibility", "State", "CreateTime", "UpdateTime"},
		[]any{e.ID, e.Name, e.Description, e.Owner, string(e.Visibility), stateLive, spanner.CommitTimestamp, spanner.CommitTimestamp})})
}

// experimentSQL selects live experiments with their readers and the counts
// summed over their series rows (one row per series, never points), in one
// pass over them (seriesFacts) rather than one per count.
const experimentSQL = `SELECT e.ExperimentId, e.Name, e.Description, e.OwnerId, e.Visibility, e.CreateTime, e.UpdateTime,
  ARRAY(SELECT g.UserId FROM ReadGrants g WHERE g.ExperimentId = e.ExperimentId ORDER BY g.UserId),
  (SELECT COUNT(*) FROM Runs r WHERE r.ExperimentId = e.ExperimentId),
  ARRAY(SELECT AS STRUCT COUNT(DISTINCT s.Tag) AS Tags,
      IFNULL(SUM(IF(s.DataClass = 1, s.PointCount, 0)), 0) AS Scalars,
      IFNULL(SUM(IF(s.DataClass = 2, s.PointCount, 0)), 0) AS Tensors,
      IFNULL(SUM(IF(s.DataClass = 3, s.PointCount, 0)), 0) AS BlobSequences,
      IFNULL(SUM(s.BlobCount), 0) AS Blobs,
      IFNULL(SUM(s.TensorBytes), 0) AS TensorBytes,
      IFNULL(SUM(s.BlobBytes), 0) AS BlobBytes
    FROM TimeSeries s WHERE s.ExperimentId = e.ExperimentId),
  IFNULL(e.DamagedRecords, 0), IFNULL(e.DamagedNumFiles, 0), IFNULL(e.DamagedFiles, [])
FROM Experiments e
WHERE e.State = 'LIVE'`

// seriesFacts is experimentSQL's struct of counts over series rows, which
// comes as an array of one (Spanner returns no bare struct columns).
type seriesFacts struct {
	Tags, Scalars, Tensors, BlobSequences, Blobs, TensorBytes, BlobBytes int64
}

func experimentFromRow(row *spanner.Row) (store.Experiment, error) {
	var e store.Experiment
	var vis string
	var facts []*seriesFacts
	err := row.Columns(&e.ID, &e.Name, &e.Description, &e.Owner, &vis, &e.CreateTime, &e.UpdateTime, &e.Readers,
		&e.NumRuns, &facts, &e.Damaged.Records, &e.Damaged.NumFiles, &e.Damaged.Files)
	var f seriesFacts
	if len(facts) == 1 {
		f = *facts[0]
	}
	e.NumTags, e.NumScalars, e.NumTensors, e.NumBlobSequences = f.Tags, f.Scalars, f.Tensors, f.BlobSequences
	e.NumBlobs, e.TotalTensorBytes, e.TotalBlobBytes = f.Blobs, f.TensorBytes, f.BlobBytes
	e.Visibility = store.Visibility(vis)
	if len(e.Damaged.Files) == 0 {
		e.Damaged.Files = nil
	}
	return e, err
}

// getExperiment reads one live experiment with its counts inside tx.
func getExperiment(ctx context.Context, tx txReader, eid string) (store.Experiment, error) {
	var e store.Experiment
	found := false
	err := tx.Query(ctx, spanner.Statement{
		SQL:    experimentSQL + " AND e.ExperimentId = @eid",
		Params: map[string]any{"eid": eid},
	}).Do(func(row *spanner.Row) error {
		var err error
		e, err = experimentFromRow(row)
		found = true
		return err
	})
	if err == nil && !found {
		err = fmt.Errorf("experiment %q: %w", eid, store.ErrNotFound)
	}
	return e, err
}

// GetExperiment implements store.Reader: one query, so a single-use
// transaction.
func (s *Store) GetExperiment(ctx context.Context, eid string) (store.Experiment, error) {
	s, release := s.acquire()
	defer release()
	e, err := getExperiment(ctx, s.client.Single(), eid)
	return e, fail("GetExperiment", err)
}

// ListExperiments implements store.Reader.
func (s *Store) ListExperiments(ctx context.Context, f store.ExperimentFilter, fn func(store.Experiment) error) error {
	s, release := s.acquire()
	defer release()
	if f.Visibilities != nil && len(f.Visibilities) == 0 {
		return nil
	}
	stmt := spanner.Statement{SQL: experimentSQL, Params: map[string]any{}}
	if f.Owner != "" {
		stmt.SQL += " AND e.OwnerId = @owner"
		stmt.Params["owner"] = f.Owner
	}
	if f.Visibilities != nil {
		vis := make([]string, len(f.Visibilities))
		for i, v := range f.Visibilities {
			vis[i] = string(v)
		}
		stmt.SQL += " AND e.Visibility IN UNNEST(@vis)"
		stmt.Params["vis"] = vis
	}
	stmt.SQL += " ORDER BY e.CreateTime DESC, e.ExperimentId"
	err := s.client.Single().Query(ctx, stmt).Do(func(row *spanner.Row) error {
		e, err := experimentFromRow(row)
		if err != nil {
			return err
		}
		return fn(e)
	})
	return fail("ListExperiments", err)
}

// publicSQL finds one page of the public gallery: a walk of the index
// ExperimentsPublicByUpdate (public live experiments by UpdateTime, which
// data writes move too: checkLiveForData) from the cursor on, each row
// tested against the search, until the page is full. The owner is matched
// by public name (store.User.PublicName, with store.Handle's rule), never
// by user name: an OIDC user's is their email.
const publicSQL = `SELECT e.ExperimentId
FROM Experiments@{FORCE_INDEX=ExperimentsPublicByUpdate} e
WHERE e.Visibility = 'public' AND e.State = 'LIVE'
  AND (@afterId = '' OR e.UpdateTime < @afterTime OR (e.UpdateTime = @afterTime AND e.ExperimentId > @afterId))
  AND (@search = ''
    OR STRPOS(LOWER(e.Name), @search) > 0 OR STRPOS(LOWER(e.Description), @search) > 0
    OR STRPOS(LOWER(COALESCE((SELECT u.DisplayName FROM Users u WHERE u.UserId = e.OwnerId),
      CONCAT('user-', SUBSTR(e.OwnerId, 2, 8)))), @search) > 0)
ORDER BY e.UpdateTime DESC, e.ExperimentId
LIMIT @limit`

// ListPublicExperiments implements store.Reader: one query for the page's
// IDs, one for their rows, in one snapshot.
func (s *Store) ListPublicExperiments(ctx context.Context, q store.PublicQuery) ([]store.Experiment, error) {
	s, release := s.acquire()
	defer release()
	if err := q.Validate(); err != nil {
		return nil, fail("ListPublicExperiments", err)
	}
	tx := s.client.ReadOnlyTransaction()
	defer tx.Close()
	var ids []string
	err := tx.Query(ctx, spanner.Statement{SQL: publicSQL, Params: map[string]any{
		"search": strings.ToLower(q.Search), "afterId": q.After.ID, "afterTime": q.After.UpdateTime, "limit": int64(q.Limit),
	}}).Do(func(row *spanner.Row) error {
		var id string
		if err := row.Column(0, &id); err != nil {
			return err
		}
		ids = append(ids, id)
		return nil
	})
	if err != nil || len(ids) == 0 {
		return nil, fail("ListPublicExperiments", err)
	}
	byID := make(map[string]store.Experiment, len(ids))
	err = tx.Query(ctx, spanner.Statement{
		SQL:    experimentSQL + " AND e.ExperimentId IN UNNEST(@ids)",
		Params: map[string]any{"ids": ids},
	}).Do(func(row *spanner.Row) error {
		e, err := experimentFromRow(row)
		byID[e.ID] = e
		return err
	})
	if err != nil {
		return nil, fail("ListPublicExperiments", err)
	}
	list := make([]store.Experiment, 0, len(ids))
	for _, id := range ids {
		if e, ok := byID[id]; ok {
			list = append(list, e)
		}
	}
	return list, nil
}

// UpdateExperiment implements store.Writer.
func (s *Store) UpdateExperiment(ctx context.Context, eid string, u store.ExperimentUpdate) (store.Experiment, error) {
	s, release := s.acquire()
	defer release()
	if u.Visibility != nil && !u.Visibility.Valid() {
		return store.Experiment{}, fail("UpdateExperiment", fmt.Errorf("visibility %q: %w", *u.Visibility, store.ErrInvalidArgument))
	}
	cols := []string{"ExperimentId", "UpdateTime"}
	vals := []any{eid, spanner.CommitTimestamp}
	if u.Name != nil {
		cols, vals = append(cols, "Name"), append(vals, *u.Name)
	}
	if u.Description != nil {
		cols, vals = append(cols, "Description"), append(vals, *u.Description)
	}
	if u.Visibility != nil {
		cols, vals = append(cols, "Visibility"), append(vals, string(*u.Visibility))
	}
	if d := u.Damaged; d != nil {
		cols = append(cols, "DamagedRecords", "DamagedNumFiles", "DamagedFiles")
		vals = append(vals, d.Records, d.NumFiles, append([]string{}, d.Files...))
	}
	var e store.Experiment
	_, err := s.client.ReadWriteTransaction(ctx, func(ctx context.Context, tx *spanner.ReadWriteTransaction) error {
		if err := checkLive(ctx, tx, eid); err != nil {
			return err
		}
		return tx.BufferWrite([]*spanner.Mutation{spanner.Update("Experiments", cols, vals)})
	})
	if err == nil {
		tx := s.client.ReadOnlyTransaction()
		defer tx.Close()
		e, err = getExperiment(ctx, tx, eid)
	}
	return e, fail("UpdateExperiment", err)
}

// DeleteExperiment implements store.Writer: one transaction flips the state,
// after which every read and write of the experiment fails with
// store.ErrNotFound.
func (s *Store) DeleteExperiment(ctx context.Context, eid string) error {
	s, release := s.acquire()
	defer release()
	_, err := s.client.ReadWriteTransaction(ctx, func(ctx context.Context, tx *spanner.ReadWriteTransaction) error {
		if err := checkLive(ctx, tx, eid); err != nil {
			return err
		}
		// It and its points leave the owner's usage now: the sweep
		// removes what no one can read any more.
		row, err := singleRow(tx.Query(ctx, spanner.Statement{SQL: `SELECT e.OwnerId,
				(SELECT COALESCE(SUM(ts.PointCount), 0) FROM TimeSeries ts WHERE ts.ExperimentId = e.ExperimentId AND ts.DataClass IN (1, 2)),
				(SELECT COALESCE(SUM(b.Size), 0) FROM Blobs b WHERE b.ExperimentId = e.ExperimentId)
			FROM Experiments e WHERE e.ExperimentId = @eid`, Params: map[string]any{"eid": eid}}))
		if err != nil {
			return err
		}
		var owner string
		var points, blobBytes int64
		if err := row.Columns(&owner, &points, &blobBytes); err != nil {
			return err
		}
		if err := charge(ctx, tx, owner, usage{points: -points, experiments: -1, blobBytes: -blobBytes}); err != nil {
			return err
		}
		return tx.BufferWrite([]*spanner.Mutation{spanner.Update("Experiments",
			[]string{"ExperimentId", "State", "DeleteTime"}, []any{eid, stateDeleted, spanner.CommitTimestamp})})
	})
	return fail("DeleteExperiment", err)
}

// GrantRead implements store.Writer.
func (s *Store) GrantRead(ctx context.Context, eid, userID string) error {
	s, release := s.acquire()
	defer release()
	_, err := s.client.ReadWriteTransaction(ctx, func(ctx context.Context, tx *spanner.ReadWriteTransaction) error {
		if err := checkLive(ctx, tx, eid); err != nil {
			return err
		}
		if _, err := tx.ReadRow(ctx, "Users", spanner.Key{userID}, []string{"UserId"}); err != nil {
			if spanner.ErrCode(err) == codes.NotFound {
				return fmt.Errorf("user %q: %w", userID, store.ErrNotFound)
			}
			return err
		}
		return tx.BufferWrite([]*spanner.Mutation{spanner.InsertOrUpdate("ReadGrants",
			[]string{"ExperimentId", "UserId", "CreateTime"}, []any{eid, userID, spanner.CommitTimestamp})})
	})
	return fail("GrantRead", err)
}

// RevokeRead implements store.Writer.
func (s *Store) RevokeRead(ctx context.Context, eid, userID string) error {
	s, release := s.acquire()
	defer release()
	_, err := s.client.ReadWriteTransaction(ctx, func(ctx context.Context, tx *spanner.ReadWriteTransaction) error {
		if err := checkLive(ctx, tx, eid); err != nil {
			return err
		}
		return tx.BufferWrite([]*spanner.Mutation{spanner.Delete("ReadGrants", spanner.Key{eid, userID})})
	})
	return fail("RevokeRead", err)
}

// ListDeletedExperiments implements store.Sweeper, oldest deletions first
// is not promised; any order lets the sweep make progress.
func (s *Store) ListDeletedExperiments(ctx context.Context, limit int) ([]string, error) {
	s, release := s.acquire()
	defer release()
	var ids []string
	err := s.client.Single().ReadWithOptions(ctx, "Experiments", spanner.Key{stateDeleted}.AsPrefix(),
		[]string{"ExperimentId"}, &spanner.ReadOptions{Index: "ExperimentsByState", Limit: limit}).Do(func(row *spanner.Row) error {
		var id string
		if err := row.Column(0, &id); err != nil {
			return err
		}
		ids = append(ids, id)
		return nil
	})
	return ids, fail("ListDeletedExperiments", err)
}

// checkDeleted returns whether the experiment has a row, and
// store.ErrFailedPrecondition if that row is live.
func checkDeleted(ctx context.Context, tx txReader, eid string) (bool, error) {
	state, err := experimentState(ctx, tx, eid)
	if err != nil {
		return false, err
	}
	if state == stateLive {
		return true, fmt.Errorf("experiment %q is live: %w", eid, store.ErrFailedPrecondition)
	}
	return state != "", nil
}

// ListObjectKeys implements store.Sweeper.
func (s *Store) ListObjectKeys(ctx context.Context, eid string, fn func(objectKey string) error) error {
	s, release := s.acquire()
	defer release()
	tx := s.client.ReadOnlyTransaction()
	defer tx.Close()
	if _, err := checkDeleted(ctx, tx, eid); err != nil {
		return fail("ListObjectKeys", err)
	}
	err := tx.Read(ctx, "Blobs", spanner.Key{eid}.AsPrefix(), []string{"ObjectKey"}).Do(func(row *spanner.Row) error {
		var key string
		if err := row.Column(0, &key); err != nil {
			return err
		}
		return fn(key)
	})
	return fail("ListObjectKeys", err)
}

// purgeOrder lists the experiment's tables children first, so an
// interrupted purge never leaves a child without its parent row.
var purgeOrder = []string{"Blobs", "BlobSequences", "TensorPoints", "ScalarPoints", "ScalarChunks", "TimeSeries", "Runs", "ReadGrants"}

// PurgeExperiment implements store.Sweeper. Each table is emptied with
// partitioned DML, which has no per-commit mutation limit; the experiment
// row goes last, in a transaction that checks it is still deleted.
func (s *Store) PurgeExperiment(ctx context.Context, eid string) error {
	s, release := s.acquire()
	defer release()
	exists, err := checkDeleted(ctx, s.client.Single(), eid)
	if err != nil || !exists {
		return fail("PurgeExperiment", err)
	}
	for _, table := range purgeOrder {
		_, err := s.client.PartitionedUpdate(ctx, spanner.Statement{
			SQL:    "DELETE FROM " + table + " WHERE ExperimentId = @eid",
			Params: map[string]any{"eid": eid},
		})
		if err != nil {
			return fail("PurgeExperiment", fmt.Errorf("emptying %s: %w", table, err))
		}
	}
	_, err = s.client.ReadWriteTransaction(ctx, func(ctx context.Context, tx *spanner.ReadWriteTransaction) error {
		if _, err := checkDeleted(ctx, tx, eid); err != nil {
			return err
		}
		return tx.BufferWrite([]*spanner.Mutation{spanner.Delete("Experiments", spanner.Key{eid})})
	})
	return fail("PurgeExperiment", err)
}

// ListAbandonedBlobs implements store.Sweeper from the index
// BlobsByUnfinishedWriteTime, which holds unfinished blobs only. The
// condition on UnfinishedWriteTime keeps only rows the null-filtered index
// holds; the emulator cannot tell, and its hint says so (Cloud Spanner
// ignores it).
func (s *Store) ListAbandonedBlobs(ctx context.Context, before time.Time, limit int) ([]store.AbandonedBlob, error) {
	s, release := s.acquire()
	defer release()
	var out []store.AbandonedBlob
	err := s.client.Single().Query(ctx, spanner.Statement{
		SQL: `SELECT b.ExperimentId, b.RunName, b.Tag, b.Step, b.BlobIndex, b.ObjectKey, b.Size, b.Generation, b.UnfinishedWriteTime
			FROM Blobs@{FORCE_INDEX=BlobsByUnfinishedWriteTime, spanner_emulator.disable_query_null_filtered_index_check=true} b JOIN Experiments e ON e.ExperimentId = b.ExperimentId
			WHERE b.UnfinishedWriteTime < @before AND b.State = @unfinished AND e.State = @live
			ORDER BY b.UnfinishedWriteTime LIMIT @limit`,
		Params: map[string]any{"before": before, "unfinished": int64(store.BlobStateUnfinalized), "live": stateLive, "limit": int64(limit)},
	}).Do(func(row *spanner.Row) error {
		var b store.AbandonedBlob
		var gen spanner.NullInt64
		if err := row.Columns(&b.Experiment, &b.Ref.Run, &b.Ref.Tag, &b.Ref.Step, &b.Ref.Index, &b.ObjectKey, &b.Size, &gen, &b.WriteTime); err != nil {
			return err
		}
		b.Generation = gen.Int64
		out = append(out, b)
		return nil
	})
	if err != nil {
		return nil, fail("ListAbandonedBlobs", err)
	}
	return out, nil
}

// DeleteAbandonedBlob implements store.Sweeper: the row is read and
// deleted in one transaction, so a stream that rewrites it meanwhile
// either commits first (and the row stays) or after (and recreates it).
func (s *Store) DeleteAbandonedBlob(ctx context.Context, eid string, ref store.BlobRef, before time.Time) (bool, error) {
	s, release := s.acquire()
	defer release()
	var deleted bool
	_, err := s.client.ReadWriteTransaction(ctx, func(ctx context.Context, tx *spanner.ReadWriteTransaction) error {
		deleted = false
		if err := checkLive(ctx, tx, eid); err != nil {
			return err
		}
		key := spanner.Key{eid, ref.Run, ref.Tag, ref.Step, ref.Index}
		row, err := tx.ReadRow(ctx, "Blobs", key, []string{"State", "UnfinishedWriteTime", "Size"})
		if spanner.ErrCode(err) == codes.NotFound {
			return nil
		}
		if err != nil {
			return err
		}
		var state, size int64
		var written spanner.NullTime
		if err := row.Columns(&state, &written, &size); err != nil {
			return err
		}
		if store.BlobState(state) != store.BlobStateUnfinalized || !written.Valid || !written.Time.Before(before) {
			return nil
		}
		deleted = true
		if err := chargeBlobBytes(ctx, tx, eid, -size); err != nil {
			return err
		}
		return tx.BufferWrite([]*spanner.Mutation{
			spanner.Delete("Blobs", key),
			spanner.Update("TimeSeries", []string{"ExperimentId", "RunName", "Tag", "UpdateTime"},
				[]any{eid, ref.Run, ref.Tag, spanner.CommitTimestamp}),
			// Rare (its upload stopped long ago): no need to bound it as
			// checkLiveForData does.
			spanner.Update("Experiments", []string{"ExperimentId", "UpdateTime"}, []any{eid, spanner.CommitTimestamp}),
		})
	})
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fail("DeleteAbandonedBlob", err)
	}
	return deleted, nil
}
