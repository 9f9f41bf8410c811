package writer_test

import (
	"context"
	"fmt"
	"github.com/tbhub/tbhub/services/internal/testenv/inprocess"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	authv1 "github.com/tbhub/tbhub/schemas/gen/go/tbhub/auth/v1"
	experimentsv1 "github.com/tbhub/tbhub/schemas/gen/go/tbhub/experiments/v1"
	"github.com/tbhub/tbhub/services/internal/policy/auth/oidctest"
	"github.com/tbhub/tbhub/services/internal/storage/store"
)

// Credentials that outlive where they came from (issue 20 #5) and tokens
// without a cap (issue 20 #1).

var (
	scopesAll  = []authv1.Scope{authv1.Scope_SCOPE_UPLOAD, authv1.Scope_SCOPE_READ, authv1.Scope_SCOPE_TOKENS}
	scopesRead = []authv1.Scope{authv1.Scope_SCOPE_READ}
)

// mint creates a token with the credential of ctx and returns a context
// carrying it and its ID.
func mint(t *testing.T, h *inprocess.Env, ctx context.Context, name string, scopes []authv1.Scope) (context.Context, string) {
	t.Helper()
	resp, err := h.Account.CreateToken(ctx, &authv1.CreateTokenRequest{Name: name, Scopes: scopes})
	if err != nil {
		t.Fatalf("CreateToken %q: %v", name, err)
	}
	return inprocess.As(t.Context(), inprocess.Bearer(resp.GetSecret())), resp.GetToken().GetTokenId()
}

// Revoking a token revokes the tokens and web sessions made with it, and
// those made with them: before, a child token and a session minted with
// a token (as the web UI's sign-in with a token does) outlived it.
func TestRevokingATokenRevokesWhatWasMadeWithIt(t *testing.T) {
	t.Parallel()
	st, blobs := inprocess.Embedded(t)
	h := inprocess.Start(t, st, blobs, nil)
	alice := inprocess.As(t.Context(), inprocess.Bearer(h.IDToken(t, "alice-subject", "alice@example.com", false)))
	parent, parentID := mint(t, h, alice, "laptop", scopesAll)
	child, _ := mint(t, h, parent, "ci", scopesAll)
	grandchild, _ := mint(t, h, child, "ci job", scopesRead)
	sess, _ := mint(t, h, parent, "web session", scopesAll)
	sibling, _ := mint(t, h, alice, "desktop", scopesAll)

	if _, err := h.Account.RevokeToken(alice, &authv1.RevokeTokenRequest{TokenId: parentID}); err != nil {
		t.Fatal(err)
	}
	for name, ctx := range map[string]context.Context{"the token": parent, "its child": child, "its grandchild": grandchild, "its session": sess} {
		if _, err := h.Account.WhoAmI(ctx, &authv1.WhoAmIRequest{}); status.Code(err) != codes.Unauthenticated {
			t.Errorf("%s after revoking the token: %v, want UNAUTHENTICATED", name, err)
		}
	}
	if _, err := h.Account.WhoAmI(sibling, &authv1.WhoAmIRequest{}); err != nil {
		t.Errorf("a token not made with the revoked one: %v", err)
	}
	list, err := h.Account.ListTokens(alice, &authv1.ListTokensRequest{})
	if err != nil {
		t.Fatal(err)
	}
	revoked := 0
	for _, tok := range list.GetTokens() {
		if tok.GetRevokeTime() != nil {
			revoked++
		}
	}
	if revoked != 4 {
		t.Errorf("%d tokens listed as revoked, want 4: %v", revoked, list)
	}
}

