package session

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/tbhub/tbhub/frontend-api/httperr"
)

// The authorization-code flow with PKCE, for browsers: discovery and ID
// token checks by github.com/coreos/go-oidc, the authorization URL, PKCE
// and the code exchange by golang.org/x/oauth2.

// oidcClient is the issuer's provider (discovered once) and its ID token
// verifier for the web client.
type oidcClient struct {
	provider *oidc.Provider
	verifier *oidc.IDTokenVerifier
}

// discover reads the issuer's document once; a failure is retried by the
// next sign-in.
func (h *Handler) discover(ctx context.Context) (*oidcClient, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.oidc != nil {
		return h.oidc, nil
	}
	p, err := oidc.NewProvider(oidc.ClientContext(ctx, h.cfg.HTTPClient), h.cfg.OIDC.Issuer)
	if err != nil {
		return nil, fmt.Errorf("discovery of %s: %w", h.cfg.OIDC.Issuer, err)
	}
	h.oidc = &oidcClient{provider: p, verifier: p.Verifier(&oidc.Config{ClientID: h.cfg.OIDC.ClientID})}
	return h.oidc, nil
}

// oauth2Config is the web client's configuration for one redirect URI.
// The client ID and secret go in the token request's form, as public
// clients (and Google's web clients) expect.
func (h *Handler) oauth2Config(c *oidcClient, r *http.Request) *oauth2.Config {
	ep := c.provider.Endpoint()
	ep.AuthStyle = oauth2.AuthStyleInParams
	return &oauth2.Config{ClientID: h.cfg.OIDC.ClientID, ClientSecret: h.cfg.OIDC.ClientSecret,
		Endpoint: ep, RedirectURL: h.redirectURI(r), Scopes: h.cfg.OIDC.Scopes}
}

// flow is one sign-in in progress, kept in the flow cookie.
type flow struct {
	State    string `json:"s"`
	Nonce    string `json:"n"`
	Verifier string `json:"v"`
	Next     string `json:"next"`
}

// localPath keeps next if it is a path of this site ("/..."), else "/":
// the sign-in must not become an open redirect. Browsers drop tabs and
// line breaks from a URL and read a backslash as a slash ("/\t/evil" is
// "//evil", another host), so next is refused if it holds any control
// character or backslash, and otherwise parsed and resolved against this
// site: it must stay on it. Its decoded path passes the same checks: a
// page that redirects from its decoded path (as /experiment/ID did) would
// otherwise turn "/experiment/..%2F%5Cevil" into "/\\evil".
func localPath(next string) string {
	unsafe := func(s string) bool {
		return strings.HasPrefix(s, "//") || strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f || r == '\\' })
	}
	if unsafe(next) {
		return "/"
	}
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || !strings.HasPrefix(next, "/") || unsafe(u.Path) {
		return "/"
	}
	const here = "https://this.site"
	base, _ := url.Parse(here + "/")
	if r := base.ResolveReference(u); r.Scheme+"://"+r.Host != here {
		return "/"
	}
	return next
}

func (h *Handler) redirectURI(r *http.Request) string { return h.origin(r) + "/auth/callback" }

// login sends the browser to the issuer (?next= is the page to come back to).
func (h *Handler) login(w http.ResponseWriter, r *http.Request) {
	if h.cfg.OIDC == nil {
		httperr.Write(w, http.StatusNotFound, "this server signs in with API tokens only")
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), h.cfg.CallTimeout)
	defer cancel()
	next := localPath(r.URL.Query().Get("next"))
	c, err := h.discover(ctx)
	if err != nil {
		h.logger.WarnContext(ctx, "OIDC discovery failed", "error", err.Error())
		h.backToSignIn(w, r, next, errUnreachable)
		return
	}
	f := flow{State: randomString(), Nonce: randomString(), Verifier: oauth2.GenerateVerifier(), Next: next}
	b, _ := json.Marshal(f)
	http.SetCookie(w, &http.Cookie{Name: flowCookie, Value: base64.RawURLEncoding.EncodeToString(b), Path: "/auth/", MaxAge: 600,
		HttpOnly: true, Secure: h.secure(r), SameSite: http.SameSiteLaxMode})
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, h.oauth2Config(c, r).AuthCodeURL(f.State, oauth2.S256ChallengeOption(f.Verifier), oidc.Nonce(f.Nonce)), http.StatusFound)
}

