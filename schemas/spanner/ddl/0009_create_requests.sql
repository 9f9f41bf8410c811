-- CreateRequests: which experiment a client's create request made
-- (store.Writer.CreateExperimentOnce). The row is written in the
-- transaction that creates the experiment, so a create retried after its
-- answer was lost, on any instance, finds the experiment instead of making
-- a second one that would count against the user's quota. Keyed by user
-- first: request IDs are the client's and only unique per user. Rows live
-- until ExpireTime (a day after the create): reads ignore expired rows, a
-- new create with the same key replaces one, the write service's sweeper
-- deletes them, and the row deletion policy lets Spanner remove any left.
CREATE TABLE CreateRequests (
  UserId       STRING(MAX) NOT NULL,
  RequestId    STRING(128) NOT NULL,
  ExperimentId STRING(MAX) NOT NULL,
  ExpireTime   TIMESTAMP NOT NULL,
) PRIMARY KEY (UserId, RequestId),
  ROW DELETION POLICY (OLDER_THAN(ExpireTime, INTERVAL 0 DAY));

CREATE INDEX CreateRequestsByExpiry ON CreateRequests (ExpireTime);
