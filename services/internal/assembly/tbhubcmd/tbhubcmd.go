// Package tbhubcmd is the `tbhub` command line: `serve`, `token create`
// and `migrate`, each a flag set turned into a config for the packages
// that do the work (backend, serve), and the write service's. `tbhub
// serve` mounts TensorBoard's HTTP API and the web UI, which live in
// frontend-api, a module above services: the binary that has them
// (services/allinone/cmd/tbhub, a module above both) hands them to Run as
// a ReadPath, so services imports nothing of frontend-api.
package tbhubcmd

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"cloud.google.com/go/spanner"
	database "cloud.google.com/go/spanner/admin/database/apiv1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/tbhub/tbhub/services/internal/api/signin"
	"github.com/tbhub/tbhub/services/internal/api/writer"
	"github.com/tbhub/tbhub/services/internal/assembly/serve"
	"github.com/tbhub/tbhub/services/internal/policy/auth"
	"github.com/tbhub/tbhub/services/internal/policy/limits"
	"github.com/tbhub/tbhub/services/internal/run/backend"
	"github.com/tbhub/tbhub/services/internal/run/diskspace"
	"github.com/tbhub/tbhub/services/internal/storage/blob"
	"github.com/tbhub/tbhub/services/internal/storage/store"
	"github.com/tbhub/tbhub/services/internal/storage/store/instrumented"
	"github.com/tbhub/tbhub/services/internal/storage/store/spannerstore"
	"github.com/tbhub/tbhub/services/internal/storage/store/sqlitestore"
	"github.com/tbhub/tbhub/services/serverkit/clientaddr"
	"github.com/tbhub/tbhub/services/serverkit/config"
	"github.com/tbhub/tbhub/services/serverkit/lifecycle"
	"github.com/tbhub/tbhub/services/serverkit/telemetry"
)

const usage = `tbhub hosts TensorBoard data: upload logdirs with tbup, read them in the web UI,
in TensorBoard or with its HTTP API.

Usage:
  tbhub serve [--data DIR] [--addr HOST:PORT] [--grpc-addr HOST:PORT]
  tbhub serve --store spanner://projects/P/instances/I/databases/D --blobs gs://BUCKET[/PREFIX] [...]
  tbhub token create --user NAME [--data DIR | --store ... --blobs ...]
  tbhub migrate [--data DIR | --store ...]

Commands:
  serve            run the whole service in one process: write and read services, HTTP API,
                   web UI (embedded store in DIR, or Cloud Spanner + Cloud Storage)
  token create     print a new API token for a user (created if it does not exist)
  migrate          create or update the store's schema

Every flag can also be set as TBHUB_<FLAG> (--grpc-addr: TBHUB_GRPC_ADDR).
Run 'tbhub <command> -h' for a command's flags.
`

// Commands' usage lines, by flag set name.
var synopses = map[string]string{
	"serve":         "tbhub serve [flags]\n\nRuns the whole service in one process.",
	"token create":  "tbhub token create --user NAME [flags]\n\nPrints a new API token for the user (created if it does not exist).",
	"migrate":       "tbhub migrate [flags]\n\nCreates or updates the store's schema. On Spanner it then converts scalar\nseries of the layout before chunks, one series at a time, printing progress;\nservers keep serving, and a rerun resumes with what is left.",
	"write-service": "write-service [flags]\n\nRuns the write service (gRPC and its HTTP endpoints).",
}

// ErrUsage marks command-line mistakes (exit status 2).
var ErrUsage = errors.New("usage")

// ErrHelp ends a command asked for its usage (-h, --help), which was
// printed (exit status 0).
var ErrHelp = errors.New("help requested")

// ReadPath is what `tbhub serve` mounts beside the write service: the
// read service, TensorBoard's HTTP API, browser sign-in and the web UI.
// Its HTTP half is frontend-api's, so it is made above services (package
// services/allinone/readpath) and handed to Run.
type ReadPath interface {
	// RegisterFlags defines its flags on serve's flag set.
	RegisterFlags(fs *flag.FlagSet)
	// Mount mounts it on srv's gRPC server and mux; conn reaches srv's
	// gRPC server as the process's own HTTP side (it names the HTTP
	// client each call serves). The returned stop is called when srv
	// starts stopping.
	Mount(srv *serve.Server, conn grpc.ClientConnInterface, st store.Reader, blobs blob.Store, cfg ReadPathConfig) (stop func(), err error)
}

