package readpath_test

import (
	"flag"
	"net/http"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/tbhub/tbhub/frontend-api/frontend"
	"github.com/tbhub/tbhub/frontend-api/httpapi"
	"github.com/tbhub/tbhub/services/allinone/readpath"
	"github.com/tbhub/tbhub/services/internal/api/reader/readertest"
	"github.com/tbhub/tbhub/services/internal/assembly/tbhubcmd"
	"github.com/tbhub/tbhub/services/internal/assembly/tbhubcmd/tbhubcmdtest"
	"github.com/tbhub/tbhub/services/serverkit/config"
)

// The HTTP API's flags (Serve.RegisterFlags), which `tbhub serve` and the
// frontend share.
var (
	markdownFlags = []string{"markdown-cache-bytes", "markdown-max-input-bytes", "markdown-max-renders", "markdown-render-timeout"}
	graphFlags    = []string{"graph-cache-bytes", "graph-max-answer-bytes", "graph-max-conversions", "graph-max-depth", "graph-max-name-bytes"}
	compareFlags  = []string{"compare-max-experiments", "compare-max-parallel"}
	liveFlags     = []string{"live-check-interval", "live-max-wait", "live-max-waits-per-client"}
	httpAPIFlags  = slices.Concat([]string{"runs-table-max-series", "samples_per_plugin"}, markdownFlags, graphFlags, compareFlags, liveFlags)
)

// Every flag of `tbhub serve` (services' own, tbhubcmd's test lists them,
// and the read path's) and of the frontend, each set also by TBHUB_ and its
// name in upper case, and named in docs/operations.md.
func TestEveryFlagAndItsVariable(t *testing.T) {
	own := flag.NewFlagSet("serve", flag.ContinueOnError)
	tbhubcmd.ServeFlags(own, nil)
	var want []string
	own.VisitAll(func(f *flag.Flag) { want = append(want, f.Name) })
	serveFS := flag.NewFlagSet("tbhub serve", flag.ContinueOnError)
	tbhubcmd.ServeFlags(serveFS, readpath.NewServe())
	tbhubcmdtest.CheckFlags(t, serveFS, slices.Concat(want, httpAPIFlags))

	frontFS := flag.NewFlagSet("frontend", flag.ContinueOnError)
	new(frontend.Config).RegisterFlags(frontFS)
	tbhubcmdtest.CheckFlags(t, frontFS, slices.Concat([]string{
		"addr", "experiment-service", "grpc-insecure", "oidc-issuer", "oidc-web-client-id",
		"oidc-web-client-secret", "port", "public-origin", "read-service", "forwarding-secret", "trusted-proxy-hops",
	}, tbhubcmdtest.TelemetryFlags, tbhubcmdtest.HTTPLimitFlags, httpAPIFlags))
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
		rp := readpath.NewServe()
		tbhubcmd.ServeFlags(fs, rp)
		if err := config.Parse(fs, args.flags, config.MapEnv(args.env)); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		st, bs := readertest.OpenEmbedded(t)
		conn, err := grpc.NewClient("passthrough:///nowhere", grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		_, h, err := readpath.Mount(grpc.NewServer(), http.NewServeMux(), conn, st, bs, rp.Config(tbhubcmd.ReadPathConfig{PublicOrigin: "http://tbhub.example"}))
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
