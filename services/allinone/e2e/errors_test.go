package e2e_test

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// TestErrorsPeopleUnderstand: the failures users meet first end with a non-zero exit
// and a sentence that says what to do.
func TestErrorsPeopleUnderstand(t *testing.T) {
	s := startEmbedded(t, t.TempDir(), "127.0.0.1:0")
	logdir := filepath.Join(corpusDir(t), "generated", "scalars")
	cases := []struct {
		name string
		mod  func(c *tbup)
		args []string
		want string
	}{
		{"bad token", func(c *tbup) { c.token = "tbh_not-a-real-token" }, []string{"upload", "--one-shot", "--logdir", logdir}, "token is invalid or revoked"},
		{"missing logdir", nil, []string{"upload", "--one-shot", "--logdir", "/no/such/logdir"}, "logdir not found"},
		{"wrong server", func(c *tbup) { c.url = "http://127.0.0.1:1" }, []string{"upload", "--one-shot", "--logdir", logdir}, "tbup: cannot reach the server at http://127.0.0.1:1 ("},
		{"not a tbhub server", func(c *tbup) { c.url = s.url + "/nothing-here" }, []string{"list"}, "is it a tbhub server?"},
		{"unknown experiment", nil, []string{"upload", "--one-shot", "--logdir", logdir, "--experiment", "AAAAAAAAAAAAAAAAAAAAAA"}, "not found"},
		{"bad visibility", nil, []string{"upload", "--logdir", logdir, "--visibility", "everyone"}, "--visibility must be private, unlisted or public"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newTbup(t, s)
			if tc.mod != nil {
				tc.mod(c)
			}
			var stderr bytes.Buffer
			cmd := c.cmd(context.Background(), tc.args...)
			cmd.Stderr = &stderr
			err := cmd.Run()
			if err == nil {
				t.Fatalf("tbup %s succeeded", strings.Join(tc.args, " "))
			}
			if !strings.Contains(stderr.String(), tc.want) {
				t.Errorf("stderr %q does not say %q", stderr.String(), tc.want)
			}
			// A refusal by the server names the trace its logs carry.
			if server := tc.name == "unknown experiment" || tc.name == "bad token"; server != strings.Contains(stderr.String(), "carry trace id ") {
				t.Errorf("stderr %q: trace id named %v, want %v", stderr.String(), !server, server)
			}
		})
	}
}
