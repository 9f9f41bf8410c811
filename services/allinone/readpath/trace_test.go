package readpath_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/tbhub/tbhub/frontend-api/httpapi"
	datapb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/data"
	"github.com/tbhub/tbhub/services/internal/api/reader"
	"github.com/tbhub/tbhub/services/internal/assembly/readservice"
	"github.com/tbhub/tbhub/services/internal/assembly/serve"
	"github.com/tbhub/tbhub/services/internal/policy/auth"
	"github.com/tbhub/tbhub/services/internal/run/backend"
	"github.com/tbhub/tbhub/services/internal/storage/store"
	"github.com/tbhub/tbhub/services/serverkit/telemetry"
)

// syncBuffer is a log sink both the test and the service use.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// lines returns the JSON log lines written so far.
func (s *syncBuffer) lines(t *testing.T) []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(s.b.Bytes()))
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("log line %q: %v", sc.Text(), err)
		}
		out = append(out, m)
	}
	return out
}

// A read through the frontend's HTTP API and the read service, each with
// its own tracer provider as if in its own process: one trace, the read
// service's RPC span a child of the frontend's client span (the context
// crossed in gRPC metadata) and the store calls children of the RPC span.
// A log line the read service writes inside a request carries the trace of
// the browser's X-Cloud-Trace-Context, as Cloud Run sends it. The read
// service's /metrics (on its metrics address) count the RPCs by code and
// time the store calls.
func TestTraceAcrossFrontendAndReadService(t *testing.T) {
	ctx := t.Context()
	dir := filepath.Join(t.TempDir(), "data")
	eid, token := seed(t, dir)

	// The read service.
	readSpans := tracetest.NewSpanRecorder()
	readTP := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(readSpans))
	var logs syncBuffer
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	stopped := false
	stopService := func() {
		if !stopped {
			stopped = true
			stop()
			if err := <-done; err != nil {
				t.Errorf("Serve: %v", err)
			}
		}
	}
	go func() {
		done <- readservice.Serve(runCtx, lis, readservice.Config{
			Backend:     backend.Spec{DataDir: dir},
			Reader:      reader.Config{BlobKeySecret: reader.RandomSecret()},
			Telemetry:   telemetry.New(readTP, "my-project"),
			Logger:      telemetry.NewLogger(&logs, "my-project"),
			MetricsAddr: "127.0.0.1:0",
		})
	}()
	t.Cleanup(stopService)

	// The frontend, wired as frontend-api/cmd/frontend wires it.
	frontSpans := tracetest.NewSpanRecorder()
	front := telemetry.New(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(frontSpans)), "my-project")
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.WaitForReady(true)), front.GRPCClient())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	api, err := httpapi.New(httpapi.Config{Data: datapb.NewTensorBoardDataProviderClient(conn), CacheTTL: -1})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	for _, p := range httpapi.Routes {
		mux.Handle(p, api)
	}
	web := httptest.NewServer(front.HTTP(mux))
	t.Cleanup(web.Close)

	get := func(auth string, header http.Header) int {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet,
			web.URL+"/experiment/"+eid+"/data/plugin/scalars/scalars?run=train&tag=loss", nil)
		for k, v := range header {
			req.Header[k] = v
		}
		req.Header.Set("Authorization", auth)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := get("Bearer "+token, nil); code != http.StatusOK {
		t.Fatalf("scalars: HTTP %d", code)
	}
	metricsURL := ""
	for _, l := range logs.lines(t) {
		if l["message"] == "read service metrics" {
			metricsURL = fmt.Sprintf("http://%s/metrics", l["addr"])
		}
	}
	const (
		readOK      = `tbhub_grpc_requests_total{code="OK",method="tensorboard.data.TensorBoardDataProvider/ReadScalars"}`
		readRefused = `tbhub_grpc_requests_total{code="Unauthenticated",method="tensorboard.data.TensorBoardDataProvider/ReadScalars"}`
		storeReads  = `tbhub_store_seconds_count{op="ReadScalars"}`
	)
	before := scrape(t, metricsURL)
	if sample(before, readOK) != 1 || sample(before, storeReads) != 1 {
		t.Errorf("/metrics after one read: %s = %v, %s = %v, want 1 and 1", readOK, sample(before, readOK), storeReads, sample(before, storeReads))
	}
	// A refused credential is logged by the read service, inside the trace
	// Cloud Run's header started.
	const cloudTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
	if code := get("Bearer "+auth.TokenPrefix+"not-a-token", http.Header{"X-Cloud-Trace-Context": {cloudTrace + "/12345;o=1"}}); code == http.StatusOK {
		t.Fatalf("a bad token was accepted")
	}
	after := scrape(t, metricsURL)
	if sample(after, readRefused) != 1 || sample(after, readOK) != 1 || sample(after, storeReads) != 1 {
		t.Errorf("/metrics after a refused read: %s = %v (want 1), the rest unchanged: %v, %v",
			readRefused, sample(after, readRefused), sample(after, readOK), sample(after, storeReads))
	}
	// Spans end after the answer is sent: stop both sides (each waits for
	// its requests to finish) before looking at them.
	web.Close()
	stopService()

	// The frontend's spans of the first request: the request, and the call
	// it made.
	var httpSpan, clientSpan sdktrace.ReadOnlySpan
	for _, s := range frontSpans.Ended() {
		if s.SpanContext().TraceID().String() == cloudTrace {
			continue
		}
		switch {
		case s.SpanKind().String() == "server":
			httpSpan = s
		case strings.HasSuffix(s.Name(), "/ReadScalars"):
			clientSpan = s
		}
	}
	if httpSpan == nil || clientSpan == nil {
		t.Fatalf("frontend spans %v: want the HTTP request's and a ReadScalars call's", names(frontSpans.Ended()))
	}
	if !strings.Contains(httpSpan.Name(), "{eid}") {
		t.Errorf("HTTP span %q: want it named after the route pattern", httpSpan.Name())
	}
	traceID := httpSpan.SpanContext().TraceID()
	if clientSpan.Parent().SpanID() != httpSpan.SpanContext().SpanID() {
		t.Errorf("client span's parent %s, want the HTTP span %s", clientSpan.Parent().SpanID(), httpSpan.SpanContext().SpanID())
	}

	// The read service's spans, in the same trace.
	var rpcSpan sdktrace.ReadOnlySpan
	for _, s := range readSpans.Ended() {
		if s.SpanKind().String() == "server" && strings.HasSuffix(s.Name(), "/ReadScalars") && s.SpanContext().TraceID() == traceID {
			rpcSpan = s
		}
	}
	if rpcSpan == nil {
		t.Fatalf("read service spans %v: want a ReadScalars server span", names(readSpans.Ended()))
	}
	if rpcSpan.SpanContext().TraceID() != traceID || !rpcSpan.Parent().IsRemote() ||
		rpcSpan.Parent().SpanID() != clientSpan.SpanContext().SpanID() {
		t.Errorf("read service's RPC span: trace %s parent %s (remote %v), want trace %s parent %s (the frontend's client span)",
			rpcSpan.SpanContext().TraceID(), rpcSpan.Parent().SpanID(), rpcSpan.Parent().IsRemote(), traceID, clientSpan.SpanContext().SpanID())
	}
	storeOps := map[string]bool{}
	for _, s := range readSpans.Ended() {
		if strings.HasPrefix(s.Name(), "store.") && s.Parent().SpanID() == rpcSpan.SpanContext().SpanID() {
			storeOps[s.Name()] = true
		}
	}
	for _, want := range []string{"store.GetAPITokenByHash", "store.ReadScalars"} {
		if !storeOps[want] {
			t.Errorf("no %s span under the RPC span (store spans there: %v)", want, storeOps)
		}
	}

	// The log line of the refused credential.
	var found bool
	for _, l := range logs.lines(t) {
		if l["message"] != "rejected credentials" {
			continue
		}
		found = true
		if got, want := l["logging.googleapis.com/trace"], "projects/my-project/traces/"+cloudTrace; got != want {
			t.Errorf("log trace %v, want %s", got, want)
		}
		if l["logging.googleapis.com/trace_sampled"] != true || l["logging.googleapis.com/spanId"] == "" || l["severity"] != "INFO" {
			t.Errorf("log line %v: want spanId, trace_sampled true, severity INFO", l)
		}
	}
	if !found {
		t.Errorf("no \"rejected credentials\" line in the read service's log:\n%v", logs.lines(t))
	}
}

