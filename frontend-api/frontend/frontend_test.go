package frontend

import (
	"bytes"
	"context"
	"flag"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tbhub/tbhub/frontend-api/httpapi"
	datapb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/data"
	"github.com/tbhub/tbhub/services/serverkit/config"
)

func parse(t *testing.T, args []string, env map[string]string) (Config, string, error) {
	t.Helper()
	var cfg Config
	var out bytes.Buffer
	fs := flag.NewFlagSet("frontend", flag.ContinueOnError)
	fs.SetOutput(&out)
	err := config.Parse(fs, args, config.MapEnv(env), cfg.RegisterFlags(fs)...)
	if err == nil {
		err = cfg.Validate()
	}
	return cfg, out.String(), err
}

func TestConfig(t *testing.T) {
	cfg, _, err := parse(t, nil, map[string]string{"PORT": "9090", "TBHUB_READ_SERVICE": "read:443", "TBHUB_GRPC_INSECURE": "true"})
	if err != nil || cfg.Addr != ":9090" || cfg.ReadService != "read:443" || !cfg.Insecure || cfg.ExperimentService != "" {
		t.Errorf("config = %+v, %v", cfg, err)
	}
	cfg, _, err = parse(t, []string{"--read-service", "r:1", "--addr", ":1"}, nil)
	if err != nil || cfg.Addr != ":1" || cfg.Insecure {
		t.Errorf("flags: %+v, %v", cfg, err)
	}
	if _, _, err := parse(t, nil, nil); err == nil {
		t.Error("no read service accepted")
	}
	env := map[string]string{"TBHUB_READ_SERVICE": "r:1", "TBHUB_OIDC_ISSUER": "https://issuer.example", "TBHUB_OIDC_WEB_CLIENT_ID": "web", "TBHUB_PUBLIC_ORIGIN": "https://tbhub.example"}
	cfg, _, err = parse(t, nil, env)
	if err != nil || cfg.SignIn == nil || cfg.SignIn.Issuer != "https://issuer.example" || cfg.SignIn.ClientID != "web" || cfg.PublicOrigin != "https://tbhub.example" {
		t.Errorf("browser sign-in from the environment: %+v, %v", cfg, err)
	}
	delete(env, "TBHUB_OIDC_WEB_CLIENT_ID")
	if _, _, err := parse(t, nil, env); err == nil {
		t.Error("an issuer without a web client accepted")
	}
}

// The names of the previous release still work, with a warning each.
func TestOldVariableNames(t *testing.T) {
	old := map[string]string{"PORT": "9090", "READ_SERVICE": "read:443", "EXPERIMENT_SERVICE": "write:443", "GRPC_INSECURE": "true",
		"PUBLIC_ORIGIN": "https://tbhub.example", "OIDC_ISSUER": "https://issuer.example", "OIDC_WEB_CLIENT_ID": "web", "OIDC_WEB_CLIENT_SECRET": "s"}
	cfg, out, err := parse(t, nil, old)
	if err != nil || cfg.Addr != ":9090" || cfg.ReadService != "read:443" || cfg.ExperimentService != "write:443" || !cfg.Insecure ||
		cfg.PublicOrigin != "https://tbhub.example" || cfg.SignIn == nil || cfg.SignIn.ClientSecret != "s" {
		t.Errorf("old names: %+v, %v", cfg, err)
	}
	for name := range old {
		if name != "PORT" && !strings.Contains(out, name+" is deprecated") {
			t.Errorf("no warning about %s: %s", name, out)
		}
	}
	cfg, out, err = parse(t, []string{"--port", "7"}, map[string]string{"TBHUB_READ_SERVICE": "r:1"})
	if err != nil || cfg.Addr != ":7" || !strings.Contains(out, "--port is deprecated") {
		t.Errorf("--port 7: %+v, %q, %v", cfg, out, err)
	}
}

