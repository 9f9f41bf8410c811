package session

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	authv1 "github.com/tbhub/tbhub/schemas/gen/go/tbhub/auth/v1"
)

// fakeAuth accepts the bearer "Bearer good" and mints "tbh_minted". (The
// whole flow against the real write service: services/allinone/readpath.)
type fakeAuth struct {
	authv1.AuthServiceClient
}

func bearerOf(ctx context.Context) string {
	md, _ := metadata.FromOutgoingContext(ctx)
	if v := md.Get("authorization"); len(v) > 0 {
		return v[0]
	}
	return ""
}

func (fakeAuth) WhoAmI(ctx context.Context, _ *authv1.WhoAmIRequest, _ ...grpc.CallOption) (*authv1.WhoAmIResponse, error) {
	// An ID token (a JWT) from the OIDC flow is the write service's to check.
	if b := bearerOf(ctx); b != "Bearer good" && b != "Bearer tbh_minted" && !strings.HasPrefix(b, "Bearer eyJ") {
		return nil, status.Error(codes.Unauthenticated, "unknown token")
	}
	return &authv1.WhoAmIResponse{UserId: "u1", UserName: "ada", Scopes: []authv1.Scope{authv1.Scope_SCOPE_READ}}, nil
}

func (fakeAuth) CreateToken(ctx context.Context, req *authv1.CreateTokenRequest, _ ...grpc.CallOption) (*authv1.CreateTokenResponse, error) {
	if req.GetName() != TokenName || req.GetExpireTime() == nil || len(req.GetScopes()) != 1 {
		return nil, status.Error(codes.InvalidArgument, "unexpected request")
	}
	return &authv1.CreateTokenResponse{Secret: "tbh_minted"}, nil
}

func signIn(t *testing.T, h *Handler, header ...string) *http.Cookie {
	t.Helper()
	mux := http.NewServeMux()
	h.Mount(mux)
	req := httptest.NewRequest(http.MethodPost, "http://tbhub.test/api/session", strings.NewReader(`{"token":"good"}`))
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Fatalf("sign-in: %d %s", rec.Code, rec.Body)
	}
	for _, c := range rec.Result().Cookies() {
		if c.Name == CookieName {
			return c
		}
	}
	t.Fatal("no session cookie")
	return nil
}

func TestCookieIsSecureOverHTTPS(t *testing.T) {
	for _, tc := range []struct {
		name   string
		origin string
		header []string
		secure bool
	}{
		{"http", "", nil, false},
		{"behind a TLS proxy", "", []string{"X-Forwarded-Proto", "https"}, true},
		{"https public origin", "https://tbhub.example", nil, true},
		{"http public origin wins over the header", "http://localhost:6006", []string{"X-Forwarded-Proto", "https"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, err := New(Config{Auth: fakeAuth{}, PublicOrigin: tc.origin})
			if err != nil {
				t.Fatal(err)
			}
			c := signIn(t, h, tc.header...)
			if c.Secure != tc.secure || !c.HttpOnly || c.SameSite != http.SameSiteLaxMode || c.Value != "tbh_minted" || c.Path != "/" {
				t.Errorf("cookie %+v, want Secure=%v, HttpOnly, SameSite=Lax, the minted token, path /", c, tc.secure)
			}
		})
	}
}

