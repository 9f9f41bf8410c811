// Command tbup uploads TensorBoard logdirs to tbhub and inspects them locally.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"

	"github.com/tbhub/tbhub/uploader/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if path := os.Getenv("TBUP_CPUPROFILE"); path != "" { // for developers: profile a real run
		if f, err := os.Create(path); err == nil {
			_ = pprof.StartCPUProfile(f)
		}
	}
	err := cli.Run(ctx, cli.Env{Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv}, os.Args[1:])
	pprof.StopCPUProfile() // before os.Exit, which skips deferred calls; a no-op when not profiling
	switch {
	case err == nil:
	case errors.Is(err, cli.ErrUsage):
		os.Exit(2)
	default:
		fmt.Fprintln(os.Stderr, "tbup:", err)
		os.Exit(1)
	}
}
