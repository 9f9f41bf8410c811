package sqlitestore

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"modernc.org/sqlite"

	"github.com/tbhub/tbhub/services/internal/storage/store"
)

// CreateUser implements store.Writer.
func (s *Store) CreateUser(ctx context.Context, u store.User) error {
	if u.ID == "" || u.Name == "" {
		return fmt.Errorf("sqlitestore.CreateUser: id and name must be non-empty: %w", store.ErrInvalidArgument)
	}
	return s.write(ctx, func(tx *sql.Tx) error {
		var n int
		if err := tx.QueryRowContext(ctx, "SELECT COUNT(*) FROM users WHERE id = ? OR name = ?", u.ID, u.Name).Scan(&n); err != nil {
			return err
		}
		if n > 0 {
			return fmt.Errorf("sqlitestore.CreateUser %q (%q): %w", u.ID, u.Name, store.ErrAlreadyExists)
		}
		_, err := tx.ExecContext(ctx, "INSERT INTO users (id, name, display_name, create_time) VALUES (?, ?, ?, ?)",
			u.ID, u.Name, nullIfEmpty(u.DisplayName), nanos(s.now()))
		return err
	})
}

// GetUser implements store.Reader.
func (s *Store) GetUser(ctx context.Context, id string) (store.User, error) {
	return s.getUser(ctx, "id", id)
}

// GetUserByName implements store.Reader.
func (s *Store) GetUserByName(ctx context.Context, name string) (store.User, error) {
	return s.getUser(ctx, "name", name)
}

func (s *Store) getUser(ctx context.Context, column, value string) (store.User, error) {
	u, err := scanUser(s.r.QueryRowContext(ctx, "SELECT "+userColumns+" FROM users WHERE "+column+" = ?", value))
	if errors.Is(err, sql.ErrNoRows) {
		return store.User{}, fmt.Errorf("sqlitestore: user with %s %q: %w", column, value, store.ErrNotFound)
	}
	if err != nil {
		return store.User{}, fmt.Errorf("sqlitestore: user with %s %q: %w", column, value, classify(err))
	}
	return u, nil
}

// userColumns are what scanUser reads.
const userColumns = "id, name, display_name, create_time"

func scanUser(row *sql.Row) (store.User, error) {
	var u store.User
	var display sql.NullString
	var created int64
	if err := row.Scan(&u.ID, &u.Name, &display, &created); err != nil {
		return store.User{}, err
	}
	u.DisplayName, u.CreateTime = display.String, fromNanos(created)
	return u, nil
}

// nullIfEmpty stores an empty optional text as NULL.
func nullIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// CreateExperiment implements store.Writer.
func (s *Store) CreateExperiment(ctx context.Context, e store.Experiment) error {
	if err := store.ValidateNewExperiment(e); err != nil {
		return fmt.Errorf("sqlitestore.CreateExperiment: %w", err)
	}
	err := s.write(ctx, func(tx *sql.Tx) error { return s.insertExperiment(ctx, tx, e) })
	if err != nil {
		return fmt.Errorf("sqlitestore.CreateExperiment: %w", err)
	}
	return nil
}

// insertExperiment adds the row of e, whose ID and visibility are valid.
func (s *Store) insertExperiment(ctx context.Context, tx *sql.Tx, e store.Experiment) error {
	var n int
	if err := tx.QueryRowContext(ctx, "SELECT COUNT(*) FROM users WHERE id = ?", e.Owner).Scan(&n); err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("owner %q: %w", e.Owner, store.ErrNotFound)
	}
	if err := tx.QueryRowContext(ctx, "SELECT COUNT(*) FROM experiments WHERE id = ?", e.ID).Scan(&n); err != nil {
		return err
	}
	if n > 0 {
		return fmt.Errorf("experiment %q: %w", e.ID, store.ErrAlreadyExists)
	}
	if err := chargeUsage(ctx, tx, e.Owner, "experiments", store.ExperimentsQuotaName, store.QuotasOf(ctx).Experiments, 1); err != nil {
		return err
	}
	now := nanos(s.now())
	_, err := tx.ExecContext(ctx, `INSERT INTO experiments
		(id, name, description, owner, visibility, create_time, update_time) VALUES (?, ?, ?, ?, ?, ?, ?)`,
		e.ID, e.Name, e.Description, e.Owner, string(e.Visibility), now, now)
	return err
}

