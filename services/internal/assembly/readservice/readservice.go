// Package readservice runs the read service alone, as Cloud Run deploys
// it: the data provider (package reader) behind the tenancy guard, with
// gRPC health and reflection, on one port, started and stopped by package
// lifecycle; traced and timed (package telemetry), with Prometheus /metrics
// and the HTTP probes on a separate HTTP address if one is given.
// services/cmd/read-service turns flags and environment into a Config.
package readservice

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/reflection"

	"github.com/tbhub/tbhub/services/internal/api/reader"
	"github.com/tbhub/tbhub/services/internal/policy/auth"
	"github.com/tbhub/tbhub/services/internal/policy/limits"
	"github.com/tbhub/tbhub/services/internal/policy/tenancy"
	"github.com/tbhub/tbhub/services/internal/run/backend"
	"github.com/tbhub/tbhub/services/internal/storage/store/instrumented"
	"github.com/tbhub/tbhub/services/serverkit/clientaddr"
	"github.com/tbhub/tbhub/services/serverkit/lifecycle"
	"github.com/tbhub/tbhub/services/serverkit/telemetry"
)

// Config configures the process.
type Config struct {
	// Addr is the listen address, e.g. ":8080".
	Addr    string
	Backend backend.Spec
	// Reader configures the service; its BlobKeySecret must be the one
	// every replica shares.
	Reader reader.Config
	OIDC   auth.OIDCConfig
	// BadCredentials is each client address's budget of failed
	// credential checks; limits.DefaultCredentialLimits if zero.
	BadCredentials limits.CredentialLimits
	// TrustedProxyHops is how many proxies in front of the service are
	// trusted to name the client in X-Forwarded-For (Cloud Run: 1).
	TrustedProxyHops clientaddr.Hops
	// ForwardingSecret, if set, is the frontend's: calls carrying it are
	// throttled by the browser address they forward.
	ForwardingSecret string
	// ShutdownTimeout bounds the graceful stop;
	// lifecycle.DefaultDrainTimeout if zero.
	ShutdownTimeout time.Duration
	Logger          *slog.Logger
	// Telemetry traces every RPC and store call; telemetry.Off() if nil.
	Telemetry *telemetry.Telemetry
	// Metrics time every RPC and store call; a fresh set if nil.
	Metrics *telemetry.Metrics
	// MetricsAddr, if set, is an HTTP address serving Metrics at
	// GET /metrics and the probes GET /healthz and GET /readyz (the
	// service's own port speaks gRPC only, with gRPC health).
	MetricsAddr string
}

// Validate checks what can be checked before opening anything.
func (c *Config) Validate() error {
	if c.Addr == "" {
		return errors.New("readservice: no listen address")
	}
	if len(c.Reader.BlobKeySecret) < reader.MinBlobKeySecretBytes {
		return fmt.Errorf("readservice: the blob key secret must have at least %d bytes", reader.MinBlobKeySecretBytes)
	}
	return c.Backend.Validate()
}

// Run listens on cfg.Addr and serves until ctx is done, then stops
// gracefully.
func Run(ctx context.Context, cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	lis, err := lifecycle.Listen(cfg.Addr)
	if err != nil {
		return fmt.Errorf("readservice: %w", err)
	}
	return Serve(ctx, lis, cfg)
}

// Serve is Run on a listener it closes when done; cfg.Addr is ignored.
func Serve(ctx context.Context, lis net.Listener, cfg Config) error {
	defer lis.Close()
	if err := cfg.Backend.Validate(); err != nil {
		return err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Telemetry == nil {
		cfg.Telemetry = telemetry.Off()
	}
	if cfg.Metrics == nil {
		cfg.Metrics = telemetry.NewMetrics()
	}
	cfg.Reader.Logger = cfg.Logger
	b, err := backend.Open(ctx, cfg.Backend)
	if err != nil {
		return err
	}
	defer b.Close()
	st := instrumented.Wrap(b.Store, cfg.Telemetry, cfg.Metrics)
	// Read only: the service's database role may not record token uses.
	a, err := auth.New(st, auth.Config{OIDC: cfg.OIDC, Logger: cfg.Logger, ReadOnly: true})
	if err != nil {
		return err
	}
	rs, err := reader.New(st, b.Blobs, cfg.Reader)
	if err != nil {
		return err
	}
	guard := tenancy.NewGuard(a, st, cfg.Logger)
	if cfg.BadCredentials == (limits.CredentialLimits{}) {
		cfg.BadCredentials = limits.DefaultCredentialLimits()
	}
	frontend, err := clientaddr.SharedInternal(cfg.ForwardingSecret)
	if err != nil {
		return err
	}
	if err := guard.ThrottleBadCredentials(cfg.BadCredentials, cfg.TrustedProxyHops, frontend, nil); err != nil {
		return err
	}
	gs := grpc.NewServer(
		cfg.Telemetry.GRPCServer(),
		// Metrics outermost, so calls the guard refuses are counted too.
		grpc.ChainUnaryInterceptor(cfg.Metrics.Unary(), rs.UnaryInterceptor(), guard.Unary()),
		grpc.ChainStreamInterceptor(cfg.Metrics.Stream(), rs.StreamInterceptor(), guard.Stream()),
	)
	rs.Register(gs)
	life := lifecycle.New(cfg.ShutdownTimeout, cfg.Logger)
	life.RegisterHealth(gs)
	reflection.Register(gs)
	life.GRPC(lis, gs)
	if cfg.MetricsAddr != "" {
		mlis, err := lifecycle.Listen(cfg.MetricsAddr)
		if err != nil {
			return fmt.Errorf("readservice: metrics: %w", err)
		}
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", cfg.Metrics.Handler())
		life.Probes(mux)
		life.HTTP(mlis, mux)
		cfg.Logger.InfoContext(ctx, "read service metrics", "addr", mlis.Addr().String())
	}
	cfg.Logger.InfoContext(ctx, "read service listening", "addr", lis.Addr().String(), "data", b.Description)
	return life.Run(ctx)
}
