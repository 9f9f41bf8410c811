package readpath_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"

	"github.com/tbhub/tbhub/frontend-api/session"
	"github.com/tbhub/tbhub/frontend-api/session/sessiontest"
	"github.com/tbhub/tbhub/services/allinone/readpath"
)

// Browser sign-in (frontend-api/session) against the real write service:
// the session cookie stands for a token minted for it, works for every
// route, is refused for changes asked by other sites, and dies at sign-out.

// browser is an HTTP client with a cookie jar that stops at redirects
// leaving the sign-in routes, as a browser that would then load a page.
func browser(t *testing.T) *http.Client {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Jar: jar, CheckRedirect: func(req *http.Request, via []*http.Request) error {
		if strings.HasPrefix(req.URL.Path, "/auth/") || req.URL.Path == "/auth" {
			return nil
		}
		return http.ErrUseLastResponse
	}}
}

// call sends a request from a page of the server's origin (or from
// origin, if set) with the jar's cookies.
func call(t *testing.T, c *http.Client, method, u, origin, body string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, u, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

func sessionCookie(resp *http.Response) *http.Cookie {
	for _, c := range resp.Cookies() {
		if c.Name == session.CookieName {
			return c
		}
	}
	return nil
}

func TestTokenSignInSession(t *testing.T) {
	s := startServerWith(t, readpath.Config{CacheTTL: -1})
	eid := ownedExperiment(t, s)
	c := browser(t)

	resp, body := call(t, c, http.MethodGet, s.url+"/api/session", "", "")
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, `"signedIn":false`) || strings.Contains(body, "oidcIssuer") {
		t.Errorf("signed out, GET /api/session: %d %s", resp.StatusCode, body)
	}
	resp, body = call(t, c, http.MethodPost, s.url+"/api/session", s.url, `{"token":"tbh_wrong"}`)
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(body, "not accepted") {
		t.Errorf("a wrong token: %d %s", resp.StatusCode, body)
	}
	resp, body = call(t, c, http.MethodPost, s.url+"/api/session", "https://evil.example", `{"token":"`+s.token+`"}`)
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("sign-in posted by another site: %d %s", resp.StatusCode, body)
	}
	resp, body = call(t, c, http.MethodPost, s.url+"/api/session", s.url, `{"token":"`+s.token+`"}`)
	ck := sessionCookie(resp)
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, `"userName":"researcher"`) || ck == nil {
		t.Fatalf("token sign-in: %d %s", resp.StatusCode, body)
	}
	if !ck.HttpOnly || ck.SameSite != http.SameSiteLaxMode || ck.Secure || ck.Value == s.token || !strings.HasPrefix(ck.Value, "tbh_") {
		t.Errorf("session cookie %+v: want HttpOnly, SameSite=Lax, not Secure over http, a new token", ck)
	}

	// The cookie alone reads and manages; the token behind it is listed.
	if resp, body := call(t, c, http.MethodGet, s.url+"/api/experiments/"+eid, "", ""); resp.StatusCode != http.StatusOK {
		t.Errorf("reading with the session: %d %s", resp.StatusCode, body)
	}
	if resp, body := call(t, c, http.MethodPatch, s.url+"/api/experiments/"+eid, s.url, `{"name":"from the browser"}`); resp.StatusCode != http.StatusOK {
		t.Errorf("renaming with the session: %d %s", resp.StatusCode, body)
	}
	if _, body := call(t, c, http.MethodGet, s.url+"/api/tokens", "", ""); !strings.Contains(body, `"name":"`+session.TokenName+`"`) || !strings.Contains(body, "expireTime") {
		t.Errorf("tokens after sign-in: %s", body)
	}
	// Another site cannot make changes with it.
	resp, body = call(t, c, http.MethodPatch, s.url+"/api/experiments/"+eid, "https://evil.example", `{"name":"x"}`)
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(body, "another site") {
		t.Errorf("a change asked by another site: %d %s", resp.StatusCode, body)
	}
	req, _ := http.NewRequest(http.MethodDelete, s.url+"/api/experiments/"+eid, nil)
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	if resp, err := c.Do(req); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a cross-site delete: %v %v", resp.StatusCode, err)
	}

	// Sign-out revokes the session's token; the cookie is dropped.
	resp, _ = call(t, c, http.MethodDelete, s.url+"/api/session", s.url, "")
	if ck := sessionCookie(resp); resp.StatusCode != http.StatusNoContent || ck == nil || ck.MaxAge >= 0 {
		t.Errorf("sign-out: %d, cookie %+v", resp.StatusCode, ck)
	}
	if r := s.send(t, http.MethodGet, "/api/whoami", ck.Value, ""); r.status != http.StatusUnauthorized {
		t.Errorf("the session token after sign-out: %d", r.status)
	}
	if r := s.send(t, http.MethodGet, "/api/whoami", s.token, ""); r.status != http.StatusOK {
		t.Errorf("the token signed in with must still work after sign-out: %d", r.status)
	}
	wantSignedOut(t, c, s.url, "after sign-out")
}

// wantSignedOut checks that GET /api/session says the browser c is
// signed out.
func wantSignedOut(t *testing.T, c *http.Client, url, what string) {
	t.Helper()
	if _, body := call(t, c, http.MethodGet, url+"/api/session", "", ""); !strings.Contains(body, `"signedIn":false`) {
		t.Errorf("%s: %s", what, body)
	}
}

