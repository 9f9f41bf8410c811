// Package tbhubcmdtest runs `tbhub serve` in a test and checks a
// binary's flags, for the tests of tbhubcmd and of the binaries above
// services that hand it a read path (services/allinone).
package tbhubcmdtest

import (
	"bufio"
	"context"
	"flag"
	"github.com/tbhub/tbhub/services/internal/testenv/corpus"
	"github.com/tbhub/tbhub/services/serverkit/config"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// Flags every serving binary has: telemetry's, and the HTTP server's
// limits (package lifecycle).
var (
	TelemetryFlags = []string{"gcp-project", "metrics-exporter", "trace-exporter", "trace-sample-ratio"}
	HTTPLimitFlags = []string{"http-body-timeout", "http-header-timeout", "http-idle-timeout", "max-conns-per-ip"}
)

// CheckFlags checks that fs defines exactly the flags named in want, each
// also set by TBHUB_ and its name in upper case (package config), and
// that docs/operations.md names each variable.
func CheckFlags(t *testing.T, fs *flag.FlagSet, want []string) {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join(corpus.RepoRoot(t), "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, nv := range config.Names(fs) {
		got = append(got, nv[0])
		variable := "TBHUB_" + strings.ToUpper(strings.ReplaceAll(nv[0], "-", "_"))
		if nv[1] != variable {
			t.Errorf("%s --%s: variable %s, want %s", fs.Name(), nv[0], nv[1], variable)
		}
		if nv[0] != "port" && !strings.Contains(string(doc), "`"+nv[1]+"`") {
			t.Errorf("%s --%s: docs/operations.md does not name `%s`", fs.Name(), nv[0], nv[1])
		}
	}
	if want := slices.Sorted(slices.Values(want)); !slices.Equal(got, want) {
		t.Errorf("%s flags:\n got %q\nwant %q", fs.Name(), got, want)
	}
}

var (
	originLine = regexp.MustCompile(`uploader handshake: (http://\S+)/api/uploader`)
	tokenLine  = regexp.MustCompile(`^\s+(tbh_\S+)$`)
)

// StartServe runs serve, a `tbhub serve` (tbhubcmd.Run) writing its
// banner to stderr, until the test ends and returns its origin and first
// start token.
func StartServe(t *testing.T, serve func(ctx context.Context, stderr io.Writer) error) (origin, token string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- serve(ctx, pw)
		pw.Close()
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return readBanner(t, pr)
}

// readBanner reads serve's stderr until it has the origin and the first
// start token, then keeps draining it in the background.
func readBanner(t *testing.T, r io.Reader) (origin, token string) {
	t.Helper()
	sc := bufio.NewScanner(r)
	for sc.Scan() && (origin == "" || token == "") {
		if m := originLine.FindStringSubmatch(sc.Text()); m != nil {
			origin = m[1]
		}
		if m := tokenLine.FindStringSubmatch(sc.Text()); m != nil {
			token = m[1]
		}
	}
	if origin == "" || token == "" {
		t.Fatalf("serve's banner had no origin or token (%v)", sc.Err())
	}
	go io.Copy(io.Discard, r)
	return origin, token
}
