package writer

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/timestamppb"

	authv1 "github.com/tbhub/tbhub/schemas/gen/go/tbhub/auth/v1"
	"github.com/tbhub/tbhub/services/internal/policy/auth"
	"github.com/tbhub/tbhub/services/internal/policy/rpcerr"
	"github.com/tbhub/tbhub/services/internal/policy/tenancy"
	"github.com/tbhub/tbhub/services/internal/storage/store"
)

// authService is tbhub.auth.v1.AuthService.
type authService struct {
	authv1.UnimplementedAuthServiceServer
	s *Server
}

func scopesToProto(s store.TokenScopes) []authv1.Scope {
	var out []authv1.Scope
	if s.Has(store.ScopeUpload) {
		out = append(out, authv1.Scope_SCOPE_UPLOAD)
	}
	if s.Has(store.ScopeRead) {
		out = append(out, authv1.Scope_SCOPE_READ)
	}
	if s.Has(store.ScopeTokens) {
		out = append(out, authv1.Scope_SCOPE_TOKENS)
	}
	return out
}

func optionalTime(t time.Time) *timestamppb.Timestamp {
	if t.IsZero() {
		return nil
	}
	return timestamppb.New(t)
}

func tokenProto(t *store.APIToken) *authv1.Token {
	return &authv1.Token{
		TokenId: t.ID, Name: t.Name, Scopes: scopesToProto(t.Scopes), SecretPrefix: t.SecretPrefix,
		CreateTime:  timestamppb.New(t.CreateTime),
		ExpireTime:  optionalTime(t.ExpireTime),
		LastUseTime: optionalTime(t.LastUseTime),
		RevokeTime:  optionalTime(t.RevokeTime),
	}
}

func (a *authService) WhoAmI(ctx context.Context, _ *authv1.WhoAmIRequest) (*authv1.WhoAmIResponse, error) {
	p, err := tenancy.Caller(ctx)
	if err != nil {
		return nil, err
	}
	kind := authv1.CredentialKind_CREDENTIAL_KIND_API_TOKEN
	if p.Kind == auth.KindOIDC {
		kind = authv1.CredentialKind_CREDENTIAL_KIND_OIDC
	}
	u, err := a.s.st.GetUser(ctx, p.UserID)
	if err != nil {
		return nil, err
	}
	return &authv1.WhoAmIResponse{
		UserId: p.UserID, UserName: u.Name, Email: p.Email, Issuer: p.Issuer, Subject: p.Subject,
		CredentialKind: kind, Scopes: scopesToProto(p.Scopes), TokenId: p.TokenID,
		DisplayName: u.PublicName(),
	}, nil
}

// MaxDisplayNameChars bounds a display name, in characters.
const MaxDisplayNameChars = 64

// checkDisplayName returns what is wrong with a display name, or "". A
// display name is shown to anyone (the public gallery), so it holds only
// letters, digits, single inner spaces and . _ ' -: no markup, no control
// or bidirectional formatting characters, no "@" (an email is not a display
// name), and it does not pose as a handle.
func checkDisplayName(name string) string {
	switch n := utf8.RuneCountInString(name); {
	case !utf8.ValidString(name):
		return "display name must be valid UTF-8"
	case n > MaxDisplayNameChars:
		return fmt.Sprintf("display name has %d characters; at most %d", n, MaxDisplayNameChars)
	case strings.TrimSpace(name) != name || strings.Contains(name, "  "):
		return "display name may not start or end with a space, nor hold two in a row"
	case strings.HasPrefix(strings.ToLower(name), "user-"):
		return `display name may not start with "user-", which is how handles look`
	}
	for _, r := range name {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) && !strings.ContainsRune(" ._'-", r) {
			return fmt.Sprintf("display name may hold letters, digits, spaces and . _ ' - only, not %q", r)
		}
	}
	return ""
}

// SetDisplayName sets the name others see for the caller. It changes what
// the caller shows the world, so it needs the upload scope: a read-only
// token cannot.
func (a *authService) SetDisplayName(ctx context.Context, req *authv1.SetDisplayNameRequest) (*authv1.SetDisplayNameResponse, error) {
	p, err := tenancy.Caller(ctx)
	if err != nil {
		return nil, err
	}
	if !p.Scopes.Has(store.ScopeUpload) {
		return nil, rpcerr.New(codes.PermissionDenied, "the credential's scopes (%v) do not include upload", p.Scopes)
	}
	if bad := checkDisplayName(req.GetDisplayName()); bad != "" {
		return nil, rpcerr.New(codes.InvalidArgument, "%s", bad)
	}
	u, err := a.s.st.SetDisplayName(ctx, p.UserID, req.GetDisplayName())
	if err != nil {
		return nil, err
	}
	return &authv1.SetDisplayNameResponse{DisplayName: u.PublicName()}, nil
}

