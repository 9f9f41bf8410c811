package session

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tbhub/tbhub/services/serverkit/lifecycle"
)

// signInMux is a mux with the session routes, signing in with fakeAuth.
func signInMux(t *testing.T) *http.ServeMux {
	t.Helper()
	h, err := New(Config{Auth: fakeAuth{}})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	h.Mount(mux)
	return mux
}

// A sign-in whose body does not arrive within the server's body timeout
// is answered 408, as every other route's (docs/operations.md), not 400
// as if its JSON were wrong (issue 20 #11).
func TestSignInBodyTimeoutIs408(t *testing.T) {
	mux := signInMux(t)
	lis, err := lifecycle.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := lifecycle.New(time.Second, nil)
	l := lifecycle.DefaultHTTPLimits()
	l.BodyTimeout = 50 * time.Millisecond
	if err := p.LimitHTTP(l); err != nil {
		t.Fatal(err)
	}
	p.HTTP(lis, mux)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	defer func() { cancel(); <-done }()

	// The body's start arrives, the rest never does; what arrived is not
	// JSON ("x") or not all of it.
	for _, start := range []string{"x", `{"token": "go`, `{`, ``, "chunked"} {
		conn, err := net.Dial("tcp", lis.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		if start == "chunked" {
			io.WriteString(conn, "POST /api/session HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n{\"tok\r\n")
		} else {
			io.WriteString(conn, "POST /api/session HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n"+start)
		}
		// The server answers after its body timeout; this bounds the wait
		// only if it never does.
		conn.SetReadDeadline(time.Now().Add(30 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("%q: no answer: %v", start, err)
		}
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusRequestTimeout {
			t.Errorf("a sign-in body cut off after %q was answered %d %q, want 408", start, resp.StatusCode, body)
		}
	}
}

// A sign-in body over maxSignInBody is refused as too large, not parsed.
func TestSignInBodyTooLarge(t *testing.T) {
	mux := signInMux(t)
	body := `{"token": "good", "pad": "` + strings.Repeat("x", maxSignInBody) + `"}`
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "http://tbhub.test/api/session", strings.NewReader(body)))
	if rec.Code != http.StatusRequestEntityTooLarge {
		t.Errorf("a %d-byte sign-in body: %d %q, want 413", len(body), rec.Code, rec.Body)
	}
}