// ReadPathConfig is what serve's own flags say about the read path.
type ReadPathConfig struct {
	// MaxListedRuns bounds every run listing: the runs per experiment
	// limit this process enforces (math.MaxInt64 when unlimited).
	MaxListedRuns int64
	// OIDC is the issuer and the client IDs the write service accepts;
	// WebClientID (one of them, the first if empty) and WebClientSecret
	// are how the web UI signs in with it.
	OIDC                         auth.OIDCConfig
	WebClientID, WebClientSecret string
	PublicOrigin                 string
	Logger                       *slog.Logger
}

// Run runs one tbhub command, `tbhub serve` with rp mounted (without a
// read path if nil). stdout gets what scripts read (a token) and usage
// asked for (tbhub -h, tbhub serve --help, tbhub help serve); the banner,
// logs and usage errors go to stderr. A command asked for its usage
// returns nil without running.
func Run(ctx context.Context, args []string, env config.Env, stdout, stderr io.Writer, rp ReadPath) error {
	if err := run(ctx, args, env, stdout, stderr, rp); !errors.Is(err, ErrHelp) {
		return err
	}
	return nil
}

func run(ctx context.Context, args []string, env config.Env, stdout, stderr io.Writer, rp ReadPath) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return ErrUsage
	}
	if len(args) >= 2 && args[0] == "help" { // tbhub help CMD: its -h
		args = append(args[1:], "-h")
	}
	switch args[0] {
	case "serve":
		return serveProcess(ctx, serveCommand, args[1:], env, stdout, stderr, rp)
	case "token":
		if len(args) >= 2 && config.WantsHelp(args[1:2]) {
			fmt.Fprintf(stdout, "Usage: tbhub token create --user NAME [flags]\n\nRun 'tbhub token create -h' for its flags.\n")
			return nil
		}
		if len(args) < 2 || args[1] != "create" {
			fmt.Fprint(stderr, usage)
			return ErrUsage
		}
		return runTokenCreate(ctx, args[2:], env, stdout, stderr)
	case "migrate":
		return runMigrate(ctx, args[1:], env, stdout, stderr)
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	}
	fmt.Fprintf(stderr, "tbhub: unknown command %q\n%s", args[0], usage)
	return ErrUsage
}

// storageFlags are the flags naming the backend, shared by every command.
func storageFlags(fs *flag.FlagSet) *backend.Spec {
	spec := &backend.Spec{}
	fs.StringVar(&spec.DataDir, "data", "", "data directory of the embedded store (default: a per-user data directory)")
	fs.StringVar(&spec.Store, "store", "", "Cloud Spanner database: spanner://projects/P/instances/I/databases/D")
	fs.StringVar(&spec.Blobs, "blobs", "", "blob bucket for --store: gs://BUCKET[/PREFIX]")
	fs.Int64Var(&spec.MaxBucketedPoints, "max-bucketed-points", spannerstore.DefaultMaxBucketedPoints, "points of one series a bucketed scalar read may read on --store when Spanner reads its window whole (no summaries); past it, a sampled read of 4 per bucket")
	return spec
}

// parse sets fs from env and args (package config: every flag also from
// TBHUB_<FLAG>); a mistake is ErrUsage. Asked for usage, it prints it to
// stdout and returns ErrHelp.
func parse(fs *flag.FlagSet, args []string, env config.Env, stdout, stderr io.Writer, aliases ...config.Alias) error {
	fs.SetOutput(stderr)
	syn, ok := synopses[fs.Name()]
	if !ok {
		syn = fs.Name() + " [flags]"
	}
	config.SetUsage(fs, syn)
	if err := config.Parse(fs, args, env, aliases...); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			config.PrintUsage(fs, stdout)
			return ErrHelp
		}
		fmt.Fprintf(stderr, "tbhub %s: %v\n", fs.Name(), err)
		return errors.Join(ErrUsage, err)
	}
	return nil
}

