// Package sqlitestore is the embedded store.Store: one SQLite file in WAL
// mode, through the pure-Go driver modernc.org/sqlite, for `tbhub serve
// --data DIR`. The schema (schema.go) is versioned and applied on Open.
//
// All writes go through one connection, so they are serialized in the
// process and never meet SQLITE_BUSY among themselves; reads use a pool of
// query-only connections, each read in one transaction, so a read sees one
// snapshot while writes proceed (WAL).
package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"os"
	"runtime"
	"strings"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/tbhub/tbhub/services/internal/storage/store"
)

// DefaultFile is the database's file name inside a --data directory.
const DefaultFile = "tbhub.db"

// walSizeLimit bounds the write-ahead log's file between transactions
// (PRAGMA journal_size_limit): a checkpoint that empties the log truncates
// it to this size. A transaction bigger than this still grows it while it
// runs; PurgeExperiment truncates it to zero afterwards.
const walSizeLimit = 32 << 20

// Options tunes a Store.
type Options struct {
	// Now is the clock for create and update times; time.Now if nil.
	Now func() time.Time
	// ReadConns is the size of the read pool; GOMAXPROCS+1 if zero.
	ReadConns int
}

// Store is the SQLite implementation of store.Store. It is safe for
// concurrent use.
type Store struct {
	path string
	w    *sql.DB // exactly one connection: every write
	r    *sql.DB // query-only pool: every read
	now  func() time.Time
	// foundVersion is the schema version Open found, before migrating.
	foundVersion int
	// scalars caches downsampled scalar reads.
	scalars *scalarCache
	// scalarStmts are prepared on r.
	scalarStmts *scalarStmts
}

var _ store.Store = (*Store)(nil)

// Open opens (creating if needed) the database at path and brings its schema
// to SchemaVersion.
func Open(ctx context.Context, path string, opts Options) (*Store, error) {
	if strings.ContainsAny(path, "?#") || path == "" {
		return nil, fmt.Errorf("sqlitestore.Open %q: path must be non-empty and free of '?' and '#'", path)
	}
	// The database is private data: created readable by its owner only
	// (SQLite gives its -wal and -shm files the database's mode).
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("sqlitestore.Open: %w", err)
	}
	f.Close()
	// A database made by an older release is 0644: made private too.
	for _, name := range []string{path, path + "-wal", path + "-shm"} {
		if err := ownerOnly(name); err != nil {
			return nil, fmt.Errorf("sqlitestore.Open: %w", err)
		}
	}
	common := "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)" +
		"&_pragma=cache_size(-8192)&_pragma=temp_store(MEMORY)" +
		fmt.Sprintf("&_pragma=journal_size_limit(%d)", walSizeLimit)
	w, err := sql.Open("sqlite", path+common+"&_txlock=immediate")
	if err != nil {
		return nil, fmt.Errorf("sqlitestore.Open: %w", err)
	}
	w.SetMaxOpenConns(1)
	w.SetConnMaxIdleTime(0)
	w.SetConnMaxLifetime(0)
	s := &Store{path: path, w: w, now: opts.Now, scalars: newScalarCache(scalarCacheMaxPoints)}
	if s.now == nil {
		s.now = time.Now
	}
	if s.foundVersion, err = s.migrate(ctx); err != nil {
		w.Close()
		return nil, err
	}
	r, err := sql.Open("sqlite", path+common+"&_pragma=query_only(1)")
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("sqlitestore.Open: %w", err)
	}
	n := opts.ReadConns
	if n <= 0 {
		n = runtime.GOMAXPROCS(0) + 1
	}
	r.SetMaxOpenConns(n)
	r.SetMaxIdleConns(n)
	s.r = r
	if s.scalarStmts, err = prepareScalarStmts(ctx, r); err != nil {
		s.Close()
		return nil, fmt.Errorf("sqlitestore.Open: %w", err)
	}
	return s, nil
}

// Migrate brings the database at path to SchemaVersion and reports the
// version it found. Running it again changes nothing.
func Migrate(ctx context.Context, path string) (from, to int, err error) {
	s, err := Open(ctx, path, Options{})
	if err != nil {
		return 0, 0, err
	}
	return s.foundVersion, SchemaVersion, s.Close()
}

