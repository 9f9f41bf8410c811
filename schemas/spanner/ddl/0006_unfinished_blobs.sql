-- Blobs, version 6: UnfinishedWriteTime is the commit time of the last
-- write of an unfinished blob's row (State 1); NULL once the blob is
-- current, and for rows written before this version. The sweeper of
-- abandoned uploads (store.Sweeper.ListAbandonedBlobs) reads the index
-- below, which holds unfinished blobs only: a normal upload writes its row
-- once, current, so the index sees only interrupted uploads, too few for
-- its timestamp key to make a write hotspot. Nullable, so adding it is a
-- schema-only change; rows unfinished before it are never swept
-- (docs/operations.md, "Upgrade", says how to stamp them).
ALTER TABLE Blobs ADD COLUMN UnfinishedWriteTime TIMESTAMP OPTIONS (allow_commit_timestamp = true);

CREATE NULL_FILTERED INDEX BlobsByUnfinishedWriteTime ON Blobs (UnfinishedWriteTime) STORING (State, ObjectKey, Size);