// GetExperiment implements store.Reader.
func (s *Store) GetExperiment(ctx context.Context, eid string) (store.Experiment, error) {
	var e store.Experiment
	err := s.read(ctx, func(tx *sql.Tx) error {
		var err error
		e, err = getExperiment(ctx, tx, eid)
		return err
	})
	if err != nil {
		return store.Experiment{}, fmt.Errorf("sqlitestore.GetExperiment: %w", err)
	}
	return e, nil
}

const experimentColumns = "id, name, description, owner, visibility, create_time, update_time, damaged_records, damaged_num_files, damaged_files"

func scanExperiment(row interface{ Scan(...any) error }) (store.Experiment, error) {
	var e store.Experiment
	var vis, damagedFiles string
	var created, updated int64
	if err := row.Scan(&e.ID, &e.Name, &e.Description, &e.Owner, &vis, &created, &updated, &e.Damaged.Records, &e.Damaged.NumFiles, &damagedFiles); err != nil {
		return store.Experiment{}, err
	}
	if err := json.Unmarshal([]byte(damagedFiles), &e.Damaged.Files); err != nil {
		return store.Experiment{}, fmt.Errorf("experiment %q: damaged_files: %w", e.ID, err)
	}
	if len(e.Damaged.Files) == 0 {
		e.Damaged.Files = nil
	}
	e.Visibility = store.Visibility(vis)
	e.CreateTime, e.UpdateTime = fromNanos(created), fromNanos(updated)
	return e, nil
}

// getExperiment reads a live experiment with its read grants and counts.
func getExperiment(ctx context.Context, tx *sql.Tx, eid string) (store.Experiment, error) {
	e, err := scanExperiment(tx.QueryRowContext(ctx,
		"SELECT "+experimentColumns+" FROM experiments WHERE id = ? AND deleted = 0", eid))
	if errors.Is(err, sql.ErrNoRows) {
		return store.Experiment{}, fmt.Errorf("experiment %q: %w", eid, store.ErrNotFound)
	}
	if err != nil {
		return store.Experiment{}, err
	}
	if err := fillExperiment(ctx, tx, &e); err != nil {
		return store.Experiment{}, err
	}
	return e, nil
}

// fillExperiment adds the read grants and the counts, which come from the
// running totals kept on series rows.
func fillExperiment(ctx context.Context, tx *sql.Tx, e *store.Experiment) error {
	var err error
	e.Readers, err = queryStrings(ctx, tx, "SELECT user_id FROM read_grants WHERE experiment_id = ? ORDER BY user_id", e.ID)
	if err != nil {
		return err
	}
	err = tx.QueryRowContext(ctx, `SELECT
			(SELECT COUNT(*) FROM runs WHERE experiment_id = ?1),
			COUNT(DISTINCT tag),
			COALESCE(SUM(CASE data_class WHEN 1 THEN point_count END), 0),
			COALESCE(SUM(CASE data_class WHEN 2 THEN point_count END), 0),
			COALESCE(SUM(CASE data_class WHEN 3 THEN point_count END), 0),
			COALESCE(SUM(blob_count), 0),
			COALESCE(SUM(CASE data_class WHEN 2 THEN total_bytes END), 0),
			COALESCE(SUM(CASE data_class WHEN 3 THEN total_bytes END), 0)
		FROM series WHERE experiment_id = ?1`, e.ID).
		Scan(&e.NumRuns, &e.NumTags, &e.NumScalars, &e.NumTensors, &e.NumBlobSequences,
			&e.NumBlobs, &e.TotalTensorBytes, &e.TotalBlobBytes)
	return err
}

// ListExperiments implements store.Reader.
func (s *Store) ListExperiments(ctx context.Context, f store.ExperimentFilter, fn func(store.Experiment) error) error {
	if f.Visibilities != nil && len(f.Visibilities) == 0 {
		return nil
	}
	query := "SELECT " + experimentColumns + " FROM experiments WHERE deleted = 0"
	var args []any
	if f.Owner != "" {
		query += " AND owner = ?"
		args = append(args, f.Owner)
	}
	if f.Visibilities != nil {
		query += " AND visibility IN (?" + strings.Repeat(", ?", len(f.Visibilities)-1) + ")"
		for _, v := range f.Visibilities {
			args = append(args, string(v))
		}
	}
	query += " ORDER BY create_time DESC, id"
	list, err := s.queryExperiments(ctx, query, args...)
	if err != nil {
		return fmt.Errorf("sqlitestore.ListExperiments: %w", err)
	}
	// fn may be slow (it streams responses) or call the store: call it
	// after the snapshot is released.
	for _, e := range list {
		if err := fn(e); err != nil {
			return err
		}
	}
	return nil
}