// completeSpec fills in what the environment says about the backend: the
// per-user data directory when neither --data nor --store is given
// ($XDG_DATA_HOME/tbhub, ~/.local/share/tbhub on Linux, the user
// configuration directory's tbhub folder elsewhere), and whether Spanner is
// the emulator.
func completeSpec(spec *backend.Spec, env config.Env) error {
	spec.SpannerEmulator = nonEmpty(env, "SPANNER_EMULATOR_HOST")
	if spec.Store != "" || spec.DataDir != "" {
		return nil
	}
	if d, ok := env("XDG_DATA_HOME"); ok && d != "" {
		spec.DataDir = filepath.Join(d, "tbhub")
		return nil
	}
	var err error
	if runtime.GOOS == "linux" {
		home, ok := env("HOME")
		if !ok || home == "" {
			err = errors.New("$HOME is not set")
		}
		spec.DataDir = filepath.Join(home, ".local", "share", "tbhub")
	} else {
		var d string
		d, err = os.UserConfigDir()
		spec.DataDir = filepath.Join(d, "tbhub")
	}
	if err != nil {
		spec.DataDir = ""
		return fmt.Errorf("no --data given and no per-user data directory: %w", err)
	}
	return nil
}

func nonEmpty(env config.Env, name string) bool {
	v, ok := env(name)
	return ok && v != ""
}

// process says what a serving command runs.
type process struct {
	name        string
	service     string // service.name in traces
	defaultAddr string
	firstStart  bool // create the owner user and print its token
	direct      bool // reached by clients directly, not through a proxy
}

// DirectMaxConnsPerIP is tbhub serve's default --max-conns-per-ip: clients
// reach it directly, so a client address is one client. The write service
// runs behind Cloud Run's proxy and has no such limit by default.
const DirectMaxConnsPerIP = 256

var (
	serveCommand        = process{name: "serve", service: "tbhub", defaultAddr: "localhost:6006", firstStart: true, direct: true}
	writeServiceCommand = process{name: "write-service", service: "tbhub-write", defaultAddr: ":8080"}
)

// RunWriteService runs the write service alone, as Cloud Run runs it: the
// writer, exporter, experiments and auth gRPC services and the uploader
// handshake on one port ($PORT, default 8080), configured by flags, each
// also from TBHUB_<FLAG> (package config). Asked for its usage, it prints
// it to stdout and returns nil.
func RunWriteService(ctx context.Context, args []string, env config.Env, stdout, stderr io.Writer) error {
	if err := serveProcess(ctx, writeServiceCommand, args, env, stdout, stderr, nil); !errors.Is(err, ErrHelp) {
		return err
	}
	return nil
}

// serveFlags are the flags of a serving command.
type serveFlags struct {
	spec                             *backend.Spec
	addr, grpcAddr, origin, endpoint *string
	issuer, clientIDs                *string
	deviceClient, deviceSecret       *string
	webClient, webSecret             *string
	testRPCs                         *bool
	abandonedBlobAge                 *time.Duration
	reserve                          diskspace.Reserve
	createRequestTTL                 *time.Duration
	sweepLeaseTTL                    *time.Duration
	lim                              limits.Limits
	hops                             clientaddr.Hops
	forwardingSecret                 string
	http                             lifecycle.HTTPLimits
	tcfg                             telemetry.Config
	aliases                          []config.Alias
}

// ServeFlags defines `tbhub serve`'s flags on fs, rp's included, as Run
// does (for tests listing them).
func ServeFlags(fs *flag.FlagSet, rp ReadPath) {
	newServeFlags(fs, serveCommand, rp)
}

