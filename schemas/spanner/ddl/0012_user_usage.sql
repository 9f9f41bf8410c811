-- Per-user usage every instance agrees on (issue 22): the scalar and
-- tensor points of the user's live experiments, kept in the same
-- transactions that write the points (WriteScalars and WriteTensors add
-- what is new, in each commit; DeleteExperiment takes the experiment's
-- away), so the points quota is checked against it exactly, inside the
-- write, and UserUsage reads it with one key lookup. One row per user
-- rather than a column of Users: the row every write of the user touches
-- is kept apart from the row sign-ins and token checks read.
--
-- Backfilled is set by `tbhub migrate`, which counts a user's points from
-- the series' totals in one read-write transaction and overwrites Points
-- (writes made before it only added to a row that did not know the
-- user's older points); a rerun skips the users it has done.
CREATE TABLE UserUsage (
  UserId     STRING(MAX) NOT NULL,
  Points     INT64 NOT NULL,
  Backfilled BOOL,
) PRIMARY KEY (UserId);
