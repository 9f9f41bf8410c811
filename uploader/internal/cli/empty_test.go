package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// syncBuffer is a bytes.Buffer safe for a command writing while a test reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// A one-shot upload of a folder without event files says so and creates
// nothing: it fails before reaching for the server (which here does not
// exist, so trying would have failed differently).
func TestUploadOneShotOfEmptyLogdirCreatesNothing(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("not an event file"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	env := Env{Stdout: &out, Stderr: &errOut, Getenv: func(string) string { return "" }}
	err := Run(context.Background(), env, []string{"upload", "--one-shot", "--logdir", dir, "--server", "http://127.0.0.1:1", "--token", "T"})
	if err == nil || !strings.Contains(err.Error(), "no event files") || !strings.Contains(err.Error(), "no experiment created") {
		t.Fatalf("upload of an empty logdir: %v; want it refused for having no event files", err)
	}
	// --allow-empty goes on to the server.
	err = Run(context.Background(), env, []string{"upload", "--one-shot", "--allow-empty", "--logdir", dir, "--server", "http://127.0.0.1:1", "--token", "T"})
	if err == nil || !strings.Contains(err.Error(), "cannot reach the server") {
		t.Fatalf("upload --allow-empty: %v; want it to try the server", err)
	}
}

// A watching upload of a folder without event files waits for the first
// before creating anything, and goes on once one appears.
func TestUploadWatchWaitsForFirstEventFile(t *testing.T) {
	dir := t.TempDir()
	var out, errOut syncBuffer
	env := Env{Stdout: &out, Stderr: &errOut, Getenv: func(string) string { return "" }}
	done := make(chan error, 1)
	go func() {
		done <- Run(context.Background(), env, []string{"upload", "--poll", "10ms", "--logdir", dir, "--server", "http://127.0.0.1:1", "--token", "T"})
	}()
	for !strings.Contains(errOut.String(), "waiting for the first") {
		select {
		case err := <-done:
			t.Fatalf("upload ended before any event file: %v\n%s", err, errOut.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "events.out.tfevents.1.host"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err == nil || !strings.Contains(err.Error(), "cannot reach the server") {
		t.Fatalf("after the first event file: %v; want it to go on to the server", err)
	}
}
