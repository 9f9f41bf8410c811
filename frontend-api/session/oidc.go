package session

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"google.golang.org/grpc/status"

	"github.com/tbhub/tbhub/frontend-api/httperr"
)

// The authorization-code flow with PKCE, for browsers.

// discovery is what the flow needs of the issuer's
// /.well-known/openid-configuration.
type discovery struct {
	Issuer                string `json:"issuer"`
	AuthorizationEndpoint string `json:"authorization_endpoint"`
	TokenEndpoint         string `json:"token_endpoint"`
}

// discover reads the issuer's document once; a failure is retried by the
// next sign-in.
func (h *Handler) discover(ctx context.Context) (*discovery, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.discovery != nil {
		return h.discovery, nil
	}
	u := strings.TrimSuffix(h.cfg.OIDC.Issuer, "/") + "/.well-known/openid-configuration"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	resp, err := h.cfg.HTTPClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("discovery of %s: %w", h.cfg.OIDC.Issuer, err)
	}
	defer resp.Body.Close()
	var d discovery
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("discovery of %s: HTTP %d", h.cfg.OIDC.Issuer, resp.StatusCode)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&d); err != nil {
		return nil, fmt.Errorf("discovery of %s: %w", h.cfg.OIDC.Issuer, err)
	}
	if d.AuthorizationEndpoint == "" || d.TokenEndpoint == "" {
		return nil, fmt.Errorf("discovery of %s: no authorization or token endpoint", h.cfg.OIDC.Issuer)
	}
	h.discovery = &d
	return &d, nil
}

// flow is one sign-in in progress, kept in the flow cookie.
type flow struct {
	State    string `json:"s"`
	Nonce    string `json:"n"`
	Verifier string `json:"v"`
	Next     string `json:"next"`
}

// localPath keeps next if it is a path of this site ("/..."), else "/":
// the sign-in must not become an open redirect.
func localPath(next string) string {
	if !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.ContainsAny(next, "\\\r\n") {
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
	d, err := h.discover(ctx)
	if err != nil {
		h.logger.WarnContext(ctx, "OIDC discovery failed", "error", err.Error())
		h.backToSignIn(w, r, next, "the identity provider cannot be reached; try again")
		return
	}
	f := flow{State: randomString(), Nonce: randomString(), Verifier: randomString(), Next: next}
	b, _ := json.Marshal(f)
	http.SetCookie(w, &http.Cookie{Name: flowCookie, Value: base64.RawURLEncoding.EncodeToString(b), Path: "/auth/", MaxAge: 600,
		HttpOnly: true, Secure: h.secure(r), SameSite: http.SameSiteLaxMode})
	q := url.Values{
		"response_type":         {"code"},
		"client_id":             {h.cfg.OIDC.ClientID},
		"redirect_uri":          {h.redirectURI(r)},
		"scope":                 {strings.Join(h.cfg.OIDC.Scopes, " ")},
		"state":                 {f.State},
		"nonce":                 {f.Nonce},
		"code_challenge":        {pkceChallenge(f.Verifier)},
		"code_challenge_method": {"S256"},
	}
	sep := "?"
	if strings.Contains(d.AuthorizationEndpoint, "?") {
		sep = "&"
	}
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, d.AuthorizationEndpoint+sep+q.Encode(), http.StatusFound)
}

// backToSignIn shows the sign-in page with a reason.
func (h *Handler) backToSignIn(w http.ResponseWriter, r *http.Request, next, reason string) {
	q := url.Values{"next": {next}, "error": {reason}}
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
		h.backToSignIn(w, r, "/", "the sign-in took too long or was started elsewhere; try again")
		return
	case q.Get("state") != f.State:
		h.backToSignIn(w, r, localPath(f.Next), "the sign-in answer does not match this sign-in; try again")
		return
	case q.Get("error") != "":
		reason := q.Get("error_description")
		if reason == "" {
			reason = q.Get("error")
		}
		h.backToSignIn(w, r, localPath(f.Next), "the identity provider refused: "+reason)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), h.cfg.CallTimeout)
	defer cancel()
	idToken, err := h.exchange(ctx, r, q.Get("code"), f)
	if err != nil {
		h.logger.WarnContext(ctx, "OIDC code exchange failed", "error", err.Error())
		h.backToSignIn(w, r, localPath(f.Next), "signing in failed: "+err.Error())
		return
	}
	if _, err := h.start(w, r, "Bearer "+idToken); err != nil {
		h.logger.WarnContext(ctx, "OIDC session refused", "error", err.Error())
		msg := "the server did not accept the sign-in"
		if st, ok := status.FromError(err); ok && st.Message() != "" {
			msg += ": " + st.Message()
		}
		h.backToSignIn(w, r, localPath(f.Next), msg)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, localPath(f.Next), http.StatusSeeOther)
}

// exchange trades the code for an ID token at the token endpoint and
// checks its nonce. Its signature and audience are the write service's to
// check, when the session token is minted with it.
func (h *Handler) exchange(ctx context.Context, r *http.Request, code string, f flow) (string, error) {
	if code == "" {
		return "", errors.New("no authorization code")
	}
	d, err := h.discover(ctx)
	if err != nil {
		return "", err
	}
	form := url.Values{
		"grant_type":    {"authorization_code"},
		"code":          {code},
		"redirect_uri":  {h.redirectURI(r)},
		"client_id":     {h.cfg.OIDC.ClientID},
		"code_verifier": {f.Verifier},
	}
	if h.cfg.OIDC.ClientSecret != "" {
		form.Set("client_secret", h.cfg.OIDC.ClientSecret)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.TokenEndpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	resp, err := h.cfg.HTTPClient.Do(req)
	if err != nil {
		return "", fmt.Errorf("token endpoint: %w", err)
	}
	defer resp.Body.Close()
	var tok struct {
		IDToken          string `json:"id_token"`
		Error            string `json:"error"`
		ErrorDescription string `json:"error_description"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&tok); err != nil {
		return "", fmt.Errorf("token endpoint: HTTP %d: %w", resp.StatusCode, err)
	}
	if tok.Error != "" {
		return "", fmt.Errorf("token endpoint: %s %s", tok.Error, tok.ErrorDescription)
	}
	if tok.IDToken == "" {
		return "", fmt.Errorf("token endpoint: HTTP %d without an id_token", resp.StatusCode)
	}
	if n, err := nonceOf(tok.IDToken); err != nil || n != f.Nonce {
		return "", errors.New("the ID token was not issued for this sign-in (nonce)")
	}
	return tok.IDToken, nil
}

// nonceOf reads the nonce claim of a JWT without checking its signature.
func nonceOf(jwt string) (string, error) {
	parts := strings.Split(jwt, ".")
	if len(parts) != 3 {
		return "", errors.New("not a JWT")
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return "", err
	}
	var c struct {
		Nonce string `json:"nonce"`
	}
	if err := json.Unmarshal(b, &c); err != nil {
		return "", err
	}
	return c.Nonce, nil
}
