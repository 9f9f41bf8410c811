// Package readservice runs the read service alone, as Cloud Run deploys
// it: the data provider (package reader) behind the tenancy guard, with
// gRPC health and reflection, on one port, stopping gracefully.
// services/cmd/read-service turns flags and environment into a Config.
package readservice

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	"google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/reflection"

	"github.com/tbhub/tbhub/services/internal/auth"
	"github.com/tbhub/tbhub/services/internal/backend"
	"github.com/tbhub/tbhub/services/internal/reader"
	"github.com/tbhub/tbhub/services/internal/tenancy"
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
	// ShutdownTimeout bounds the graceful stop; 10 s if zero (Cloud Run
	// gives 10 s after SIGTERM).
	ShutdownTimeout time.Duration
	Logger          *slog.Logger
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
	lis, err := net.Listen("tcp", cfg.Addr)
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
	if cfg.ShutdownTimeout == 0 {
		cfg.ShutdownTimeout = 10 * time.Second
	}
	cfg.Reader.Logger = cfg.Logger
	b, err := backend.Open(ctx, cfg.Backend)
	if err != nil {
		return err
	}
	defer b.Close()
	a, err := auth.New(b.Store, auth.Config{OIDC: cfg.OIDC, Logger: cfg.Logger})
	if err != nil {
		return err
	}
	rs, err := reader.New(b.Store, b.Blobs, cfg.Reader)
	if err != nil {
		return err
	}
	guard := tenancy.NewGuard(a, b.Store, cfg.Logger)
	gs := grpc.NewServer(
		grpc.ChainUnaryInterceptor(rs.UnaryInterceptor(), guard.Unary()),
		grpc.ChainStreamInterceptor(rs.StreamInterceptor(), guard.Stream()),
	)
	rs.Register(gs)
	hs := health.NewServer()
	grpc_health_v1.RegisterHealthServer(gs, hs)
	reflection.Register(gs)

	cfg.Logger.InfoContext(ctx, "read service listening", "addr", lis.Addr().String(), "data", b.Description)
	errc := make(chan error, 1)
	go func() { errc <- gs.Serve(lis) }()
	hs.SetServingStatus("", grpc_health_v1.HealthCheckResponse_SERVING)

	select {
	case err := <-errc:
		return fmt.Errorf("readservice: %w", err)
	case <-ctx.Done():
	}
	hs.Shutdown()
	stopped := make(chan struct{})
	go func() {
		gs.GracefulStop()
		close(stopped)
	}()
	select {
	case <-stopped:
	case <-time.After(cfg.ShutdownTimeout):
		gs.Stop()
	}
	return nil
}
