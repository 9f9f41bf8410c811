package cli

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// tbup upload DIR takes the logdir as its argument, before or after the
// flags, as --logdir does; both given and different is a clear error, not
// a guess. The logdir here holds no event files, so an upload that took it
// stops with "no event files in DIR" before reaching for the server.
func TestUploadLogdirAsArgument(t *testing.T) {
	dir := t.TempDir()
	other := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("no events"), 0o644); err != nil {
		t.Fatal(err)
	}
	server := []string{"--server", "http://127.0.0.1:1", "--token", "T"}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"argument first", append([]string{dir, "--one-shot"}, server...), "no event files"},
		{"argument last", append(append([]string{"--one-shot"}, server...), dir), "no event files"},
		{"argument and the same --logdir", append([]string{"--one-shot", "--logdir", dir + "/", dir}, server...), "no event files"},
		{"--logdir alone", append([]string{"--one-shot", "--logdir", dir}, server...), "no event files"},
		{"argument and another --logdir", append([]string{"--one-shot", "--logdir", other, dir}, server...), "two logdirs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			env := Env{Stdout: &out, Stderr: &errOut, Getenv: func(string) string { return "" }}
			err := Run(context.Background(), env, append([]string{"upload"}, tc.args...))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("tbup upload %s: %v; want it to say %q\nstderr:\n%s", strings.Join(tc.args, " "), err, tc.want, errOut.String())
			}
			if errors.Is(err, ErrUsage) || strings.Contains(errOut.String(), "Usage:") {
				t.Errorf("printed the usage:\n%s", errOut.String())
			}
		})
	}
	// Two arguments are one too many, and said so.
	var errOut bytes.Buffer
	env := Env{Stdout: &bytes.Buffer{}, Stderr: &errOut, Getenv: func(string) string { return "" }}
	err := Run(context.Background(), env, []string{"upload", dir, other})
	if !errors.Is(err, ErrUsage) || !strings.Contains(errOut.String(), "unexpected arguments: "+other) {
		t.Errorf("tbup upload DIR DIR: %v\n%s", err, errOut.String())
	}
}