// newServeFlags defines the flags of proc on fs, and rp's if not nil.
func newServeFlags(fs *flag.FlagSet, proc process, rp ReadPath) *serveFlags {
	f := &serveFlags{spec: storageFlags(fs)}
	f.addr = fs.String("addr", proc.defaultAddr, "HTTP address (also gRPC unless --grpc-addr); Cloud Run's $PORT sets it to :PORT")
	f.grpcAddr = fs.String("grpc-addr", "", "separate gRPC address (default: the HTTP port)")
	f.origin = fs.String("public-origin", "", "origin users reach this server at (default: http://ADDR)")
	f.endpoint = fs.String("api-endpoint", "", "gRPC target told to uploaders (default: dns:///GRPC-ADDR)")
	f.issuer = fs.String("oidc-issuer", "https://accounts.google.com", "OpenID Connect issuer for sign-in")
	f.clientIDs = fs.String("oidc-client-ids", "", "accepted OAuth client IDs (comma-separated); OIDC sign-in is off without one")
	f.deviceClient = fs.String("oidc-device-client-id", "", "OAuth client `tbup auth login` signs in with by the device flow (default: the first of --oidc-client-ids)")
	f.deviceSecret = fs.String("oidc-device-client-secret", "", "that client's secret, if the issuer wants one (installed-app secrets are published to clients)")
	f.webClient = fs.String("oidc-web-client-id", "", "OAuth web client the web UI signs in with (authorization code + PKCE; redirect URI ORIGIN/auth/callback; default: the first of --oidc-client-ids)")
	f.webSecret = fs.String("oidc-web-client-secret", "", "that web client's secret, if the issuer wants one (kept on the server)")
	f.testRPCs = fs.Bool("enable-test-rpcs", false, "enable PurgeData and DeleteOwnUser")
	f.lim = limits.Default()
	fs.Int64Var(&f.lim.MaxBlobBytes, "max-blob-bytes", f.lim.MaxBlobBytes, "largest blob accepted (advertised to uploaders)")
	fs.Int64Var(&f.lim.MaxExperimentsPerUser, "max-experiments-per-user", f.lim.MaxExperimentsPerUser, "experiments quota per user (0: unlimited)")
	fs.Int64Var(&f.lim.MaxPointsPerUser, "max-points-per-user", f.lim.MaxPointsPerUser, "scalar and tensor points quota per user (0: unlimited)")
	fs.Int64Var(&f.lim.MaxBlobBytesPerUser, "max-blob-bytes-per-user", f.lim.MaxBlobBytesPerUser, "blob bytes quota per user (0: unlimited)")
	fs.DurationVar(&f.lim.UsageRefresh, "usage-refresh", f.lim.UsageRefresh, "how long an instance trusts its cached copy of a user's usage (a pre-check; the points quota is checked exactly in the write)")
	fs.Int64Var(&f.lim.MaxTokensPerUser, "max-tokens-per-user", f.lim.MaxTokensPerUser, "live API tokens (web sessions included) per user (0: unlimited)")
	fs.Int64Var(&f.lim.MaxRunsPerExperiment, "max-runs-per-experiment", f.lim.MaxRunsPerExperiment, "runs one experiment may have, however created; also bounds every run listing (0: unlimited)")
	fs.Int64Var(&f.lim.MaxPendingGrantsPerUser, "max-pending-grants-per-user", f.lim.MaxPendingGrantsPerUser, "grants by email not yet claimed by a sign-in, over one user's experiments (0: unlimited)")
	fs.Float64Var(&f.lim.RequestsPerSecond, "requests-per-second", f.lim.RequestsPerSecond, "per-user write rate (0: unlimited)")
	fs.Int64Var(&f.lim.MaxMetadataBytes, "max-metadata-bytes", f.lim.MaxMetadataBytes, "largest summary metadata of a series (plugin_data.content included)")
	fs.IntVar(&f.lim.MaxBlobStreamsPerUser, "max-blob-streams-per-user", f.lim.MaxBlobStreamsPerUser, "WriteBlob streams one user may have open at once")
	fs.Int64Var(&f.spec.MaxUploadBufferBytes, "max-upload-buffer-bytes", backend.DefaultMaxUploadBufferBytes, "memory all blob uploads to GCS may buffer at once; past it an upload is refused, RESOURCE_EXHAUSTED (negative: unbounded)")
	fs.IntVar(&f.lim.MaxBlobStreamsPerConn, "max-blob-streams-per-conn", f.lim.MaxBlobStreamsPerConn, "WriteBlob streams one user may have open at once from one client address (the peer, or the one --trusted-proxy-hops trusts)")
	fs.DurationVar(&f.lim.BlobStreamIdleTimeout, "blob-stream-idle-timeout", f.lim.BlobStreamIdleTimeout, "a WriteBlob stream with no request for this long is closed (what arrived is kept)")
	fs.DurationVar(&f.lim.BlobStreamTimeout, "blob-stream-timeout", f.lim.BlobStreamTimeout, "longest a WriteBlob stream may last (what arrived is kept)")
	f.abandonedBlobAge = fs.Duration("abandoned-blob-age", serve.DefaultAbandonedBlobAge,
		"an unfinished blob not written for this long is removed and its bytes leave the owner's quota; at least twice --blob-stream-timeout (negative: never)")
	f.reserve = diskspace.DefaultReserve()
	config.Bind(fs, f.reserve.Settings()...)
	f.createRequestTTL = fs.Duration("create-request-ttl", writer.DefaultCreateRequestTTL,
		"how long a CreateExperiment request ID is remembered: a retry within it answers the same experiment")
	f.sweepLeaseTTL = fs.Duration("sweep-lease-ttl", serve.DefaultSweepLeaseTTL,
		"one process at a time runs each background sweep, under a lease it renews every minute; a process that stops without releasing it hands the sweep over after this long (more than a minute)")
	config.Bind(fs, f.lim.BadCredentials.Settings()...)
	config.Bind(fs, limits.InstancesSetting(&f.lim.Instances))
	config.Bind(fs, f.hops.Setting())
	config.Bind(fs, clientaddr.SecretSetting(&f.forwardingSecret))
	f.http = lifecycle.DefaultHTTPLimits()
	if proc.direct {
		f.http.MaxConnsPerIP = DirectMaxConnsPerIP
	}
	config.Bind(fs, f.http.Settings()...)
	if rp != nil {
		rp.RegisterFlags(fs)
	}
	f.tcfg = telemetry.Config{Service: proc.service}
	telemetrySettings, telemetryAliases := f.tcfg.Settings()
	config.Bind(fs, telemetrySettings...)
	f.aliases = append([]config.Alias{config.Port("addr")}, telemetryAliases...)
	return f
}