// signInError is why a sign-in failed, as /signin?error= carries it. The
// page shows a fixed text for each code (web/src/pages/signin.ts) and a
// generic one for any other value: a link to /signin can carry any
// error=, and the page must not show words it supplies (nor the identity
// provider's error_description, nor an error's text, which are logged).
type signInError string

const (
	errUnreachable signInError = "unreachable"  // the issuer cannot be reached
	errExpired     signInError = "expired"      // no flow cookie: too slow, or started in another browser
	errMismatch    signInError = "mismatch"     // the answer's state is another sign-in's
	errRefused     signInError = "refused"      // the issuer answered with an error
	errFailed      signInError = "failed"       // the code exchange or the ID token's checks failed
	errNotAccepted signInError = "not_accepted" // the write service refused the ID token
)

// signInErrors are every signInError.
var signInErrors = []signInError{errUnreachable, errExpired, errMismatch, errRefused, errFailed, errNotAccepted}

// backToSignIn shows the sign-in page with the reason's code.
func (h *Handler) backToSignIn(w http.ResponseWriter, r *http.Request, next string, reason signInError) {
	q := url.Values{"next": {next}, "error": {string(reason)}}
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, "/signin?"+q.Encode(), http.StatusSeeOther)
}

// callback finishes the flow: the issuer sent the browser back with a
// code (or an error).
func (h *Handler) callback(w http.ResponseWriter, r *http.Request) {
	if h.cfg.OIDC == nil || h.cfg.Auth == nil {
		httperr.Write(w, http.StatusNotFound, "this server signs in with API tokens only")
		return
	}
	var f flow
	c, err := r.Cookie(flowCookie)
	if err == nil {
		var b []byte
		if b, err = base64.RawURLEncoding.DecodeString(c.Value); err == nil {
			err = json.Unmarshal(b, &f)
		}
	}
	h.clearCookie(w, r, flowCookie, "/auth/")
	q := r.URL.Query()
	switch {
	case err != nil || f.State == "":
		h.backToSignIn(w, r, "/", errExpired)
		return
	case q.Get("state") != f.State:
		h.backToSignIn(w, r, localPath(f.Next), errMismatch)
		return
	case q.Get("error") != "":
		h.logger.WarnContext(r.Context(), "OIDC issuer refused the sign-in", "error", q.Get("error"), "description", q.Get("error_description"))
		h.backToSignIn(w, r, localPath(f.Next), errRefused)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), h.cfg.CallTimeout)
	defer cancel()
	idToken, err := h.exchange(ctx, r, q.Get("code"), f)
	if err != nil {
		h.logger.WarnContext(ctx, "OIDC code exchange failed", "error", err.Error())
		h.backToSignIn(w, r, localPath(f.Next), errFailed)
		return
	}
	if _, err := h.start(w, r, "Bearer "+idToken); err != nil {
		h.logger.WarnContext(ctx, "OIDC session refused", "error", err.Error())
		h.backToSignIn(w, r, localPath(f.Next), errNotAccepted)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, localPath(f.Next), http.StatusSeeOther)
}

// exchange trades the code for an ID token at the token endpoint (with
// the PKCE verifier) and verifies it: the issuer's signature, this client
// as its audience, its expiry, and the nonce of this sign-in. The write
// service checks it again when the session token is minted with it.
func (h *Handler) exchange(ctx context.Context, r *http.Request, code string, f flow) (string, error) {
	if code == "" {
		return "", errors.New("no authorization code")
	}
	c, err := h.discover(ctx)
	if err != nil {
		return "", err
	}
	ctx = oidc.ClientContext(ctx, h.cfg.HTTPClient)
	tok, err := h.oauth2Config(c, r).Exchange(ctx, code, oauth2.VerifierOption(f.Verifier))
	if err != nil {
		var re *oauth2.RetrieveError
		if errors.As(err, &re) && re.ErrorCode != "" {
			return "", fmt.Errorf("token endpoint: %s %s", re.ErrorCode, re.ErrorDescription)
		}
		return "", fmt.Errorf("token endpoint: %w", err)
	}
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		return "", errors.New("token endpoint: no id_token in the answer")
	}
	id, err := c.verifier.Verify(ctx, raw)
	if err != nil {
		return "", fmt.Errorf("the ID token does not verify: %w", err)
	}
	if id.Nonce != f.Nonce {
		return "", errors.New("the ID token was not issued for this sign-in (nonce)")
	}
	return raw, nil
}