// The process serves probes and the API, and stops when told.
func TestRun(t *testing.T) {
	// Nothing listens at the read service's address: API calls fail
	// with 503 while the probes answer.
	base := start(t, Config{ReadService: "127.0.0.1:1", Insecure: true, CallTimeout: 300 * time.Millisecond})
	get := func(path string) (int, string) {
		for {
			resp, err := http.Get(base + path)
			if err != nil {
				continue // not serving yet
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			return resp.StatusCode, string(b)
		}
	}
	if code, _ := get("/readyz"); code != 200 {
		t.Errorf("/readyz: %d", code)
	}
	// Calls wait for the read service (a replica being replaced) up to CallTimeout.
	if code, body := get("/experiment/e/data/runs"); code != http.StatusServiceUnavailable && code != http.StatusGatewayTimeout {
		t.Errorf("API with the read service down: %d %s", code, body)
	}
	if code, body := get("/api/experiments"); code != http.StatusNotImplemented || !strings.Contains(body, "experiment service") {
		t.Errorf("/api/experiments without an experiment service: %d %s", code, body)
	}
	// GET /metrics: requests by route pattern (not by experiment id) and status.
	_, before := get("/metrics")
	get("/readyz")
	_, after := get("/metrics")
	const ready = `tbhub_http_requests_total{route="GET /readyz",status="200"}`
	if b, a := sample(before, ready), sample(after, ready); b < 1 || a != b+1 {
		t.Errorf("%s went from %v to %v after one more request, want +1", ready, b, a)
	}
	if !strings.Contains(after, `tbhub_http_request_seconds_count{route="GET /experiment/{eid}/data/runs"} 1`) {
		t.Errorf("/metrics lacks the latency of the API route:\n%s", after)
	}
}

// start runs the frontend with cfg on a loopback port until the test
// ends, and returns its base URL.
func start(t *testing.T, cfg Config) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, lis, cfg, Observers{}) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return "http://" + lis.Addr().String()
}

// sample returns the value of series in a Prometheus exposition (-1 if absent).
func sample(exposition, series string) float64 {
	for _, line := range strings.Split(exposition, "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err == nil {
				return f
			}
		}
	}
	return -1
}

// Each markdown and graph limit is set by its flag or its TBHUB_ variable
// and reaches the HTTP API's renderer and graphs plugin.
func TestMarkdownAndGraphLimits(t *testing.T) {
	want := httpapi.MarkdownLimits{MaxInputBytes: 1000, RenderTimeout: 3 * time.Second, MaxCacheBytes: 5000, MaxConcurrentRenders: 7}
	wantGraphs := httpapi.GraphLimits{MaxAnswerBytes: 1000, MaxDepth: 9, MaxNameBytes: 70, MaxCacheBytes: 5000, MaxConversions: 3}
	for name, args := range map[string]struct {
		flags []string
		env   map[string]string
	}{
		"flags": {[]string{"--read-service=r:1", "--markdown-max-input-bytes=1000", "--markdown-render-timeout=3s",
			"--markdown-cache-bytes=5000", "--markdown-max-renders=7", "--graph-max-answer-bytes=1000", "--graph-max-depth=9",
			"--graph-max-name-bytes=70", "--graph-cache-bytes=5000", "--graph-max-conversions=3"}, nil},
		"variables": {nil, map[string]string{"TBHUB_READ_SERVICE": "r:1", "TBHUB_MARKDOWN_MAX_INPUT_BYTES": "1000",
			"TBHUB_MARKDOWN_RENDER_TIMEOUT": "3s", "TBHUB_MARKDOWN_CACHE_BYTES": "5000", "TBHUB_MARKDOWN_MAX_RENDERS": "7",
			"TBHUB_GRAPH_MAX_ANSWER_BYTES": "1000", "TBHUB_GRAPH_MAX_DEPTH": "9", "TBHUB_GRAPH_MAX_NAME_BYTES": "70",
			"TBHUB_GRAPH_CACHE_BYTES": "5000", "TBHUB_GRAPH_MAX_CONVERSIONS": "3"}},
	} {
		cfg, _, err := parse(t, args.flags, args.env)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		h, err := httpapi.New(cfg.api(datapb.NewTensorBoardDataProviderClient(nil), nil))
		if err != nil {
			t.Fatal(err)
		}
		if got := h.Markdown.Limits(); got != want {
			t.Errorf("%s: the renderer's limits are %+v, want %+v", name, got, want)
		}
		if got := h.GraphLimits(); got != wantGraphs {
			t.Errorf("%s: the graphs plugin's limits are %+v, want %+v", name, got, wantGraphs)
		}
	}
	for _, zero := range []string{"--markdown-max-renders=0", "--graph-max-depth=0"} {
		if _, _, err := parse(t, []string{"--read-service=r:1", zero}, nil); err == nil {
			t.Errorf("%s accepted", zero)
		}
	}
	cfg, _, err := parse(t, []string{"--read-service=r:1"}, nil)
	if err != nil || cfg.Markdown != httpapi.DefaultMarkdownLimits() || cfg.Graphs != httpapi.DefaultGraphLimits() {
		t.Errorf("defaults: %+v, %+v, %v", cfg.Markdown, cfg.Graphs, err)
	}
}
