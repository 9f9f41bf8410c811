package session

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
)

// A failed sign-in sends the browser to /signin?error=CODE, one of
// signInErrors, whose page shows a fixed text for it: no words the
// identity provider, the link or an error message supplied reach the page
// (issue 20, extra).
func TestFailedSignInSendsACodeNotText(t *testing.T) {
	h, err := New(Config{Auth: fakeAuth{}, OIDC: &OIDC{Issuer: "http://127.0.0.1:1", ClientID: "tbhub-web"}})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	h.Mount(mux)
	const evil = "Your account is locked: call +1 555 0100"
	flowValue := func(state string) string {
		b, _ := json.Marshal(flow{State: state, Nonce: "n", Verifier: "v", Next: "/gallery"})
		return base64.RawURLEncoding.EncodeToString(b)
	}
	for _, tc := range []struct {
		name, query, cookie, want string
	}{
		{"provider refused", "state=s&error=access_denied&error_description=" + url.QueryEscape(evil), flowValue("s"), "refused"},
		{"provider refused, no description", "state=s&error=" + url.QueryEscape(evil), flowValue("s"), "refused"},
		{"no flow", "state=s&code=c", "", "expired"},
		{"another flow", "state=other&code=c", flowValue("s"), "mismatch"},
		{"exchange failed", "state=s&code=c", flowValue("s"), "failed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodGet, "http://tbhub.test/auth/callback?"+tc.query, nil)
			if tc.cookie != "" {
				req.AddCookie(&http.Cookie{Name: flowCookie, Value: tc.cookie})
			}
			rec := httptest.NewRecorder()
			mux.ServeHTTP(rec, req)
			loc, err := url.Parse(rec.Header().Get("Location"))
			if err != nil || loc.Path != "/signin" {
				t.Fatalf("%d to %q, want /signin", rec.Code, rec.Header().Get("Location"))
			}
			got := loc.Query().Get("error")
			if got != tc.want || strings.Contains(loc.RawQuery, "555") {
				t.Errorf("error=%q (%s), want the code %q and nothing of the provider's text", got, loc.RawQuery, tc.want)
			}
			if !slices.Contains(signInErrors, signInError(got)) {
				t.Errorf("error=%q is not one of signInErrors", got)
			}
		})
	}
}
