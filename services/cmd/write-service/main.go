// Command write-service is the write service as Cloud Run runs it: the
// upload (TensorBoardWriterService), export, experiments and auth gRPC
// services and the `POST /api/uploader` handshake on $PORT, on Cloud
// Spanner and Cloud Storage:
//
//	write-service --store spanner://projects/P/instances/I/databases/D --blobs gs://BUCKET[/PREFIX]
//
// Every flag can also be set by a TBHUB_* environment variable
// (TBHUB_STORE, TBHUB_BLOBS, TBHUB_PUBLIC_ORIGIN, TBHUB_OIDC_CLIENT_IDS, ...).
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
	err := tbhubcmd.RunWriteService(ctx, os.Args[1:], os.Stderr)
	switch {
	case errors.Is(err, tbhubcmd.ErrUsage):
		os.Exit(2)
	case err != nil:
		fmt.Fprintln(os.Stderr, "write-service:", err)
		os.Exit(1)
	}
}