func names(spans []sdktrace.ReadOnlySpan) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name())
	}
	return out
}

// seed creates, in the embedded store in dir, a user with a token and an
// experiment holding one scalar series (train/loss).
func seed(t *testing.T, dir string) (eid, token string) {
	t.Helper()
	ctx := t.Context()
	b, err := backend.Open(ctx, backend.Spec{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	a, err := auth.New(b.Store, auth.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if token, err = serve.IssueUserToken(ctx, b.Store, a, "ada", "test"); err != nil {
		t.Fatal(err)
	}
	u, err := b.Store.GetUserByName(ctx, "ada")
	if err != nil {
		t.Fatal(err)
	}
	eid = store.NewExperimentID()
	if err := b.Store.CreateExperiment(ctx, store.Experiment{ID: eid, Name: "traced", Owner: u.ID, Visibility: store.VisibilityPrivate}); err != nil {
		t.Fatal(err)
	}
	series := store.TimeSeries{Run: "train", Tag: "loss", PluginName: "scalars"}
	if err := b.Store.WriteScalars(ctx, eid, []store.ScalarSeries{{Series: series, Points: []store.ScalarPoint{{Step: 1, WallTime: 1, Value: 0.5}}}}); err != nil {
		t.Fatal(err)
	}
	return eid, token
}

func scrape(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("metrics: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// sample returns the value of series in a Prometheus exposition (-1 if absent).
func sample(exposition, series string) float64 {
	for _, line := range strings.Split(exposition, "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			if f, err := strconv.ParseFloat(v, 64); err == nil {
				return f
			}
		}
	}
	return -1
}
