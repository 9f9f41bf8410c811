package tbhubcmd

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tbhub/tbhub/services/internal/policy/auth"
	"github.com/tbhub/tbhub/services/internal/run/backend"
	"github.com/tbhub/tbhub/services/serverkit/config"
)

func TestTokenCreateAndMigrate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	ctx := context.Background()
	var out, errOut bytes.Buffer
	if err := Run(ctx, []string{"migrate", "--data", dir}, os.LookupEnv, &out, &errOut, nil); err != nil {
		t.Fatalf("migrate: %v (%s)", err, errOut.String())
	}
	if err := Run(ctx, []string{"migrate", "--data", dir}, os.LookupEnv, &out, &errOut, nil); err != nil {
		t.Fatalf("second migrate: %v", err)
	}
	var tokens []string
	for range 2 {
		out.Reset()
		if err := Run(ctx, []string{"token", "create", "--user", "ada", "--data", dir}, os.LookupEnv, &out, &errOut, nil); err != nil {
			t.Fatalf("token create: %v (%s)", err, errOut.String())
		}
		tokens = append(tokens, strings.TrimSpace(out.String()))
	}
	if tokens[0] == tokens[1] || !strings.HasPrefix(tokens[0], auth.TokenPrefix) {
		t.Fatalf("tokens %q", tokens)
	}
	b, err := backend.Open(ctx, backend.Spec{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	a, err := auth.New(b.Store, auth.Config{})
	if err != nil {
		t.Fatal(err)
	}
	var users []string
	for _, tok := range tokens {
		p, err := a.Authenticate(ctx, "Bearer "+tok)
		if err != nil {
			t.Fatalf("printed token does not authenticate: %v", err)
		}
		users = append(users, p.UserID)
	}
	if users[0] != users[1] {
		t.Errorf("two tokens for --user ada belong to %v", users)
	}
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		nil, {"frobnicate"}, {"token"}, {"token", "create"}, {"serve", "--nope"}, {"serve", "extra"}, {"serve", "--samples_per_plugin", "scalars=-1"},
	} {
		var out, errOut bytes.Buffer
		if err := Run(context.Background(), args, os.LookupEnv, &out, &errOut, nil); !errors.Is(err, ErrUsage) {
			t.Errorf("Run(%q) = %v, want ErrUsage", args, err)
		}
	}
	for _, spec := range []backend.Spec{
		{DataDir: "d", Store: "spanner://projects/p/instances/i/databases/d", Blobs: "gs://b"},
		{Store: "spanner://projects/p/instances/i/databases/d"},
		{Blobs: "gs://b"},
	} {
		if err := spec.Validate(); err == nil {
			t.Errorf("Validate(%+v) accepted", spec)
		}
	}
	if _, err := backend.SpannerDatabase("spanner://projects/p/instances/i"); err == nil {
		t.Error("short spanner URL accepted")
	}
}

// The write service alone: configured from the environment, no read path,
// no first-start user.
func TestWriteServiceFromEnvironment(t *testing.T) {
	t.Setenv("TBHUB_DATA", filepath.Join(t.TempDir(), "data"))
	t.Setenv("TBHUB_PUBLIC_ORIGIN", "https://tbhub.example")
	t.Setenv("PORT", "0")
	text, stop := startServing(t, func(ctx context.Context, stderr io.Writer) error {
		return RunWriteService(ctx, []string{"--addr", "127.0.0.1:0"}, os.LookupEnv, io.Discard, stderr)
	})
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text, "experiment links:   https://tbhub.example/experiment/<id>/") {
		t.Errorf("TBHUB_PUBLIC_ORIGIN not applied:\n%s", text)
	}
	if !strings.Contains(text, "POST /api/uploader on this service (listening on 127.0.0.1:") {
		t.Errorf("the handshake is not named on the write service's own address:\n%s", text)
	}
	if strings.Contains(text, "read,") || strings.Contains(text, "/data/") {
		t.Errorf("write-service announces the read path:\n%s", text)
	}
	if strings.Contains(text, auth.TokenPrefix) {
		t.Errorf("write-service printed a first-start token:\n%s", text)
	}
	if err := RunWriteService(context.Background(), []string{"--nope"}, os.LookupEnv, io.Discard, io.Discard); !errors.Is(err, ErrUsage) {
		t.Errorf("bad flag: %v", err)
	}
	t.Setenv("TBHUB_MAX_BLOB_BYTES", "lots")
	if err := RunWriteService(context.Background(), nil, os.LookupEnv, io.Discard, io.Discard); err == nil || !strings.Contains(err.Error(), "TBHUB_MAX_BLOB_BYTES") {
		t.Errorf("bad environment value: %v", err)
	}
}

