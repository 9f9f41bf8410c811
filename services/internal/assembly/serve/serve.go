// Package serve assembles the tbhub process that `tbhub serve` runs: the
// write, export, experiments and auth gRPC services behind the tenancy
// guard, gRPC health and reflection, and an HTTP mux holding the uploader
// handshake and the probes. Other services (the read service, the
// frontend) mount themselves on GRPCServer and Mux before Serve.
//
// By default gRPC and HTTP share one port: requests with an
// application/grpc content type over HTTP/2 (cleartext, prior knowledge)
// go to the gRPC server, everything else to the mux. With a separate
// GRPCAddr, gRPC gets its own listener and native server.
package serve

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/reflection"

	"github.com/tbhub/tbhub/services/internal/api/export"
	"github.com/tbhub/tbhub/services/internal/api/handshake"
	"github.com/tbhub/tbhub/services/internal/api/writer"
	"github.com/tbhub/tbhub/services/internal/policy/auth"
	"github.com/tbhub/tbhub/services/internal/policy/limits"
	"github.com/tbhub/tbhub/services/internal/policy/tenancy"
	"github.com/tbhub/tbhub/services/internal/run/background"
	"github.com/tbhub/tbhub/services/internal/run/diskspace"
	"github.com/tbhub/tbhub/services/internal/storage/blob"
	"github.com/tbhub/tbhub/services/internal/storage/store"
	"github.com/tbhub/tbhub/services/serverkit/clientaddr"
	"github.com/tbhub/tbhub/services/serverkit/lifecycle"
	"github.com/tbhub/tbhub/services/serverkit/telemetry"
)

// Config configures the process.
type Config struct {
	// HTTPAddr is the HTTP listen address, e.g. "localhost:6006"; port 0
	// picks a free port.
	HTTPAddr string
	// GRPCAddr, if non-empty and different from HTTPAddr, gives gRPC its
	// own listener; otherwise gRPC shares the HTTP port.
	GRPCAddr string
	// PublicOrigin is the origin users and uploaders reach the HTTP side
	// at; "http://" + the HTTP listener's address if empty.
	PublicOrigin string
	// APIEndpoint is the gRPC target advertised in the handshake;
	// "dns:///" + the gRPC listener's address if empty.
	APIEndpoint string
	OIDC        auth.OIDCConfig
	Limits      limits.Limits
	// TrustedProxyHops is how many proxies in front of the server are
	// trusted to name the client in X-Forwarded-For (package clientaddr);
	// per-address limits (Limits.BadCredentials) key on that address.
	TrustedProxyHops clientaddr.Hops
	// ForwardingSecret, if set, is the frontend's: calls carrying it are
	// throttled by the browser address they forward (package clientaddr).
	// The process's own HTTP API is trusted the same way either way.
	ForwardingSecret string
	// HTTP bounds what one client can hold of the HTTP (and gRPC)
	// server; lifecycle.DefaultHTTPLimits if zero.
	HTTP           lifecycle.HTTPLimits
	AllowedPlugins []string
	EnableTestRPCs bool
	// SweepInterval is how often deleted experiments are purged and
	// abandoned blobs removed; one minute if zero, never if negative.
	SweepInterval time.Duration
	// SweepLeaseTTL is how long a process holds the lease of one of those
	// jobs without renewing it (package background): however many
	// processes share the store, one at a time does each job, renewing
	// its lease every SweepInterval; one that stops without releasing its
	// leases hands its jobs over after this long. DefaultSweepLeaseTTL if
	// zero; longer than SweepInterval.
	SweepLeaseTTL time.Duration
	// AbandonedBlobAge is how long an unfinished blob's row must have gone
	// unwritten before the sweep removes the blob (an upload whose client
	// is gone); DefaultAbandonedBlobAge if zero, never if negative. At
	// least MinAbandonedBlobAge: a stream that resumes a blob rewrites its
	// row when it starts, so a row older than the longest stream is no
	// live stream's.
	AbandonedBlobAge time.Duration
	// CreateRequestTTL is how long a CreateExperiment request ID is
	// remembered (writer.Config.CreateRequestTTL);
	// writer.DefaultCreateRequestTTL if zero. The sweep removes the
	// records once expired.
	CreateRequestTTL time.Duration
	// ShutdownTimeout bounds the graceful stop;
	// lifecycle.DefaultDrainTimeout if zero.
	ShutdownTimeout time.Duration
	Now             func() time.Time
	Logger          *slog.Logger
	// Metrics, if set, times every RPC and HTTP route and is served at /metrics.
	Metrics *telemetry.Metrics
	// Telemetry traces every RPC and HTTP request; telemetry.Off() if nil.
	Telemetry *telemetry.Telemetry
	// DiskSpace, if set, is the embedded store's free-space reserve: below
	// it the writes that add data fail with store.ErrDiskFull and /readyz
	// answers 503 (package diskspace).
	DiskSpace *diskspace.Monitor
}

