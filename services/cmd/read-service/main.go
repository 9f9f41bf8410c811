// Command read-service serves TensorBoard's data provider
// (tensorboard.data.TensorBoardDataProvider) for every experiment, behind
// tbhub's token checks, as one Cloud Run service (package readservice).
// Every flag can also be set by TBHUB_<FLAG> (--blob-key-secret:
// TBHUB_BLOB_KEY_SECRET) and Cloud Run's PORT sets the listen address;
// `read-service --help` lists them, docs/operations.md explains them.
// SIGTERM drains it gracefully (package lifecycle).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/tbhub/tbhub/services/internal/readservice"
	"github.com/tbhub/tbhub/services/serverkit/config"
	"github.com/tbhub/tbhub/services/serverkit/telemetry"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	fs := flag.NewFlagSet("read-service", flag.ContinueOnError)
	flags := readservice.NewFlags(fs)
	err := config.Parse(fs, os.Args[1:], os.LookupEnv, flags.Aliases()...)
	var cfg readservice.Config
	if err == nil {
		cfg, err = flags.Config()
	}
	// The emulator runs one transaction per session at a time (package backend).
	cfg.Backend.SpannerEmulator = os.Getenv("SPANNER_EMULATOR_HOST") != ""
	if err != nil {
		fmt.Fprintln(os.Stderr, "read-service:", err)
		os.Exit(2)
	}
	if err := run(ctx, cfg, flags.Telemetry); err != nil {
		telemetry.NewLogger(os.Stderr, flags.Telemetry.Project).Error("read-service failed", "error", err.Error())
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
