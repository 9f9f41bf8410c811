-- Blobs, version 12: Generation is the GCS generation of the object the
-- row stands for (store.Blob.Generation). Writers that may race on one blob
-- (a stream cut on one instance and resumed on another) write the object
-- only over the generation they read (ifGenerationMatch) and the row only
-- if it still records that generation, in the transaction that writes it
-- (store.Writer.PutBlobIf); the sweeper deletes exactly the generation the
-- abandoned row names. NULL, read as 0, for rows written before this
-- version and while an upload has not committed an object yet. Nullable,
-- so adding it is a schema-only change.
ALTER TABLE Blobs ADD COLUMN Generation INT64;