// startServing runs a serving command until its banner is printed and
// returns the banner and a function that stops the command and returns
// its error.
func startServing(t *testing.T, run func(ctx context.Context, stderr io.Writer) error) (banner string, stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, pw)
		pw.Close()
	}()
	sc := bufio.NewScanner(pr)
	var lines []string
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if strings.Contains(sc.Text(), "sign-in:") {
			break
		}
	}
	go io.Copy(io.Discard, pr)
	stopped := false
	stop = func() error {
		if stopped {
			return nil
		}
		stopped = true
		cancel()
		return <-done
	}
	t.Cleanup(func() { stop() })
	return strings.Join(lines, "\n"), stop
}

// A second tbhub serve on a data folder already served is refused, with
// a message naming the folder, while token create still works on it
// (issue 20 #9).
func TestSecondServeOnOneFolderRefused(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	serveArgs := []string{"serve", "--data", dir, "--addr", "127.0.0.1:0"}
	banner, stop := startServing(t, func(ctx context.Context, stderr io.Writer) error {
		return Run(ctx, serveArgs, os.LookupEnv, io.Discard, stderr, nil)
	})
	if !strings.Contains(banner, "tbhub is serving") {
		t.Fatalf("the first server did not start:\n%s", banner)
	}
	// Refused, it ends before printing a banner; started, it is stopped.
	second, stopSecond := startServing(t, func(ctx context.Context, stderr io.Writer) error {
		return Run(ctx, serveArgs, os.LookupEnv, io.Discard, stderr, nil)
	})
	err := stopSecond()
	if strings.Contains(second, "tbhub is serving") || err == nil || !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), "in use") {
		t.Errorf("second tbhub serve on %s: %v, want a refusal naming the folder; it printed:\n%s", dir, err, second)
	}
	if err := Run(context.Background(), []string{"token", "create", "--user", "ada", "--data", dir}, os.LookupEnv, io.Discard, io.Discard, nil); err != nil {
		t.Errorf("token create while serving: %v", err)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

// Every command answers -h and --help (anywhere among its flags, or as
// tbhub help CMD) with its usage, once, on stdout, and success, without
// running (tbhub serve would otherwise start serving). A bad environment
// value does not stand in the way of help.
func TestHelpOfEveryCommand(t *testing.T) {
	type helpCase struct {
		args []string
		want string
	}
	var cases []helpCase
	for _, h := range []string{"-h", "-help", "--help"} {
		cases = append(cases,
			helpCase{[]string{h}, "Commands:"},
			helpCase{[]string{"token", h}, "Usage: tbhub token create --user NAME"})
		for _, cmd := range [][]string{{"serve"}, {"token", "create"}, {"migrate"}} {
			want := "Usage: tbhub " + strings.Join(cmd, " ") + " "
			cases = append(cases,
				helpCase{append(cmd[:len(cmd):len(cmd)], h), want},
				helpCase{append(cmd[:len(cmd):len(cmd)], "--data", t.TempDir(), h), want})
		}
	}
	cases = append(cases,
		helpCase{[]string{"help"}, "Commands:"},
		helpCase{[]string{"help", "serve"}, "Usage: tbhub serve [flags]"},
		helpCase{[]string{"help", "migrate"}, "Usage: tbhub migrate [flags]"},
		helpCase{[]string{"help", "token", "create"}, "Usage: tbhub token create --user NAME [flags]"},
		helpCase{[]string{"help", "token"}, "Usage: tbhub token create --user NAME"})
	env := config.MapEnv(map[string]string{"TBHUB_MAX_BLOB_BYTES": "lots"})
	for _, tc := range cases {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var out, errOut bytes.Buffer
			if err := Run(context.Background(), tc.args, env, &out, &errOut, nil); err != nil {
				t.Fatalf("Run(%q) = %v, want nil\n%s", tc.args, err, errOut.String())
			}
			if errOut.Len() > 0 {
				t.Errorf("stderr = %q, want nothing", errOut.String())
			}
			if !strings.Contains(out.String(), tc.want) {
				t.Errorf("stdout lacks %q:\n%s", tc.want, out.String())
			}
			if n := strings.Count(out.String(), "Usage"); n != 1 {
				t.Errorf("usage printed %d times:\n%s", n, out.String())
			}
		})
	}
	for _, h := range []string{"-h", "-help", "--help"} {
		var out, errOut bytes.Buffer
		if err := RunWriteService(context.Background(), []string{h}, env, &out, &errOut); err != nil {
			t.Errorf("write-service %s = %v, want nil", h, err)
		}
		if errOut.Len() > 0 {
			t.Errorf("write-service %s: stderr = %q, want nothing", h, errOut.String())
		}
		if !strings.HasPrefix(out.String(), "Usage: write-service [flags]") || !strings.Contains(out.String(), "-max-blob-bytes") {
			t.Errorf("write-service %s printed:\n%s", h, out.String())
		}
	}
}