func serveProcess(ctx context.Context, proc process, args []string, env config.Env, stdout, stderr io.Writer, rp ReadPath) error {
	fs := flag.NewFlagSet(proc.name, flag.ContinueOnError)
	f := newServeFlags(fs, proc, rp)
	if err := parse(fs, args, env, stdout, stderr, f.aliases...); err != nil {
		return err
	}
	if err := f.tcfg.Validate(); err != nil {
		return err
	}
	if err := f.reserve.Validate(); err != nil {
		return errors.Join(ErrUsage, err)
	}
	spec, addr, grpcAddr, origin, endpoint := f.spec, f.addr, f.grpcAddr, f.origin, f.endpoint
	issuer, clientIDs, deviceClient, deviceSecret, webClient := f.issuer, f.clientIDs, f.deviceClient, f.deviceSecret, f.webClient
	testRPCs, lim, tcfg := f.testRPCs, f.lim, f.tcfg
	lim.BadCredentials.Instances = lim.Instances
	if err := completeSpec(spec, env); err != nil {
		return err
	}
	metrics := telemetry.NewMetrics()
	tel, err := telemetry.Start(ctx, tcfg, metrics)
	if err != nil {
		return err
	}
	defer tel.Shutdown(context.WithoutCancel(ctx))
	logger := telemetry.NewLogger(stderr, tel.Project())
	tel.SetGlobal(logger)
	spec.LockDataDir = true // one server per data folder
	b, err := backend.Open(ctx, *spec)
	if err != nil {
		return err
	}
	defer b.Close()
	st := instrumented.Wrap(b.Store, tel, metrics)
	cfg := serve.Config{HTTPAddr: *addr, GRPCAddr: *grpcAddr, PublicOrigin: *origin, APIEndpoint: *endpoint,
		EnableTestRPCs: *testRPCs, Limits: lim, TrustedProxyHops: f.hops, ForwardingSecret: f.forwardingSecret, HTTP: f.http, Logger: logger, Metrics: metrics, Telemetry: tel,
		AbandonedBlobAge: *f.abandonedBlobAge, CreateRequestTTL: *f.createRequestTTL, SweepLeaseTTL: *f.sweepLeaseTTL}
	if spec.Store == "" && !f.reserve.Off() { // the embedded store's disk
		if cfg.DiskSpace, err = diskspace.NewMonitor(spec.DataDir, f.reserve, diskspace.Options{Logger: logger}); err != nil {
			return err
		}
	}
	if *clientIDs != "" {
		cfg.OIDC = auth.OIDCConfig{Issuer: *issuer, ClientIDs: strings.Split(*clientIDs, ",")}
		for _, c := range []string{*deviceClient, *webClient} {
			if c != "" && !slices.Contains(cfg.OIDC.ClientIDs, c) {
				// ID tokens from the device flow and the web UI are for those clients: accept them.
				cfg.OIDC.ClientIDs = append(cfg.OIDC.ClientIDs, c)
			}
		}
	}
	srv, err := serve.New(st, b.Blobs, cfg)
	if err != nil {
		return err
	}
	// How `tbup auth login` signs in: published even when empty (404 = tokens only).
	signIn := signin.Config{}
	if *clientIDs != "" {
		signIn = signin.Config{Issuer: *issuer, ClientID: cfg.OIDC.ClientIDs[0], ClientSecret: *deviceSecret}
		if *deviceClient != "" {
			signIn.ClientID = *deviceClient
		}
	}
	srv.Mux().Handle(signin.Path, signin.Handler(signIn))
	if rp != nil {
		// The read path: TensorBoard's data provider on the gRPC server
		// and its HTTP API on the mux, calling back in over loopback gRPC.
		// Each call names the HTTP client it serves (package clientaddr).
		conn, err := grpc.NewClient(srv.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()), tel.GRPCClient(),
			grpc.WithChainUnaryInterceptor(srv.InternalCalls().Unary()), grpc.WithChainStreamInterceptor(srv.InternalCalls().Stream()))
		if err != nil {
			return err
		}
		defer conn.Close()
		stop, err := rp.Mount(srv, conn, st, b.Blobs, f.readPath(cfg.OIDC, srv.Origin(), logger))
		if err != nil {
			return err
		}
		srv.OnStop(stop) // held long polls answered, not waited for by the drain
	}
	token := ""
	if proc.firstStart {
		if token, err = srv.FirstStart(ctx); err != nil {
			return err
		}
	}
	printBanner(stderr, srv, b.Description, token, cfg.OIDC.Issuer, proc.direct, rp != nil)
	return srv.Serve(ctx)
}

