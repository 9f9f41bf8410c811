-- Per-user usage every instance agrees on (issue 22): the user's live
-- experiments and their scalar and tensor points, kept in the same
-- transactions that change them (CreateExperiment adds one; WriteScalars
-- and WriteTensors add the points that are new, in each commit;
-- DeleteExperiment takes the experiment and its points away), so the
-- quotas on them are checked exactly, inside those transactions, and
-- UserUsage reads them with one key lookup. One row per user
-- rather than a column of Users: the row every write of the user touches
-- is kept apart from the row sign-ins and token checks read.
--
-- Backfilled is set by `tbhub migrate`, which counts a user's experiments
-- and points in one read-write transaction and overwrites the row (writes
-- made before it only added to a row that did not know the user's older
-- data); a rerun skips the users it has done. Every write of the row sets
-- both counters.
CREATE TABLE UserUsage (
  UserId      STRING(MAX) NOT NULL,
  Points      INT64 NOT NULL,
  Experiments INT64 NOT NULL,
  Backfilled  BOOL,
) PRIMARY KEY (UserId);
