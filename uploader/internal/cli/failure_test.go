package cli

import (
	"errors"
	"strings"
	"testing"
)

// The trace id of a failure the server answered comes after the failure, as
// the last line tbup prints (it came first, before the error it belonged
// to): it is part of the error Run returns, which main prints, and nothing
// about it is printed before.
func TestTraceIDAfterTheError(t *testing.T) {
	server := (&accountServer{name: "s"}).start(t)
	_, errOut, err := tbupIn(t.TempDir(), nil, "list", "--server", server, "--token", "bad")
	if err == nil {
		t.Fatal("tbup list with a bad token succeeded")
	}
	if strings.Contains(errOut, "trace id") {
		t.Errorf("the trace id was printed before the error:\n%s", errOut)
	}
	lines := strings.Split(err.Error(), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "invalid or revoked") ||
		!strings.HasPrefix(lines[1], "tbup: the server's logs of this command carry trace id ") {
		t.Errorf("error %q: want the failure, then the trace id on a line of its own", err)
	}
	if errors.Unwrap(err) == nil {
		t.Errorf("error %q does not wrap the failure", err)
	}
}

// A refused 'tbup auth login' does not tell its user to run 'tbup auth
// login'; it says the server did not accept the token.
func TestFailedLoginDoesNotAdviseLogin(t *testing.T) {
	server := (&accountServer{name: "s"}).start(t)
	dir := t.TempDir()
	_, errOut, err := tbupIn(dir, nil, "auth", "login", "--server", server, "--token", "bad")
	if err == nil {
		t.Fatal("tbup auth login with a bad token succeeded")
	}
	if strings.Contains(err.Error()+errOut, "auth login") || !strings.Contains(err.Error(), "did not accept the token") {
		t.Errorf("tbup auth login: %q (stderr %q); want it to say the token was refused, without advising a login", err, errOut)
	}
	// Nothing was stored: a later command is not signed in.
	if _, _, err := tbupIn(dir, nil, "auth", "whoami", "--server", server); err == nil || !strings.Contains(err.Error(), "auth login") {
		t.Errorf("tbup auth whoami after a refused login: %v; want not signed in, with the advice", err)
	}
}
