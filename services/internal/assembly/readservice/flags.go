package readservice

import (
	"encoding/base64"
	"flag"
	"fmt"
	"strings"

	"github.com/tbhub/tbhub/services/internal/api/reader"
	"github.com/tbhub/tbhub/services/internal/policy/auth"
	"github.com/tbhub/tbhub/services/internal/policy/limits"
	"github.com/tbhub/tbhub/services/internal/storage/store/spannerstore"
	"github.com/tbhub/tbhub/services/serverkit/clientaddr"
	"github.com/tbhub/tbhub/services/serverkit/config"
	"github.com/tbhub/tbhub/services/serverkit/telemetry"
)

// Flags are the read service's command-line flags (services/cmd/read-service
// parses them with config.Parse).
type Flags struct {
	cfg                               Config
	secret, origin, issuer, clientIDs string
	Telemetry                         telemetry.Config
	aliases                           []config.Alias
}

// NewFlags defines the read service's flags on fs.
func NewFlags(fs *flag.FlagSet) *Flags {
	f := &Flags{}
	fs.StringVar(&f.cfg.Addr, "addr", ":8080", "listen address (gRPC)")
	config.PortFlag(fs, "addr")
	fs.StringVar(&f.cfg.Backend.DataDir, "data", "", "data directory of an embedded store")
	fs.StringVar(&f.cfg.Backend.Store, "store", "", "Cloud Spanner database: spanner://projects/P/instances/I/databases/D")
	fs.StringVar(&f.cfg.Backend.Blobs, "blobs", "", "blob bucket: gs://BUCKET[/PREFIX]")
	fs.Int64Var(&f.cfg.Backend.MaxBucketedPoints, "max-bucketed-points", spannerstore.DefaultMaxBucketedPoints, "points of one series a bucketed scalar read may read on --store when Spanner reads its window whole (no summaries); past it, a sampled read of 4 per bucket")
	fs.StringVar(&f.secret, "blob-key-secret", "", "base64 secret authenticating blob keys, shared by every replica (>= 16 bytes)")
	fs.StringVar(&f.origin, "public-origin", "", "origin experiments are viewed at, for data_location")
	fs.StringVar(&f.issuer, "oidc-issuer", "https://accounts.google.com", "OpenID Connect issuer")
	fs.StringVar(&f.clientIDs, "oidc-client-ids", "", "accepted OAuth client IDs, comma-separated; ID tokens are refused without one")
	f.cfg.BadCredentials = limits.DefaultCredentialLimits()
	config.Bind(fs, f.cfg.BadCredentials.Settings()...)
	config.Bind(fs, limits.InstancesSetting(&f.cfg.BadCredentials.Instances))
	config.Bind(fs, f.cfg.TrustedProxyHops.Setting())
	config.Bind(fs, clientaddr.SecretSetting(&f.cfg.ForwardingSecret))
	fs.StringVar(&f.cfg.MetricsAddr, "metrics-addr", "", "HTTP address serving Prometheus GET /metrics and the probes /healthz, /readyz (off if empty)")
	f.Telemetry.Service = "tbhub-read"
	telemetrySettings, telemetryAliases := f.Telemetry.Settings()
	config.Bind(fs, telemetrySettings...)
	f.aliases = append([]config.Alias{config.Port("addr")}, telemetryAliases...)
	return f
}

// Aliases are the variables besides TBHUB_<FLAG> that set the flags, for
// config.Parse.
func (f *Flags) Aliases() []config.Alias { return f.aliases }

// Config is the parsed flags' configuration, validated.
func (f *Flags) Config() (Config, error) {
	cfg := f.cfg
	key, err := base64.StdEncoding.DecodeString(f.secret)
	if err != nil {
		return cfg, fmt.Errorf("--blob-key-secret: not base64: %w", err)
	}
	cfg.Reader = reader.Config{BlobKeySecret: key, PublicOrigin: strings.TrimSuffix(f.origin, "/")}
	if f.clientIDs != "" {
		cfg.OIDC = auth.OIDCConfig{Issuer: f.issuer, ClientIDs: strings.Split(f.clientIDs, ",")}
	}
	if err := f.Telemetry.Validate(); err != nil {
		return cfg, err
	}
	return cfg, cfg.Validate()
}
