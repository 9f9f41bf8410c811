// Command frontend serves tbhub's web UI and HTTP API as one Cloud Run
// service (package frontend), calling the read and write services over
// gRPC. Every flag can also be set by TBHUB_<FLAG> (--read-service:
// TBHUB_READ_SERVICE) and Cloud Run's PORT sets the listen address;
// `frontend --help` lists them, docs/operations.md explains them.
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

	"github.com/tbhub/tbhub/frontend-api/frontend"
	"github.com/tbhub/tbhub/services/serverkit/config"
	"github.com/tbhub/tbhub/services/serverkit/lifecycle"
	"github.com/tbhub/tbhub/services/serverkit/telemetry"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg, err := parseFlags(os.Args[1:], os.LookupEnv, os.Stdout, os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "frontend:", err)
		os.Exit(2)
	}
	if err := run(ctx, cfg); err != nil {
		telemetry.NewLogger(os.Stderr, cfg.Telemetry.Project).Error("frontend failed", "error", err.Error())
		os.Exit(1)
	}
}

// parseFlags turns the command line and environment into the frontend's
// configuration. Asked for usage (-h, --help), it prints it to stdout and
// returns flag.ErrHelp; flag mistakes are reported on stderr.
func parseFlags(args []string, env config.Env, stdout, stderr io.Writer) (frontend.Config, error) {
	var cfg frontend.Config
	fs := flag.NewFlagSet("frontend", flag.ContinueOnError)
	fs.SetOutput(stderr)
	config.SetUsage(fs, "frontend [flags]\n\nServes the web UI and the HTTP API, calling the read and write services over gRPC.")
	if err := config.Parse(fs, args, env, cfg.RegisterFlags(fs)...); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			config.PrintUsage(fs, stdout)
		}
		return cfg, err
	}
	return cfg, cfg.Validate()
}

func run(ctx context.Context, cfg frontend.Config) error {
	lis, err := lifecycle.Listen(cfg.Addr)
	if err != nil {
		return err
	}
	metrics := telemetry.NewMetrics()
	tel, err := telemetry.Start(ctx, cfg.Telemetry, metrics)
	if err != nil {
		return err
	}
	defer tel.Shutdown(context.WithoutCancel(ctx))
	logger := telemetry.NewLogger(os.Stderr, tel.Project())
	tel.SetGlobal(logger)
	return frontend.Run(ctx, lis, cfg, frontend.Observers{Tracing: tel, Metrics: metrics, Logger: logger})
}
