// Package auth turns the credential of a call ("authorization: Bearer ...")
// into a Principal: the tbhub user behind it and what the credential
// allows. Two kinds of credentials are accepted:
//
//   - tbhub API tokens, recognisable by their "tbh_" prefix: 256 random
//     bits, shown to the user once (IssueToken) and stored only as a
//     SHA-256 hash; revocable (with every token made with them),
//     optionally expiring, scoped to upload, read and/or managing the
//     user's tokens.
//   - OpenID Connect ID tokens (JWTs) from one configured issuer (Google by
//     default), verified against the issuer's published keys with
//     github.com/coreos/go-oidc. The user is the issuer + subject; the
//     first sign-in creates the tbhub user.
//
// Deciding what a principal may do is package tenancy's job.
package auth

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"google.golang.org/grpc/metadata"

	"github.com/tbhub/tbhub/services/internal/storage/store"
)

// Sentinel errors of Authenticate.
var (
	// ErrNoCredentials: the call carries no authorization metadata; the
	// caller is anonymous.
	ErrNoCredentials = errors.New("auth: no credentials")
	// ErrInvalidCredentials: a credential is present but is malformed,
	// unknown, expired, revoked or fails verification.
	ErrInvalidCredentials = errors.New("auth: invalid credentials")
	// ErrIssuerUnavailable: the OIDC issuer's keys could not be fetched;
	// the call may be retried.
	ErrIssuerUnavailable = errors.New("auth: identity provider unavailable")
)

// Kind is how a principal authenticated.
type Kind int

const (
	KindAPIToken Kind = iota + 1
	KindOIDC
)

// Principal is an authenticated caller.
type Principal struct {
	UserID string
	// Email is the issuer's verified email for OIDC callers, or the one
	// stored at the user's last OIDC sign-in; empty for local users.
	Email           string
	Issuer, Subject string // OIDC only
	Kind            Kind
	// Scopes is store.AllScopes for OIDC callers and the token's scopes
	// for API tokens.
	Scopes  store.TokenScopes
	TokenID string // API tokens only
	// ExpireTime is when the credential stops working: the ID token's
	// expiry for OIDC callers, the token's for API tokens (zero if it has
	// none). Credentials made with this one expire no later.
	ExpireTime time.Time
}

// TokenPrefix starts every API token secret, so that a token is
// recognisable in logs and by secret scanners, and never mistaken for a JWT.
const TokenPrefix = "tbh_"

// tokenSecretBytes is the entropy of a token secret: 256 bits.
const tokenSecretBytes = 32

// secretPrefixLen is how much of a secret is kept to let users recognise
// their tokens: the prefix and 6 characters (36 of 256 bits).
const secretPrefixLen = len(TokenPrefix) + 6

// OIDCConfig configures ID-token sign-in. An empty Issuer disables it.
type OIDCConfig struct {
	// Issuer is the issuer URL, e.g. "https://accounts.google.com". Its
	// discovery document is fetched at the first ID token, not at start,
	// so a server without network access still serves API tokens.
	Issuer string
	// ClientIDs are the accepted audiences (OAuth client IDs of the
	// uploader and web UI). At least one is required unless
	// SkipAudienceCheck, which is for tests only: it would accept ID tokens
	// minted for any other application.
	ClientIDs         []string
	SkipAudienceCheck bool
	// HTTPClient fetches discovery documents and keys; http.DefaultClient
	// if nil.
	HTTPClient *http.Client
}

// Config configures an Authenticator.
type Config struct {
	OIDC OIDCConfig
	// Now is the clock; time.Now if nil.
	Now func() time.Time
	// TouchInterval is how often at most a token's last-use time is
	// written; one minute if zero.
	TouchInterval time.Duration
	// ReadOnly is for processes that may not write the store (the read
	// service holds Spanner's databaseReader role): API token uses are not
	// recorded there, so LastUseTime reflects writes and the frontend's
	// experiment calls only, and an ID token is accepted only for a user
	// who already exists.
	ReadOnly bool
	Logger   *slog.Logger
}

// Authenticator authenticates calls. It is safe for concurrent use.
type Authenticator struct {
	ids    store.IdentityStore
	cfg    Config
	now    func() time.Time
	logger *slog.Logger

	mu       sync.Mutex
	verifier *oidc.IDTokenVerifier // nil until the issuer was discovered

	touched sync.Map // token ID -> time.Time of the last recorded use
}

// New returns an Authenticator over ids.
func New(ids store.IdentityStore, cfg Config) (*Authenticator, error) {
	if cfg.OIDC.Issuer != "" && len(cfg.OIDC.ClientIDs) == 0 && !cfg.OIDC.SkipAudienceCheck {
		return nil, fmt.Errorf("auth.New: OIDC issuer %q needs at least one client ID", cfg.OIDC.Issuer)
	}
	a := &Authenticator{ids: ids, cfg: cfg, now: cfg.Now, logger: cfg.Logger}
	if a.now == nil {
		a.now = time.Now
	}
	if a.cfg.TouchInterval == 0 {
		a.cfg.TouchInterval = time.Minute
	}
	if a.logger == nil {
		a.logger = slog.New(slog.DiscardHandler)
	}
	return a, nil
}

