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
	"errors"
	"flag"
	"fmt"
	"io"
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
	cfg, flags, err := parseFlags(os.Args[1:], os.LookupEnv, os.Stdout, os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "read-service:", err)
		os.Exit(2)
	}
	if err := run(ctx, cfg, flags.Telemetry); err != nil {
		telemetry.NewLogger(os.Stderr, flags.Telemetry.Project).Error("read-service failed", "error", err.Error())
		os.Exit(1)
	}
}

// parseFlags turns the command line and environment into the service's
// configuration. Asked for usage (-h, --help), it prints it to stdout and
// returns flag.ErrHelp; flag mistakes are reported on stderr.
func parseFlags(args []string, env config.Env, stdout, stderr io.Writer) (readservice.Config, *readservice.Flags, error) {
	fs := flag.NewFlagSet("read-service", flag.ContinueOnError)
	fs.SetOutput(stderr)
	config.SetUsage(fs, "read-service [flags]\n\nServes TensorBoard's data provider (gRPC) for every experiment, behind tbhub's token checks.")
	flags := readservice.NewFlags(fs)
	if err := config.Parse(fs, args, env, flags.Aliases()...); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			config.PrintUsage(fs, stdout)
		}
		return readservice.Config{}, flags, err
	}
	cfg, err := flags.Config()
	// The emulator runs one transaction per session at a time (package backend).
	emu, _ := env("SPANNER_EMULATOR_HOST")
	cfg.Backend.SpannerEmulator = emu != ""
	return cfg, flags, err
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
