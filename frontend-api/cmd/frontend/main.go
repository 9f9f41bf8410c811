// Command frontend serves tbhub's HTTP API (package httpapi) and web UI
// (package webui) as one Cloud Run service, calling the read service and
// the experiment service over gRPC. Configuration comes from flags, with
// the environment as their defaults:
//
//	PORT                listen port (default 8080)
//	READ_SERVICE        gRPC address of the read service (host:port)
//	EXPERIMENT_SERVICE  gRPC address of the write service (its experiment,
//	                    writer and auth services); /api/experiments and the
//	                    management routes answer 501 without it
//	GRPC_INSECURE       "true" for plaintext gRPC (local runs); TLS with
//	                    the system's roots otherwise
//	PUBLIC_ORIGIN       where browsers reach this service (the OIDC redirect
//	                    URI is PUBLIC_ORIGIN/auth/callback); default: each
//	                    request's Host and X-Forwarded-Proto
//	OIDC_ISSUER, OIDC_WEB_CLIENT_ID, OIDC_WEB_CLIENT_SECRET  browser sign-in
//	                    with the issuer (package session); the client ID
//	                    must be among the write service's accepted ones.
//	                    Without them browsers sign in with API tokens.
//	TBHUB_TRACE_EXPORTER, TBHUB_METRICS_EXPORTER, TBHUB_GCP_PROJECT,
//	TBHUB_TRACE_SAMPLE_RATIO  traces and metrics export (package telemetry,
//	                    docs/operations.md); GET /metrics serves Prometheus
//
// /healthz answers while the process lives, /readyz once it serves and
// until it stops; SIGTERM stops it gracefully.
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/tbhub/tbhub/frontend-api/httpapi"
	"github.com/tbhub/tbhub/frontend-api/session"
	"github.com/tbhub/tbhub/frontend-api/webui"
	authv1 "github.com/tbhub/tbhub/schemas/gen/go/tbhub/auth/v1"
	experimentsv1 "github.com/tbhub/tbhub/schemas/gen/go/tbhub/experiments/v1"
	datapb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/data"
	servicepb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/service"
	"github.com/tbhub/tbhub/services/serverkit/telemetry"
)

// Config is the process's configuration.
type Config struct {
	Addr              string
	ReadService       string
	ExperimentService string
	Insecure          bool
	ShutdownTimeout   time.Duration
	// CallTimeout bounds how long a call waits for an unreachable service (a
	// replica being replaced); 10 s if zero.
	CallTimeout time.Duration
	// PublicOrigin and SignIn configure browser sign-in (package session).
	PublicOrigin string
	SignIn       *session.OIDC
	// Telemetry says where spans and metrics go.
	Telemetry telemetry.Config
	// Tracing and Metrics observe the process (telemetry.Off() and a fresh
	// set if nil); Metrics are served at GET /metrics.
	Tracing *telemetry.Telemetry
	Metrics *telemetry.Metrics
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg, err := config(os.Args[1:], os.Getenv)
	if err != nil {
		fmt.Fprintln(os.Stderr, "frontend:", err)
		os.Exit(2)
	}
	logger := telemetry.NewLogger(os.Stderr, cfg.Telemetry.Project)
	cfg.Metrics = telemetry.NewMetrics()
	cfg.Tracing, err = telemetry.Start(ctx, cfg.Telemetry, cfg.Metrics)
	var lis net.Listener
	if err == nil {
		defer cfg.Tracing.Shutdown(context.WithoutCancel(ctx))
		logger = telemetry.NewLogger(os.Stderr, cfg.Tracing.Project())
		cfg.Tracing.SetGlobal(logger)
		lis, err = net.Listen("tcp", cfg.Addr)
	}
	if err == nil {
		err = run(ctx, lis, cfg, logger)
	}
	if err != nil {
		logger.Error("frontend failed", "error", err.Error())
		stop()
		os.Exit(1)
	}
}

func config(args []string, getenv func(string) string) (Config, error) {
	fs := flag.NewFlagSet("frontend", flag.ContinueOnError)
	env := func(name, def string) string {
		if v := getenv(name); v != "" {
			return v
		}
		return def
	}
	port := fs.String("port", env("PORT", "8080"), "listen port")
	var cfg Config
	fs.StringVar(&cfg.ReadService, "read-service", env("READ_SERVICE", ""), "gRPC address of the read service")
	fs.StringVar(&cfg.ExperimentService, "experiment-service", env("EXPERIMENT_SERVICE", ""), "gRPC address of the experiment service")
	insecureDefault, _ := strconv.ParseBool(env("GRPC_INSECURE", "false"))
	fs.BoolVar(&cfg.Insecure, "grpc-insecure", insecureDefault, "plaintext gRPC to the services")
	fs.StringVar(&cfg.PublicOrigin, "public-origin", env("PUBLIC_ORIGIN", ""), "origin browsers reach this service at")
	var oidc session.OIDC
	fs.StringVar(&oidc.Issuer, "oidc-issuer", env("OIDC_ISSUER", ""), "OpenID Connect issuer browsers sign in with")
	fs.StringVar(&oidc.ClientID, "oidc-web-client-id", env("OIDC_WEB_CLIENT_ID", ""), "its web client (redirect URI ORIGIN/auth/callback)")
	fs.StringVar(&oidc.ClientSecret, "oidc-web-client-secret", env("OIDC_WEB_CLIENT_SECRET", ""), "that client's secret, if the issuer wants one")
	cfg.Telemetry.Service = "tbhub-frontend"
	cfg.Telemetry.RegisterFlags(fs, getenv)
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	if err := cfg.Telemetry.Validate(); err != nil {
		return cfg, err
	}
	if (oidc.Issuer == "") != (oidc.ClientID == "") {
		return cfg, errors.New("browser sign-in needs both --oidc-issuer and --oidc-web-client-id (OIDC_ISSUER, OIDC_WEB_CLIENT_ID)")
	}
	if oidc.Issuer != "" {
		cfg.SignIn = &oidc
	}
	cfg.Addr = ":" + *port
	cfg.ShutdownTimeout = 10 * time.Second
	if cfg.ReadService == "" {
		return cfg, errors.New("--read-service (or READ_SERVICE) is required")
	}
	return cfg, nil
}

