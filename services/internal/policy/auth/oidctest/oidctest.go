// Package oidctest is an OpenID Connect issuer for tests: an httptest
// server publishing a discovery document and a JWKS for an RSA key
// generated when it starts, and a method that signs ID tokens with it.
package oidctest

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// Issuer is a running test issuer.
type Issuer struct {
	URL    string // the issuer identifier and base URL
	server *httptest.Server
	key    *rsa.PrivateKey
	signer jose.Signer
}

const keyID = "test-key"

// Start starts an issuer that stops when t ends.
func Start(t testing.TB) *Issuer {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: key},
		(&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", keyID))
	if err != nil {
		t.Fatal(err)
	}
	iss := &Issuer{key: key, signer: signer}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, map[string]any{
			"issuer":                                iss.URL,
			"authorization_endpoint":                iss.URL + "/auth",
			"token_endpoint":                        iss.URL + "/token",
			"jwks_uri":                              iss.URL + "/keys",
			"id_token_signing_alg_values_supported": []string{"RS256"},
		})
	})
	mux.HandleFunc("GET /keys", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{
			Key: &key.PublicKey, KeyID: keyID, Algorithm: string(jose.RS256), Use: "sig",
		}}})
	})
	iss.server = httptest.NewServer(mux)
	iss.URL = iss.server.URL
	t.Cleanup(iss.server.Close)
	return iss
}

// Client is an HTTP client that reaches the issuer.
func (iss *Issuer) Client() *http.Client { return iss.server.Client() }

// Claims are the claims of a token to sign.
type Claims struct {
	Subject       string
	Audience      string
	Email         string
	EmailVerified bool
	IssuedAt      time.Time
	Expiry        time.Time
	// Issuer overrides the issuer URL when non-empty.
	Issuer string
}

// Sign returns a signed, serialized ID token.
func (iss *Issuer) Sign(t testing.TB, c Claims) string {
	t.Helper()
	issuer := iss.URL
	if c.Issuer != "" {
		issuer = c.Issuer
	}
	std := jwt.Claims{
		Issuer:   issuer,
		Subject:  c.Subject,
		Audience: jwt.Audience{c.Audience},
		IssuedAt: jwt.NewNumericDate(c.IssuedAt),
		Expiry:   jwt.NewNumericDate(c.Expiry),
	}
	extra := map[string]any{"email": c.Email, "email_verified": c.EmailVerified}
	raw, err := jwt.Signed(iss.signer).Claims(std).Claims(extra).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}
