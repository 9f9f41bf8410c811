package sqlitestore

import (
	"context"
	"database/sql"
)

// migrations are the schema, one entry per version: migrations[i] takes a
// database from version i to version i+1 (PRAGMA user_version). Entries are
// append-only; a released entry is never edited.
//
// Layout notes (as of the latest version):
//
//   - Times are Unix nanoseconds (INTEGER); wall times of tensor and
//     blob-sequence points are float seconds (REAL), as TensorBoard records
//     them. SQLite cannot store NaN as REAL (it becomes NULL), so a NULL
//     wall time reads back as NaN.
//   - Scalar values and wall times are stored as their IEEE-754 bits, so
//     NaN payloads, infinities and -0 come back exactly.
//   - Points hang off series.id, a small integer, instead of repeating
//     (experiment, run, tag) in every row.
//   - Scalars, the bulk of all points, live in compressed chunks of about
//     4 KB (version 10, scalarblock.go, package scalarchunk) plus chunks of
//     a copy of one point in 8, by sample level, for downsampling. One row
//     per point (version 1) capped writes near 200,000 points/s; blocks
//     (version 3) took several times that at 34 B per point, chunks take
//     under 8 B.
//   - Tensor and blob-sequence points are one row each, with a primary key
//     (series_id, step), which makes writes idempotent upserts and step
//     ranges index scans, and the point's downsample.Level in
//     sample_level, indexed by (series_id, sample_level, step), which
//     downsampling walks from the top level down to read O(k) rows.
//     Inserts land at the end of each level's step range, so a commit
//     dirties a few index pages instead of pages all over an index on the
//     random sample key (see package downsample). The key itself is
//     recomputed from the step, not stored.
//   - series keeps running facts about its points (count, max step, max
//     wall time, bytes) so that listings and experiment counts never scan
//     points.
var migrations = []string{
	// Version 1.
	`
CREATE TABLE users (
	id          TEXT PRIMARY KEY,
	name        TEXT NOT NULL UNIQUE,
	create_time INTEGER NOT NULL
);

-- deleted = 1 hides the experiment and everything in it at once; the sweep
-- removes the rows afterwards.
CREATE TABLE experiments (
	id          TEXT PRIMARY KEY,
	name        TEXT NOT NULL,
	description TEXT NOT NULL,
	owner       TEXT NOT NULL,
	visibility  TEXT NOT NULL,
	create_time INTEGER NOT NULL,
	update_time INTEGER NOT NULL,
	deleted     INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX experiments_by_owner ON experiments (owner, create_time);
CREATE INDEX experiments_deleted ON experiments (deleted) WHERE deleted = 1;

CREATE TABLE read_grants (
	experiment_id TEXT NOT NULL,
	user_id       TEXT NOT NULL,
	PRIMARY KEY (experiment_id, user_id)
) WITHOUT ROWID;

-- start_time is NULL until a point with a real wall time arrives.
CREATE TABLE runs (
	experiment_id TEXT NOT NULL,
	name          TEXT NOT NULL,
	start_time    REAL,
	PRIMARY KEY (experiment_id, name)
) WITHOUT ROWID;

-- total_bytes: tensor bytes for tensor series, bytes of current blobs for
-- blob sequences; blob_count: current blobs. max_length: blob sequences.
CREATE TABLE series (
	id            INTEGER PRIMARY KEY,
	experiment_id TEXT NOT NULL,
	run           TEXT NOT NULL,
	tag           TEXT NOT NULL,
	plugin        TEXT NOT NULL,
	metadata      BLOB,
	data_class    INTEGER NOT NULL,
	display_name  TEXT NOT NULL,
	description   TEXT NOT NULL,
	point_count   INTEGER NOT NULL DEFAULT 0,
	max_step      INTEGER NOT NULL DEFAULT 0,
	max_wall_time REAL,
	max_length    INTEGER NOT NULL DEFAULT 0,
	total_bytes   INTEGER NOT NULL DEFAULT 0,
	blob_count    INTEGER NOT NULL DEFAULT 0,
	UNIQUE (experiment_id, run, tag)
);

CREATE TABLE scalar_points (
	series_id    INTEGER NOT NULL,
	step         INTEGER NOT NULL,
	sample_level INTEGER NOT NULL,
	wall_time    REAL,
	value_bits   INTEGER NOT NULL,
	PRIMARY KEY (series_id, step)
) WITHOUT ROWID;
-- Covering: a downsampled read touches only the top levels' contiguous
-- index entries, never the table.
CREATE INDEX scalar_points_sample ON scalar_points (series_id, sample_level, step, wall_time, value_bits);

-- Rows can be large (serialized TensorProto), so a rowid table: SQLite
-- advises WITHOUT ROWID only for small rows.
CREATE TABLE tensor_points (
	series_id    INTEGER NOT NULL,
	step         INTEGER NOT NULL,
	sample_level INTEGER NOT NULL,
	wall_time    REAL,
	dtype        INTEGER NOT NULL,
	shape        BLOB,
	tensor       BLOB NOT NULL,
	UNIQUE (series_id, step)
);
CREATE INDEX tensor_points_sample ON tensor_points (series_id, sample_level, step);

CREATE TABLE blob_sequences (
	series_id    INTEGER NOT NULL,
	step         INTEGER NOT NULL,
	sample_level INTEGER NOT NULL,
	wall_time    REAL,
	length       INTEGER NOT NULL,
	PRIMARY KEY (series_id, step)
) WITHOUT ROWID;
CREATE INDEX blob_sequences_sample ON blob_sequences (series_id, sample_level, step);

CREATE TABLE blobs (
	series_id  INTEGER NOT NULL,
	step       INTEGER NOT NULL,
	idx        INTEGER NOT NULL,
	object_key TEXT NOT NULL,
	size       INTEGER NOT NULL,
	crc32c     INTEGER NOT NULL,
	state      INTEGER NOT NULL,
	PRIMARY KEY (series_id, step, idx)
) WITHOUT ROWID;
`,
	// Version 2: OIDC identities and API tokens (identity.go).
	identitySchema,
	// Version 3: scalars in blocks. migrateScalarBlocks (scalarblock.go)
	// then moves the points of scalar_points here and drops it.
	`
-- Scalar points in blocks of up to 128 consecutive points of a series
-- (scalarblock.go has the encoding): one row per block instead of per
-- point. first_step and last_step bound the block's steps; blocks of a
-- series never overlap.
CREATE TABLE scalar_blocks (
	series_id  INTEGER NOT NULL,
	first_step INTEGER NOT NULL,
	last_step  INTEGER NOT NULL,
	points     BLOB NOT NULL,
	UNIQUE (series_id, first_step)
);

-- A copy of every scalar point whose downsample.Level is at least 4 (one
-- in 16), keyed for downsampling: walking it from the top level down
-- yields the smallest sample keys first. A window with fewer such points
-- than a read asks for is small, and is read from the blocks instead.
CREATE TABLE scalar_samples (
	series_id    INTEGER NOT NULL,
	sample_level INTEGER NOT NULL,
	step         INTEGER NOT NULL,
	wall_bits    INTEGER NOT NULL,
	value_bits   INTEGER NOT NULL,
	PRIMARY KEY (series_id, sample_level, step)
) WITHOUT ROWID;
`,
	// Version 4: pending read grants by email (identity.go).
	pendingGrantsSchema,
	// Version 5: the start time an uploader read from a run's first event.
	`
-- first_event_time is the wall time of the run's first event as the
-- uploader read it (PutRuns), TensorBoard's start time; NULL if none was
-- given. It takes precedence over start_time, which is derived from the
-- points written (all that TensorBoard's own uploader sends).
ALTER TABLE runs ADD COLUMN first_event_time REAL;
`,
	// Version 6: the public gallery (ListPublicExperiments), newest update
	// first.
	`
CREATE INDEX experiments_public ON experiments (update_time DESC, id)
	WHERE visibility = 'public' AND deleted = 0;
`,
	// Version 7: when an unfinished blob's row was last written.
	`
-- unfinished_write_time is when the row of an unfinished blob (state 1)
-- was last written, in Unix nanoseconds; NULL once the blob is current.
-- The sweeper of abandoned uploads finds blobs by it
-- (store.Sweeper.ListAbandonedBlobs). Rows unfinished before this version
-- are stamped with the upgrade's time: the store is closed for an upgrade,
-- so no upload is still writing them.
ALTER TABLE blobs ADD COLUMN unfinished_write_time INTEGER;
UPDATE blobs SET unfinished_write_time = CAST((julianday('now') - 2440587.5) * 86400000000000.0 AS INTEGER)
	WHERE state = 1;
CREATE INDEX blobs_unfinished ON blobs (unfinished_write_time) WHERE unfinished_write_time IS NOT NULL;
`,
	// Version 8: each token's parent, and the tokens scope.
	`
-- parent_id is the token whose call created this one (NULL for tokens made
-- by a signed-in user or an operator); revoking a token revokes its
-- descendants, found through the index. Scope bit 4 (tokens) now guards
-- creating, listing and revoking credentials: tokens that held every scope
-- before this version (1 upload + 2 read) could do all of that and keep
-- it; read-only and upload-only ones lose it.
ALTER TABLE api_tokens ADD COLUMN parent_id TEXT;
CREATE INDEX api_tokens_by_parent ON api_tokens (parent_id) WHERE parent_id IS NOT NULL;
UPDATE api_tokens SET scopes = 7 WHERE scopes = 3;
`,
	// Version 9: the name a user shows others.
	`
-- display_name is the name the user chose to show others; NULL until they
-- choose one, and for every user stored before this version: others then
-- see the user's handle (store.Handle, derived from the id), never name,
-- which for an OIDC user is their email.
ALTER TABLE users ADD COLUMN display_name TEXT;
`,
	// Version 10: which experiment a client's create request made.
	`
-- A row per (user, request id) of store.Writer.CreateExperimentOnce,
-- written in the transaction that creates the experiment, so a retried
-- create whose answer was lost finds the experiment instead of making a
-- second one. Until expire_time (Unix nanoseconds); expired rows are
-- ignored, replaced, and removed by the sweeper through the index.
CREATE TABLE create_requests (
	user_id TEXT NOT NULL,
	request_id TEXT NOT NULL,
	experiment_id TEXT NOT NULL,
	expire_time INTEGER NOT NULL,
	PRIMARY KEY (user_id, request_id)
);
CREATE INDEX create_requests_by_expiry ON create_requests (expire_time);
`,
	// Version 11: leases on background work.
	`
-- A lease keeps one piece of background work (the purge of deleted
-- experiments, the sweep of abandoned blobs, ...) to one server process at
-- a time: holder, a process's random ID, holds it until expire_time (Unix
-- nanoseconds) and renews it while it works (store.Sweeper.TakeLease).
CREATE TABLE leases (
	name TEXT PRIMARY KEY,
	holder TEXT NOT NULL,
	expire_time INTEGER NOT NULL
);
`,
	// Version 12: scalars in compressed chunks. convertScalarBlocks
	// (scalarlegacy.go) then moves the points of scalar_blocks here, in
	// batches, and drops scalar_blocks and scalar_samples. IF NOT EXISTS:
	// a conversion stopped between batches runs this again.
	`
-- Scalar points in scalarchunk chunks (services/internal/storage/scalarchunk: about
-- 5 B per point on a typical float32 series, where version 3's blocks took
-- 17 B and its samples 1 B more), one row per chunk of consecutive points
-- of one series at one sample level. sample_level -1 holds every point, in
-- chunks of about 3,900 bytes (one per 4 KB page) or 1,024 points;
-- sample_level L >= 3 a copy of the points whose downsample.Level is
-- exactly L, which downsampling reads from the top level down: the rows of
-- the levels it needs, O(k) points. first_step and last_step bound a
-- chunk's steps; chunks of one series and level never overlap. A rowid
-- table: a chunk is a few KB, too big for a WITHOUT ROWID row, and its
-- rowid says where in the file it lies (insertChunkSQL).
CREATE TABLE IF NOT EXISTS scalar_chunks (
	series_id    INTEGER NOT NULL,
	sample_level INTEGER NOT NULL,
	first_step   INTEGER NOT NULL,
	last_step    INTEGER NOT NULL,
	chunk        BLOB NOT NULL,
	UNIQUE (series_id, sample_level, first_step)
);
`,
	`
-- The blob store generation of the object a blob row stands for
-- (store.Blob.Generation), so that writers racing on one blob (two server
-- instances) write rows and objects only over the versions they read: 0
-- for rows written before this version, and while an upload has not
-- committed an object yet.
ALTER TABLE blobs ADD COLUMN generation INTEGER NOT NULL DEFAULT 0;
`,
	// Event records the uploader skipped as damaged, as it last reported
	// them (store.Damage): the count, the files holding them, and the
	// first of those files as a JSON array of "RUN/FILE" strings.
	`
ALTER TABLE experiments ADD COLUMN damaged_records INTEGER NOT NULL DEFAULT 0;
ALTER TABLE experiments ADD COLUMN damaged_num_files INTEGER NOT NULL DEFAULT 0;
ALTER TABLE experiments ADD COLUMN damaged_files TEXT NOT NULL DEFAULT '[]';
`,
	// Version 15: summaries for bucketed reads. summarizeScalars
	// (scalarbuckets.go) then writes them for the series stored before,
	// in batches; the SQL has nothing to change.
	`
-- scalar_chunks rows at sample_level -2 to -5 summarize runs of a series'
-- points (scalarbuckets.go): segments of 256 points at level -2, 8 times
-- more per level below, each its count and its first, last, lowest,
-- highest and first NaN point, up to 64 segments per row.
SELECT 1;
`,
	// Version 16: per-user usage (chargePoints in write.go), filled from
	// the series' totals.
	`
-- Per-user usage every writer agrees on: the user's live experiments and
-- their scalar and tensor points, kept in the same transactions that
-- change them (CreateExperiment adds one; WriteScalars, WriteTensors add
-- the points that are new; DeleteExperiment takes the experiment and its
-- points away), so the quotas on them are checked exactly, inside those
-- transactions, and UserUsage reads them by key. Filled here from the
-- experiments and the series' running totals; idempotent, so that
-- running it again (a test migrating from an earlier version) counts anew.
CREATE TABLE IF NOT EXISTS user_usage (
	user_id     TEXT PRIMARY KEY,
	points      INTEGER NOT NULL DEFAULT 0,
	experiments INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;
INSERT OR REPLACE INTO user_usage (user_id, points, experiments)
	SELECT e.owner,
		COALESCE(SUM((SELECT SUM(s.point_count) FROM series s WHERE s.experiment_id = e.id AND s.data_class IN (1, 2))), 0),
		COUNT(*)
	FROM experiments e WHERE e.deleted = 0 GROUP BY e.owner;
`,
	// Version 17: blob bytes in the usage row (addBlobBytes), added and
	// filled by countBlobBytes.
	`SELECT 1;`,
}