// run serves on lis until ctx is done.
func run(ctx context.Context, lis net.Listener, cfg Config, logger *slog.Logger) error {
	if cfg.Tracing == nil {
		cfg.Tracing = telemetry.Off()
	}
	if cfg.Metrics == nil {
		cfg.Metrics = telemetry.NewMetrics()
	}
	creds := credentials.NewTLS(&tls.Config{MinVersion: tls.VersionTLS12})
	if cfg.Insecure {
		creds = insecure.NewCredentials()
	}
	dial := func(addr string) (*grpc.ClientConn, error) {
		return grpc.NewClient(addr, grpc.WithTransportCredentials(creds),
			// A replica being replaced (a deploy, a crash) must not fail browser
			// requests: calls wait for a ready connection, bounded by callTimeout,
			// and UNAVAILABLE is retried with backoff. Reads, and the management
			// calls, are idempotent; CreateToken is not retried (retryPolicy).
			grpc.WithDefaultServiceConfig(retryPolicy),
			grpc.WithDefaultCallOptions(grpc.WaitForReady(true)),
			grpc.WithChainUnaryInterceptor(boundCall(cfg.CallTimeout)), // streams end with their HTTP request
			cfg.Tracing.GRPCClient(),
		)
	}
	readConn, err := dial(cfg.ReadService)
	if err != nil {
		return err
	}
	defer readConn.Close()
	hcfg := httpapi.Config{Data: datapb.NewTensorBoardDataProviderClient(readConn), Logger: logger}
	scfg := session.Config{OIDC: cfg.SignIn, PublicOrigin: cfg.PublicOrigin, Logger: logger}
	if cfg.ExperimentService != "" {
		expConn, err := dial(cfg.ExperimentService)
		if err != nil {
			return err
		}
		defer expConn.Close()
		hcfg.Experiments = experimentsv1.NewExperimentServiceClient(expConn)
		hcfg.Writer = servicepb.NewTensorBoardWriterServiceClient(expConn)
		hcfg.Auth = authv1.NewAuthServiceClient(expConn)
		scfg.Auth = hcfg.Auth
	}
	// Browsers sign in with a session cookie (package session).
	sess, err := session.New(scfg)
	if err != nil {
		return err
	}
	hcfg.Credentials = sess.Credentials
	api, err := httpapi.New(hcfg)
	if err != nil {
		return err
	}
	var ready atomic.Bool
	mux := http.NewServeMux()
	for _, p := range httpapi.Routes {
		mux.Handle(p, api)
	}
	sess.Mount(mux)
	// The web UI's pages and bundle (package webui) beside the API.
	ui, err := webui.New()
	if err != nil {
		return err
	}
	ui.Mount(mux)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !ready.Load() {
			http.Error(w, "not ready", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ready")
	})
	mux.Handle("GET /metrics", cfg.Metrics.Handler())
	srv := &http.Server{Handler: cfg.Tracing.HTTP(cfg.Metrics.HTTP(mux)), ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(lis) }()
	ready.Store(true)
	logger.InfoContext(ctx, "frontend listening", "addr", lis.Addr().String(), "read_service", cfg.ReadService)
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	ready.Store(false)
	if cfg.ShutdownTimeout <= 0 {
		cfg.ShutdownTimeout = 10 * time.Second
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.ShutdownTimeout)
	defer cancel()
	return srv.Shutdown(sctx)
}

// retryPolicy retries calls that found no server (UNAVAILABLE) with
// backoff, except CreateToken: a retry after a lost answer would mint a
// second token.
const retryPolicy = `{"methodConfig": [{"name": [{}], "retryPolicy": {
	"maxAttempts": 5, "initialBackoff": "0.1s", "maxBackoff": "2s", "backoffMultiplier": 2,
	"retryableStatusCodes": ["UNAVAILABLE"]}},
	{"name": [{"service": "tbhub.auth.v1.AuthService", "method": "CreateToken"}]}]}`

// boundCall limits every call to timeout (10 s if zero; an earlier deadline still
// wins), so that waiting for an unreachable service ends in a timely error.
func boundCall(timeout time.Duration) grpc.UnaryClientInterceptor {
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		return invoker(ctx, method, req, reply, cc, opts...)
	}
}
