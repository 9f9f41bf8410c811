-- The public gallery sorted by an index instead of by a per-row scan of
-- every public experiment's series (issue 22, item 7).
--
-- Experiments.UpdateTime now also moves with data writes, but coarsely: a
-- write transaction reads DataTime with the State it already reads, and
-- moves UpdateTime and DataTime to its commit time only when DataTime is
-- NULL (the experiment's first data write) or more than 5 s old
-- (spannerstore.Options.DataTimeStep). So of all the writers of one experiment at
-- most one per 5 s writes this row; the others only read it, as they did.
-- Updating the row on every write would serialize every writer of the
-- experiment on one cell. UpdateTime thus lags the experiment's latest
-- data write by at most 5 s. DataTime is NULL for experiments without a
-- data write since this version; `tbhub migrate` sets UpdateTime and
-- DataTime of experiments written before it from their series
-- (spannerstore.BackfillExperimentTimes).
ALTER TABLE Experiments ADD COLUMN DataTime TIMESTAMP OPTIONS (allow_commit_timestamp = true);

-- One gallery page is a walk of this index from the cursor on: public
-- live experiments, latest update first, with what the search reads.
CREATE INDEX ExperimentsPublicByUpdate ON Experiments (Visibility, State, UpdateTime DESC, ExperimentId)
  STORING (Name, Description, OwnerId);

-- ExperimentsByVisibility (0005) is no longer read by this release; the
-- previous one forces it in its gallery query while a rolling deploy runs
-- both, so it is dropped by a later file, not here.
