-- Identity, version 2: OIDC sign-in and the rest of an API token's record.
--
-- A user signed in with OpenID Connect is identified by the issuer and the
-- subject of their ID tokens; the key is that pair, so sign-in is one point
-- read. Email is what the issuer last reported (verified), shown to readers
-- of the user's experiments and used to match grants by email; the index
-- serves the reverse lookup (the identity of an experiment's owner). A user
-- has at most one identity.
CREATE TABLE OidcIdentities (
  Issuer  STRING(MAX) NOT NULL,
  Subject STRING(MAX) NOT NULL,
  UserId  STRING(MAX) NOT NULL,
  Email   STRING(MAX) NOT NULL,
) PRIMARY KEY (Issuer, Subject);

CREATE UNIQUE INDEX OidcIdentitiesByUser ON OidcIdentities (UserId) STORING (Email);

-- ApiTokens (version 1) is keyed by the hash of the secret. Tokens also need
-- a public id (listing, revoking by id without knowing the secret), their
-- scopes (bit set: 1 upload, 2 read), the first characters of the secret
-- for recognition, and when they were last used (written at most once a
-- minute per token and process). The columns are nullable only because
-- Spanner cannot add a NOT NULL column without a default; every write sets
-- them. Description holds the token's name.
ALTER TABLE ApiTokens ADD COLUMN TokenId STRING(64);
ALTER TABLE ApiTokens ADD COLUMN Scopes INT64;
ALTER TABLE ApiTokens ADD COLUMN SecretPrefix STRING(MAX);
ALTER TABLE ApiTokens ADD COLUMN LastUseTime TIMESTAMP;

CREATE UNIQUE NULL_FILTERED INDEX ApiTokensById ON ApiTokens (TokenId) STORING (UserId);
