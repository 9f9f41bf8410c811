// Package lifecycle is the life of a tbhub server process (tbhub serve, the
// write service, the read service, the frontend), the same for each, as
// Cloud Run expects it:
//
//  1. Listen first: the addresses are bound before anything is built, so
//     port 0 works, the URLs are known, and a startup probe's connection
//     waits instead of being refused.
//  2. Ready after: HTTP GET /readyz answers 503 and gRPC health
//     NOT_SERVING until every server is serving, then 200 and SERVING.
//     GET /healthz (liveness) answers 200 for as long as the process runs.
//  3. On SIGTERM (the context given to Run is done) or when a server
//     fails: not ready at once on both /readyz and gRPC health, listeners
//     closed, in-flight requests and RPCs given DrainTimeout to finish
//     (Cloud Run sends SIGKILL 10 s after SIGTERM), then whatever is left
//     is closed.
package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	"google.golang.org/grpc/health/grpc_health_v1"
)

// DefaultDrainTimeout leaves two of Cloud Run's ten seconds between SIGTERM
// and SIGKILL for flushing logs, traces and metrics.
const DefaultDrainTimeout = 8 * time.Second

// Listen binds a TCP address; call it before building the services.
func Listen(addr string) (net.Listener, error) {
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", addr, err)
	}
	return lis, nil
}

// Process runs one process's servers. Make it with New, add the probes
// (Probes, RegisterHealth) and the servers (HTTP, GRPC, GRPCInHTTP), then
// call Run once.
type Process struct {
	drainTimeout time.Duration
	logger       *slog.Logger
	ready        atomic.Bool
	checks       []func() error // further conditions of readiness (ReadyWhile)
	health       *health.Server
	httpLimits   HTTPLimits
	https        []httpServer
	grpcs        []grpcServer
	inHTTP       []*grpc.Server
	onStop       []func() // called as stopping starts (OnStop)
}

type httpServer struct {
	srv *http.Server
	lis net.Listener
}

type grpcServer struct {
	srv *grpc.Server
	lis net.Listener
}

// New returns a process that drains for drainTimeout (DefaultDrainTimeout
// if zero or less) and logs to logger (nowhere if nil).
func New(drainTimeout time.Duration, logger *slog.Logger) *Process {
	if drainTimeout <= 0 {
		drainTimeout = DefaultDrainTimeout
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	p := &Process{drainTimeout: drainTimeout, logger: logger, health: health.NewServer(), httpLimits: DefaultHTTPLimits()}
	p.health.SetServingStatus("", grpc_health_v1.HealthCheckResponse_NOT_SERVING)
	return p
}

// Ready reports whether the process is serving and not stopping.
func (p *Process) Ready() bool { return p.ready.Load() }

// ReadyWhile adds a condition to readiness on /readyz: while check fails,
// /readyz answers 503 with the check's message (which is shown to
// whoever probes: no internal details). Call it before Run; check is
// called on every probe and must be cheap.
func (p *Process) ReadyWhile(check func() error) {
	p.checks = append(p.checks, check)
}

// Probes mounts GET /healthz (liveness) and GET /readyz (readiness) on mux.
func (p *Process) Probes(mux *http.ServeMux) {
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !p.ready.Load() {
			http.Error(w, "not ready", http.StatusServiceUnavailable)
			return
		}
		for _, check := range p.checks {
			if err := check(); err != nil {
				http.Error(w, "not ready: "+err.Error(), http.StatusServiceUnavailable)
				return
			}
		}
		fmt.Fprintln(w, "ready")
	})
}

// RegisterHealth registers the gRPC health service (grpc.health.v1) on s;
// it follows Ready.
func (p *Process) RegisterHealth(s grpc.ServiceRegistrar) {
	grpc_health_v1.RegisterHealthServer(s, p.health)
}

// LimitHTTP sets the limits of the servers added after it by HTTP and
// GRPC (DefaultHTTPLimits until then); the per-address connection limit
// applies to gRPC listeners too.
func (p *Process) LimitHTTP(l HTTPLimits) error {
	if err := l.Validate(); err != nil {
		return err
	}
	p.httpLimits = l
	return nil
}

