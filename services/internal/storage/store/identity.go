package store

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"strings"
	"time"
)

// This file is the identity half of the store: who a user is to the outside
// world (an OpenID Connect issuer and subject, with an email shown to
// others), the API tokens that stand in for a user, and how much of the
// per-user quotas a user has consumed. Authentication itself (verifying ID
// tokens, hashing presented secrets) lives in package auth; the store only
// keeps the records.

// TokenScopes is a set of scopes an API token grants.
type TokenScopes uint8

const (
	// ScopeUpload allows creating, changing, deleting and writing the
	// user's own experiments.
	ScopeUpload TokenScopes = 1 << iota
	// ScopeRead allows reading the experiments the user may see.
	ScopeRead
	// ScopeTokens allows managing the user's credentials: creating API
	// tokens and web sessions, listing and revoking them. Without it a
	// stolen upload or read token cannot mint credentials that outlive it
	// nor revoke the user's others.
	ScopeTokens

	// AllScopes is what a signed-in (OIDC) user holds.
	AllScopes = ScopeUpload | ScopeRead | ScopeTokens
)

// Has reports whether every scope of want is in s.
func (s TokenScopes) Has(want TokenScopes) bool { return s&want == want }

func (s TokenScopes) String() string {
	var parts []string
	if s.Has(ScopeUpload) {
		parts = append(parts, "upload")
	}
	if s.Has(ScopeRead) {
		parts = append(parts, "read")
	}
	if s.Has(ScopeTokens) {
		parts = append(parts, "tokens")
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, "+")
}

// OIDCIdentity binds an OpenID Connect identity to a user. The pair
// (Issuer, Subject) is the identity; Email is informational (shown to
// people who may read the user's experiments) and refreshed at sign-in.
type OIDCIdentity struct {
	Issuer  string
	Subject string
	UserID  string
	Email   string
}

// Handle is the name others see for a user who has chosen no display name:
// "user-" and the 8 characters of the user ID after its first (the ID is
// public already, as Experiment.Owner), so it is stable and says nothing
// about the user's email. The stores' gallery searches compute it in SQL
// by the same rule (storetest checks they agree).
func Handle(userID string) string {
	rest := userID[min(1, len(userID)):]
	return "user-" + rest[:min(8, len(rest))]
}

// PublicName is the name others see for u: its display name, or else its
// handle. Never its Name, which for an OIDC user is their email.
func (u User) PublicName() string {
	if u.DisplayName != "" {
		return u.DisplayName
	}
	return Handle(u.ID)
}

// TokenHash is the SHA-256 of an API token's secret. The store keeps only
// this, so a leaked table grants nothing.
type TokenHash [sha256.Size]byte

// HashTokenSecret returns the hash under which a token secret is stored.
func HashTokenSecret(secret string) TokenHash { return sha256.Sum256([]byte(secret)) }

// APIToken is the stored record of one API token; never its secret.
type APIToken struct {
	// ID is public and stable (NewTokenID); it names the token in listings
	// and revocations.
	ID     string
	UserID string
	// Name is the user's label ("laptop", "ci").
	Name   string
	Scopes TokenScopes
	Hash   TokenHash
	// SecretPrefix is the first characters of the secret, so a user can
	// recognise a token; too short to use it.
	SecretPrefix string
	// ParentID is the token whose call created this one (a token or a web
	// session minted with it); empty for tokens made by a signed-in (OIDC)
	// user or by an operator. Revoking a token revokes its descendants.
	ParentID string
	// CreateTime is set by the store. ExpireTime zero means no expiry;
	// LastUseTime and RevokeTime are zero until set.
	CreateTime  time.Time
	ExpireTime  time.Time
	LastUseTime time.Time
	RevokeTime  time.Time
}

// TokenRecordOverhead is what a stored token takes besides its text
// fields: the 32-byte hash, the scopes and four times, 8 bytes each.
const TokenRecordOverhead = 32 + 5*8

// StoredBytes is what the token's record counts toward the user's byte
// quota: its ID, name, secret prefix and parent ID (bytes of UTF-8) and
// TokenRecordOverhead. The stores sum the same in Usage.TokenBytes.
func (t *APIToken) StoredBytes() int64 {
	return int64(len(t.ID)+len(t.Name)+len(t.SecretPrefix)+len(t.ParentID)) + TokenRecordOverhead
}

// Usable reports whether the token may authenticate a call at now: not
// revoked and not expired.
func (t *APIToken) Usable(now time.Time) bool {
	return t.RevokeTime.IsZero() && (t.ExpireTime.IsZero() || now.Before(t.ExpireTime))
}

