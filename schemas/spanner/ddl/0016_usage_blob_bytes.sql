-- Blob bytes in the per-user usage row (issue 22): the size of every blob
-- row of the user's live experiments, current or unfinished, kept by the
-- transactions that write and delete blob rows (PutBlob and PutBlobIf add
-- how much the row grew; a rewritten blob step, a swept abandoned blob
-- and DeleteExperiment take theirs away). The byte quota is checked in
-- PutBlob's transaction against it, so every instance agrees on the
-- bytes that dominate the quota; the user's other stored bytes (series
-- metadata, tokens, runs, grants) are still added from the caller's
-- snapshot (store.Quotas.OtherBytes).
--
-- NULL on rows written before this version, read as 0; writes add to it.
-- `tbhub migrate` counts each user's blob rows in one read-write
-- transaction, overwrites the column and sets BlobBytesBackfilled; a
-- rerun skips the users it has done.
ALTER TABLE UserUsage ADD COLUMN BlobBytes INT64;
ALTER TABLE UserUsage ADD COLUMN BlobBytesBackfilled BOOL;