// readPath is what serve's own flags say about the read path. Run lists
// are bounded by the runs per experiment limit this process enforces.
func (f *serveFlags) readPath(o auth.OIDCConfig, origin string, logger *slog.Logger) ReadPathConfig {
	maxRuns := f.lim.MaxRunsPerExperiment
	if maxRuns == 0 { // unlimited
		maxRuns = math.MaxInt64
	}
	return ReadPathConfig{MaxListedRuns: maxRuns, OIDC: o, WebClientID: *f.webClient, WebClientSecret: *f.webSecret,
		PublicOrigin: origin, Logger: logger}
}

// printBanner says where srv serves what; direct: clients reach srv at its
// origin (tbhub serve), not at an address only the deployment knows.
func printBanner(w io.Writer, srv *serve.Server, where, token, issuer string, direct, readPath bool) {
	fmt.Fprintf(w, "tbhub is serving %s\n", where)
	if readPath {
		fmt.Fprintf(w, "  web UI:             %s/\n", srv.Origin())
		fmt.Fprintf(w, "  experiments:        %s/experiment/<id>/  (TensorBoard's JSON API under .../data/)\n", srv.Origin())
	}
	if direct {
		fmt.Fprintf(w, "  uploader handshake: %s/api/uploader\n", srv.Origin())
	} else {
		// The write service alone: uploaders reach it at its own URL (which
		// only the deployment knows); the experiment links it hands out
		// point at the frontend's origin.
		fmt.Fprintf(w, "  uploader handshake: POST /api/uploader on this service (listening on %s); tbup upload --server takes this service's URL\n", srv.HTTPAddr())
		fmt.Fprintf(w, "  experiment links:   %s/experiment/<id>/  (the frontend: --public-origin)\n", srv.Origin())
	}
	services := "write, export, experiments, auth"
	if readPath {
		services = "write, export, read, experiments, auth"
	}
	fmt.Fprintf(w, "  gRPC (%s; health, reflection): %s\n", services, srv.APIEndpoint())
	fmt.Fprintf(w, "  probes:             %s/healthz %s/readyz\n", srv.Origin(), srv.Origin())
	if issuer != "" {
		fmt.Fprintf(w, "  sign-in:            ID tokens from %s\n", issuer)
	} else {
		fmt.Fprintf(w, "  sign-in:            API tokens only (set --oidc-client-ids to accept ID tokens)\n")
	}
	if token != "" {
		fmt.Fprintf(w, "\nFirst start: created the user %q. Its API token is shown once; keep it secret:\n\n  %s\n\n", serve.OwnerName, token)
		fmt.Fprintf(w, "Upload a logdir with:\n\n  TBUP_TOKEN=%s tbup upload --server %s --logdir LOGDIR\n\n", token, srv.Origin())
		fmt.Fprintf(w, "More tokens: tbhub token create --user NAME\n")
	}
}

