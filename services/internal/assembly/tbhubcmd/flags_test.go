package tbhubcmd

import (
	"flag"
	"slices"
	"testing"

	"github.com/tbhub/tbhub/services/internal/assembly/readservice"
	"github.com/tbhub/tbhub/services/internal/assembly/tbhubcmd/tbhubcmdtest"
)

// Every flag of every server binary in services, each set also by TBHUB_
// and its name in upper case (package config). A flag added, renamed or
// removed shows here, and in docs/operations.md, which must name each
// variable. `tbhub serve`'s read path flags and the frontend's are listed
// above services and frontend-api (services/allinone/readpath).
func TestEveryFlagAndItsVariable(t *testing.T) {
	blobStreamFlags := []string{"abandoned-blob-age", "blob-stream-idle-timeout", "blob-stream-timeout", "max-blob-streams-per-conn", "max-blob-streams-per-user", "max-metadata-bytes", "max-upload-buffer-bytes", "max-pending-grants-per-user", "max-runs-per-experiment"}
	credentialFlags := []string{"bad-credentials-burst", "bad-credentials-per-second", "forwarding-secret", "instances", "trusted-proxy-hops"}
	diskFlags := []string{"min-free-disk-bytes", "min-free-disk-percent"}
	instanceFlags := []string{"create-request-ttl", "sweep-lease-ttl", "usage-refresh"}
	binaries := []struct {
		name  string
		flags func(fs *flag.FlagSet)
		want  []string
	}{
		{"write-service", func(fs *flag.FlagSet) { newServeFlags(fs, writeServiceCommand, nil) }, slices.Concat([]string{
			"addr", "api-endpoint", "blobs", "data", "enable-test-rpcs", "grpc-addr",
			"max-blob-bytes", "max-blob-bytes-per-user", "max-bucketed-points", "max-experiments-per-user", "max-points-per-user", "max-tokens-per-user",
			"oidc-client-ids", "oidc-device-client-id", "oidc-device-client-secret", "oidc-issuer",
			"oidc-web-client-id", "oidc-web-client-secret", "public-origin", "requests-per-second", "store",
		}, tbhubcmdtest.TelemetryFlags, tbhubcmdtest.HTTPLimitFlags, blobStreamFlags, credentialFlags, diskFlags, instanceFlags)},
		{"tbhub token create", func(fs *flag.FlagSet) { storageFlags(fs); tokenFlags(fs) }, []string{"blobs", "data", "max-bucketed-points", "name", "store", "user"}},
		{"tbhub migrate", func(fs *flag.FlagSet) { storageFlags(fs) }, []string{"blobs", "data", "max-bucketed-points", "store"}},
		{"read-service", func(fs *flag.FlagSet) { readservice.NewFlags(fs) }, slices.Concat([]string{
			"addr", "blob-key-secret", "blobs", "data", "max-bucketed-points", "metrics-addr", "oidc-client-ids", "oidc-issuer",
			"port", "public-origin", "store",
		}, tbhubcmdtest.TelemetryFlags, credentialFlags)},
	}
	for _, b := range binaries {
		fs := flag.NewFlagSet(b.name, flag.ContinueOnError)
		b.flags(fs)
		tbhubcmdtest.CheckFlags(t, fs, b.want)
	}
}