// DefaultSweepLeaseTTL is Config.SweepLeaseTTL's default: five sweep
// intervals, so a holder's renewal may fail or come late a few times
// before another process takes over.
const DefaultSweepLeaseTTL = 5 * time.Minute

// DefaultAbandonedBlobAge is Config.AbandonedBlobAge's default: a day, far
// beyond a stream's idle (1 min) and total (15 min) timeouts, and time
// enough for an uploader that lost its connection to come back and
// resume.
const DefaultAbandonedBlobAge = 24 * time.Hour

// MinAbandonedBlobAge is the smallest AbandonedBlobAge for limits l: twice
// the longest a WriteBlob stream may last, which leaves the stream's last
// write and clocks that disagree a margin.
func MinAbandonedBlobAge(l limits.Limits) time.Duration { return 2 * l.BlobStreamTimeout }

// Server is the assembled process. Create it with New, add handlers and
// services, then call Serve.
type Server struct {
	cfg      Config
	st       store.Store
	writer   *writer.Server
	blobs    blob.Store
	auth     *auth.Authenticator
	grpc     *grpc.Server
	life     *lifecycle.Process
	mux      *http.ServeMux
	httpLis  net.Listener
	grpcLis  net.Listener // nil when gRPC shares the HTTP port
	origin   string
	endpoint string
	logger   *slog.Logger
	internal *clientaddr.Internal
	sweeper  *background.Runner
}

// New binds the listeners (so port 0 works and the URLs are known) and
// builds the services; nothing is served until Serve.
func New(st store.Store, blobs blob.Store, cfg Config) (*Server, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.SweepInterval == 0 {
		cfg.SweepInterval = time.Minute
	}
	if cfg.AbandonedBlobAge == 0 {
		cfg.AbandonedBlobAge = DefaultAbandonedBlobAge
	}
	if cfg.SweepLeaseTTL == 0 {
		cfg.SweepLeaseTTL = DefaultSweepLeaseTTL
	}
	if cfg.Telemetry == nil {
		cfg.Telemetry = telemetry.Off()
	}
	if cfg.DiskSpace != nil {
		st, blobs = diskspace.Store(st, cfg.DiskSpace), diskspace.Blobs(blobs, cfg.DiskSpace)
	}
	s := &Server{cfg: cfg, st: st, blobs: blobs, mux: http.NewServeMux(), logger: cfg.Logger,
		life: lifecycle.New(cfg.ShutdownTimeout, cfg.Logger)}
	if cfg.DiskSpace != nil {
		s.life.ReadyWhile(cfg.DiskSpace.Check)
	}
	var err error
	if s.httpLis, err = lifecycle.Listen(cfg.HTTPAddr); err != nil {
		return nil, fmt.Errorf("serve: %w", err)
	}
	grpcAddr := s.httpLis.Addr().String()
	if cfg.GRPCAddr != "" && cfg.GRPCAddr != cfg.HTTPAddr {
		if s.grpcLis, err = lifecycle.Listen(cfg.GRPCAddr); err != nil {
			s.httpLis.Close()
			return nil, fmt.Errorf("serve: %w", err)
		}
		grpcAddr = s.grpcLis.Addr().String()
	}
	if err := s.build(grpcAddr); err != nil {
		s.closeListeners()
		return nil, err
	}
	return s, nil
}

func (s *Server) closeListeners() {
	s.httpLis.Close()
	if s.grpcLis != nil {
		s.grpcLis.Close()
	}
}