// migrate applies the missing migrations, each in its own transaction
// together with the version bump, and returns the version found before.
func (s *Store) migrate(ctx context.Context) (int, error) {
	var found int
	if err := s.w.QueryRowContext(ctx, "PRAGMA user_version").Scan(&found); err != nil {
		return 0, fmt.Errorf("sqlitestore: read schema version: %w", err)
	}
	if found > SchemaVersion {
		return found, fmt.Errorf("sqlitestore: database schema version %d is newer than this binary's %d", found, SchemaVersion)
	}
	for v := found; v < SchemaVersion; v++ {
		for done := false; !done; {
			err := s.write(ctx, func(tx *sql.Tx) error {
				if _, err := tx.ExecContext(ctx, migrations[v]); err != nil {
					return err
				}
				done = true
				if step := dataMigrations[v+1]; step != nil {
					if err := step(ctx, tx); err != nil {
						return err
					}
				}
				if step := batchedMigrations[v+1]; step != nil {
					var err error
					if done, err = step(ctx, tx); err != nil || !done {
						return err
					}
				}
				_, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", v+1))
				return err
			})
			if err != nil {
				return found, fmt.Errorf("sqlitestore: migrate to version %d: %w", v+1, err)
			}
		}
	}
	return found, nil
}

// HasExperiments reports whether the database holds any experiment, live
// or deleted and not yet purged. A database without one, next to a blob
// folder holding objects, is not the one those objects belong to.
func (s *Store) HasExperiments(ctx context.Context) (bool, error) {
	var has bool
	err := s.read(ctx, func(tx *sql.Tx) error {
		return tx.QueryRowContext(ctx, "SELECT EXISTS (SELECT 1 FROM experiments)").Scan(&has)
	})
	if err != nil {
		return false, fmt.Errorf("sqlitestore.HasExperiments: %w", err)
	}
	return has, nil
}

// Close closes the database.
func (s *Store) Close() error {
	var errs []error
	if sq := s.scalarStmts; sq != nil {
		errs = append(errs, sq.chunksAsc.Close(), sq.chunksDesc.Close(), sq.samples.Close(), sq.boundsAsc.Close(), sq.boundsDesc.Close())
	}
	return errors.Join(append(errs, s.r.Close(), s.w.Close())...)
}

// write runs fn in a write transaction (BEGIN IMMEDIATE) and commits it.
func (s *Store) write(ctx context.Context, fn func(*sql.Tx) error) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return classify(err)
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return classify(err)
	}
	return classify(tx.Commit())
}

// read runs fn in a read transaction: one consistent snapshot.
func (s *Store) read(ctx context.Context, fn func(*sql.Tx) error) error {
	tx, err := s.r.BeginTx(ctx, nil)
	if err != nil {
		return classify(err)
	}
	defer tx.Rollback() //nolint:errcheck // read-only: nothing to keep
	return classify(fn(tx))
}

// classify marks the errors a retry can cure: a database locked by another
// process beyond the busy timeout (store.ErrUnavailable) and a full disk
// (SQLITE_FULL: store.ErrDiskFull; SQLite rolls the transaction back).
func classify(err error) error {
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
			return fmt.Errorf("%w: %w", store.ErrUnavailable, err)
		case sqlite3.SQLITE_FULL:
			return fmt.Errorf("%w: %w", store.ErrDiskFull, err)
		}
	}
	return err
}

// truncateWAL checkpoints the write-ahead log and truncates its file to
// zero bytes, giving the disk back the space a big transaction (a purge)
// made it take. It is best effort: a read still using old pages keeps
// them in the log until a later checkpoint.
func (s *Store) truncateWAL(ctx context.Context) {
	_, _ = s.w.ExecContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)")
}

// liveExperiment fails with store.ErrNotFound unless eid names an experiment
// that is not deleted.
func liveExperiment(ctx context.Context, tx *sql.Tx, eid string) error {
	var deleted bool
	err := tx.QueryRowContext(ctx, "SELECT deleted FROM experiments WHERE id = ?", eid).Scan(&deleted)
	if errors.Is(err, sql.ErrNoRows) || (err == nil && deleted) {
		return fmt.Errorf("experiment %q: %w", eid, store.ErrNotFound)
	}
	return err
}

// queryStrings runs a query of one text column and returns its values.
func queryStrings(ctx context.Context, tx *sql.Tx, query string, args ...any) ([]string, error) {
	rows, err := tx.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// Wall times are REAL; SQLite turns NaN into NULL, so NULL means NaN.
func wallTimeArg(w float64) any {
	if math.IsNaN(w) {
		return nil
	}
	return w
}

func wallTimeOf(w sql.NullFloat64) float64 {
	if !w.Valid {
		return math.NaN()
	}
	return w.Float64
}

func nanos(t time.Time) int64 { return t.UnixNano() }

func fromNanos(n int64) time.Time { return time.Unix(0, n).UTC() }

// ownerOnly takes away the group's and others' access to name, if it exists.
func ownerOnly(name string) error {
	info, err := os.Stat(name)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil || info.Mode().Perm()&0o077 == 0 {
		return err
	}
	return os.Chmod(name, info.Mode().Perm()&^0o077)
}