// A browser session minted with a token dies when that token is revoked
// (issue 20 #5): it outlived it.
func TestSessionDiesWithTheTokenItWasMadeWith(t *testing.T) {
	s := startServerWith(t, readpath.Config{CacheTTL: -1})
	eid := ownedExperiment(t, s)
	laptopID, laptop := newToken(t, s, s.token, `"SCOPE_UPLOAD","SCOPE_READ","SCOPE_TOKENS"`)
	c := browser(t)
	resp, body := call(t, c, http.MethodPost, s.url+"/api/session", s.url, `{"token":"`+laptop+`"}`)
	ck := sessionCookie(resp)
	if resp.StatusCode != http.StatusOK || ck == nil || ck.Value == laptop {
		t.Fatalf("sign-in with the token: %d %s, cookie %+v; want a session token of its own", resp.StatusCode, body, ck)
	}
	if resp, body := call(t, c, http.MethodGet, s.url+"/api/experiments/"+eid, "", ""); resp.StatusCode != http.StatusOK {
		t.Fatalf("reading with the session: %d %s", resp.StatusCode, body)
	}
	expect(t, "revoke the token", s.send(t, http.MethodDelete, "/api/tokens/"+laptopID, s.token, ""), http.StatusNoContent, "")
	if r := s.send(t, http.MethodGet, "/api/whoami", ck.Value, ""); r.status != http.StatusUnauthorized {
		t.Errorf("the session's token after revoking the token it was made with: %d, want 401", r.status)
	}
	wantSignedOut(t, c, s.url, "the browser after revoking the token it signed in with")
}

// A read-only token may not mint credentials, yet still signs a browser
// in: the cookie holds the token itself, which reads but cannot manage
// tokens, and signing out leaves it working.
func TestReadOnlyTokenSignIn(t *testing.T) {
	s := startServerWith(t, readpath.Config{CacheTTL: -1})
	eid := ownedExperiment(t, s)
	_, ro := newToken(t, s, s.token, `"SCOPE_READ"`)
	c := browser(t)
	resp, body := call(t, c, http.MethodPost, s.url+"/api/session", s.url, `{"token":"`+ro+`"}`)
	if ck := sessionCookie(resp); resp.StatusCode != http.StatusOK || !strings.Contains(body, `"signedIn":true`) || ck == nil || ck.Value != ro {
		t.Fatalf("sign-in with a read-only token: %d %s, cookie %+v", resp.StatusCode, body, ck)
	}
	if resp, body := call(t, c, http.MethodGet, s.url+"/api/experiments/"+eid, "", ""); resp.StatusCode != http.StatusOK {
		t.Errorf("reading with the session: %d %s", resp.StatusCode, body)
	}
	if resp, body := call(t, c, http.MethodGet, s.url+"/api/tokens", "", ""); resp.StatusCode != http.StatusForbidden {
		t.Errorf("listing tokens with the read-only session: %d %s, want 403", resp.StatusCode, body)
	}
	if resp, _ := call(t, c, http.MethodDelete, s.url+"/api/session", s.url, ""); resp.StatusCode != http.StatusNoContent {
		t.Errorf("sign-out: %d", resp.StatusCode)
	}
	expect(t, "the read-only token after sign-out", s.send(t, http.MethodGet, "/api/whoami", ro, ""), http.StatusOK, "")
	wantSignedOut(t, c, s.url, "after sign-out")
}

func TestOIDCSignInSession(t *testing.T) {
	iss, err := sessiontest.Start("tbhub-web")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(iss.Close)
	s := startServerWith(t, readpath.Config{CacheTTL: -1, SignIn: &session.OIDC{Issuer: iss.URL, ClientID: "tbhub-web"}})
	c := browser(t)
	if _, body := call(t, c, http.MethodGet, s.url+"/api/session", "", ""); !strings.Contains(body, `"oidcIssuer":"`+iss.URL+`"`) {
		t.Errorf("GET /api/session does not offer the issuer: %s", body)
	}

	// /auth/login → the issuer → /auth/callback → back where we started.
	next := "/experiment/abc/?tab=scalars"
	resp, body := call(t, c, http.MethodGet, s.url+"/auth/login?next="+url.QueryEscape(next), "", "")
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != next {
		t.Fatalf("after the issuer: %d Location %q %s", resp.StatusCode, resp.Header.Get("Location"), body)
	}
	_, body = call(t, c, http.MethodGet, s.url+"/api/session", "", "")
	var info session.SessionInfo
	if err := json.Unmarshal([]byte(body), &info); err != nil || !info.SignedIn || info.Email != "alice@example.com" || info.UserName != "alice@example.com" {
		t.Errorf("signed in with the issuer: %s", body)
	}
	if r, body := call(t, c, http.MethodGet, s.url+"/api/experiments", "", ""); r.StatusCode != http.StatusOK {
		t.Errorf("listing with the OIDC session: %d %s", r.StatusCode, body)
	}

	// An answer from the issuer that no sign-in here started, and a next
	// that leaves the site.
	c2 := browser(t)
	resp, _ = call(t, c2, http.MethodGet, s.url+"/auth/callback?code=x&state=y", "", "")
	if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(loc, "/signin?") || !strings.Contains(loc, "error=") {
		t.Errorf("a callback without a sign-in: %d %q", resp.StatusCode, loc)
	}
	if sessionCookie(resp) != nil && sessionCookie(resp).Value != "" {
		t.Error("a callback without a sign-in set a session")
	}
	resp, _ = call(t, c2, http.MethodGet, s.url+"/auth/login?next="+url.QueryEscape("//evil.example/x"), "", "")
	if loc := resp.Header.Get("Location"); loc != "/" {
		t.Errorf("next=//evil.example/x came back to %q, want /", loc)
	}
	if iss.Exchanges() != 2 {
		t.Errorf("the issuer traded %d codes, want 2", iss.Exchanges())
	}
}