func (s *Server) build(grpcAddr string) error {
	s.origin = s.cfg.PublicOrigin
	if s.origin == "" {
		s.origin = "http://" + s.httpLis.Addr().String()
	}
	s.origin = strings.TrimSuffix(s.origin, "/")
	s.endpoint = s.cfg.APIEndpoint
	if s.endpoint == "" {
		s.endpoint = "dns:///" + grpcAddr
	}
	lim := s.cfg.Limits
	if lim == (limits.Limits{}) {
		lim = limits.Default()
	}
	if age := s.cfg.AbandonedBlobAge; age > 0 && age < MinAbandonedBlobAge(lim) {
		return fmt.Errorf("serve: the abandoned blob age %v is shorter than %v, twice the blob stream timeout: a live upload could be removed", age, MinAbandonedBlobAge(lim))
	}
	if s.cfg.HTTP != (lifecycle.HTTPLimits{}) {
		if err := s.life.LimitHTTP(s.cfg.HTTP); err != nil {
			return fmt.Errorf("serve: %w", err)
		}
	}
	var err error
	if s.auth, err = auth.New(s.st, auth.Config{OIDC: s.cfg.OIDC, Now: s.cfg.Now, Logger: s.logger}); err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	enf, err := limits.NewEnforcer(lim, s.st, s.cfg.Now)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	w, err := writer.New(s.st, s.blobs, s.auth, enf, writer.Config{
		PublicOrigin: s.origin, EnableTestRPCs: s.cfg.EnableTestRPCs, CreateRequestTTL: s.cfg.CreateRequestTTL,
		// As the credential throttle does (s.internal is set below,
		// before any call).
		ClientAddr: func(ctx context.Context) (netip.Addr, bool) { return s.cfg.TrustedProxyHops.FromGRPC(ctx, s.internal) },
		Now:        s.cfg.Now, Logger: s.logger,
	})
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	s.writer = w
	if s.sweeper, err = s.newSweeper(); err != nil {
		return err
	}
	guard := tenancy.NewGuard(s.auth, s.st, s.logger)
	if s.internal, err = clientaddr.SharedInternal(s.cfg.ForwardingSecret); err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	if s.internal == nil { // no shared secret: one of the process's own
		s.internal = clientaddr.NewInternal()
	}
	if err := guard.ThrottleBadCredentials(lim.BadCredentials, s.cfg.TrustedProxyHops, s.internal, s.cfg.Now); err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	unary, stream := []grpc.UnaryServerInterceptor{guard.Unary()}, []grpc.StreamServerInterceptor{guard.Stream()}
	if m := s.cfg.Metrics; m != nil { // outermost, so calls the guard refuses are counted too
		unary = append([]grpc.UnaryServerInterceptor{m.Unary()}, unary...)
		stream = append([]grpc.StreamServerInterceptor{m.Stream()}, stream...)
		s.mux.Handle("GET /metrics", m.Handler())
	}
	s.grpc = grpc.NewServer(
		s.cfg.Telemetry.GRPCServer(),
		grpc.MaxRecvMsgSize(int(lim.MaxRequestBytes)),
		grpc.ChainUnaryInterceptor(unary...),
		grpc.ChainStreamInterceptor(stream...),
	)
	w.Register(s.grpc)
	export.New(s.st, s.blobs).Register(s.grpc)
	s.life.RegisterHealth(s.grpc)
	reflection.Register(s.grpc)

	hs, err := handshake.New(handshake.Config{
		APIEndpoint: s.endpoint, PublicOrigin: s.origin, AllowedPlugins: s.cfg.AllowedPlugins, Limits: lim,
	})
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	s.mux.Handle("POST "+handshake.Path, hs)
	s.life.Probes(s.mux)
	return nil
}

// Mux is the HTTP mux; mount further handlers on it before Serve.
func (s *Server) Mux() *http.ServeMux { return s.mux }

// OnStop has f called when the server starts to stop, before it drains
// (lifecycle.Process.OnStop).
func (s *Server) OnStop(f func()) { s.life.OnStop(f) }

// GRPCServer is the gRPC server; register further services before Serve.
// Their methods need rules in tenancy.Methods, or the guard refuses them.
func (s *Server) GRPCServer() *grpc.Server { return s.grpc }

