package tbhubcmd

import (
	"flag"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/tbhub/tbhub/frontend-api/frontend"
	"github.com/tbhub/tbhub/frontend-api/httpapi"
	"github.com/tbhub/tbhub/services/internal/auth"
	"github.com/tbhub/tbhub/services/internal/reader/readertest"
	"github.com/tbhub/tbhub/services/internal/readpath"
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
	blobStreamFlags := []string{"abandoned-blob-age", "blob-stream-idle-timeout", "blob-stream-timeout", "max-blob-streams-per-conn", "max-blob-streams-per-user", "max-metadata-bytes", "max-upload-buffer-bytes", "max-pending-grants-per-user", "max-runs-per-experiment"}
	markdownFlags := []string{"markdown-cache-bytes", "markdown-max-input-bytes", "markdown-max-renders", "markdown-render-timeout"}
	graphFlags := []string{"graph-cache-bytes", "graph-max-answer-bytes", "graph-max-conversions", "graph-max-depth", "graph-max-name-bytes"}
	compareFlags := []string{"compare-max-experiments", "compare-max-parallel"}
	credentialFlags := []string{"bad-credentials-burst", "bad-credentials-per-second", "forwarding-secret", "trusted-proxy-hops"}
	diskFlags := []string{"min-free-disk-bytes", "min-free-disk-percent"}
	instanceFlags := []string{"create-request-ttl", "sweep-lease-ttl", "usage-refresh"}
	liveFlags := []string{"live-check-interval", "live-max-wait", "live-max-waits-per-client"}
	binaries := []struct {
		name  string
		flags func(fs *flag.FlagSet)
		want  []string
	}{
		{"tbhub serve", func(fs *flag.FlagSet) { newServeFlags(fs, serveCommand) }, slices.Concat([]string{
			"addr", "api-endpoint", "blobs", "data", "enable-test-rpcs", "grpc-addr",
			"max-blob-bytes", "max-blob-bytes-per-user", "max-bucketed-points", "max-experiments-per-user", "max-points-per-user", "max-tokens-per-user",
			"oidc-client-ids", "oidc-device-client-id", "oidc-device-client-secret", "oidc-issuer",
			"oidc-web-client-id", "oidc-web-client-secret", "public-origin", "requests-per-second", "runs-table-max-series", "samples_per_plugin", "store",
		}, telemetryFlags, httpLimitFlags, blobStreamFlags, markdownFlags, graphFlags, compareFlags, credentialFlags, diskFlags, instanceFlags, liveFlags)},
		{"write-service", func(fs *flag.FlagSet) { newServeFlags(fs, writeServiceCommand) }, slices.Concat([]string{
			"addr", "api-endpoint", "blobs", "data", "enable-test-rpcs", "grpc-addr",
			"max-blob-bytes", "max-blob-bytes-per-user", "max-bucketed-points", "max-experiments-per-user", "max-points-per-user", "max-tokens-per-user",
			"oidc-client-ids", "oidc-device-client-id", "oidc-device-client-secret", "oidc-issuer",
			"oidc-web-client-id", "oidc-web-client-secret", "public-origin", "requests-per-second", "store",
		}, telemetryFlags, httpLimitFlags, blobStreamFlags, credentialFlags, diskFlags, instanceFlags)},
		{"tbhub token create", func(fs *flag.FlagSet) { storageFlags(fs); tokenFlags(fs) }, []string{"blobs", "data", "max-bucketed-points", "name", "store", "user"}},
		{"tbhub migrate", func(fs *flag.FlagSet) { storageFlags(fs) }, []string{"blobs", "data", "max-bucketed-points", "store"}},
		{"read-service", func(fs *flag.FlagSet) { readservice.NewFlags(fs) }, slices.Concat([]string{
			"addr", "blob-key-secret", "blobs", "data", "max-bucketed-points", "metrics-addr", "oidc-client-ids", "oidc-issuer",
			"port", "public-origin", "store",
		}, telemetryFlags, credentialFlags)},
		{"frontend", func(fs *flag.FlagSet) { new(frontend.Config).RegisterFlags(fs) }, slices.Concat([]string{
			"addr", "experiment-service", "grpc-insecure", "oidc-issuer", "oidc-web-client-id",
			"oidc-web-client-secret", "port", "public-origin", "read-service", "runs-table-max-series", "samples_per_plugin",
		}, telemetryFlags, httpLimitFlags, markdownFlags, graphFlags, compareFlags, liveFlags, []string{"forwarding-secret", "trusted-proxy-hops"})},
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

// Each markdown, graph and comparison limit of tbhub serve is set by its
// flag or its TBHUB_ variable and reaches the HTTP API's renderer, graphs
// plugin and comparisons.
func TestServeMarkdownAndGraphLimits(t *testing.T) {
	want := httpapi.MarkdownLimits{MaxInputBytes: 1000, RenderTimeout: 3 * time.Second, MaxCacheBytes: 5000, MaxConcurrentRenders: 7}
	wantGraphs := httpapi.GraphLimits{MaxAnswerBytes: 1000, MaxDepth: 9, MaxNameBytes: 70, MaxCacheBytes: 5000, MaxConversions: 3}
	wantCompare := httpapi.CompareLimits{MaxMembers: 3, MaxParallel: 2}
	for name, args := range map[string]struct {
		flags []string
		env   map[string]string
	}{
		"flags": {[]string{"--markdown-max-input-bytes=1000", "--markdown-render-timeout=3s",
			"--markdown-cache-bytes=5000", "--markdown-max-renders=7", "--graph-max-answer-bytes=1000", "--graph-max-depth=9",
			"--graph-max-name-bytes=70", "--graph-cache-bytes=5000", "--graph-max-conversions=3",
			"--compare-max-experiments=3", "--compare-max-parallel=2"}, nil},
		"variables": {nil, map[string]string{"TBHUB_MARKDOWN_MAX_INPUT_BYTES": "1000",
			"TBHUB_MARKDOWN_RENDER_TIMEOUT": "3s", "TBHUB_MARKDOWN_CACHE_BYTES": "5000", "TBHUB_MARKDOWN_MAX_RENDERS": "7",
			"TBHUB_GRAPH_MAX_ANSWER_BYTES": "1000", "TBHUB_GRAPH_MAX_DEPTH": "9", "TBHUB_GRAPH_MAX_NAME_BYTES": "70",
			"TBHUB_GRAPH_CACHE_BYTES": "5000", "TBHUB_GRAPH_MAX_CONVERSIONS": "3",
			"TBHUB_COMPARE_MAX_EXPERIMENTS": "3", "TBHUB_COMPARE_MAX_PARALLEL": "2"}},
	} {
		fs := flag.NewFlagSet("serve", flag.ContinueOnError)
		f := newServeFlags(fs, serveCommand)
		if err := parse(fs, args.flags, config.MapEnv(args.env), io.Discard, io.Discard, f.aliases...); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		st, bs := readertest.OpenEmbedded(t)
		conn, err := grpc.NewClient("passthrough:///nowhere", grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		_, h, err := readpath.Mount(grpc.NewServer(), http.NewServeMux(), conn, st, bs, f.readPath(auth.OIDCConfig{}, "http://tbhub.example", nil))
		if err != nil {
			t.Fatal(err)
		}
		if got := h.Markdown.Limits(); got != want {
			t.Errorf("%s: the renderer's limits are %+v, want %+v", name, got, want)
		}
		if got := h.GraphLimits(); got != wantGraphs {
			t.Errorf("%s: the graphs plugin's limits are %+v, want %+v", name, got, wantGraphs)
		}
		if got := h.CompareLimits(); got != wantCompare {
			t.Errorf("%s: the comparisons' limits are %+v, want %+v", name, got, wantCompare)
		}
	}
}
