package client

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

// deviceIssuer is an OpenID Connect issuer offering the device flow, enough to drive
// the client: it answers "authorization_pending" once before granting, and issues
// ID tokens (unsigned: the client never verifies them, the server does).
type deviceIssuer struct {
	*httptest.Server
	polls, refreshes atomic.Int32
	lifetime         time.Duration
}

func idToken(exp time.Time, n int32) string {
	enc := base64.RawURLEncoding.EncodeToString
	claims, _ := json.Marshal(map[string]any{"sub": "alice", "exp": exp.Unix(), "n": n})
	return enc([]byte(`{"alg":"none"}`)) + "." + enc(claims) + ".sig"
}

func newDeviceIssuer(t *testing.T) *deviceIssuer {
	iss := &deviceIssuer{lifetime: time.Hour}
	mux := http.NewServeMux()
	iss.Server = httptest.NewServer(mux)
	t.Cleanup(iss.Close)
	mux.HandleFunc("/.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(map[string]string{
			"issuer": iss.URL, "device_authorization_endpoint": iss.URL + "/device", "token_endpoint": iss.URL + "/token",
		})
	})
	mux.HandleFunc("/device", func(w http.ResponseWriter, r *http.Request) {
		if r.FormValue("client_id") != "cli" {
			http.Error(w, `{"error":"invalid_client"}`, http.StatusUnauthorized)
			return
		}
		json.NewEncoder(w).Encode(map[string]any{"device_code": "dev123", "user_code": "ABCD-EFGH",
			"verification_uri": iss.URL + "/activate", "expires_in": 60, "interval": 1})
	})
	mux.HandleFunc("/token", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.FormValue("grant_type") {
		case "urn:ietf:params:oauth:grant-type:device_code":
			if iss.polls.Add(1) == 1 {
				w.WriteHeader(http.StatusBadRequest)
				fmt.Fprint(w, `{"error":"authorization_pending"}`)
				return
			}
		case "refresh_token":
			if r.FormValue("refresh_token") != "refresh-1" {
				w.WriteHeader(http.StatusBadRequest)
				fmt.Fprint(w, `{"error":"invalid_grant"}`)
				return
			}
			iss.refreshes.Add(1)
		}
		json.NewEncoder(w).Encode(map[string]any{"access_token": "at", "token_type": "Bearer", "expires_in": 3600,
			"refresh_token": "refresh-1", "id_token": idToken(time.Now().Add(iss.lifetime), iss.refreshes.Load())})
	})
	return iss
}

func TestDeviceSignInAndRefresh(t *testing.T) {
	iss := newDeviceIssuer(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/auth/config" {
			http.NotFound(w, r)
			return
		}
		json.NewEncoder(w).Encode(SignInConfig{Issuer: iss.URL, ClientID: "cli"})
	}))
	defer srv.Close()
	ctx := context.Background()
	cfg, err := FetchSignInConfig(ctx, http.DefaultClient, srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	var shownURL, shownCode string
	cred, err := DeviceSignIn(ctx, http.DefaultClient, cfg, func(url, code string) { shownURL, shownCode = url, code })
	if err != nil {
		t.Fatal(err)
	}
	if shownURL != iss.URL+"/activate" || shownCode != "ABCD-EFGH" {
		t.Errorf("prompted with %q %q", shownURL, shownCode)
	}
	if iss.polls.Load() != 2 || cred.RefreshToken != "refresh-1" || time.Until(cred.Expiry) < 50*time.Minute {
		t.Errorf("polls %d, credential %+v", iss.polls.Load(), cred)
	}
	if same, changed, err := cred.Fresh(ctx, http.DefaultClient); err != nil || changed || same.IDToken != cred.IDToken {
		t.Errorf("a valid token was refreshed: changed=%v err=%v", changed, err)
	}
	cred.Expiry = time.Now().Add(-time.Second) // expired: refresh
	fresh, changed, err := cred.Fresh(ctx, http.DefaultClient)
	if err != nil || !changed || fresh.IDToken == cred.IDToken || iss.refreshes.Load() != 1 {
		t.Errorf("refresh: changed=%v err=%v refreshes=%d", changed, err, iss.refreshes.Load())
	}
	cred.RefreshToken = ""
	if _, _, err := cred.Fresh(ctx, http.DefaultClient); err == nil {
		t.Error("an expired sign-in without a refresh token was accepted")
	}

	none := httptest.NewServer(http.NotFoundHandler())
	defer none.Close()
	if _, err := FetchSignInConfig(ctx, http.DefaultClient, none.URL); err != ErrNoSignIn {
		t.Errorf("a server without sign-in: %v", err)
	}
}
