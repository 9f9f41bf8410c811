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
	"os"
	"os/signal"
	"syscall"

	"github.com/tbhub/tbhub/services/internal/assembly/readservice"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := readservice.Main(ctx, os.Args[1:], os.LookupEnv, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
