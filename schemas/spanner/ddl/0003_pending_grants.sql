-- Pending grants, version 3: a read grant to an email whose owner has not
-- signed in yet. The first OIDC sign-in with that (verified) email turns
-- its rows into ReadGrants of the experiments still live and deletes them,
-- in the transaction that creates the user; so the key starts with the
-- email. The index lists an experiment's pending grants for its owner.
-- Not interleaved in Experiments: the sign-in reads them by email.
CREATE TABLE PendingGrants (
  Email        STRING(MAX) NOT NULL,
  ExperimentId STRING(64) NOT NULL,
  CreateTime   TIMESTAMP NOT NULL OPTIONS (allow_commit_timestamp = true),
) PRIMARY KEY (Email, ExperimentId);

CREATE INDEX PendingGrantsByExperiment ON PendingGrants (ExperimentId);
