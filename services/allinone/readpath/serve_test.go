package readpath_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tbhub/tbhub/services/allinone/readpath"
	"github.com/tbhub/tbhub/services/internal/assembly/tbhubcmd"
	"github.com/tbhub/tbhub/services/internal/assembly/tbhubcmd/tbhubcmdtest"
)

// httpFrom is an HTTP client whose connections come from the loopback
// address ip: a client address of its own.
func httpFrom(ip string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 10 * time.Second}
	return &http.Client{Transport: &http.Transport{DialContext: d.DialContext}}
}

// get asks for the experiments list with the token and returns the status
// and Retry-After.
func get(t *testing.T, c *http.Client, origin, token string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, origin+"/api/experiments", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("Retry-After")
}

// tbhub serve's HTTP API calls its gRPC server over loopback, naming the
// HTTP client, so invalid credentials are throttled per HTTP client
// (issue 14 #9): one address's bad tokens get 429 with Retry-After after
// the burst, while another address's are still checked (401) and a
// verified token keeps working from the throttled address.
func TestServeThrottlesBadCredentialsPerHTTPClient(t *testing.T) {
	args := []string{"serve", "--data", filepath.Join(t.TempDir(), "data"), "--addr", "127.0.0.1:0",
		"--bad-credentials-per-second", "0.001", "--bad-credentials-burst", "5"}
	origin, token := tbhubcmdtest.StartServe(t, func(ctx context.Context, stderr io.Writer) error {
		return tbhubcmd.Run(ctx, args, os.LookupEnv, io.Discard, stderr, readpath.NewServe())
	})
	attacker, other := httpFrom("127.0.0.2"), httpFrom("127.0.0.3")
	if code, _ := get(t, attacker, origin, token); code != http.StatusOK {
		t.Fatalf("valid token: %d", code)
	}
	for i := range 5 {
		if code, _ := get(t, attacker, origin, fmt.Sprint("tbh_bad", i)); code != http.StatusUnauthorized {
			t.Fatalf("bad token %d within the burst: %d, want 401", i, code)
		}
	}
	if code, retry := get(t, attacker, origin, "tbh_bad5"); code != http.StatusTooManyRequests || retry == "" {
		t.Errorf("bad token past the burst: %d (Retry-After %q), want 429 with Retry-After", code, retry)
	}
	if code, _ := get(t, attacker, origin, token); code != http.StatusOK {
		t.Errorf("verified token from the throttled address: %d, want 200", code)
	}
	if code, _ := get(t, other, origin, "tbh_other"); code != http.StatusUnauthorized {
		t.Errorf("bad token from another address: %d, want 401", code)
	}
}