// A token minted with an ID token that expires in 8 s expires no later
// than it; before, the OIDC principal carried no expiry and the token
// never expired. The clock is the server's, injected.
func TestTokenMadeWithAnIDTokenExpiresWithIt(t *testing.T) {
	t.Parallel()
	st, blobs := inprocess.Embedded(t)
	start := time.Now().Truncate(time.Second)
	var offset atomic.Int64 // nanoseconds after start
	now := func() time.Time { return start.Add(time.Duration(offset.Load())) }
	h := inprocess.Start(t, st, blobs, func(c *inprocess.Config) { c.Now = now })
	idExpiry := start.Add(8 * time.Second)
	raw := h.Issuer.Sign(t, oidctest.Claims{Subject: "bob-subject", Audience: inprocess.ClientID, Email: "bob@example.com", EmailVerified: true,
		IssuedAt: start.Add(-time.Minute), Expiry: idExpiry})
	bob := inprocess.As(t.Context(), inprocess.Bearer(raw))
	for asked, expire := range map[string]*timestamppb.Timestamp{"no expiry": nil, "30 days": timestamppb.New(start.Add(30 * 24 * time.Hour))} {
		resp, err := h.Account.CreateToken(bob, &authv1.CreateTokenRequest{Name: "from an ID token", Scopes: scopesAll, ExpireTime: expire})
		if err != nil {
			t.Fatal(err)
		}
		if got := resp.GetToken().GetExpireTime(); got == nil || got.AsTime().After(idExpiry) {
			t.Errorf("asked for %s: the token expires at %v, want no later than the ID token's %v", asked, got, idExpiry)
		}
		tok := inprocess.As(t.Context(), inprocess.Bearer(resp.GetSecret()))
		if _, err := h.Account.WhoAmI(tok, &authv1.WhoAmIRequest{}); err != nil {
			t.Fatalf("the new token before the ID token expires: %v", err)
		}
		offset.Store(int64(9 * time.Second))
		if _, err := h.Account.WhoAmI(tok, &authv1.WhoAmIRequest{}); status.Code(err) != codes.Unauthenticated {
			t.Errorf("the token after the ID token expired: %v, want UNAUTHENTICATED", err)
		}
		offset.Store(0)
	}
}

// Creating, listing and revoking credentials needs the tokens scope: a
// read-only token could list and revoke every token of its user, upload
// tokens included, and an upload token could mint tokens.
func TestCredentialsNeedTheTokensScope(t *testing.T) {
	t.Parallel()
	st, blobs := inprocess.Embedded(t)
	h := inprocess.Start(t, st, blobs, nil)
	carol := inprocess.As(t.Context(), inprocess.Bearer(h.IDToken(t, "carol-subject", "carol@example.com", false)))
	upload, uploadID := mint(t, h, carol, "upload", []authv1.Scope{authv1.Scope_SCOPE_UPLOAD, authv1.Scope_SCOPE_READ})
	readOnly, readOnlyID := mint(t, h, carol, "read", scopesRead)
	manager, _ := mint(t, h, carol, "manager", []authv1.Scope{authv1.Scope_SCOPE_READ, authv1.Scope_SCOPE_TOKENS})

	calls := map[string]func(ctx context.Context) error{
		"ListTokens": func(ctx context.Context) error {
			_, err := h.Account.ListTokens(ctx, &authv1.ListTokensRequest{})
			return err
		},
		"RevokeToken(upload token)": func(ctx context.Context) error {
			_, err := h.Account.RevokeToken(ctx, &authv1.RevokeTokenRequest{TokenId: uploadID})
			return err
		},
		"CreateToken(read)": func(ctx context.Context) error {
			_, err := h.Account.CreateToken(ctx, &authv1.CreateTokenRequest{Name: "x", Scopes: scopesRead})
			return err
		},
	}
	for name, call := range calls {
		for cred, ctx := range map[string]context.Context{"read-only token": readOnly, "upload+read token": upload} {
			err := call(ctx)
			if status.Code(err) != codes.PermissionDenied || !strings.Contains(status.Convert(err).Message(), "tokens") {
				t.Errorf("%s with a %s: %v, want PERMISSION_DENIED naming the tokens scope", name, cred, err)
			}
		}
	}
	if _, err := h.Account.WhoAmI(upload, &authv1.WhoAmIRequest{}); err != nil {
		t.Errorf("the upload token after the refused revocation: %v", err)
	}
	// The tokens scope alone grants no more scopes than it holds.
	if _, err := h.Account.CreateToken(manager, &authv1.CreateTokenRequest{Name: "x", Scopes: []authv1.Scope{authv1.Scope_SCOPE_UPLOAD}}); status.Code(err) != codes.PermissionDenied {
		t.Errorf("a read+tokens token minting an upload token: %v, want PERMISSION_DENIED", err)
	}
	for name, call := range calls {
		if err := call(manager); err != nil {
			t.Errorf("%s with the tokens scope: %v", name, err)
		}
	}
	if _, err := h.Account.RevokeToken(manager, &authv1.RevokeTokenRequest{TokenId: readOnlyID}); err != nil {
		t.Errorf("revoking the read-only token with the tokens scope: %v", err)
	}
}

