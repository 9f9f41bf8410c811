-- tbhub on Cloud Spanner, version 1.
--
-- Key layout. Every table that holds experiment data has a primary key that
-- starts with ExperimentId. Experiment ids are 128 random bits, so new
-- experiments land uniformly across the key space (no hot split at the end
-- of a monotonic key), and everything one experiment owns is one contiguous
-- key range: a read of one experiment never touches another tenant's rows,
-- and a delete of one experiment is a handful of range deletes.
--
-- Interleaving. The data is a strict tree, and every read walks it from the
-- top: experiment -> runs -> time series -> points of one series -> blobs of
-- one point. Interleaving each level in its parent stores a series' points
-- next to the series row (and a run's series next to the run), so the
-- common reads (list a run's series, read k points of a series, read the
-- blobs of the chosen steps) are single range scans on one split, and the
-- writes of one upload batch, which always stay inside one series, touch
-- one place. Spanner still splits a large hierarchy between child rows, so
-- a long series is not a size problem. Users, tokens and the experiment
-- list are looked up by other keys and are top-level tables.
--
-- Downsampling. Each point table has a SampleKey column, set at write time
-- to downsample.SampleKey(Step) (a fixed 64-bit mix of the step, >= 0), and
-- an index on (series key, SampleKey) interleaved in TimeSeries. Reading k
-- points of a series is the latest point plus the first k-1 entries of that
-- index for the series: O(k) rows whatever the series length. Step is part
-- of the primary key, so index entries with equal SampleKey are ordered by
-- Step, which is the tie rule of downsample.Select.
--
-- Times of our own records are commit timestamps; wall times of points are
-- FLOAT64 seconds, as TensorBoard records them (NaN and infinities are kept).

-- SchemaMigrations records which numbered DDL files have been applied, so
-- that migrating is idempotent (spannerstore.Migrate).
CREATE TABLE SchemaMigrations (
  Version     INT64 NOT NULL,
  Name        STRING(MAX) NOT NULL,
  AppliedTime TIMESTAMP NOT NULL OPTIONS (allow_commit_timestamp = true),
) PRIMARY KEY (Version);

CREATE TABLE Users (
  UserId     STRING(MAX) NOT NULL,
  Name       STRING(MAX) NOT NULL,
  CreateTime TIMESTAMP NOT NULL OPTIONS (allow_commit_timestamp = true),
) PRIMARY KEY (UserId);

CREATE UNIQUE INDEX UsersByName ON Users (Name);

-- API tokens are stored as a hash only (SHA-256 of the secret), so a leaked
-- table grants nothing. The hash is the key: authentication is one point
-- read. Not interleaved in Users because it is never read through the user.
CREATE TABLE ApiTokens (
  TokenHash   BYTES(32) NOT NULL,
  UserId      STRING(MAX) NOT NULL,
  Description STRING(MAX) NOT NULL,
  CreateTime  TIMESTAMP NOT NULL OPTIONS (allow_commit_timestamp = true),
  ExpireTime  TIMESTAMP,
  RevokeTime  TIMESTAMP,
) PRIMARY KEY (TokenHash);

CREATE INDEX ApiTokensByUser ON ApiTokens (UserId);

-- State is 'LIVE' or 'DELETED'. Deleting flips it in one transaction, which
-- makes the whole experiment unreadable at once (every read checks it in the
-- same snapshot); the sweeper then removes the rows and objects and, last,
-- this row. UpdateTime covers the experiment's own fields; the time of the
-- last data write is kept per series (TimeSeries.UpdateTime) so that
-- concurrent writers of different series do not all rewrite this row.
CREATE TABLE Experiments (
  ExperimentId STRING(64) NOT NULL,
  Name         STRING(MAX) NOT NULL,
  Description  STRING(MAX) NOT NULL,
  OwnerId      STRING(MAX) NOT NULL,
  Visibility   STRING(16) NOT NULL,
  State        STRING(16) NOT NULL,
  CreateTime   TIMESTAMP NOT NULL OPTIONS (allow_commit_timestamp = true),
  UpdateTime   TIMESTAMP NOT NULL OPTIONS (allow_commit_timestamp = true),
  DeleteTime   TIMESTAMP OPTIONS (allow_commit_timestamp = true),
) PRIMARY KEY (ExperimentId);

-- Listing: a user's experiments newest first, and all public ones.
CREATE INDEX ExperimentsByOwner ON Experiments (OwnerId, CreateTime DESC);
CREATE INDEX ExperimentsByState ON Experiments (State, CreateTime DESC);

-- Read grants are always read with their experiment (tenancy check, the
-- experiment's reader list), so they are interleaved in it; the index
-- serves "experiments shared with me".
CREATE TABLE ReadGrants (
  ExperimentId STRING(64) NOT NULL,
  UserId       STRING(MAX) NOT NULL,
  CreateTime   TIMESTAMP NOT NULL OPTIONS (allow_commit_timestamp = true),
) PRIMARY KEY (ExperimentId, UserId),
  INTERLEAVE IN PARENT Experiments ON DELETE CASCADE;

CREATE INDEX ReadGrantsByUser ON ReadGrants (UserId);

-- StartTime is the smallest wall time of any point of the run; NULL until
-- one with a real wall time arrives.
CREATE TABLE Runs (
  ExperimentId STRING(64) NOT NULL,
  RunName      STRING(MAX) NOT NULL,
  StartTime    FLOAT64,
) PRIMARY KEY (ExperimentId, RunName),
  INTERLEAVE IN PARENT Experiments ON DELETE CASCADE;

-- A time series is a (run, tag). Its metadata is fixed by the first write.
-- The running facts (PointCount .. BlobBytes) are maintained by the write
-- transactions, so listings and experiment counts read one row per series
-- and never scan points:
--   PointCount   distinct steps stored
--   MaxStep      largest step stored (0 while empty)
--   MaxWallTime  largest wall time ever written (NULL while none)
--   MaxLength    blob sequences: largest Length of any step
--   TensorBytes  tensor series: sum of the serialized tensors' sizes
--   BlobCount, BlobBytes  blob sequences: current blobs and their bytes
--   UpdateTime   commit time of the last write to the series
CREATE TABLE TimeSeries (
  ExperimentId    STRING(64) NOT NULL,
  RunName         STRING(MAX) NOT NULL,
  Tag             STRING(MAX) NOT NULL,
  PluginName      STRING(MAX) NOT NULL,
  SummaryMetadata BYTES(MAX),
  DataClass       INT64 NOT NULL,
  DisplayName     STRING(MAX) NOT NULL,
  Description     STRING(MAX) NOT NULL,
  PointCount      INT64 NOT NULL,
  MaxStep         INT64 NOT NULL,
  MaxWallTime     FLOAT64,
  MaxLength       INT64 NOT NULL,
  TensorBytes     INT64 NOT NULL,
  BlobCount       INT64 NOT NULL,
  BlobBytes       INT64 NOT NULL,
  UpdateTime      TIMESTAMP NOT NULL OPTIONS (allow_commit_timestamp = true),
) PRIMARY KEY (ExperimentId, RunName, Tag),
  INTERLEAVE IN PARENT Runs ON DELETE CASCADE;

-- Points are keyed by (experiment, run, tag, step): a rewrite of a step is
-- an upsert of the same row, which makes every write idempotent.
CREATE TABLE ScalarPoints (
  ExperimentId STRING(64) NOT NULL,
  RunName      STRING(MAX) NOT NULL,
  Tag          STRING(MAX) NOT NULL,
  Step         INT64 NOT NULL,
  SampleKey    INT64 NOT NULL,
  WallTime     FLOAT64 NOT NULL,
  Value        FLOAT64 NOT NULL,
) PRIMARY KEY (ExperimentId, RunName, Tag, Step),
  INTERLEAVE IN PARENT TimeSeries ON DELETE CASCADE;

-- The downsampling index stores the point columns, so a downsampled read
-- is one range scan of the index with no lookups into the base table.
CREATE INDEX ScalarPointsBySampleKey
  ON ScalarPoints (ExperimentId, RunName, Tag, SampleKey)
  STORING (WallTime, Value),
  INTERLEAVE IN TimeSeries;

-- Tensor holds a serialized tensorboard.TensorProto; DType and Shape are
-- copies of its fields for queries, TensorBytes its length for accounting
-- (so rewrites can adjust TimeSeries.TensorBytes without reading Tensor).
CREATE TABLE TensorPoints (
  ExperimentId STRING(64) NOT NULL,
  RunName      STRING(MAX) NOT NULL,
  Tag          STRING(MAX) NOT NULL,
  Step         INT64 NOT NULL,
  SampleKey    INT64 NOT NULL,
  WallTime     FLOAT64 NOT NULL,
  DType        INT64 NOT NULL,
  Shape        ARRAY<INT64>,
  Tensor       BYTES(MAX) NOT NULL,
  TensorBytes  INT64 NOT NULL,
) PRIMARY KEY (ExperimentId, RunName, Tag, Step),
  INTERLEAVE IN PARENT TimeSeries ON DELETE CASCADE;

-- Unlike the other point indexes, this one stores only the small columns:
-- tensors can be megabytes, and storing them again would double the bytes
-- written and kept. A downsampled read takes k keys from the index and then
-- fetches those k rows by primary key in one batched read: still O(k).
CREATE INDEX TensorPointsBySampleKey
  ON TensorPoints (ExperimentId, RunName, Tag, SampleKey)
  STORING (WallTime, DType, Shape, TensorBytes),
  INTERLEAVE IN TimeSeries;

-- One step of a blob sequence: Length upload slots, whose blobs are the
-- interleaved Blobs rows.
CREATE TABLE BlobSequences (
  ExperimentId STRING(64) NOT NULL,
  RunName      STRING(MAX) NOT NULL,
  Tag          STRING(MAX) NOT NULL,
  Step         INT64 NOT NULL,
  SampleKey    INT64 NOT NULL,
  WallTime     FLOAT64 NOT NULL,
  Length       INT64 NOT NULL,
) PRIMARY KEY (ExperimentId, RunName, Tag, Step),
  INTERLEAVE IN PARENT TimeSeries ON DELETE CASCADE;

CREATE INDEX BlobSequencesBySampleKey
  ON BlobSequences (ExperimentId, RunName, Tag, SampleKey)
  STORING (WallTime, Length),
  INTERLEAVE IN TimeSeries;

-- A blob row points at an object in the blob store (GCS). The object is
-- written first and the row last, so a row in State 2 (current) proves the
-- object is complete; Crc32c is the Castagnoli checksum of its Size bytes,
-- as an unsigned 32-bit value. Interleaved in its step because blobs are
-- only ever read for chosen steps.
CREATE TABLE Blobs (
  ExperimentId STRING(64) NOT NULL,
  RunName      STRING(MAX) NOT NULL,
  Tag          STRING(MAX) NOT NULL,
  Step         INT64 NOT NULL,
  BlobIndex    INT64 NOT NULL,
  ObjectKey    STRING(MAX) NOT NULL,
  Size         INT64 NOT NULL,
  Crc32c       INT64 NOT NULL,
  State        INT64 NOT NULL,
) PRIMARY KEY (ExperimentId, RunName, Tag, Step, BlobIndex),
  INTERLEAVE IN PARENT BlobSequences ON DELETE CASCADE;
