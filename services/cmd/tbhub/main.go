// Command tbhub is the tbhub server: `tbhub serve` runs the whole service in
// one process (embedded store, or Cloud Spanner and Cloud Storage),
// `tbhub token create` issues API tokens, `tbhub migrate` brings a store's
// schema up to date. See services/internal/tbhubcmd.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/tbhub/tbhub/services/internal/tbhubcmd"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := tbhubcmd.Run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	switch {
	case errors.Is(err, tbhubcmd.ErrUsage):
		os.Exit(2)
	case err != nil:
		fmt.Fprintln(os.Stderr, "tbhub:", err)
		os.Exit(1)
	}
}