// foldFunc is the SQL function ListPublicExperiments searches with:
// strings.ToLower, so that a search ignores case beyond ASCII as
// Spanner's LOWER does (SQLite's lower() folds ASCII only).
const foldFunc = "tbhub_fold"

func init() {
	err := sqlite.RegisterDeterministicScalarFunction(foldFunc, 1, func(_ *sqlite.FunctionContext, args []driver.Value) (driver.Value, error) {
		switch v := args[0].(type) {
		case string:
			return strings.ToLower(v), nil
		case nil:
			return nil, nil
		}
		return nil, fmt.Errorf("%s: want text, got %T", foldFunc, args[0])
	})
	if err != nil {
		panic(err)
	}
}

// ListPublicExperiments implements store.Reader: a walk of the partial
// index experiments_public from the cursor on, each row tested against
// the search, until the page is full.
func (s *Store) ListPublicExperiments(ctx context.Context, q store.PublicQuery) ([]store.Experiment, error) {
	if err := q.Validate(); err != nil {
		return nil, fmt.Errorf("sqlitestore.ListPublicExperiments: %w", err)
	}
	// The select list is the outer query's only table's (the search's
	// subquery on users is scoped to itself): no need to qualify it. The
	// owner is matched by public name (store.User.PublicName, with
	// store.Handle's rule), never by user name: an OIDC user's is their
	// email.
	query := "SELECT " + experimentColumns + ` FROM experiments e
		WHERE e.visibility = 'public' AND e.deleted = 0`
	var args []any
	if q.After.ID != "" {
		t := nanos(q.After.UpdateTime)
		query += " AND (e.update_time < ? OR (e.update_time = ? AND e.id > ?))"
		args = append(args, t, t, q.After.ID)
	}
	if q.Search != "" {
		query += " AND (instr(" + foldFunc + "(e.name), ?) > 0 OR instr(" + foldFunc + "(e.description), ?) > 0" +
			" OR instr(" + foldFunc + "(COALESCE((SELECT u.display_name FROM users u WHERE u.id = e.owner)," +
			" 'user-' || substr(e.owner, 2, 8))), ?) > 0)"
		needle := strings.ToLower(q.Search)
		args = append(args, needle, needle, needle)
	}
	query += " ORDER BY e.update_time DESC, e.id LIMIT ?"
	args = append(args, q.Limit)
	list, err := s.queryExperiments(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlitestore.ListPublicExperiments: %w", err)
	}
	return list, nil
}

// queryExperiments runs query (selecting experimentColumns) in one read
// and returns its experiments with their grants and counts.
func (s *Store) queryExperiments(ctx context.Context, query string, args ...any) ([]store.Experiment, error) {
	var list []store.Experiment
	err := s.read(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, query, args...)
		if err != nil {
			return err
		}
		// Collect first: fillExperiment queries the same transaction.
		for rows.Next() {
			e, err := scanExperiment(rows)
			if err != nil {
				rows.Close()
				return err
			}
			list = append(list, e)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		for i := range list {
			if err := fillExperiment(ctx, tx, &list[i]); err != nil {
				return err
			}
		}
		return nil
	})
	return list, err
}

// UpdateExperiment implements store.Writer.
func (s *Store) UpdateExperiment(ctx context.Context, eid string, u store.ExperimentUpdate) (store.Experiment, error) {
	if u.Visibility != nil && !u.Visibility.Valid() {
		return store.Experiment{}, fmt.Errorf("sqlitestore.UpdateExperiment: visibility %q: %w", *u.Visibility, store.ErrInvalidArgument)
	}
	var e store.Experiment
	err := s.write(ctx, func(tx *sql.Tx) error {
		if err := liveExperiment(ctx, tx, eid); err != nil {
			return err
		}
		set := []string{"update_time = ?"}
		args := []any{nanos(s.now())}
		if u.Name != nil {
			set, args = append(set, "name = ?"), append(args, *u.Name)
		}
		if u.Description != nil {
			set, args = append(set, "description = ?"), append(args, *u.Description)
		}
		if u.Visibility != nil {
			set, args = append(set, "visibility = ?"), append(args, string(*u.Visibility))
		}
		if d := u.Damaged; d != nil {
			files, err := json.Marshal(append([]string{}, d.Files...))
			if err != nil {
				return err
			}
			set, args = append(set, "damaged_records = ?", "damaged_num_files = ?", "damaged_files = ?"), append(args, d.Records, d.NumFiles, string(files))
		}
		args = append(args, eid)
		if _, err := tx.ExecContext(ctx, "UPDATE experiments SET "+strings.Join(set, ", ")+" WHERE id = ?", args...); err != nil {
			return err
		}
		var err error
		e, err = getExperiment(ctx, tx, eid)
		return err
	})
	if err != nil {
		return store.Experiment{}, fmt.Errorf("sqlitestore.UpdateExperiment: %w", err)
	}
	return e, nil
}