// A user holds at most --max-tokens-per-user live tokens: 10,001 were
// accepted. The 101st is refused naming the cap; revoking one makes room
// at once.
func TestTokenCapPerUser(t *testing.T) {
	t.Parallel()
	st, blobs := inprocess.Embedded(t)
	h := inprocess.Start(t, st, blobs, nil) // the default cap, 100
	dave := inprocess.As(t.Context(), inprocess.Bearer(h.IDToken(t, "dave-subject", "dave@example.com", false)))
	var first string
	for i := range 100 {
		_, id := mint(t, h, dave, fmt.Sprintf("token %d", i), scopesRead)
		if i == 0 {
			first = id
		}
	}
	_, err := h.Account.CreateToken(dave, &authv1.CreateTokenRequest{Name: "one too many", Scopes: scopesRead})
	if status.Code(err) != codes.ResourceExhausted || !strings.Contains(status.Convert(err).Message(), "live API tokens per user is 100") {
		t.Fatalf("the 101st token: %v, want RESOURCE_EXHAUSTED naming the cap of 100 live tokens", err)
	}
	if _, err := h.Account.RevokeToken(dave, &authv1.RevokeTokenRequest{TokenId: first}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Account.CreateToken(dave, &authv1.CreateTokenRequest{Name: "in its place", Scopes: scopesRead}); err != nil {
		t.Errorf("a token after revoking one at the cap: %v", err)
	}
}

// Token records count toward the per-user byte quota, as series metadata
// does (TestMetadataCountsTowardTheByteQuota): GetQuotaUsage shows their
// bytes, and a create past the quota is refused naming it.
func TestTokensCountTowardTheByteQuota(t *testing.T) {
	t.Parallel()
	st, blobs := inprocess.Embedded(t)
	const quota = 600
	h := inprocess.Start(t, st, blobs, func(c *inprocess.Config) { c.Limits.MaxBlobBytesPerUser = quota })
	erin := inprocess.As(t.Context(), inprocess.Bearer(h.IDToken(t, "erin-subject", "erin@example.com", false)))
	name := strings.Repeat("n", 100)
	var stored int64
	for i := 0; ; i++ {
		resp, err := h.Account.CreateToken(erin, &authv1.CreateTokenRequest{Name: name, Scopes: scopesRead})
		if err != nil {
			if status.Code(err) != codes.ResourceExhausted || !strings.Contains(err.Error(), fmt.Sprintf("blob bytes per user is %d", quota)) {
				t.Fatalf("token %d, %d bytes stored: %v, want RESOURCE_EXHAUSTED naming the byte quota", i, stored, err)
			}
			break
		}
		tok := resp.GetToken()
		stored += (&store.APIToken{ID: tok.GetTokenId(), Name: tok.GetName(), SecretPrefix: tok.GetSecretPrefix()}).StoredBytes()
		if stored > quota {
			t.Fatalf("%d token bytes stored under a quota of %d", stored, quota)
		}
	}
	if stored == 0 {
		t.Fatal("no token fit the quota")
	}
	usage, err := h.Experiments.GetQuotaUsage(erin, &experimentsv1.GetQuotaUsageRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range usage.GetUsages() {
		if u.GetQuota() == experimentsv1.Quota_QUOTA_BLOB_BYTES && u.GetUsed() != stored {
			t.Errorf("blob bytes quota: used %d, want the %d bytes of the tokens", u.GetUsed(), stored)
		}
	}
}

// CreateToken takes from the user's request budget like a write: it
// accepted about 900 tokens a second, and with revocations in between
// the cap alone would not slow a loop of creates.
func TestCreateTokenTakesFromTheRateBudget(t *testing.T) {
	t.Parallel()
	st, blobs := inprocess.Embedded(t)
	h := inprocess.Start(t, st, blobs, func(c *inprocess.Config) {
		c.Limits.RequestsPerSecond, c.Limits.Burst = 0.001, 3
	})
	frank := inprocess.As(t.Context(), inprocess.Bearer(h.IDToken(t, "frank-subject", "frank@example.com", false)))
	var last error
	for range 4 {
		_, last = h.Account.CreateToken(frank, &authv1.CreateTokenRequest{Name: "t", Scopes: scopesRead})
	}
	if status.Code(last) != codes.ResourceExhausted || !strings.Contains(last.Error(), "burst 3") {
		t.Errorf("fourth token within the burst of 3: %v, want RESOURCE_EXHAUSTED naming the rate limit", last)
	}
}
