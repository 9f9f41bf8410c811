// Package session signs browsers in to tbhub. A signed-in browser holds
// one HttpOnly cookie whose value is an API token minted for it ("web
// session", the scopes of the credential signed in with, expiring with the
// cookie or that credential, whichever is first, and revoked with it), so
// the rest of the system sees an ordinary bearer token: Credentials turns
// the cookie into the Authorization value that httpapi forwards to the
// services. Signing out revokes that token. A pasted API token without the
// tokens scope may not mint one: its session cookie holds the token itself.
//
// Two ways in:
//
//   - an API token pasted into the sign-in page (self-hosting: the token
//     `tbhub serve` prints, or `tbhub token create`): POST /api/session
//     checks it and mints the session token with it;
//   - the OpenID Connect issuer the server trusts, by the authorization-code
//     flow with PKCE (RFC 7636): GET /auth/login redirects to the issuer,
//     GET /auth/callback exchanges the code for an ID token, checks the
//     state and nonce, and mints the session token with the ID token (the
//     write service verifies its signature and audience).
//
// Cookies are SameSite=Lax and Secure when the site is served over HTTPS.
// Requests that change something and carry the cookie must come from this
// origin (Origin / Sec-Fetch-Site), so another site cannot act with it.
package session

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/tbhub/tbhub/frontend-api/httperr"
	authv1 "github.com/tbhub/tbhub/schemas/gen/go/tbhub/auth/v1"
)

// Cookie names.
const (
	// CookieName holds the session's API token.
	CookieName = "tbhub_session"
	// flowCookie holds one sign-in's state, nonce, PKCE verifier and the
	// page to return to, between /auth/login and /auth/callback.
	flowCookie = "tbhub_oidc"
)

// TokenName labels the API tokens minted for browser sessions.
const TokenName = "web session"

// Routes are the mux patterns Mount registers.
var Routes = []string{"GET /api/session", "POST /api/session", "DELETE /api/session", "GET /auth/login", "GET /auth/callback"}

// OIDC is the issuer browsers sign in with: a web application client of
// it, whose redirect URI is PublicOrigin + "/auth/callback". The client ID
// must be among the write service's accepted audiences.
type OIDC struct {
	Issuer   string
	ClientID string
	// ClientSecret is sent to the token endpoint when set (Google's web
	// clients want it even with PKCE).
	ClientSecret string
	// Scopes asked for; "openid email" if empty.
	Scopes []string
}

// Config configures a Handler.
type Config struct {
	// Auth is the write service's auth service (WhoAmI, CreateToken,
	// RevokeToken). Without it only Credentials works.
	Auth authv1.AuthServiceClient
	// OIDC, if set, enables "Sign in with" the issuer.
	OIDC *OIDC
	// PublicOrigin is where browsers reach this server, e.g.
	// "https://tbhub.example.com": it names the OIDC redirect URI and, if
	// https, makes cookies Secure. Empty: taken from each request (its
	// Host, and X-Forwarded-Proto or TLS for the scheme).
	PublicOrigin string
	// Lifetime of a session; 30 days if zero.
	Lifetime time.Duration
	// HTTPClient reaches the issuer; http.DefaultClient if nil.
	HTTPClient *http.Client
	// CallTimeout bounds each call to the services and the issuer; 30 s if zero.
	CallTimeout time.Duration
	Now         func() time.Time
	Logger      *slog.Logger
}

// Handler serves the sign-in routes. Create it with New.
type Handler struct {
	cfg    Config
	logger *slog.Logger

	mu   sync.Mutex
	oidc *oidcClient // nil until the issuer's document was read
}