// CreateToken issues a token with at most the caller's own scopes (the
// guard has checked that they include the tokens scope), expiring no
// later than the caller's credential and recorded as its child, so that
// revoking the caller's token revokes it. It counts toward the user's
// token cap and byte quota, and takes from the user's request budget
// like a write.
func (a *authService) CreateToken(ctx context.Context, req *authv1.CreateTokenRequest) (*authv1.CreateTokenResponse, error) {
	p, err := tenancy.Caller(ctx)
	if err != nil {
		return nil, err
	}
	if err := a.s.limits.Allow(p.UserID); err != nil {
		return nil, err
	}
	var scopes store.TokenScopes
	for _, s := range req.GetScopes() {
		switch s {
		case authv1.Scope_SCOPE_UPLOAD:
			scopes |= store.ScopeUpload
		case authv1.Scope_SCOPE_READ:
			scopes |= store.ScopeRead
		case authv1.Scope_SCOPE_TOKENS:
			scopes |= store.ScopeTokens
		default:
			return nil, rpcerr.New(codes.InvalidArgument, "unknown scope %v", s)
		}
	}
	if scopes == 0 {
		return nil, rpcerr.New(codes.InvalidArgument, "a token needs at least one scope")
	}
	if !p.Scopes.Has(scopes) {
		return nil, rpcerr.New(codes.PermissionDenied, "the credential's scopes (%v) do not include %v", p.Scopes, scopes)
	}
	if n := utf8.RuneCountInString(req.GetName()); !utf8.ValidString(req.GetName()) || n > MaxExperimentNameChars {
		return nil, rpcerr.New(codes.InvalidArgument, "token name must be valid UTF-8 of at most %d characters", MaxExperimentNameChars)
	}
	var expire time.Time // zero: no expiry
	if ts := req.GetExpireTime(); ts != nil {
		if expire = ts.AsTime(); !expire.After(a.s.now()) {
			return nil, rpcerr.New(codes.InvalidArgument, "expire_time is in the past")
		}
	}
	// A token made with an expiring credential expires with it at the
	// latest: an expiring token, or an ID token with its hour, cannot mint
	// a lasting one (nor a session that outlives it, which the web UI
	// makes this way).
	if !p.ExpireTime.IsZero() && (expire.IsZero() || expire.After(p.ExpireTime)) {
		expire = p.ExpireTime
	}
	t, secret, err := auth.NewToken(p.UserID, p.TokenID, req.GetName(), scopes, expire)
	if err != nil {
		return nil, err
	}
	if err := a.s.limits.ReserveToken(ctx, p.UserID, t.StoredBytes()); err != nil {
		return nil, err
	}
	if t, err = a.s.st.CreateAPIToken(a.s.withQuotas(ctx), t); err != nil {
		return nil, a.s.storeRefused(p.UserID, err)
	}
	return &authv1.CreateTokenResponse{Token: tokenProto(&t), Secret: secret}, nil
}

func (a *authService) ListTokens(ctx context.Context, _ *authv1.ListTokensRequest) (*authv1.ListTokensResponse, error) {
	p, err := tenancy.Caller(ctx)
	if err != nil {
		return nil, err
	}
	tokens, err := a.s.st.ListAPITokens(ctx, p.UserID)
	if err != nil {
		return nil, err
	}
	resp := &authv1.ListTokensResponse{}
	for i := range tokens {
		resp.Tokens = append(resp.Tokens, tokenProto(&tokens[i]))
	}
	return resp, nil
}

func (a *authService) RevokeToken(ctx context.Context, req *authv1.RevokeTokenRequest) (*authv1.RevokeTokenResponse, error) {
	p, err := tenancy.Caller(ctx)
	if err != nil {
		return nil, err
	}
	err = a.s.st.RevokeAPIToken(ctx, p.UserID, req.GetTokenId(), a.s.now())
	if errors.Is(err, store.ErrNotFound) {
		return nil, rpcerr.New(codes.NotFound, "no such token")
	}
	if err != nil {
		return nil, err
	}
	// The revoked tokens no longer count toward the token cap.
	a.s.limits.UsageChanged(p.UserID)
	return &authv1.RevokeTokenResponse{}, nil
}
