// Package sessiontest is an OpenID Connect issuer for tests of browser
// sign-in: discovery, a JWKS, an authorization endpoint that signs the
// configured user in at once (no page), and a token endpoint that trades a
// code for an RS256 ID token, checking the PKCE verifier, client and
// redirect URI as a real issuer does. Only the standard library.
package sessiontest

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"time"
)

// Issuer is a running test issuer.
type Issuer struct {
	// URL is the issuer identifier and base URL.
	URL string
	// ClientID is the only client it serves.
	ClientID string

	server *httptest.Server
	key    *rsa.PrivateKey

	mu      sync.Mutex
	subject string
	email   string
	codes   map[string]grant
	tamper  func(claims map[string]any)
	// Exchanges counts successful code exchanges.
	exchanges int
}

// grant is an issued authorization code's context.
type grant struct {
	clientID, redirectURI, challenge, nonce, subject, email string
}

const keyID = "sessiontest-key"

// Start starts an issuer for clientID; Close stops it. The user signing
// in is "alice" (alice@example.com) until SetUser.
func Start(clientID string) (*Issuer, error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	iss := &Issuer{ClientID: clientID, key: key, subject: "alice", email: "alice@example.com", codes: map[string]grant{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", iss.discovery)
	mux.HandleFunc("GET /keys", iss.keys)
	mux.HandleFunc("GET /auth", iss.authorize)
	mux.HandleFunc("POST /token", iss.token)
	iss.server = httptest.NewServer(mux)
	iss.URL = iss.server.URL
	return iss, nil
}

// Close stops the issuer.
func (iss *Issuer) Close() { iss.server.Close() }

// SetUser sets who the next sign-ins are.
func (iss *Issuer) SetUser(subject, email string) {
	iss.mu.Lock()
	defer iss.mu.Unlock()
	iss.subject, iss.email = subject, email
}

// Tamper changes the claims of the ID tokens issued from now on (nil: none),
// to test that a client refuses a token not meant for it.
func (iss *Issuer) Tamper(f func(claims map[string]any)) {
	iss.mu.Lock()
	defer iss.mu.Unlock()
	iss.tamper = f
}

// Exchanges is how many codes were traded for ID tokens.
func (iss *Issuer) Exchanges() int {
	iss.mu.Lock()
	defer iss.mu.Unlock()
	return iss.exchanges
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}

func (iss *Issuer) discovery(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{
		"issuer":                                iss.URL,
		"authorization_endpoint":                iss.URL + "/auth",
		"token_endpoint":                        iss.URL + "/token",
		"jwks_uri":                              iss.URL + "/keys",
		"response_types_supported":              []string{"code"},
		"subject_types_supported":               []string{"public"},
		"id_token_signing_alg_values_supported": []string{"RS256"},
		"code_challenge_methods_supported":      []string{"S256"},
	})
}

var b64 = base64.RawURLEncoding

func (iss *Issuer) keys(w http.ResponseWriter, r *http.Request) {
	pub := iss.key.PublicKey
	writeJSON(w, http.StatusOK, map[string]any{"keys": []map[string]string{{
		"kty": "RSA", "kid": keyID, "alg": "RS256", "use": "sig",
		"n": b64.EncodeToString(pub.N.Bytes()),
		"e": b64.EncodeToString(big.NewInt(int64(pub.E)).Bytes()),
	}}})
}

// authorize signs the current user in and sends the browser back with a
// code, or with an error as RFC 6749 §4.1.2.1 says.
func (iss *Issuer) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	redirect, err := url.Parse(q.Get("redirect_uri"))
	if err != nil || redirect.Scheme == "" || q.Get("client_id") != iss.ClientID {
		http.Error(w, "unknown client or redirect_uri", http.StatusBadRequest)
		return
	}
	back := redirect.Query()
	back.Set("state", q.Get("state"))
	switch {
	case q.Get("response_type") != "code":
		back.Set("error", "unsupported_response_type")
	case q.Get("code_challenge") == "" || q.Get("code_challenge_method") != "S256":
		back.Set("error", "invalid_request")
		back.Set("error_description", "PKCE with S256 is required")
	default:
		code := b64.EncodeToString(randomBytes(24))
		iss.mu.Lock()
		iss.codes[code] = grant{clientID: iss.ClientID, redirectURI: q.Get("redirect_uri"), challenge: q.Get("code_challenge"),
			nonce: q.Get("nonce"), subject: iss.subject, email: iss.email}
		iss.mu.Unlock()
		back.Set("code", code)
	}
	redirect.RawQuery = back.Encode()
	http.Redirect(w, r, redirect.String(), http.StatusFound)
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}

// token trades a code (once) for an ID token.
func (iss *Issuer) token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil || r.PostForm.Get("grant_type") != "authorization_code" {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "unsupported_grant_type"})
		return
	}
	iss.mu.Lock()
	g, ok := iss.codes[r.PostForm.Get("code")]
	delete(iss.codes, r.PostForm.Get("code"))
	iss.mu.Unlock()
	sum := sha256.Sum256([]byte(r.PostForm.Get("code_verifier")))
	switch {
	case !ok:
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant", "error_description": "unknown or used code"})
		return
	case r.PostForm.Get("client_id") != g.clientID || r.PostForm.Get("redirect_uri") != g.redirectURI:
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant", "error_description": "client or redirect_uri differs"})
		return
	case b64.EncodeToString(sum[:]) != g.challenge:
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant", "error_description": "PKCE verifier does not match"})
		return
	}
	now := time.Now()
	claims := map[string]any{
		"iss": iss.URL, "sub": g.subject, "aud": g.clientID, "nonce": g.nonce,
		"email": g.email, "email_verified": true, "iat": now.Unix(), "exp": now.Add(time.Hour).Unix(),
	}
	iss.mu.Lock()
	if iss.tamper != nil {
		iss.tamper(claims)
	}
	iss.mu.Unlock()
	idToken, err := iss.sign(claims)
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, map[string]string{"error": "server_error"})
		return
	}
	iss.mu.Lock()
	iss.exchanges++
	iss.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"access_token": b64.EncodeToString(randomBytes(16)), "token_type": "Bearer",
		"expires_in": 3600, "id_token": idToken})
}

// sign makes an RS256 JWT of claims.
func (iss *Issuer) sign(claims map[string]any) (string, error) {
	header, _ := json.Marshal(map[string]string{"alg": "RS256", "typ": "JWT", "kid": keyID})
	payload, err := json.Marshal(claims)
	if err != nil {
		return "", err
	}
	signed := b64.EncodeToString(header) + "." + b64.EncodeToString(payload)
	digest := sha256.Sum256([]byte(signed))
	sig, err := rsa.SignPKCS1v15(rand.Reader, iss.key, crypto.SHA256, digest[:])
	if err != nil {
		return "", fmt.Errorf("signing: %w", err)
	}
	return signed + "." + b64.EncodeToString(sig), nil
}
