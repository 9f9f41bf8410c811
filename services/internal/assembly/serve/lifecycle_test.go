package serve_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health/grpc_health_v1"

	"github.com/tbhub/tbhub/services/internal/assembly/serve"
)

// On SIGTERM (ctx done) the write service turns not-ready on HTTP /readyz
// as well as on gRPC health, while in-flight requests finish.
func TestNotReadyOnSIGTERM(t *testing.T) {
	t.Parallel()
	st, blobs := embedded(t)
	srv, err := serve.New(st, blobs, serve.Config{HTTPAddr: "127.0.0.1:0", SweepInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	entered, release := make(chan struct{}), make(chan struct{})
	srv.Mux().HandleFunc("GET /hold", func(w http.ResponseWriter, r *http.Request) {
		close(entered)
		<-release
	})
	ctx, sigterm := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()

	conn, err := grpc.NewClient(srv.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
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
	waitStatus(t, watch, grpc_health_v1.HealthCheckResponse_SERVING)
	if code := probe(srv.Mux(), "/readyz"); code != http.StatusOK {
		t.Fatalf("/readyz while serving: %d", code)
	}
	held := make(chan error, 1)
	go func() {
		resp, err := http.Get(srv.Origin() + "/hold")
		if err == nil {
			resp.Body.Close()
		}
		held <- err
	}()
	<-entered

	sigterm()
	waitStatus(t, watch, grpc_health_v1.HealthCheckResponse_NOT_SERVING)
	stopWatch() // a watcher's stream would otherwise hold the drain open
	if code := probe(srv.Mux(), "/readyz"); code != http.StatusServiceUnavailable {
		t.Errorf("/readyz after SIGTERM: %d, want 503", code)
	}
	if code := probe(srv.Mux(), "/healthz"); code != http.StatusOK {
		t.Errorf("/healthz after SIGTERM: %d, want 200 (alive while draining)", code)
	}
	close(release)
	if err := <-held; err != nil {
		t.Errorf("the request in flight at SIGTERM: %v", err)
	}
	if err := <-done; err != nil {
		t.Errorf("Serve: %v", err)
	}
}

func waitStatus(t *testing.T, w grpc_health_v1.Health_WatchClient, want grpc_health_v1.HealthCheckResponse_ServingStatus) {
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

// probe asks h directly: after SIGTERM the listener takes no new
// connections, but a load balancer's connection in flight would see this.
func probe(h http.Handler, path string) int {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	return rec.Code
}