// DeleteExperiment implements store.Writer: one UPDATE hides everything.
func (s *Store) DeleteExperiment(ctx context.Context, eid string) error {
	err := s.write(ctx, func(tx *sql.Tx) error {
		if err := liveExperiment(ctx, tx, eid); err != nil {
			return err
		}
		// It and its points leave the owner's usage now: the sweep
		// removes what no one can read any more.
		if _, err := tx.ExecContext(ctx, `UPDATE user_usage SET experiments = experiments - 1,
			points = points - (SELECT COALESCE(SUM(point_count), 0) FROM series WHERE experiment_id = ?1 AND data_class IN (1, 2)),
			blob_bytes = blob_bytes - (SELECT COALESCE(SUM(b.size), 0) FROM series s JOIN blobs b ON b.series_id = s.id WHERE s.experiment_id = ?1)
			WHERE user_id = (SELECT owner FROM experiments WHERE id = ?1)`, eid); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, "UPDATE experiments SET deleted = 1, update_time = ? WHERE id = ?", nanos(s.now()), eid)
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlitestore.DeleteExperiment: %w", err)
	}
	return nil
}

// GrantRead implements store.Writer.
func (s *Store) GrantRead(ctx context.Context, eid, userID string) error {
	err := s.write(ctx, func(tx *sql.Tx) error {
		if err := liveExperiment(ctx, tx, eid); err != nil {
			return err
		}
		var n int
		if err := tx.QueryRowContext(ctx, "SELECT COUNT(*) FROM users WHERE id = ?", userID).Scan(&n); err != nil {
			return err
		}
		if n == 0 {
			return fmt.Errorf("user %q: %w", userID, store.ErrNotFound)
		}
		_, err := tx.ExecContext(ctx, "INSERT OR IGNORE INTO read_grants (experiment_id, user_id) VALUES (?, ?)", eid, userID)
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlitestore.GrantRead: %w", err)
	}
	return nil
}

// RevokeRead implements store.Writer.
func (s *Store) RevokeRead(ctx context.Context, eid, userID string) error {
	err := s.write(ctx, func(tx *sql.Tx) error {
		if err := liveExperiment(ctx, tx, eid); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, "DELETE FROM read_grants WHERE experiment_id = ? AND user_id = ?", eid, userID)
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlitestore.RevokeRead: %w", err)
	}
	return nil
}

// ListDeletedExperiments implements store.Sweeper.
func (s *Store) ListDeletedExperiments(ctx context.Context, limit int) ([]string, error) {
	var ids []string
	err := s.read(ctx, func(tx *sql.Tx) error {
		var err error
		ids, err = queryStrings(ctx, tx, "SELECT id FROM experiments WHERE deleted = 1 ORDER BY id LIMIT ?", limit)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("sqlitestore.ListDeletedExperiments: %w", err)
	}
	return ids, nil
}

// deletedExperiment fails with store.ErrFailedPrecondition if eid is live.
// An unknown eid passes: there is nothing of it to sweep.
func deletedExperiment(ctx context.Context, tx *sql.Tx, eid string) error {
	var deleted bool
	err := tx.QueryRowContext(ctx, "SELECT deleted FROM experiments WHERE id = ?", eid).Scan(&deleted)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	if err == nil && !deleted {
		return fmt.Errorf("experiment %q is not deleted: %w", eid, store.ErrFailedPrecondition)
	}
	return err
}

// ListObjectKeys implements store.Sweeper.
func (s *Store) ListObjectKeys(ctx context.Context, eid string, fn func(string) error) error {
	var keys []string
	err := s.read(ctx, func(tx *sql.Tx) error {
		if err := deletedExperiment(ctx, tx, eid); err != nil {
			return err
		}
		var err error
		keys, err = queryStrings(ctx, tx, `SELECT b.object_key FROM blobs b JOIN series s ON s.id = b.series_id
			WHERE s.experiment_id = ? ORDER BY b.object_key`, eid)
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlitestore.ListObjectKeys: %w", err)
	}
	// fn deletes objects, which may be slow: call it outside the snapshot.
	for _, k := range keys {
		if err := fn(k); err != nil {
			return err
		}
	}
	return nil
}

// PurgeExperiment implements store.Sweeper.
func (s *Store) PurgeExperiment(ctx context.Context, eid string) error {
	err := s.write(ctx, func(tx *sql.Tx) error {
		if err := deletedExperiment(ctx, tx, eid); err != nil {
			return err
		}
		for _, q := range []string{
			"DELETE FROM scalar_chunks WHERE series_id IN (SELECT id FROM series WHERE experiment_id = ?)",
			"DELETE FROM tensor_points WHERE series_id IN (SELECT id FROM series WHERE experiment_id = ?)",
			"DELETE FROM blobs WHERE series_id IN (SELECT id FROM series WHERE experiment_id = ?)",
			"DELETE FROM blob_sequences WHERE series_id IN (SELECT id FROM series WHERE experiment_id = ?)",
			"DELETE FROM series WHERE experiment_id = ?",
			"DELETE FROM runs WHERE experiment_id = ?",
			"DELETE FROM read_grants WHERE experiment_id = ?",
			"DELETE FROM experiments WHERE id = ?",
		} {
			if _, err := tx.ExecContext(ctx, q, eid); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("sqlitestore.PurgeExperiment: %w", err)
	}
	// The purge is one transaction as big as the experiment: the log grew
	// by that much, and would keep the space the purge freed. The purge is
	// done either way; a checkpoint that fails now is retried by the next.
	s.truncateWAL(ctx)
	return nil
}

// ListAbandonedBlobs implements store.Sweeper, by the partial index on
// blobs.unfinished_write_time.
func (s *Store) ListAbandonedBlobs(ctx context.Context, before time.Time, limit int) ([]store.AbandonedBlob, error) {
	var out []store.AbandonedBlob
	err := s.read(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT s.experiment_id, s.run, s.tag, b.step, b.idx, b.object_key, b.size, b.generation, b.unfinished_write_time
			FROM blobs b JOIN series s ON s.id = b.series_id JOIN experiments e ON e.id = s.experiment_id
			WHERE b.unfinished_write_time < ? AND b.state = ? AND e.deleted = 0
			ORDER BY b.unfinished_write_time LIMIT ?`, nanos(before), int(store.BlobStateUnfinalized), limit)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var b store.AbandonedBlob
			var written int64
			if err := rows.Scan(&b.Experiment, &b.Ref.Run, &b.Ref.Tag, &b.Ref.Step, &b.Ref.Index, &b.ObjectKey, &b.Size, &b.Generation, &written); err != nil {
				return err
			}
			b.WriteTime = fromNanos(written)
			out = append(out, b)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("sqlitestore.ListAbandonedBlobs: %w", err)
	}
	return out, nil
}

// DeleteAbandonedBlob implements store.Sweeper.
func (s *Store) DeleteAbandonedBlob(ctx context.Context, eid string, ref store.BlobRef, before time.Time) (bool, error) {
	deleted := false
	err := s.write(ctx, func(tx *sql.Tx) error {
		deleted = false
		if err := liveExperiment(ctx, tx, eid); err != nil {
			return err
		}
		r, err := findBlobSeries(ctx, tx, eid, ref)
		if err != nil {
			return err
		}
		var size int64
		err = tx.QueryRowContext(ctx, `DELETE FROM blobs WHERE series_id = ? AND step = ? AND idx = ?
			AND state = ? AND unfinished_write_time < ? RETURNING size`, r.id, ref.Step, ref.Index, int(store.BlobStateUnfinalized), nanos(before)).Scan(&size)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		deleted = true
		if err := addBlobBytes(ctx, tx, eid, -size); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, "UPDATE experiments SET update_time = ? WHERE id = ?", nanos(s.now()), eid)
		return err
	})
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("sqlitestore.DeleteAbandonedBlob: %w", err)
	}
	return deleted, nil
}
