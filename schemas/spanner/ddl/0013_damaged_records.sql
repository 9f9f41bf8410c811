-- Experiments: the event records the uploader skipped as damaged, as it
-- last reported them (store.Damage, PutRunsRequest.damaged): how many, in
-- how many files, and the first of those files ("RUN/FILE", at most 100).
-- Nullable, so adding them is a schema-only change; NULL reads as none.
ALTER TABLE Experiments ADD COLUMN DamagedRecords INT64;
ALTER TABLE Experiments ADD COLUMN DamagedNumFiles INT64;
ALTER TABLE Experiments ADD COLUMN DamagedFiles ARRAY<STRING(MAX)>;
