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

	"github.com/tbhub/tbhub/services/internal/auth"
	"github.com/tbhub/tbhub/services/internal/backend"
)

func TestTokenCreateAndMigrate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	ctx := context.Background()
	var out, errOut bytes.Buffer
	if err := Run(ctx, []string{"migrate", "--data", dir}, os.LookupEnv, &out, &errOut); err != nil {
		t.Fatalf("migrate: %v (%s)", err, errOut.String())
	}
	if err := Run(ctx, []string{"migrate", "--data", dir}, os.LookupEnv, &out, &errOut); err != nil {
		t.Fatalf("second migrate: %v", err)
	}
	var tokens []string
	for range 2 {
		out.Reset()
		if err := Run(ctx, []string{"token", "create", "--user", "ada", "--data", dir}, os.LookupEnv, &out, &errOut); err != nil {
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
		if err := Run(context.Background(), args, os.LookupEnv, &out, &errOut); !errors.Is(err, ErrUsage) {
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
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- RunWriteService(ctx, []string{"--addr", "127.0.0.1:0"}, os.LookupEnv, pw)
		pw.Close()
	}()
	sc := bufio.NewScanner(pr)
	var banner []string
	for sc.Scan() {
		banner = append(banner, sc.Text())
		if strings.Contains(sc.Text(), "sign-in:") {
			break
		}
	}
	go io.Copy(io.Discard, pr)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	text := strings.Join(banner, "\n")
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
	if err := RunWriteService(context.Background(), []string{"--nope"}, os.LookupEnv, io.Discard); !errors.Is(err, ErrUsage) {
		t.Errorf("bad flag: %v", err)
	}
	t.Setenv("TBHUB_MAX_BLOB_BYTES", "lots")
	if err := RunWriteService(context.Background(), nil, os.LookupEnv, io.Discard); err == nil || !strings.Contains(err.Error(), "TBHUB_MAX_BLOB_BYTES") {
		t.Errorf("bad environment value: %v", err)
	}
}

// Every command answers -h and --help with its usage, once, and success,
// without running (tbhub serve would otherwise start serving).
func TestHelpOfEveryCommand(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-h"}, "Commands:"},
		{[]string{"--help"}, "Commands:"},
		{[]string{"help"}, "Commands:"},
		{[]string{"serve", "-h"}, "Usage: tbhub serve [flags]"},
		{[]string{"serve", "--help"}, "Usage: tbhub serve [flags]"},
		{[]string{"serve", "--addr", "127.0.0.1:0", "--help"}, "Usage: tbhub serve [flags]"},
		{[]string{"token", "-h"}, "Usage: tbhub token create --user NAME"},
		{[]string{"token", "create", "-h"}, "Usage: tbhub token create --user NAME [flags]"},
		{[]string{"token", "create", "--help"}, "Usage: tbhub token create --user NAME [flags]"},
		{[]string{"migrate", "-h"}, "Usage: tbhub migrate [flags]"},
		{[]string{"migrate", "--help"}, "Usage: tbhub migrate [flags]"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var out, errOut bytes.Buffer
			if err := Run(context.Background(), tc.args, func(string) (string, bool) { return "", false }, &out, &errOut); err != nil {
				t.Fatalf("Run(%q) = %v, want nil\n%s", tc.args, err, errOut.String())
			}
			all := out.String() + errOut.String()
			if !strings.Contains(all, tc.want) {
				t.Errorf("output lacks %q:\n%s", tc.want, all)
			}
			if n := strings.Count(all, "Usage"); n != 1 {
				t.Errorf("usage printed %d times:\n%s", n, all)
			}
		})
	}
	var errOut bytes.Buffer
	if err := RunWriteService(context.Background(), []string{"--help"}, func(string) (string, bool) { return "", false }, &errOut); err != nil {
		t.Errorf("write-service --help = %v, want nil", err)
	}
	if !strings.Contains(errOut.String(), "Usage: write-service [flags]") {
		t.Errorf("write-service --help printed:\n%s", errOut.String())
	}
}