// New returns a Handler.
func New(cfg Config) (*Handler, error) {
	if o := cfg.OIDC; o != nil {
		if o.Issuer == "" || o.ClientID == "" {
			return nil, errors.New("session.New: OIDC needs an issuer and a client ID")
		}
		if len(o.Scopes) == 0 {
			o.Scopes = []string{"openid", "email"}
		}
	}
	cfg.PublicOrigin = strings.TrimSuffix(cfg.PublicOrigin, "/")
	if cfg.Lifetime == 0 {
		cfg.Lifetime = 30 * 24 * time.Hour
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = http.DefaultClient
	}
	if cfg.CallTimeout == 0 {
		cfg.CallTimeout = 30 * time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	h := &Handler{cfg: cfg, logger: cfg.Logger}
	if h.logger == nil {
		h.logger = slog.New(slog.DiscardHandler)
	}
	return h, nil
}

// Mount registers the routes (Routes) on mux.
func (h *Handler) Mount(mux *http.ServeMux) {
	mux.HandleFunc("GET /api/session", h.getSession)
	mux.HandleFunc("POST /api/session", h.signInWithToken)
	mux.HandleFunc("DELETE /api/session", h.signOut)
	mux.HandleFunc("GET /auth/login", h.login)
	mux.HandleFunc("GET /auth/callback", h.callback)
}

// Credentials is an httpapi.Credentials: the request's Authorization
// header if it has one, else the session cookie's token as a bearer
// value. A request that would change something with the cookie must come
// from this origin.
func (h *Handler) Credentials(r *http.Request) (string, error) {
	if a := r.Header.Get("Authorization"); a != "" {
		return a, nil
	}
	c, err := r.Cookie(CookieName)
	if err != nil || c.Value == "" {
		return "", nil
	}
	if !safeMethod(r.Method) && !sameOrigin(r) {
		return "", errors.New("a request from another site may not use this site's session")
	}
	return "Bearer " + c.Value, nil
}

func safeMethod(m string) bool {
	return m == http.MethodGet || m == http.MethodHead || m == http.MethodOptions
}

// sameOrigin reports whether a request was made by a page of this site:
// browsers say so in Sec-Fetch-Site, and older ones send Origin on
// requests that change something.
func sameOrigin(r *http.Request) bool {
	if s := r.Header.Get("Sec-Fetch-Site"); s != "" {
		return s == "same-origin" || s == "none"
	}
	o := r.Header.Get("Origin")
	if o == "" {
		return true // not a browser's cross-site request
	}
	u, err := url.Parse(o)
	return err == nil && u.Host == r.Host
}

// SessionInfo is the answer of GET /api/session.
type SessionInfo struct {
	SignedIn bool   `json:"signedIn"`
	UserID   string `json:"userId,omitempty"`
	UserName string `json:"userName,omitempty"`
	Email    string `json:"email,omitempty"`
	// OIDCIssuer is set when "Sign in with" the issuer is offered.
	OIDCIssuer string `json:"oidcIssuer,omitempty"`
}

func (h *Handler) info(who *authv1.WhoAmIResponse) SessionInfo {
	s := SessionInfo{}
	if h.cfg.OIDC != nil {
		s.OIDCIssuer = h.cfg.OIDC.Issuer
	}
	if who != nil {
		s.SignedIn, s.UserID, s.UserName, s.Email = true, who.GetUserId(), who.GetUserName(), who.GetEmail()
	}
	return s
}

func (h *Handler) call(r *http.Request, bearer string) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(r.Context(), h.cfg.CallTimeout)
	if bearer != "" {
		ctx = metadata.AppendToOutgoingContext(ctx, "authorization", bearer)
	}
	return ctx, cancel
}

// getSession says who is signed in, and which ways in there are. A
// session whose token no longer works (revoked, expired) is signed out.
func (h *Handler) getSession(w http.ResponseWriter, r *http.Request) {
	cred, err := h.Credentials(r)
	if err != nil || cred == "" || h.cfg.Auth == nil {
		writeJSON(w, http.StatusOK, h.info(nil))
		return
	}
	ctx, cancel := h.call(r, cred)
	defer cancel()
	who, err := h.cfg.Auth.WhoAmI(ctx, &authv1.WhoAmIRequest{})
	switch status.Code(err) {
	case codes.OK:
		writeJSON(w, http.StatusOK, h.info(who))
	case codes.Unauthenticated:
		if r.Header.Get("Authorization") == "" {
			h.clearCookie(w, r, CookieName, "/")
		}
		writeJSON(w, http.StatusOK, h.info(nil))
	default:
		h.fail(w, r, err)
	}
}

// maxSignInBody bounds the body of POST /api/session ({"token": ...}).
const maxSignInBody = 4096

// signInWithToken checks an API token ({"token": "tbh_..."}) and starts a
// session with a new token minted by it, with its scopes.
func (h *Handler) signInWithToken(w http.ResponseWriter, r *http.Request) {
	if !sameOrigin(r) {
		httperr.Write(w, http.StatusForbidden, "sign-in must come from this site's page")
		return
	}
	if h.cfg.Auth == nil {
		httperr.Write(w, http.StatusNotImplemented, "this server has no auth service")
		return
	}
	// The whole body is read before it is parsed: a body cut off by the
	// server's body timeout is then answered 408 (package lifecycle), as
	// on every other route, whatever its first bytes were.
	b, err := io.ReadAll(io.LimitReader(r.Body, maxSignInBody+1))
	if err != nil {
		httperr.Write(w, http.StatusBadRequest, "reading the body: "+err.Error())
		return
	}
	if len(b) > maxSignInBody {
		httperr.Write(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("the body is larger than %d bytes", maxSignInBody))
		return
	}
	var body struct {
		Token string `json:"token"`
	}
	if err := json.Unmarshal(b, &body); err != nil || strings.TrimSpace(body.Token) == "" {
		httperr.Write(w, http.StatusBadRequest, `want {"token": "tbh_..."}`)
		return
	}
	who, err := h.start(w, r, "Bearer "+strings.TrimSpace(body.Token))
	if status.Code(err) == codes.Unauthenticated {
		httperr.Write(w, http.StatusUnauthorized, "that token was not accepted")
		return
	}
	if err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, h.info(who))
}

