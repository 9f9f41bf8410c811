-- Runs, version 4: FirstEventTime is the wall time of the run's first event
-- as the uploader read it (store.Writer.PutRuns), TensorBoard's start time;
-- NULL if no uploader gave one. It takes precedence over StartTime, which
-- is derived from the points written (all that TensorBoard's own uploader
-- sends). Nullable, so adding it to a populated table is a schema-only
-- change.
ALTER TABLE Runs ADD COLUMN FirstEventTime FLOAT64;