func TestCredentials(t *testing.T) {
	h, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, method string
		header       []string
		cookie       bool
		want         string
		refused      bool
	}{
		{"anonymous", "GET", nil, false, "", false},
		{"header", "GET", []string{"Authorization", "Bearer tbh_x"}, true, "Bearer tbh_x", false},
		{"cookie read", "GET", nil, true, "Bearer tbh_c", false},
		{"cookie read from another site", "GET", []string{"Sec-Fetch-Site", "cross-site"}, true, "Bearer tbh_c", false},
		{"cookie change, same origin", "POST", []string{"Origin", "http://tbhub.test"}, true, "Bearer tbh_c", false},
		{"cookie change, fetch metadata", "DELETE", []string{"Sec-Fetch-Site", "same-origin"}, true, "Bearer tbh_c", false},
		{"cookie change from another origin", "PATCH", []string{"Origin", "https://evil.example"}, true, "", true},
		{"cookie change, cross-site", "POST", []string{"Sec-Fetch-Site", "same-site"}, true, "", true},
		{"header change from another origin", "POST", []string{"Authorization", "Bearer tbh_x", "Origin", "https://evil.example"}, true, "Bearer tbh_x", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(tc.method, "http://tbhub.test/api/experiments/e", nil)
			for i := 0; i+1 < len(tc.header); i += 2 {
				r.Header.Set(tc.header[i], tc.header[i+1])
			}
			if tc.cookie {
				r.AddCookie(&http.Cookie{Name: CookieName, Value: "tbh_c"})
			}
			got, err := h.Credentials(r)
			if got != tc.want || (err != nil) != tc.refused {
				t.Errorf("Credentials = %q, %v; want %q, refused %v", got, err, tc.want, tc.refused)
			}
		})
	}
}

func TestLocalPath(t *testing.T) {
	for in, want := range map[string]string{
		"/experiment/x/?tab=hparams": "/experiment/x/?tab=hparams",
		"":                           "/",
		"https://evil.example/":      "/",
		"//evil.example/":            "/",
		"/\\evil.example":            "/",
		"relative":                   "/",
		// Browsers drop tabs and line breaks: "/\t/x" is "//x" (issue 14 #6).
		"/%09/evil.example/": "/", // what it decodes to is checked too
		"/\t/evil.example/":  "/",
		"/\n/evil.example/":  "/",
		"\t//evil.example/":  "/",
		"/\x00/evil.example": "/",
		"/ok\\..\\evil":      "/",
		"///evil.example":    "/",
		// Other known bypasses of a check of next.
		"https:evil.example":  "/",
		"http:/evil.example":  "/",
		"%2F%2Fevil.example":  "/",
		"/%2F%2Fevil.example": "/",
		// A route that redirects from its decoded path would turn these
		// into "/\\evil.example/" (issue 20 #3).
		"/experiment/..%2F%5Cevil.example%2F": "/",
		"/experiment/%5C%5Cevil.example":      "/",
		"/experiment/x%2Fy/":                  "/experiment/x%2Fy/",
		"/\r/evil.example":                    "/",
		"/\\/evil.example":                    "/",
		" //evil.example":                     "/",
		"/x@evil.example":                     "/x@evil.example",
		"//user@evil.example/":                "/",
	} {
		if got := localPath(in); got != want {
			t.Errorf("localPath(%q) = %q, want %q", in, got, want)
		}
	}
}

// failingAuth fails every WhoAmI with err.
type failingAuth struct {
	authv1.AuthServiceClient
	err error
}

func (f failingAuth) WhoAmI(context.Context, *authv1.WhoAmIRequest, ...grpc.CallOption) (*authv1.WhoAmIResponse, error) {
	return nil, f.err
}

// A service error is answered with the statuses the HTTP API uses
// (package httperr): NOT_FOUND is 404 and DEADLINE_EXCEEDED 504, as for
// every other route.
func TestServiceErrorsMapAsTheAPIs(t *testing.T) {
	for _, tc := range []struct {
		err  error
		code int
	}{
		{status.Error(codes.NotFound, "no such user"), http.StatusNotFound},
		{status.Error(codes.DeadlineExceeded, "slow"), http.StatusGatewayTimeout},
		{status.Error(codes.Unavailable, "down"), http.StatusServiceUnavailable},
		{status.Error(codes.Internal, "detail"), http.StatusInternalServerError},
	} {
		h, err := New(Config{Auth: failingAuth{err: tc.err}})
		if err != nil {
			t.Fatal(err)
		}
		mux := http.NewServeMux()
		h.Mount(mux)
		req := httptest.NewRequest(http.MethodGet, "http://tbhub.test/api/session", nil)
		req.Header.Set("Authorization", "Bearer good")
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, req)
		if rec.Code != tc.code || strings.Contains(rec.Body.String(), "detail") {
			t.Errorf("%v: %d %q, want %d", tc.err, rec.Code, rec.Body, tc.code)
		}
	}
}