// start mints a session token with credential and sets the cookie. A
// credential without the tokens scope may not mint one (a read-only API
// token, say): the cookie then holds that token itself, which keeps its
// own expiry and revocation, and signing out only forgets the cookie.
func (h *Handler) start(w http.ResponseWriter, r *http.Request, credential string) (*authv1.WhoAmIResponse, error) {
	ctx, cancel := h.call(r, credential)
	defer cancel()
	who, err := h.cfg.Auth.WhoAmI(ctx, &authv1.WhoAmIRequest{})
	if err != nil {
		return nil, err
	}
	expire := h.cfg.Now().Add(h.cfg.Lifetime)
	secret := strings.TrimSpace(strings.TrimPrefix(credential, "Bearer "))
	if !borrowed(who) {
		tok, err := h.cfg.Auth.CreateToken(ctx, &authv1.CreateTokenRequest{Name: TokenName, Scopes: who.GetScopes(), ExpireTime: timestamppb.New(expire)})
		if err != nil {
			return nil, err
		}
		// The server ends the session's token with the credential it was
		// made with, if that expires first (an ID token within its hour);
		// the cookie ends with the token.
		if te := tok.GetToken().GetExpireTime(); te != nil && te.AsTime().Before(expire) {
			expire = te.AsTime()
		}
		secret = tok.GetSecret()
	}
	http.SetCookie(w, &http.Cookie{Name: CookieName, Value: secret, Path: "/", Expires: expire, MaxAge: max(1, int(expire.Sub(h.cfg.Now()).Seconds())),
		HttpOnly: true, Secure: h.secure(r), SameSite: http.SameSiteLaxMode})
	return who, nil
}

// borrowed reports whether a session started with the caller's
// credential holds that credential itself: an API token that may not
// create credentials (no tokens scope). Any other credential mints the
// session a token of its own, with the same scopes, so a session cookie
// holding an API token without the tokens scope is always borrowed.
func borrowed(who *authv1.WhoAmIResponse) bool {
	return who.GetCredentialKind() == authv1.CredentialKind_CREDENTIAL_KIND_API_TOKEN &&
		!slices.Contains(who.GetScopes(), authv1.Scope_SCOPE_TOKENS)
}

// signOut revokes the session's token and forgets the cookie.
func (h *Handler) signOut(w http.ResponseWriter, r *http.Request) {
	c, err := r.Cookie(CookieName)
	if err == nil && c.Value != "" && h.cfg.Auth != nil {
		if !sameOrigin(r) {
			httperr.Write(w, http.StatusForbidden, "sign-out must come from this site's page")
			return
		}
		ctx, cancel := h.call(r, "Bearer "+c.Value)
		defer cancel()
		who, err := h.cfg.Auth.WhoAmI(ctx, &authv1.WhoAmIRequest{})
		if err == nil && !borrowed(who) {
			_, err = h.cfg.Auth.RevokeToken(ctx, &authv1.RevokeTokenRequest{TokenId: who.GetTokenId()})
		}
		if err != nil && status.Code(err) != codes.Unauthenticated {
			h.fail(w, r, err)
			return
		}
	}
	h.clearCookie(w, r, CookieName, "/")
	w.WriteHeader(http.StatusNoContent)
}

func (h *Handler) secure(r *http.Request) bool {
	if h.cfg.PublicOrigin != "" {
		return strings.HasPrefix(h.cfg.PublicOrigin, "https://")
	}
	return r.TLS != nil || r.Header.Get("X-Forwarded-Proto") == "https"
}

func (h *Handler) origin(r *http.Request) string {
	if h.cfg.PublicOrigin != "" {
		return h.cfg.PublicOrigin
	}
	scheme := "http"
	if h.secure(r) {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

func (h *Handler) clearCookie(w http.ResponseWriter, r *http.Request, name, path string) {
	http.SetCookie(w, &http.Cookie{Name: name, Value: "", Path: path, MaxAge: -1, HttpOnly: true, Secure: h.secure(r), SameSite: http.SameSiteLaxMode})
}

// fail answers a service error as package httperr maps it (the same
// statuses as the API's), with a plainer text when the service is
// unreachable; a 5xx's detail is logged.
func (h *Handler) fail(w http.ResponseWriter, r *http.Request, err error) {
	code, msg, internal := httperr.Of(err)
	if c := status.Code(err); c == codes.Unavailable || c == codes.DeadlineExceeded {
		msg = "the sign-in service is unavailable; try again"
	}
	if internal {
		h.logger.ErrorContext(r.Context(), "sign-in failed", "path", r.URL.Path, "error", err.Error())
	}
	httperr.RetryAfter(w, err)
	httperr.Write(w, code, msg)
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	b, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	w.Write(b)
}

// randomString is 256 random bits, base64url.
func randomString() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return base64.RawURLEncoding.EncodeToString(b)
}
