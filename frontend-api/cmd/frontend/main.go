// Command frontend serves tbhub's web UI and HTTP API as one Cloud Run
// service (package frontend), calling the read and write services over
// gRPC. Every flag can also be set by TBHUB_<FLAG> (--read-service:
// TBHUB_READ_SERVICE) and Cloud Run's PORT sets the listen address;
// `frontend --help` lists them, docs/operations.md explains them.
// SIGTERM drains it gracefully (package lifecycle).
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/tbhub/tbhub/frontend-api/frontend"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := frontend.Main(ctx, os.Args[1:], os.LookupEnv, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
