package session

import (
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/tbhub/tbhub/frontend-api/session/sessiontest"
)

// The browser flow against the test issuer, and the ID tokens it must
// refuse: one for another sign-in (nonce), for another client (audience),
// expired, or from another issuer.
func TestOIDCFlowChecksTheIDToken(t *testing.T) {
	iss, err := sessiontest.Start("tbhub-web")
	if err != nil {
		t.Fatal(err)
	}
	defer iss.Close()
	h, err := New(Config{Auth: fakeAuth{}, OIDC: &OIDC{Issuer: iss.URL, ClientID: "tbhub-web"}})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	h.Mount(mux)
	site := httptest.NewServer(mux)
	defer site.Close()

	// signIn follows /auth/login?next=NEXT through the issuer back to the
	// callback and returns where the site sent the browser last.
	signIn := func(t *testing.T, next string) *url.URL {
		t.Helper()
		jar, _ := cookiejar.New(nil)
		c := &http.Client{Jar: jar, CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if req.URL.Host == strings.TrimPrefix(site.URL, "http://") && req.URL.Path != "/auth/callback" && req.URL.Path != "/auth/login" {
				return http.ErrUseLastResponse // back on a page of the site
			}
			return nil
		}}
		resp, err := c.Get(site.URL + "/auth/login?next=" + next)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		loc, err := resp.Location()
		if err != nil {
			t.Fatalf("no redirect at the end: %d", resp.StatusCode)
		}
		return loc
	}

	if loc := signIn(t, "/experiment/e/"); loc.Path != "/experiment/e/" {
		t.Fatalf("a good sign-in ended at %s", loc)
	}
	// A next whose path decodes to "../\evil.example/" is not followed:
	// a route redirecting from the decoded path would send the browser
	// to "/\evil.example/", another origin (issue 20 #3).
	if loc := signIn(t, url.QueryEscape("/experiment/..%2F%5Cevil.example%2F")); loc.Path != "/" || loc.RawQuery != "" {
		t.Errorf("a sign-in with next=/experiment/..%%2F%%5Cevil.example%%2F ended at %s, want /", loc)
	}
	for name, tamper := range map[string]func(map[string]any){
		"nonce":    func(c map[string]any) { c["nonce"] = "another sign-in" },
		"audience": func(c map[string]any) { c["aud"] = "another-client" },
		"expired":  func(c map[string]any) { c["exp"] = time.Now().Add(-time.Hour).Unix() },
		"issuer":   func(c map[string]any) { c["iss"] = "https://issuer.example" },
	} {
		t.Run(name, func(t *testing.T) {
			iss.Tamper(tamper)
			defer iss.Tamper(nil)
			loc := signIn(t, "/experiment/e/")
			if loc.Path != "/signin" || loc.Query().Get("error") != string(errFailed) {
				t.Errorf("a tampered ID token (%s) ended at %s", name, loc)
			}
		})
	}
}