// InternalCalls marks the calls the process's HTTP handlers make to its
// gRPC server: use its interceptors on that connection, so that those
// calls are throttled by the HTTP client's address (package clientaddr).
func (s *Server) InternalCalls() *clientaddr.Internal { return s.internal }

// Authenticator is the process's authenticator (for issuing tokens).
func (s *Server) Authenticator() *auth.Authenticator { return s.auth }

// Origin is the public HTTP origin, e.g. "http://127.0.0.1:6006".
func (s *Server) Origin() string { return s.origin }

// APIEndpoint is the gRPC target advertised to uploaders.
func (s *Server) APIEndpoint() string { return s.endpoint }

// HTTPAddr is the HTTP listener's address.
func (s *Server) HTTPAddr() string { return s.httpLis.Addr().String() }

// GRPCAddr is the address gRPC clients dial.
func (s *Server) GRPCAddr() string {
	if s.grpcLis != nil {
		return s.grpcLis.Addr().String()
	}
	return s.httpLis.Addr().String()
}

// Serve serves until ctx is done, then stops gracefully (package
// lifecycle): readiness and health turn NOT_SERVING at once, in-flight
// calls get ShutdownTimeout to finish.
func (s *Server) Serve(ctx context.Context) error {
	mux := http.Handler(s.mux)
	if s.cfg.Metrics != nil {
		mux = s.cfg.Metrics.HTTP(mux)
	}
	mux = s.cfg.Telemetry.HTTP(mux)
	// The HTTP API's calls to the gRPC server name their client (package
	// clientaddr), so per-address limits apply to it, not to the process.
	mux = s.cfg.TrustedProxyHops.Middleware(mux)
	handler := mux
	if s.grpcLis == nil {
		handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.ProtoMajor == 2 && strings.HasPrefix(r.Header.Get("Content-Type"), "application/grpc") {
				s.grpc.ServeHTTP(w, r)
				return
			}
			mux.ServeHTTP(w, r)
		})
		s.life.GRPCInHTTP(s.grpc)
	} else {
		s.life.GRPC(s.grpcLis, s.grpc)
	}
	s.life.HTTP(s.httpLis, handler)
	sweepCtx, stopSweep := context.WithCancel(ctx)
	sweepDone := make(chan struct{})
	defer func() { stopSweep(); <-sweepDone }() // the loop releases its leases
	go func() {
		defer close(sweepDone)
		if s.cfg.SweepInterval > 0 {
			s.sweeper.Loop(sweepCtx, s.cfg.SweepInterval)
		}
	}()
	return s.life.Run(ctx)
}

// newSweeper returns the background jobs: the purge of deleted
// experiments and the removal of abandoned blobs and expired create
// request records, each done by one process at a time under its lease.
func (s *Server) newSweeper() (*background.Runner, error) {
	if s.cfg.SweepInterval > 0 && s.cfg.SweepLeaseTTL <= s.cfg.SweepInterval {
		return nil, fmt.Errorf("serve: the sweep lease TTL %v is not longer than the sweep interval %v: the lease would lapse between renewals", s.cfg.SweepLeaseTTL, s.cfg.SweepInterval)
	}
	jobs := []background.Job{{Name: "purge-deleted-experiments", Run: func(ctx context.Context) (int, error) {
		return s.writer.Purge(ctx, 10)
	}}}
	if s.cfg.AbandonedBlobAge > 0 {
		jobs = append(jobs, background.Job{Name: "remove-abandoned-blobs", Run: func(ctx context.Context) (int, error) {
			// The store's write times are the real clock's (Spanner's
			// commit timestamps), not Config.Now.
			return s.writer.SweepAbandonedBlobs(ctx, time.Now().Add(-s.cfg.AbandonedBlobAge), 100)
		}})
	}
	jobs = append(jobs, background.Job{Name: "remove-expired-create-requests", Run: func(ctx context.Context) (int, error) {
		return s.writer.SweepCreateRequests(ctx, 1000)
	}})
	r, err := background.New(s.st, background.Config{Holder: background.NewHolder(), LeaseTTL: s.cfg.SweepLeaseTTL,
		Now: s.cfg.Now, Logger: s.logger}, jobs...)
	if err != nil {
		return nil, fmt.Errorf("serve: %w", err)
	}
	return r, nil
}