// FromIncomingContext authenticates the gRPC call whose metadata ctx
// carries.
func (a *Authenticator) FromIncomingContext(ctx context.Context) (*Principal, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	values := md.Get("authorization")
	switch len(values) {
	case 0:
		return nil, ErrNoCredentials
	case 1:
		return a.Authenticate(ctx, values[0])
	}
	return nil, fmt.Errorf("%w: more than one authorization header", ErrInvalidCredentials)
}

// Authenticate checks an authorization header value ("Bearer <credential>").
func (a *Authenticator) Authenticate(ctx context.Context, header string) (*Principal, error) {
	scheme, cred, ok := strings.Cut(strings.TrimSpace(header), " ")
	if !ok || !strings.EqualFold(scheme, "bearer") {
		return nil, fmt.Errorf("%w: want \"Bearer <token>\"", ErrInvalidCredentials)
	}
	cred = strings.TrimSpace(cred)
	switch {
	case strings.HasPrefix(cred, TokenPrefix):
		return a.apiToken(ctx, cred)
	case strings.Count(cred, ".") == 2:
		return a.idToken(ctx, cred)
	}
	return nil, fmt.Errorf("%w: neither an API token nor an ID token", ErrInvalidCredentials)
}

func (a *Authenticator) apiToken(ctx context.Context, secret string) (*Principal, error) {
	t, err := a.ids.GetAPITokenByHash(ctx, store.HashTokenSecret(secret))
	if errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("%w: unknown API token", ErrInvalidCredentials)
	}
	if err != nil {
		return nil, fmt.Errorf("auth: look up API token: %w", err)
	}
	now := a.now()
	if !t.Usable(now) {
		return nil, fmt.Errorf("%w: API token %s is revoked or expired", ErrInvalidCredentials, t.ID)
	}
	a.touch(ctx, t, now)
	p := &Principal{UserID: t.UserID, Kind: KindAPIToken, Scopes: t.Scopes, TokenID: t.ID, ExpireTime: t.ExpireTime}
	if id, err := a.ids.GetOIDCIdentity(ctx, t.UserID); err == nil {
		p.Email, p.Issuer, p.Subject = id.Email, id.Issuer, id.Subject
	}
	return p, nil
}

// touch records a token's use at most once per TouchInterval per token,
// whatever the number of server instances, so authentication does not
// turn every call into a write. t is the token as just read: a use some
// instance recorded within the interval needs no transaction; instances
// that read the row at once race in the store, whose conditional write
// lets one through (TouchAPIToken). The process's own record of its last
// touch spares the call when the row has not caught up.
func (a *Authenticator) touch(ctx context.Context, t store.APIToken, now time.Time) {
	if a.cfg.ReadOnly {
		return
	}
	if !t.LastUseTime.IsZero() && now.Sub(t.LastUseTime) < a.cfg.TouchInterval {
		return
	}
	if last, ok := a.touched.Load(t.ID); ok && now.Sub(last.(time.Time)) < a.cfg.TouchInterval {
		return
	}
	a.touched.Store(t.ID, now)
	if err := a.ids.TouchAPIToken(ctx, t.ID, now, a.cfg.TouchInterval); err != nil {
		a.logger.WarnContext(ctx, "recording token use failed", "token_id", t.ID, "error", err)
	}
}

// idClaims are the ID-token claims tbhub uses.
type idClaims struct {
	Email         string `json:"email"`
	EmailVerified *bool  `json:"email_verified"`
}

