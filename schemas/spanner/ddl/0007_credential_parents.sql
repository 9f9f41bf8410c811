-- ApiTokens, version 7: ParentTokenId is the token whose call created this
-- one (a token or a web session minted with it); NULL for tokens made by a
-- signed-in (OIDC) user or an operator, and for rows written before this
-- version. Revoking a token revokes its descendants, found level by level
-- through the index below, which holds child tokens only (NULL_FILTERED).
-- Scope bit 4 (tokens) guards creating, listing and revoking credentials
-- from this version on; docs/operations.md, "Upgrade", gives the update
-- that keeps it for tokens that held every scope before.
ALTER TABLE ApiTokens ADD COLUMN ParentTokenId STRING(64);

CREATE NULL_FILTERED INDEX ApiTokensByParent ON ApiTokens (ParentTokenId) STORING (UserId, TokenId, RevokeTime);
