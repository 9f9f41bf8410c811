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
	"os"

	"github.com/tbhub/tbhub/services/internal/assembly/tbhubcmd"
)

func main() {
	tbhubcmd.Main("write-service", func(ctx context.Context) error {
		return tbhubcmd.RunWriteService(ctx, os.Args[1:], os.LookupEnv, os.Stdout, os.Stderr)
	})
}