// HTTP serves h on lis, HTTP/1.1 and cleartext HTTP/2 (prior knowledge,
// which gRPC clients and Cloud Run's end-to-end HTTP/2 use), within the
// process's HTTPLimits.
func (p *Process) HTTP(lis net.Listener, h http.Handler) {
	srv := newHTTPServer(h, p.httpLimits)
	p.https = append(p.https, httpServer{srv: srv, lis: limitPerIP(lis, p.httpLimits.MaxConnsPerIP)})
}

// GRPC serves s on lis with its own transport.
func (p *Process) GRPC(lis net.Listener, s *grpc.Server) {
	p.grpcs = append(p.grpcs, grpcServer{srv: s, lis: limitPerIP(lis, p.httpLimits.MaxConnsPerIP)})
}

// GRPCInHTTP says that s is served through an HTTP handler given to HTTP
// (grpc.Server.ServeHTTP): its calls are HTTP requests and drain with the
// HTTP server; s is stopped once that is done.
func (p *Process) GRPCInHTTP(s *grpc.Server) {
	p.inHTTP = append(p.inHTTP, s)
}

// Run serves until ctx is done or a server fails, then drains and stops
// everything. It returns the failure, if any; a drain cut short by
// DrainTimeout is logged, not returned.
func (p *Process) Run(ctx context.Context) error {
	errc := make(chan error, len(p.https)+len(p.grpcs))
	for _, h := range p.https {
		go func() { errc <- h.srv.Serve(h.lis) }()
	}
	for _, g := range p.grpcs {
		go func() { errc <- g.srv.Serve(g.lis) }()
	}
	p.ready.Store(true)
	p.health.SetServingStatus("", grpc_health_v1.HealthCheckResponse_SERVING)

	var failed error
	select {
	case <-ctx.Done():
		p.logger.InfoContext(ctx, "stopping: draining in-flight requests", "drain_timeout", p.drainTimeout.String())
	case err := <-errc:
		// Before stop, a server returning is a failure whatever it says.
		failed = fmt.Errorf("lifecycle: a server stopped serving: %w", err)
		if err == nil {
			failed = errors.New("lifecycle: a server stopped serving")
		}
		p.logger.ErrorContext(ctx, "stopping", "error", failed.Error())
	}
	p.stop(context.WithoutCancel(ctx))
	return failed
}

// OnStop has f called when the process starts to stop, before the drain:
// for requests held open on purpose (long polls), which the drain would
// otherwise wait for.
func (p *Process) OnStop(f func()) { p.onStop = append(p.onStop, f) }

// stop turns not ready, then drains every server at once within the drain
// timeout.
func (p *Process) stop(ctx context.Context) {
	p.ready.Store(false)
	p.health.Shutdown() // every status NOT_SERVING, watchers told
	for _, f := range p.onStop {
		f()
	}
	dctx, cancel := context.WithTimeout(ctx, p.drainTimeout)
	defer cancel()
	var wg sync.WaitGroup
	var cut atomic.Int32
	for _, h := range p.https {
		wg.Go(func() {
			if err := h.srv.Shutdown(dctx); err != nil {
				cut.Add(1)
				h.srv.Close()
			}
		})
	}
	for _, g := range p.grpcs {
		wg.Go(func() {
			stopped := make(chan struct{})
			go func() {
				g.srv.GracefulStop()
				close(stopped)
			}()
			select {
			case <-stopped:
			case <-dctx.Done():
				cut.Add(1)
				g.srv.Stop()
			}
		})
	}
	wg.Wait()
	// The HTTP servers have finished (or cut) every call served through
	// them; nothing is left for these to wait for.
	for _, s := range p.inHTTP {
		s.Stop()
	}
	if n := cut.Load(); n > 0 {
		p.logger.WarnContext(ctx, "drain timed out: closed the calls still running", "servers", n, "drain_timeout", p.drainTimeout.String())
	}
}
