-- Scalars in chunks (issue 21): a scalar series is stored as rows of
-- package scalarchunk's encoding, a few KB and up to 1,024 points each,
-- instead of a row per point plus an index entry per point. The layout is
-- the embedded store's (scalarchunk/series.go): SampleLevel -1 holds every
-- point of the series, in chunks of consecutive steps; a level L >= 3 holds
-- a copy of the points whose downsample.Level is exactly L, for downsampled
-- reads (a read of k points walks the levels from the top down and stops
-- once it holds k, O(k) whatever the series length). Other negative levels
-- are kept free for other summaries of a series (min/max buckets).
--
-- SeriesId is a compact name for a (run, tag) within its experiment, so
-- that chunk keys do not repeat the run and tag strings: 8 bytes instead of
-- about 2 x 25. It is allocated from Experiments.NextSeriesId, read and
-- incremented in the transaction that creates the series. A counter rather
-- than a random 63-bit number: ids are never reused (the counter only
-- grows), never collide, and need no check; the counter is written only
-- when a series is created, a few times per run, so writers of existing
-- series never touch it (they read Experiments.State, another column).
-- SeriesId is NULL for a scalar series written before this layout (its
-- points are ScalarPoints rows): reads of such a series use the old rows
-- until a write or `tbhub migrate` converts it. Other classes leave it NULL.
--
-- HeadSteps[SAFE_OFFSET(L + 1)] is the FirstStep of the series' last chunk
-- at level L (NULL while the level has none), the chunk an append reopens:
-- an append reads the chunks it extends by key, and the latest point of a
-- series (the HParams page, the latest point of a sampled read) is one
-- point read of the chunk HeadSteps[SAFE_OFFSET(0)].
ALTER TABLE Experiments ADD COLUMN NextSeriesId INT64;
ALTER TABLE TimeSeries ADD COLUMN SeriesId INT64;
ALTER TABLE TimeSeries ADD COLUMN HeadSteps ARRAY<INT64>;

-- Interleaved in Experiments, not in TimeSeries: a child of TimeSeries
-- would repeat RunName and Tag in its key, which is what SeriesId saves.
-- Chunks of one series at one level are disjoint step ranges, keyed by
-- their first step; the chunk that may hold a step s is the last one with
-- FirstStep <= s. LastStep is not stored: the chunk's header has it, and
-- every read decodes the chunks it reads.
CREATE TABLE ScalarChunks (
  ExperimentId STRING(64) NOT NULL,
  SeriesId     INT64 NOT NULL,
  SampleLevel  INT64 NOT NULL,
  FirstStep    INT64 NOT NULL,
  Chunk        BYTES(MAX) NOT NULL,
) PRIMARY KEY (ExperimentId, SeriesId, SampleLevel, FirstStep),
  INTERLEAVE IN PARENT Experiments ON DELETE CASCADE;
