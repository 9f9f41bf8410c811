package readservice

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/tbhub/tbhub/services/serverkit/config"
	"github.com/tbhub/tbhub/services/serverkit/telemetry"
)

// Main is the read-service binary (services/cmd/read-service): its
// configuration from args and env, then Run until ctx ends. It returns the
// process's exit code: 0 (also after printing the usage asked for), 2 for
// a flag mistake, 1 if serving failed. Diagnostics and logs go to stderr.
func Main(ctx context.Context, args []string, env config.Env, stdout, stderr io.Writer) int {
	cfg, flags, err := parseFlags(args, env, stdout, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "read-service:", err)
		return 2
	}
	if err := run(ctx, cfg, flags.Telemetry, stderr); err != nil {
		telemetry.NewLogger(stderr, flags.Telemetry.Project).Error("read-service failed", "error", err.Error())
		return 1
	}
	return 0
}

// parseFlags turns the command line and environment into the service's
// configuration. Asked for usage (-h, --help), it prints it to stdout and
// returns flag.ErrHelp; flag mistakes are reported on stderr.
func parseFlags(args []string, env config.Env, stdout, stderr io.Writer) (Config, *Flags, error) {
	fs := flag.NewFlagSet("read-service", flag.ContinueOnError)
	fs.SetOutput(stderr)
	config.SetUsage(fs, "read-service [flags]\n\nServes TensorBoard's data provider (gRPC) for every experiment, behind tbhub's token checks.")
	flags := NewFlags(fs)
	if err := config.Parse(fs, args, env, flags.Aliases()...); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			config.PrintUsage(fs, stdout)
		}
		return Config{}, flags, err
	}
	cfg, err := flags.Config()
	// The emulator runs one transaction per session at a time (package backend).
	emu, _ := env("SPANNER_EMULATOR_HOST")
	cfg.Backend.SpannerEmulator = emu != ""
	return cfg, flags, err
}

// run starts telemetry (its logger writing to logs) and serves cfg.
func run(ctx context.Context, cfg Config, tcfg telemetry.Config, logs io.Writer) error {
	cfg.Metrics = telemetry.NewMetrics()
	tel, err := telemetry.Start(ctx, tcfg, cfg.Metrics)
	if err != nil {
		return err
	}
	defer tel.Shutdown(context.WithoutCancel(ctx))
	cfg.Telemetry, cfg.Logger = tel, telemetry.NewLogger(logs, tel.Project())
	tel.SetGlobal(cfg.Logger)
	return Run(ctx, cfg)
}
