package frontend

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/tbhub/tbhub/services/serverkit/config"
	"github.com/tbhub/tbhub/services/serverkit/lifecycle"
	"github.com/tbhub/tbhub/services/serverkit/telemetry"
)

// Main is the frontend binary (frontend-api/cmd/frontend): its
// configuration from args and env, then Run until ctx ends. It returns the
// process's exit code: 0 (also after printing the usage asked for), 2 for
// a flag mistake, 1 if serving failed. Diagnostics and logs go to stderr.
func Main(ctx context.Context, args []string, env config.Env, stdout, stderr io.Writer) int {
	cfg, err := parseFlags(args, env, stdout, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "frontend:", err)
		return 2
	}
	if err := run(ctx, cfg, stderr); err != nil {
		telemetry.NewLogger(stderr, cfg.Telemetry.Project).Error("frontend failed", "error", err.Error())
		return 1
	}
	return 0
}

// parseFlags turns the command line and environment into the frontend's
// configuration. Asked for usage (-h, --help), it prints it to stdout and
// returns flag.ErrHelp; flag mistakes are reported on stderr.
func parseFlags(args []string, env config.Env, stdout, stderr io.Writer) (Config, error) {
	var cfg Config
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

// run starts telemetry (its logger writing to logs) and serves cfg.
func run(ctx context.Context, cfg Config, logs io.Writer) error {
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
	logger := telemetry.NewLogger(logs, tel.Project())
	tel.SetGlobal(logger)
	return Run(ctx, lis, cfg, Observers{Tracing: tel, Metrics: metrics, Logger: logger})
}