// tokenFlags are `tbhub token create`'s own flags: the user and the
// token's label.
func tokenFlags(fs *flag.FlagSet) (user, label *string) {
	return fs.String("user", "", "user name (created if it does not exist)"),
		fs.String("name", "tbhub token create", "label of the token")
}

func runTokenCreate(ctx context.Context, args []string, env config.Env, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("token create", flag.ContinueOnError)
	spec := storageFlags(fs)
	user, label := tokenFlags(fs)
	if err := parse(fs, args, env, stdout, stderr); err != nil {
		return err
	}
	if *user == "" {
		fmt.Fprintln(stderr, "tbhub token create: --user is required")
		return ErrUsage
	}
	if err := completeSpec(spec, env); err != nil {
		return err
	}
	b, err := backend.Open(ctx, *spec)
	if err != nil {
		return err
	}
	defer b.Close()
	a, err := auth.New(b.Store, auth.Config{})
	if err != nil {
		return err
	}
	secret, err := serve.IssueUserToken(ctx, b.Store, a, *user, *label)
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, secret)
	return nil
}

func runMigrate(ctx context.Context, args []string, env config.Env, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("migrate", flag.ContinueOnError)
	spec := storageFlags(fs)
	if err := parse(fs, args, env, stdout, stderr); err != nil {
		return err
	}
	if err := completeSpec(spec, env); err != nil {
		return err
	}
	if spec.Store == "" {
		if err := os.MkdirAll(spec.DataDir, 0o700); err != nil {
			return err
		}
		from, to, err := sqlitestore.Migrate(ctx, spec.DataDir+string(os.PathSeparator)+sqlitestore.DefaultFile)
		if err != nil {
			return err
		}
		fmt.Fprintf(stderr, "embedded store in %s: schema version %d -> %d\n", spec.DataDir, from, to)
		return nil
	}
	db, err := backend.SpannerDatabase(spec.Store)
	if err != nil {
		return err
	}
	admin, err := database.NewDatabaseAdminClient(ctx)
	if err != nil {
		return err
	}
	defer admin.Close()
	if err := spannerstore.Migrate(ctx, admin, db); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "%s: schema up to date\n", db)
	// Scalar series of the layout before chunks, converted one at a time
	// while servers keep serving; a rerun resumes with what is left.
	client, err := spanner.NewClient(ctx, db)
	if err != nil {
		return err
	}
	defer client.Close()
	st := spannerstore.New(client, spannerstore.Options{})
	// Experiments last written before the gallery sorted by a column.
	n, err := st.BackfillExperimentTimes(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "%s: update times of %d experiments taken from their series\n", db, n)
	converted := false
	err = st.MigrateScalarChunks(ctx, func(p spannerstore.ConversionProgress) {
		converted = true
		fmt.Fprintf(stderr, "scalar chunks: %d/%d series, %d/%d points converted\n", p.Series, p.TotalSeries, p.Points, p.TotalPoints)
	})
	if err != nil {
		return err
	}
	if !converted {
		fmt.Fprintf(stderr, "%s: no scalar series left to convert to chunks\n", db)
	}
	// Then the summaries bucketed reads use, for long series without them.
	summarized := false
	err = st.SummarizeScalars(ctx, func(p spannerstore.ConversionProgress) {
		summarized = true
		fmt.Fprintf(stderr, "scalar summaries: %d/%d series, %d/%d points summarized\n", p.Series, p.TotalSeries, p.Points, p.TotalPoints)
	})
	if err != nil {
		return err
	}
	if !summarized {
		fmt.Fprintf(stderr, "%s: no scalar series left to summarize\n", db)
	}
	// Per-user usage rows counted from the series (0014_user_usage.sql),
	// one user per transaction; a rerun resumes with the users left.
	return st.BackfillUserUsage(ctx, func(done, total int64) {
		if done == total || done%1000 == 0 {
			fmt.Fprintf(stderr, "user usage: %d/%d users counted\n", done, total)
		}
	})
}

// Main is the body of a tbhub binary's main: it cancels the context on
// SIGINT or SIGTERM (a graceful stop for the serving commands), runs run
// and exits 2 on usage errors, 1 on other errors.
func Main(name string, run func(ctx context.Context) error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx)
	stop()
	switch {
	case errors.Is(err, ErrHelp):
	case errors.Is(err, ErrUsage):
		os.Exit(2)
	case err != nil:
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		os.Exit(1)
	}
}