func (a *Authenticator) idToken(ctx context.Context, raw string) (*Principal, error) {
	if a.cfg.OIDC.Issuer == "" {
		return nil, fmt.Errorf("%w: ID tokens are not accepted by this server", ErrInvalidCredentials)
	}
	v, err := a.oidcVerifier(ctx)
	if err != nil {
		return nil, err
	}
	tok, err := v.Verify(a.clientContext(ctx), raw)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidCredentials, err)
	}
	if !a.cfg.OIDC.SkipAudienceCheck && !audienceAccepted(tok.Audience, a.cfg.OIDC.ClientIDs) {
		return nil, fmt.Errorf("%w: ID token audience %v", ErrInvalidCredentials, tok.Audience)
	}
	var c idClaims
	if err := tok.Claims(&c); err != nil {
		return nil, fmt.Errorf("%w: claims: %w", ErrInvalidCredentials, err)
	}
	// An unverified email is not shown or used to match grants.
	if c.EmailVerified != nil && !*c.EmailVerified {
		c.Email = ""
	}
	// Emails are kept in lower case, so that grants match however they were typed.
	c.Email = strings.ToLower(c.Email)
	if a.cfg.ReadOnly {
		// Users are created (and their email kept current) by the write
		// service, where everyone signs in before reading: tbup auth login,
		// the web UI.
		u, err := a.ids.GetOIDCUser(ctx, tok.Issuer, tok.Subject)
		if errors.Is(err, store.ErrNotFound) {
			return nil, fmt.Errorf("%w: no tbhub user for %s yet: sign in through the write service first", ErrInvalidCredentials, c.Email)
		}
		if err != nil {
			return nil, fmt.Errorf("auth: user of %s/%s: %w", tok.Issuer, tok.Subject, err)
		}
		return &Principal{UserID: u.ID, Email: c.Email, Issuer: tok.Issuer, Subject: tok.Subject,
			Kind: KindOIDC, Scopes: store.AllScopes, ExpireTime: tok.Expiry}, nil
	}
	u, err := a.ids.GetOrCreateOIDCUser(ctx, tok.Issuer, tok.Subject, c.Email, store.NewUserID())
	if errors.Is(err, store.ErrAlreadyExists) {
		// Two first sign-ins of the same identity raced and the other
		// created the user: this lookup finds it.
		u, err = a.ids.GetOrCreateOIDCUser(ctx, tok.Issuer, tok.Subject, c.Email, store.NewUserID())
	}
	if err != nil {
		return nil, fmt.Errorf("auth: user of %s/%s: %w", tok.Issuer, tok.Subject, err)
	}
	return &Principal{UserID: u.ID, Email: c.Email, Issuer: tok.Issuer, Subject: tok.Subject,
		Kind: KindOIDC, Scopes: store.AllScopes, ExpireTime: tok.Expiry}, nil
}

func audienceAccepted(aud, accepted []string) bool {
	for _, a := range aud {
		for _, b := range accepted {
			if a == b {
				return true
			}
		}
	}
	return false
}

func (a *Authenticator) clientContext(ctx context.Context) context.Context {
	if a.cfg.OIDC.HTTPClient != nil {
		return oidc.ClientContext(ctx, a.cfg.OIDC.HTTPClient)
	}
	return ctx
}

// oidcVerifier discovers the issuer on first use; a failed discovery is
// retried by the next call.
func (a *Authenticator) oidcVerifier(ctx context.Context) (*oidc.IDTokenVerifier, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.verifier != nil {
		return a.verifier, nil
	}
	// The provider keeps using this context to fetch rotated keys, so it
	// must outlive the call.
	pctx := a.clientContext(context.WithoutCancel(ctx))
	dctx, cancel := context.WithTimeout(pctx, 10*time.Second)
	defer cancel()
	p, err := oidc.NewProvider(dctx, a.cfg.OIDC.Issuer)
	if err != nil {
		return nil, fmt.Errorf("%w: discovery of %s: %w", ErrIssuerUnavailable, a.cfg.OIDC.Issuer, err)
	}
	a.verifier = p.VerifierContext(pctx, &oidc.Config{
		// The audience is checked against the list in idToken.
		SkipClientIDCheck: true,
		Now:               a.now,
	})
	return a.verifier, nil
}

// IssueToken creates an API token for a user and returns its record and
// its secret, which is not stored and cannot be shown again. parentID is
// the token it is made with ("" for none: an OIDC sign-in, an operator);
// revoking that token revokes this one. A zero expire means no expiry.
func (a *Authenticator) IssueToken(ctx context.Context, userID, parentID, name string, scopes store.TokenScopes, expire time.Time) (store.APIToken, string, error) {
	t, secret, err := NewToken(userID, parentID, name, scopes, expire)
	if err != nil {
		return store.APIToken{}, "", err
	}
	if t, err = a.ids.CreateAPIToken(ctx, t); err != nil {
		return store.APIToken{}, "", fmt.Errorf("auth.IssueToken: %w", err)
	}
	return t, secret, nil
}

// NewToken makes the record and the secret of a new API token, as
// IssueToken does, without storing it: a caller that must first admit
// the record (its bytes count toward a quota) stores it itself with
// store.IdentityStore.CreateAPIToken.
func NewToken(userID, parentID, name string, scopes store.TokenScopes, expire time.Time) (store.APIToken, string, error) {
	if scopes == 0 || scopes&^store.AllScopes != 0 {
		return store.APIToken{}, "", fmt.Errorf("auth.NewToken: scopes %v: %w", scopes, store.ErrInvalidArgument)
	}
	b := make([]byte, tokenSecretBytes)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	secret := TokenPrefix + base64.RawURLEncoding.EncodeToString(b)
	return store.APIToken{
		ID: store.NewTokenID(), UserID: userID, ParentID: parentID, Name: name, Scopes: scopes,
		Hash: store.HashTokenSecret(secret), SecretPrefix: secret[:secretPrefixLen], ExpireTime: expire,
	}, secret, nil
}

type principalKey struct{}

// NewContext returns ctx carrying p.
func NewContext(ctx context.Context, p *Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// FromContext returns the principal of the call, or nil for an anonymous
// caller.
func FromContext(ctx context.Context) *Principal {
	p, _ := ctx.Value(principalKey{}).(*Principal)
	return p
}
