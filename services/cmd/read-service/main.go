// Command read-service serves TensorBoard's data provider
// (tensorboard.data.TensorBoardDataProvider) for every experiment, behind
// tbhub's token checks, as one Cloud Run service. Configuration comes from
// flags, with the environment as their defaults:
//
//	PORT                   listen port (default 8080)
//	TBHUB_STORE            spanner://projects/P/instances/I/databases/D (or --data DIR)
//	TBHUB_BLOBS            gs://BUCKET[/PREFIX]
//	TBHUB_BLOB_KEY_SECRET  base64 secret shared by every replica (>= 16 bytes)
//	TBHUB_PUBLIC_ORIGIN    where experiments are viewed, for data_location
//	TBHUB_OIDC_ISSUER, TBHUB_OIDC_CLIENT_IDS  ID-token sign-in (comma-separated IDs)
//	TBHUB_METRICS_ADDR     HTTP address for Prometheus GET /metrics (off if empty)
//	TBHUB_TRACE_EXPORTER, TBHUB_METRICS_EXPORTER, TBHUB_GCP_PROJECT,
//	TBHUB_TRACE_SAMPLE_RATIO  traces and metrics export (docs/operations.md)
//
// It stops gracefully on SIGTERM. See services/internal/readservice.
package main

import (
	"context"
	"encoding/base64"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/tbhub/tbhub/services/internal/auth"
	"github.com/tbhub/tbhub/services/internal/backend"
	"github.com/tbhub/tbhub/services/internal/reader"
	"github.com/tbhub/tbhub/services/internal/readservice"
	"github.com/tbhub/tbhub/services/serverkit/telemetry"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg, tcfg, err := config(os.Args[1:], os.Getenv)
	if err != nil {
		fmt.Fprintln(os.Stderr, "read-service:", err)
		os.Exit(2)
	}
	if err := run(ctx, cfg, tcfg); err != nil {
		telemetry.NewLogger(os.Stderr, tcfg.Project).Error("read-service failed", "error", err.Error())
		os.Exit(1)
	}
}

func run(ctx context.Context, cfg readservice.Config, tcfg telemetry.Config) error {
	cfg.Metrics = telemetry.NewMetrics()
	tel, err := telemetry.Start(ctx, tcfg, cfg.Metrics)
	if err != nil {
		return err
	}
	defer tel.Shutdown(context.WithoutCancel(ctx))
	cfg.Telemetry, cfg.Logger = tel, telemetry.NewLogger(os.Stderr, tel.Project())
	tel.SetGlobal(cfg.Logger)
	return readservice.Run(ctx, cfg)
}

// config reads flags, defaulting to the environment.
func config(args []string, getenv func(string) string) (readservice.Config, telemetry.Config, error) {
	fs := flag.NewFlagSet("read-service", flag.ContinueOnError)
	env := func(name, def string) string {
		if v := getenv(name); v != "" {
			return v
		}
		return def
	}
	port := fs.String("port", env("PORT", "8080"), "listen port")
	var spec backend.Spec
	fs.StringVar(&spec.DataDir, "data", env("TBHUB_DATA", ""), "data directory of an embedded store")
	fs.StringVar(&spec.Store, "store", env("TBHUB_STORE", ""), "Cloud Spanner database: spanner://projects/P/instances/I/databases/D")
	fs.StringVar(&spec.Blobs, "blobs", env("TBHUB_BLOBS", ""), "blob bucket: gs://BUCKET[/PREFIX]")
	secret := fs.String("blob-key-secret", env("TBHUB_BLOB_KEY_SECRET", ""), "base64 secret authenticating blob keys, shared by every replica")
	origin := fs.String("public-origin", env("TBHUB_PUBLIC_ORIGIN", ""), "origin experiments are viewed at")
	issuer := fs.String("oidc-issuer", env("TBHUB_OIDC_ISSUER", "https://accounts.google.com"), "OpenID Connect issuer")
	clientIDs := fs.String("oidc-client-ids", env("TBHUB_OIDC_CLIENT_IDS", ""), "accepted OAuth client IDs, comma-separated; ID tokens are refused without one")
	metricsAddr := fs.String("metrics-addr", env("TBHUB_METRICS_ADDR", ""), "HTTP address serving Prometheus GET /metrics (off if empty)")
	tcfg := telemetry.Config{Service: "tbhub-read"}
	tcfg.RegisterFlags(fs, getenv)
	if err := fs.Parse(args); err != nil {
		return readservice.Config{}, tcfg, err
	}
	key, err := base64.StdEncoding.DecodeString(*secret)
	if err != nil {
		return readservice.Config{}, tcfg, fmt.Errorf("--blob-key-secret: not base64: %w", err)
	}
	cfg := readservice.Config{
		Addr:        ":" + *port,
		Backend:     spec,
		Reader:      reader.Config{BlobKeySecret: key, PublicOrigin: strings.TrimSuffix(*origin, "/")},
		MetricsAddr: *metricsAddr,
	}
	if *clientIDs != "" {
		cfg.OIDC = auth.OIDCConfig{Issuer: *issuer, ClientIDs: strings.Split(*clientIDs, ",")}
	}
	if err := tcfg.Validate(); err != nil {
		return cfg, tcfg, err
	}
	return cfg, tcfg, cfg.Validate()
}