// dataMigrations are Go steps that run, in the same transaction, after the
// SQL of the version they are keyed by: moves that SQL cannot express.
var dataMigrations = map[int]func(context.Context, *sql.Tx) error{
	3:  migrateScalarBlocks,
	17: countBlobBytes,
}

// countBlobBytes adds user_usage.blob_bytes, if missing, and sets it from
// the blob rows of the user's live experiments, current and unfinished:
// the byte quota's share the blob writes keep from now on (addBlobBytes).
// Idempotent, as version 16's SQL is, so that a database migrated again
// from an earlier version counts anew.
func countBlobBytes(ctx context.Context, tx *sql.Tx) error {
	var has int
	if err := tx.QueryRowContext(ctx, "SELECT COUNT(*) FROM pragma_table_info('user_usage') WHERE name = 'blob_bytes'").Scan(&has); err != nil {
		return err
	}
	if has == 0 {
		if _, err := tx.ExecContext(ctx, "ALTER TABLE user_usage ADD COLUMN blob_bytes INTEGER NOT NULL DEFAULT 0"); err != nil {
			return err
		}
	}
	_, err := tx.ExecContext(ctx, `UPDATE user_usage SET blob_bytes = (SELECT COALESCE(SUM(b.size), 0)
		FROM experiments e JOIN series s ON s.experiment_id = e.id JOIN blobs b ON b.series_id = s.id
		WHERE e.owner = user_usage.user_id AND e.deleted = 0)`)
	return err
}

// batchedMigrations are Go steps too long for one transaction: after the
// SQL of the version they are keyed by, each transaction runs the SQL
// again (it must be idempotent) and one batch of the step, and the last
// one, which reports done, also sets the version. A migration interrupted
// between batches (a crash, a kill) resumes from the last committed batch.
var batchedMigrations = map[int]func(context.Context, *sql.Tx) (done bool, err error){
	12: convertScalarBlocks,
	15: summarizeScalars,
}

// SchemaVersion is the schema version this package writes.
var SchemaVersion = len(migrations)