// Usage is a user's consumption of the per-user quotas, over live
// (not deleted) experiments.
type Usage struct {
	Experiments int64 // experiments owned
	Points      int64 // scalar and tensor points stored
	BlobBytes   int64 // bytes of blobs, current and unfinished
	// MetadataBytes is the bytes of the series' serialized summary
	// metadata (TimeSeries.SummaryMetadata), stored once per series.
	MetadataBytes int64
	// Tokens is the user's API tokens (web sessions included) neither
	// revoked nor expired when the usage was read: what the per-user token
	// cap counts.
	Tokens int64
	// TokenBytes is the bytes of the user's token records in every state
	// (APIToken.StoredBytes): revoked and expired tokens stay listed, so
	// they stay stored.
	TokenBytes int64
	// RunBytes is what the experiments' runs take and GrantBytes what
	// their grants take (read grants by user ID, pending grants by
	// email): RowBytes of each row's name, ID or email.
	RunBytes   int64
	GrantBytes int64
	// PendingGrants counts the pending grants (by email) on the user's
	// experiments.
	PendingGrants int64
}

// StoredBytes is what the per-user byte quota counts: blobs, finished or
// not, series metadata, token records, runs and grants.
func (u Usage) StoredBytes() int64 {
	return u.BlobBytes + u.MetadataBytes + u.TokenBytes + u.RunBytes + u.GrantBytes
}

// RowOverheadBytes is what a run or grant row counts toward the byte
// quota beyond its text: its keys and index entries, roughly. Without it
// 100,000 runs of one-byte names would count 100 KB and take tens of MB.
const RowOverheadBytes = 100

// RowBytes is what a run or grant row named text counts toward the byte
// quota: its UTF-8 bytes and RowOverheadBytes.
func RowBytes(text string) int64 { return int64(len(text)) + RowOverheadBytes }

// IdentityStore keeps users' outside identities, API tokens and usage.
// Methods wrap the sentinel errors of this package.
type IdentityStore interface {
	// GetOrCreateOIDCUser returns the user bound to (issuer, subject). If
	// there is none it creates a user named after the email (made unique
	// if taken) with ID newUserID, binds it and turns the pending grants
	// for the email into read grants of live experiments, in one
	// transaction. The stored email is updated when it changed.
	GetOrCreateOIDCUser(ctx context.Context, issuer, subject, email, newUserID string) (User, error)
	// GetOIDCUser returns the user bound to (issuer, subject), or
	// ErrNotFound, and writes nothing: it is how a process that may not
	// write (the read service) maps an ID token to a user.
	GetOIDCUser(ctx context.Context, issuer, subject string) (User, error)
	// GetOIDCIdentity returns the OIDC identity bound to a user;
	// ErrNotFound for users created locally.
	GetOIDCIdentity(ctx context.Context, userID string) (OIDCIdentity, error)

	// CreateAPIToken stores t (ID, UserID, Hash and a non-empty Scopes
	// required; CreateTime is set by the store; ParentID, if set, is
	// recorded as given). ErrNotFound for an
	// unknown user, ErrAlreadyExists if the ID or hash is taken.
	CreateAPIToken(ctx context.Context, t APIToken) (APIToken, error)
	// GetAPITokenByHash returns the token with that hash in any state;
	// ErrNotFound if none.
	GetAPITokenByHash(ctx context.Context, h TokenHash) (APIToken, error)
	// ListAPITokens returns a user's tokens in every state, oldest first.
	ListAPITokens(ctx context.Context, userID string) ([]APIToken, error)
	// RevokeAPIToken marks a user's token revoked at the given time,
	// with every token made with it, transitively (ParentID), in one
	// transaction; a token already revoked keeps its first revocation
	// time. ErrNotFound if the user has no token with that ID.
	RevokeAPIToken(ctx context.Context, userID, tokenID string, at time.Time) error
	// TouchAPIToken records a use of the token at the given time, unless
	// the recorded last use is less than every before it (never moving
	// LastUseTime backwards). The check and the write are one
	// transaction, so of any number of server instances touching one
	// token, at most one writes per interval. Unknown IDs are ignored.
	TouchAPIToken(ctx context.Context, tokenID string, at time.Time, every time.Duration) error

	// AddPendingGrant records a read grant for whoever first signs in with
	// the (verified) email; GetOrCreateOIDCUser turns it into a grant when
	// it creates that user. Idempotent; ErrNotFound if the experiment is
	// not live.
	AddPendingGrant(ctx context.Context, eid, email string) error
	// RemovePendingGrant withdraws a pending grant; removing one that does
	// not exist is not an error.
	RemovePendingGrant(ctx context.Context, eid, email string) error
	// ListPendingGrants returns the emails with a pending grant on the
	// experiment, sorted.
	ListPendingGrants(ctx context.Context, eid string) ([]string, error)

	// UserUsage sums the user's live experiments and counts the user's
	// tokens.
	UserUsage(ctx context.Context, userID string) (Usage, error)
	// ListGrantedExperiments returns the IDs of live experiments on which
	// the user holds a read grant, sorted.
	ListGrantedExperiments(ctx context.Context, userID string) ([]string, error)
}

// NewUserID returns a fresh opaque user ID: "u" and 96 random bits.
func NewUserID() string { return "u" + randomText(12) }

// NewTokenID returns a fresh public token ID: "tok" and 64 random bits.
func NewTokenID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b) // never fails; see NewExperimentID
	return "tok" + hex.EncodeToString(b)
}

func randomText(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}
