package client

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"golang.org/x/oauth2"
)

// SignInConfig is how a server lets users sign in with its OpenID Connect issuer,
// published at GET /api/auth/config.
type SignInConfig struct {
	Issuer       string   `json:"issuer"`
	ClientID     string   `json:"client_id"`
	ClientSecret string   `json:"client_secret,omitempty"` // installed-app secrets are not secret
	Scopes       []string `json:"scopes,omitempty"`
}

// ErrNoSignIn means the server accepts API tokens only.
var ErrNoSignIn = errors.New("this server accepts API tokens only")

// FetchSignInConfig asks server how to sign in.
func FetchSignInConfig(ctx context.Context, hc *http.Client, server string) (*SignInConfig, error) {
	var cfg SignInConfig
	status, err := getJSON(ctx, hc, strings.TrimRight(server, "/")+"/api/auth/config", &cfg)
	if status == http.StatusNotFound || (err == nil && (cfg.Issuer == "" || cfg.ClientID == "")) {
		return nil, ErrNoSignIn
	}
	if err != nil {
		return nil, fmt.Errorf("%w: sign-in settings of %s: %v", ErrServer, server, err)
	}
	return &cfg, nil
}

func getJSON(ctx context.Context, hc *http.Client, url string, v any) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return resp.StatusCode, err
	}
	if resp.StatusCode != http.StatusOK {
		return resp.StatusCode, fmt.Errorf("%s: %s", url, resp.Status)
	}
	return resp.StatusCode, json.Unmarshal(body, v)
}

// oauthConfig discovers the issuer's device-authorization and token endpoints.
func (c *SignInConfig) oauthConfig(ctx context.Context, hc *http.Client) (*oauth2.Config, error) {
	var disc struct {
		DeviceAuthorizationEndpoint string `json:"device_authorization_endpoint"`
		TokenEndpoint               string `json:"token_endpoint"`
	}
	if _, err := getJSON(ctx, hc, strings.TrimRight(c.Issuer, "/")+"/.well-known/openid-configuration", &disc); err != nil {
		return nil, fmt.Errorf("discovering %s: %w", c.Issuer, err)
	}
	if disc.DeviceAuthorizationEndpoint == "" || disc.TokenEndpoint == "" {
		return nil, fmt.Errorf("%s does not offer the device authorization flow", c.Issuer)
	}
	scopes := c.Scopes
	if len(scopes) == 0 {
		scopes = []string{"openid", "email"}
	}
	return &oauth2.Config{
		ClientID:     c.ClientID,
		ClientSecret: c.ClientSecret,
		Scopes:       scopes,
		Endpoint:     oauth2.Endpoint{DeviceAuthURL: disc.DeviceAuthorizationEndpoint, TokenURL: disc.TokenEndpoint},
	}, nil
}

// Credential is what signing in leaves behind: an ID token (what the server checks)
// and what refreshes it.
type Credential struct {
	IDToken      string    `json:"id_token"`
	Expiry       time.Time `json:"expiry"`
	RefreshToken string    `json:"refresh_token,omitempty"`
	TokenURL     string    `json:"token_url,omitempty"`
	ClientID     string    `json:"client_id,omitempty"`
	ClientSecret string    `json:"client_secret,omitempty"`
}

// DeviceSignIn runs the OAuth 2.0 device authorization flow (RFC 8628): prompt is
// told the URL to open and the code to enter, then the flow waits for the user.
func DeviceSignIn(ctx context.Context, hc *http.Client, cfg *SignInConfig, prompt func(url, code string)) (*Credential, error) {
	ctx = context.WithValue(ctx, oauth2.HTTPClient, hc)
	oc, err := cfg.oauthConfig(ctx, hc)
	if err != nil {
		return nil, err
	}
	da, err := oc.DeviceAuth(ctx)
	if err != nil {
		return nil, fmt.Errorf("starting sign-in with %s: %w", cfg.Issuer, err)
	}
	url := da.VerificationURIComplete
	if url == "" {
		url = da.VerificationURI
	}
	prompt(url, da.UserCode)
	tok, err := oc.DeviceAccessToken(ctx, da)
	if err != nil {
		return nil, fmt.Errorf("signing in: %w", err)
	}
	return credentialFrom(tok, oc)
}

func credentialFrom(tok *oauth2.Token, oc *oauth2.Config) (*Credential, error) {
	id, _ := tok.Extra("id_token").(string)
	if id == "" {
		return nil, errors.New("the issuer returned no ID token (is the openid scope allowed?)")
	}
	exp, err := jwtExpiry(id)
	if err != nil {
		return nil, err
	}
	return &Credential{IDToken: id, Expiry: exp, RefreshToken: tok.RefreshToken,
		TokenURL: oc.Endpoint.TokenURL, ClientID: oc.ClientID, ClientSecret: oc.ClientSecret}, nil
}

// Fresh returns the credential with an ID token valid for at least a minute more,
// refreshing it if needed; changed says whether it must be saved again.
func (c *Credential) Fresh(ctx context.Context, hc *http.Client) (fresh *Credential, changed bool, err error) {
	if time.Until(c.Expiry) > time.Minute {
		return c, false, nil
	}
	if c.RefreshToken == "" {
		return nil, false, errors.New("the sign-in has expired; run 'tbup auth login' again")
	}
	ctx = context.WithValue(ctx, oauth2.HTTPClient, hc)
	oc := &oauth2.Config{ClientID: c.ClientID, ClientSecret: c.ClientSecret, Endpoint: oauth2.Endpoint{TokenURL: c.TokenURL}}
	tok, err := oc.TokenSource(ctx, &oauth2.Token{RefreshToken: c.RefreshToken, Expiry: time.Unix(1, 0)}).Token()
	if err != nil {
		return nil, false, fmt.Errorf("refreshing the sign-in (run 'tbup auth login' again if this persists): %w", err)
	}
	n, err := credentialFrom(tok, oc)
	if err != nil {
		return nil, false, err
	}
	if n.RefreshToken == "" {
		n.RefreshToken = c.RefreshToken // issuers may not rotate it
	}
	return n, true, nil
}

// jwtExpiry reads the exp claim of a JWT without verifying it (the server does).
func jwtExpiry(token string) (time.Time, error) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return time.Time{}, errors.New("the ID token is not a JWT")
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return time.Time{}, fmt.Errorf("the ID token is not a JWT: %v", err)
	}
	var claims struct {
		Exp int64 `json:"exp"`
	}
	if err := json.Unmarshal(payload, &claims); err != nil || claims.Exp == 0 {
		return time.Time{}, errors.New("the ID token has no expiry")
	}
	return time.Unix(claims.Exp, 0), nil
}
