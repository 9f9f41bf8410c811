package auth_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/metadata"

	"github.com/tbhub/tbhub/services/internal/policy/auth"
	"github.com/tbhub/tbhub/services/internal/policy/auth/oidctest"
	"github.com/tbhub/tbhub/services/internal/storage/store"
	"github.com/tbhub/tbhub/services/internal/storage/store/sqlitestore"
)

const clientID = "tbhub-test-client"

type fixture struct {
	st   *sqlitestore.Store
	iss  *oidctest.Issuer
	auth *auth.Authenticator
	now  time.Time
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	st, err := sqlitestore.Open(t.Context(), filepath.Join(t.TempDir(), "db"), sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	f := &fixture{st: st, iss: oidctest.Start(t), now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	f.auth, err = auth.New(st, auth.Config{
		OIDC: auth.OIDCConfig{Issuer: f.iss.URL, ClientIDs: []string{clientID}, HTTPClient: f.iss.Client()},
		Now:  func() time.Time { return f.now },
	})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *fixture) idToken(t *testing.T, c oidctest.Claims) string {
	if c.Audience == "" {
		c.Audience = clientID
	}
	if c.IssuedAt.IsZero() {
		c.IssuedAt = f.now.Add(-time.Minute)
	}
	if c.Expiry.IsZero() {
		c.Expiry = f.now.Add(time.Hour)
	}
	return f.iss.Sign(t, c)
}

// A read-only authenticator (the read service's) accepts API tokens
// without writing their last use, and ID tokens of existing users only.
func TestReadOnly(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	if err := f.st.CreateUser(ctx, store.User{ID: "u1", Name: "ada"}); err != nil {
		t.Fatal(err)
	}
	_, secret, err := f.auth.IssueToken(ctx, "u1", "", "ci", store.ScopeRead, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	ro, err := auth.New(f.st, auth.Config{ReadOnly: true, Now: func() time.Time { return f.now }})
	if err != nil {
		t.Fatal(err)
	}
	if p, err := ro.Authenticate(ctx, "Bearer "+secret); err != nil || p.UserID != "u1" {
		t.Fatalf("Authenticate = %+v, %v", p, err)
	}
	stored, err := f.st.GetAPITokenByHash(ctx, store.HashTokenSecret(secret))
	if err != nil {
		t.Fatal(err)
	}
	if !stored.LastUseTime.IsZero() {
		t.Errorf("LastUseTime = %v after a read-only authentication, want none", stored.LastUseTime)
	}

	ro, err = auth.New(f.st, auth.Config{ReadOnly: true, Now: func() time.Time { return f.now },
		OIDC: auth.OIDCConfig{Issuer: f.iss.URL, ClientIDs: []string{clientID}, HTTPClient: f.iss.Client()}})
	if err != nil {
		t.Fatal(err)
	}
	raw := "Bearer " + f.idToken(t, oidctest.Claims{Subject: "s-new", Email: "new@example.com", EmailVerified: true})
	if _, err := ro.Authenticate(ctx, raw); !errors.Is(err, auth.ErrInvalidCredentials) {
		t.Errorf("ID token of a user not yet created: %v, want ErrInvalidCredentials", err)
	}
	if _, err := f.st.GetOIDCUser(ctx, f.iss.URL, "s-new"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the read-only authenticator created a user: %v", err)
	}
	created, err := f.auth.Authenticate(ctx, raw) // the write service's sign-in
	if err != nil {
		t.Fatal(err)
	}
	if p, err := ro.Authenticate(ctx, raw); err != nil || p.UserID != created.UserID || p.Kind != auth.KindOIDC {
		t.Errorf("ID token of an existing user: %+v, %v, want user %s", p, err, created.UserID)
	}
}

func TestAPITokens(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	if err := f.st.CreateUser(ctx, store.User{ID: "u1", Name: "ada"}); err != nil {
		t.Fatal(err)
	}
	tok, secret, err := f.auth.IssueToken(ctx, "u1", "", "ci", store.ScopeRead, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(secret, auth.TokenPrefix) || len(secret) < len(auth.TokenPrefix)+43 {
		t.Errorf("secret %q: want prefix %q and >= 256 bits", secret, auth.TokenPrefix)
	}
	if !strings.HasPrefix(secret, tok.SecretPrefix) || len(tok.SecretPrefix) >= len(secret)/2 {
		t.Errorf("SecretPrefix %q is not a short prefix of the secret", tok.SecretPrefix)
	}
	p, err := f.auth.Authenticate(ctx, "Bearer "+secret)
	if err != nil {
		t.Fatal(err)
	}
	if p.UserID != "u1" || p.Kind != auth.KindAPIToken || p.Scopes != store.ScopeRead || p.TokenID != tok.ID {
		t.Errorf("principal = %+v", p)
	}
	stored, err := f.st.GetAPITokenByHash(ctx, store.HashTokenSecret(secret))
	if err != nil {
		t.Fatal(err)
	}
	if !stored.LastUseTime.Equal(f.now) {
		t.Errorf("LastUseTime = %v, want %v", stored.LastUseTime, f.now)
	}

	// Through gRPC metadata too.
	mdCtx := metadata.NewIncomingContext(ctx, metadata.Pairs("authorization", "bearer "+secret))
	if p, err := f.auth.FromIncomingContext(mdCtx); err != nil || p.UserID != "u1" {
		t.Errorf("FromIncomingContext = %+v, %v", p, err)
	}
	if _, err := f.auth.FromIncomingContext(ctx); !errors.Is(err, auth.ErrNoCredentials) {
		t.Errorf("no metadata: %v, want ErrNoCredentials", err)
	}

	if err := f.st.RevokeAPIToken(ctx, "u1", tok.ID, f.now); err != nil {
		t.Fatal(err)
	}
	if _, err := f.auth.Authenticate(ctx, "Bearer "+secret); !errors.Is(err, auth.ErrInvalidCredentials) {
		t.Errorf("revoked token: %v, want ErrInvalidCredentials", err)
	}

	_, expiring, err := f.auth.IssueToken(ctx, "u1", "", "short", store.AllScopes, f.now.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.auth.Authenticate(ctx, "Bearer "+expiring); err != nil {
		t.Errorf("token before expiry: %v", err)
	}
	f.now = f.now.Add(2 * time.Hour)
	if _, err := f.auth.Authenticate(ctx, "Bearer "+expiring); !errors.Is(err, auth.ErrInvalidCredentials) {
		t.Errorf("expired token: %v, want ErrInvalidCredentials", err)
	}
	if _, _, err := f.auth.IssueToken(ctx, "u1", "", "none", 0, time.Time{}); !errors.Is(err, store.ErrInvalidArgument) {
		t.Errorf("IssueToken without scopes: %v, want ErrInvalidArgument", err)
	}
}

func TestMalformed(t *testing.T) {
	f := newFixture(t)
	for _, h := range []string{
		"", "Bearer", "Basic dXNlcjpwYXNz", "Bearer tbh_notarealtoken", "Bearer not-a-token",
		"Bearer a.b.c", "Token " + auth.TokenPrefix + "x",
	} {
		if _, err := f.auth.Authenticate(t.Context(), h); !errors.Is(err, auth.ErrInvalidCredentials) {
			t.Errorf("Authenticate(%q) = %v, want ErrInvalidCredentials", h, err)
		}
	}
}

func TestOIDC(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	raw := f.idToken(t, oidctest.Claims{Subject: "s-1", Email: "ada@example.com", EmailVerified: true})
	p, err := f.auth.Authenticate(ctx, "Bearer "+raw)
	if err != nil {
		t.Fatal(err)
	}
	if p.Kind != auth.KindOIDC || p.Issuer != f.iss.URL || p.Subject != "s-1" || p.Email != "ada@example.com" || p.Scopes != store.AllScopes {
		t.Errorf("principal = %+v", p)
	}
	// The same subject is the same user on every sign-in.
	again, err := f.auth.Authenticate(ctx, "Bearer "+f.idToken(t, oidctest.Claims{Subject: "s-1", Email: "ada@example.com", EmailVerified: true}))
	if err != nil || again.UserID != p.UserID {
		t.Errorf("second sign-in: %+v, %v; want user %s", again, err, p.UserID)
	}
	// An API token of an OIDC user carries the email.
	_, secret, err := f.auth.IssueToken(ctx, p.UserID, "", "t", store.ScopeUpload, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if tp, err := f.auth.Authenticate(ctx, "Bearer "+secret); err != nil || tp.Email != "ada@example.com" || tp.UserID != p.UserID {
		t.Errorf("API token of OIDC user: %+v, %v", tp, err)
	}

	unverified, err := f.auth.Authenticate(ctx, "Bearer "+f.idToken(t, oidctest.Claims{Subject: "s-2", Email: "eve@example.com"}))
	if err != nil {
		t.Fatal(err)
	}
	if unverified.Email != "" {
		t.Errorf("unverified email shown: %q", unverified.Email)
	}

	other := oidctest.Start(t)
	for name, raw := range map[string]string{
		"expired":      f.idToken(t, oidctest.Claims{Subject: "s-1", IssuedAt: f.now.Add(-2 * time.Hour), Expiry: f.now.Add(-time.Hour)}),
		"audience":     f.idToken(t, oidctest.Claims{Subject: "s-1", Audience: "someone-else"}),
		"issuer":       f.idToken(t, oidctest.Claims{Subject: "s-1", Issuer: "https://evil.example"}),
		"foreign key":  other.Sign(t, oidctest.Claims{Subject: "s-1", Audience: clientID, Issuer: f.iss.URL, IssuedAt: f.now, Expiry: f.now.Add(time.Hour)}),
		"tampered sig": raw[:len(raw)-4] + "AAAA",
	} {
		if _, err := f.auth.Authenticate(ctx, "Bearer "+raw); !errors.Is(err, auth.ErrInvalidCredentials) {
			t.Errorf("%s: %v, want ErrInvalidCredentials", name, err)
		}
	}
}

// An OIDC principal expires with its ID token, so that what it makes
// (CreateToken caps at Principal.ExpireTime) does not outlive it: it
// carried no expiry, and an ID token with 8 s left minted a token that
// never expired.
func TestOIDCPrincipalExpiresWithTheIDToken(t *testing.T) {
	f := newFixture(t)
	expiry := f.now.Add(8 * time.Second)
	raw := f.idToken(t, oidctest.Claims{Subject: "s-1", Email: "ada@example.com", EmailVerified: true, Expiry: expiry})
	p, err := f.auth.Authenticate(t.Context(), "Bearer "+raw)
	if err != nil {
		t.Fatal(err)
	}
	if !p.ExpireTime.Equal(expiry) {
		t.Errorf("principal of an ID token expiring at %v expires at %v", expiry, p.ExpireTime)
	}
	f.now = expiry.Add(time.Second)
	if _, err := f.auth.Authenticate(t.Context(), "Bearer "+raw); !errors.Is(err, auth.ErrInvalidCredentials) {
		t.Errorf("the ID token after its expiry: %v, want ErrInvalidCredentials", err)
	}
}

func TestOIDCDisabled(t *testing.T) {
	f := newFixture(t)
	a, err := auth.New(f.st, auth.Config{})
	if err != nil {
		t.Fatal(err)
	}
	raw := f.idToken(t, oidctest.Claims{Subject: "s"})
	if _, err := a.Authenticate(context.Background(), "Bearer "+raw); !errors.Is(err, auth.ErrInvalidCredentials) {
		t.Errorf("ID token without issuer configured: %v, want ErrInvalidCredentials", err)
	}
	if _, err := auth.New(f.st, auth.Config{OIDC: auth.OIDCConfig{Issuer: "https://accounts.google.com"}}); err == nil {
		t.Error("auth.New accepted an issuer without client IDs")
	}
}

func TestIssuerUnavailable(t *testing.T) {
	f := newFixture(t)
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close()
	a, err := auth.New(f.st, auth.Config{OIDC: auth.OIDCConfig{Issuer: down.URL, ClientIDs: []string{clientID}}})
	if err != nil {
		t.Fatal(err)
	}
	raw := f.idToken(t, oidctest.Claims{Subject: "s"})
	if _, err := a.Authenticate(t.Context(), "Bearer "+raw); !errors.Is(err, auth.ErrIssuerUnavailable) {
		t.Errorf("issuer down: %v, want ErrIssuerUnavailable", err)
	}
	// API tokens keep working without the issuer.
	if err := f.st.CreateUser(t.Context(), store.User{ID: "u", Name: "u"}); err != nil {
		t.Fatal(err)
	}
	_, secret, err := a.IssueToken(t.Context(), "u", "", "t", store.ScopeRead, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Authenticate(t.Context(), "Bearer "+secret); err != nil {
		t.Errorf("API token with the issuer down: %v", err)
	}
}
