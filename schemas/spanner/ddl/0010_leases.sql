-- Leases: one row per piece of background work (the purge of deleted
-- experiments, the sweep of abandoned blobs, ...) that one write-service
-- instance at a time should do. Holder (an instance's random ID) holds the
-- lease until ExpireTime and renews it while it works; another instance
-- takes it once it has expired, or at once when its holder releases it on
-- shutdown (store.Sweeper.TakeLease). Read and written in one read-write
-- transaction, so of instances racing for a free lease one wins. A handful
-- of rows, written about once a minute each.
CREATE TABLE Leases (
  Name       STRING(MAX) NOT NULL,
  Holder     STRING(MAX) NOT NULL,
  ExpireTime TIMESTAMP NOT NULL,
) PRIMARY KEY (Name);
