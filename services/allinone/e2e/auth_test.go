package e2e_test

import (
	"bytes"
	"strings"
	"testing"
)

// tbup auth display-name shows the name others see (the handle until one is
// chosen), chooses one with --set, says why the server refuses one and
// leaves the chosen name as it was; tbup auth whoami shows it too.
func TestAuthDisplayName(t *testing.T) {
	s := startEmbedded(t, t.TempDir(), "127.0.0.1:0")
	c := newTbup(t, s)
	if out := c.run("auth", "display-name"); !strings.Contains(out, `Others see you as "user-`) {
		t.Errorf("tbup auth display-name before choosing one: %q, want the handle", out)
	}
	if out := c.run("auth", "display-name", "--set", "Grace H."); !strings.Contains(out, `Others now see you as "Grace H."`) {
		t.Errorf("tbup auth display-name --set: %q", out)
	}
	var out, errOut bytes.Buffer
	cmd := c.cmd(t.Context(), "auth", "display-name", "--set", "<b>Grace</b>")
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err == nil || !strings.Contains(errOut.String(), "rejected by the server: display name may hold letters") {
		t.Errorf("tbup auth display-name --set with markup: %v, stderr %q; want the server's reason", err, errOut.String())
	}
	if out := c.run("auth", "whoami"); !strings.Contains(out, `others see you as "Grace H."`) {
		t.Errorf("tbup auth whoami after a refused change: %q, want the name chosen before", out)
	}
}
