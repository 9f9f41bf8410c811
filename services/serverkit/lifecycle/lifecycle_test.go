package lifecycle

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health/grpc_health_v1"
)

// syncBuffer is a log destination safe for the process's goroutines.
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

// probe asks the mux directly, as a probe on a connection still open would.
func probe(h http.Handler, path string) int {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	return rec.Code
}

func healthStatus(t *testing.T, w grpc_health_v1.Health_WatchClient, want grpc_health_v1.HealthCheckResponse_ServingStatus) {
	t.Helper()
	for {
		r, err := w.Recv()
		if err != nil {
			t.Fatalf("health watch, waiting for %v: %v", want, err)
		}
		if r.GetStatus() == want {
			return
		}
	}
}

// held is a handler that blocks until released, so a test can stop the
// process with a request in flight.
type held struct {
	entered, release chan struct{}
	once             sync.Once
}

func newHeld() *held { return &held{entered: make(chan struct{}), release: make(chan struct{})} }

func (h *held) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.once.Do(func() { close(h.entered) })
	select {
	case <-h.release:
		io.WriteString(w, "done")
	case <-r.Context().Done():
	}
}

// One process with an HTTP port and a separate gRPC port, as the write
// service runs with --grpc-addr: ready only once serving, not ready on both
// protocols at SIGTERM, in-flight requests finished, then stopped.
func TestReadyThenNotReadyOnSIGTERM(t *testing.T) {
	httpLis, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	grpcLis, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := New(0, nil)
	mux := http.NewServeMux()
	p.Probes(mux)
	hold := newHeld()
	mux.Handle("GET /hold", hold)
	gs := grpc.NewServer()
	p.RegisterHealth(gs)
	p.HTTP(httpLis, mux)
	p.GRPC(grpcLis, gs)

	if p.Ready() || probe(mux, "/readyz") != http.StatusServiceUnavailable {
		t.Error("ready before Run")
	}
	if probe(mux, "/healthz") != http.StatusOK {
		t.Error("not alive before Run")
	}

	ctx, sigterm := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()

	conn, err := grpc.NewClient(grpcLis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	wctx, stopWatch := context.WithCancel(t.Context())
	defer stopWatch()
	watch, err := grpc_health_v1.NewHealthClient(conn).Watch(wctx, &grpc_health_v1.HealthCheckRequest{})
	if err != nil {
		t.Fatal(err)
	}
	healthStatus(t, watch, grpc_health_v1.HealthCheckResponse_SERVING)
	resp, err := http.Get("http://" + httpLis.Addr().String() + "/readyz")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /readyz while serving: %v %v", resp, err)
	}
	resp.Body.Close()

	body := make(chan string, 1)
	go func() {
		resp, err := http.Get("http://" + httpLis.Addr().String() + "/hold")
		if err != nil {
			body <- err.Error()
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		body <- string(b)
	}()
	<-hold.entered

	sigterm()
	healthStatus(t, watch, grpc_health_v1.HealthCheckResponse_NOT_SERVING)
	stopWatch() // a watcher's stream would otherwise hold the drain open
	if code := probe(mux, "/readyz"); code != http.StatusServiceUnavailable {
		t.Errorf("/readyz after SIGTERM: %d, want 503", code)
	}
	if code := probe(mux, "/healthz"); code != http.StatusOK {
		t.Errorf("/healthz after SIGTERM: %d, want 200", code)
	}
	close(hold.release)
	if b := <-body; b != "done" {
		t.Errorf("the request in flight at SIGTERM got %q", b)
	}
	if err := <-done; err != nil {
		t.Errorf("Run: %v", err)
	}
	if _, err := http.Get("http://" + httpLis.Addr().String() + "/healthz"); err == nil {
		t.Error("the HTTP port still answers after Run returned")
	}
}

// A request that outlives the drain timeout is cut, and the process still
// stops (Cloud Run would SIGKILL it otherwise); the cut is logged.
func TestDrainTimeoutCutsWhatIsLeft(t *testing.T) {
	lis, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var logs syncBuffer
	p := New(time.Millisecond, slog.New(slog.NewTextHandler(&logs, nil)))
	hold := newHeld() // never released
	p.HTTP(lis, hold)
	ctx, sigterm := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	got := make(chan error, 1)
	go func() {
		resp, err := http.Get("http://" + lis.Addr().String() + "/")
		if err == nil {
			_, err = io.ReadAll(resp.Body)
			resp.Body.Close()
		}
		got <- err
	}()
	<-hold.entered
	sigterm()
	if err := <-done; err != nil {
		t.Errorf("Run: %v", err)
	}
	if err := <-got; err == nil {
		t.Error("the request outliving the drain timeout completed")
	}
	if !strings.Contains(logs.String(), "drain timed out") {
		t.Errorf("no log of the cut drain: %s", logs.String())
	}
}

// gRPC served through the HTTP port (grpc.Server.ServeHTTP): its calls
// are HTTP requests, drained with the HTTP server, then the gRPC server is
// stopped.
func TestGRPCInHTTP(t *testing.T) {
	lis, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := New(0, nil)
	gs := grpc.NewServer()
	p.RegisterHealth(gs)
	mux := http.NewServeMux()
	p.Probes(mux)
	p.HTTP(lis, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ProtoMajor == 2 && strings.HasPrefix(r.Header.Get("Content-Type"), "application/grpc") {
			gs.ServeHTTP(w, r)
			return
		}
		mux.ServeHTTP(w, r)
	}))
	p.GRPCInHTTP(gs)
	ctx, sigterm := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	wctx, stopWatch := context.WithCancel(t.Context())
	defer stopWatch()
	watch, err := grpc_health_v1.NewHealthClient(conn).Watch(wctx, &grpc_health_v1.HealthCheckRequest{})
	if err != nil {
		t.Fatal(err)
	}
	healthStatus(t, watch, grpc_health_v1.HealthCheckResponse_SERVING)
	sigterm()
	healthStatus(t, watch, grpc_health_v1.HealthCheckResponse_NOT_SERVING)
	stopWatch()
	if err := <-done; err != nil {
		t.Errorf("Run: %v", err)
	}
}

// A server that fails (here: its listener closed under it) stops the
// process, and Run says so.
func TestServerFailureStopsTheProcess(t *testing.T) {
	lis, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := New(0, nil)
	mux := http.NewServeMux()
	p.Probes(mux)
	p.HTTP(lis, mux)
	done := make(chan error, 1)
	go func() { done <- p.Run(t.Context()) }()
	for !p.Ready() {
		time.Sleep(time.Millisecond) // Run marks ready right after starting the servers
	}
	lis.Close()
	if err := <-done; err == nil {
		t.Error("Run returned nil after its listener failed")
	}
	if p.Ready() || probe(mux, "/readyz") != http.StatusServiceUnavailable {
		t.Error("still ready after a server failed")
	}
}
