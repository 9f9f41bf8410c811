package tbhubcmd

import (
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tbhub/tbhub/frontend-api/frontend"
	"github.com/tbhub/tbhub/services/internal/readservice"
	"github.com/tbhub/tbhub/services/serverkit/config"
)

// telemetryFlags are every serving binary's (package telemetry).
var telemetryFlags = []string{"gcp-project", "metrics-exporter", "trace-exporter", "trace-sample-ratio"}

// Every flag of every server binary, each set also by TBHUB_ and its name
// in upper case (package config). A flag added, renamed or removed shows
// here, and in docs/operations.md, which must name each variable.
func TestEveryFlagAndItsVariable(t *testing.T) {
	httpLimitFlags := []string{"http-body-timeout", "http-header-timeout", "http-idle-timeout", "max-conns-per-ip"}
	blobStreamFlags := []string{"abandoned-blob-age", "blob-stream-idle-timeout", "blob-stream-timeout", "max-blob-streams-per-conn", "max-blob-streams-per-user", "max-metadata-bytes"}
	binaries := []struct {
		name  string
		flags func(fs *flag.FlagSet)
		want  []string
	}{
		{"tbhub serve", func(fs *flag.FlagSet) { newServeFlags(fs, serveCommand) }, slices.Concat([]string{
			"addr", "api-endpoint", "blobs", "data", "enable-test-rpcs", "grpc-addr",
			"max-blob-bytes", "max-blob-bytes-per-user", "max-experiments-per-user", "max-points-per-user",
			"oidc-client-ids", "oidc-device-client-id", "oidc-device-client-secret", "oidc-issuer",
			"oidc-web-client-id", "oidc-web-client-secret", "public-origin", "requests-per-second", "samples_per_plugin", "store",
		}, telemetryFlags, httpLimitFlags, blobStreamFlags)},
		{"write-service", func(fs *flag.FlagSet) { newServeFlags(fs, writeServiceCommand) }, slices.Concat([]string{
			"addr", "api-endpoint", "blobs", "data", "enable-test-rpcs", "grpc-addr",
			"max-blob-bytes", "max-blob-bytes-per-user", "max-experiments-per-user", "max-points-per-user",
			"oidc-client-ids", "oidc-device-client-id", "oidc-device-client-secret", "oidc-issuer",
			"oidc-web-client-id", "oidc-web-client-secret", "public-origin", "requests-per-second", "store",
		}, telemetryFlags, httpLimitFlags, blobStreamFlags)},
		{"tbhub token create", func(fs *flag.FlagSet) { storageFlags(fs); tokenFlags(fs) }, []string{"blobs", "data", "name", "store", "user"}},
		{"tbhub migrate", func(fs *flag.FlagSet) { storageFlags(fs) }, []string{"blobs", "data", "store"}},
		{"read-service", func(fs *flag.FlagSet) { readservice.NewFlags(fs) }, slices.Concat([]string{
			"addr", "blob-key-secret", "blobs", "data", "metrics-addr", "oidc-client-ids", "oidc-issuer",
			"port", "public-origin", "store",
		}, telemetryFlags)},
		{"frontend", func(fs *flag.FlagSet) { new(frontend.Config).RegisterFlags(fs) }, slices.Concat([]string{
			"addr", "experiment-service", "grpc-insecure", "oidc-issuer", "oidc-web-client-id",
			"oidc-web-client-secret", "port", "public-origin", "read-service", "samples_per_plugin",
		}, telemetryFlags, httpLimitFlags)},
	}
	doc, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range binaries {
		fs := flag.NewFlagSet(b.name, flag.ContinueOnError)
		b.flags(fs)
		var got []string
		for _, nv := range config.Names(fs) {
			got = append(got, nv[0])
			want := "TBHUB_" + strings.ToUpper(strings.ReplaceAll(nv[0], "-", "_"))
			if nv[1] != want {
				t.Errorf("%s --%s: variable %s, want %s", b.name, nv[0], nv[1], want)
			}
			if nv[0] != "port" && !strings.Contains(string(doc), "`"+nv[1]+"`") {
				t.Errorf("%s --%s: docs/operations.md does not name `%s`", b.name, nv[0], nv[1])
			}
		}
		want := slices.Sorted(slices.Values(b.want))
		if !slices.Equal(got, want) {
			t.Errorf("%s flags:\n got %q\nwant %q", b.name, got, want)
		}
	}
}
