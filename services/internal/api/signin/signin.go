// Package signin tells clients how to sign in to this server with its OpenID
// Connect issuer: GET /api/auth/config answers the issuer and the OAuth client that
// `tbup auth login` runs the device authorization flow with. The ID tokens it gets
// are the ones the server's authenticator accepts (the client ID is an accepted
// audience). Installed-app client secrets are not secret, which is why the secret,
// where the issuer needs one, may be published here.
package signin

import (
	"encoding/json"
	"net/http"
)

// Config is what is published.
type Config struct {
	Issuer       string   `json:"issuer"`
	ClientID     string   `json:"client_id"`
	ClientSecret string   `json:"client_secret,omitempty"`
	Scopes       []string `json:"scopes,omitempty"`
}

// Path is where the settings are served.
const Path = "/api/auth/config"

// Handler serves c; with no issuer or client it answers 404, which clients read as
// "API tokens only".
func Handler(c Config) http.Handler {
	if len(c.Scopes) == 0 {
		c.Scopes = []string{"openid", "email"}
	}
	body, _ := json.Marshal(c)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "public, max-age=300")
		if c.Issuer == "" || c.ClientID == "" {
			w.WriteHeader(http.StatusNotFound)
			w.Write([]byte(`{"error":"this server accepts API tokens only"}` + "\n"))
			return
		}
		w.Write(body)
	})
}
