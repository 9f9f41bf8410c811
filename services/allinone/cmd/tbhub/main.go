// Command tbhub is the tbhub server: `tbhub serve` runs the whole service in
// one process (embedded store, or Cloud Spanner and Cloud Storage),
// `tbhub token create` issues API tokens, `tbhub migrate` brings a store's
// schema up to date. The command line is services' tbhubcmd; this binary
// adds the read path with frontend-api's HTTP API and web UI
// (package readpath).
package main

import (
	"context"
	"os"

	"github.com/tbhub/tbhub/services/allinone/readpath"
	"github.com/tbhub/tbhub/services/internal/assembly/tbhubcmd"
)

func main() {
	tbhubcmd.Main("tbhub", func(ctx context.Context) error {
		return tbhubcmd.Run(ctx, os.Args[1:], os.LookupEnv, os.Stdout, os.Stderr, readpath.NewServe())
	})
}
