// Package tbhubcmd is the `tbhub` command line: `serve`, `token create`
// and `migrate`, each a flag set turned into a config for the packages
// that do the work (backend, serve). services/cmd/tbhub only wires signals
// and exit codes around Run.
package tbhubcmd

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"

	database "cloud.google.com/go/spanner/admin/database/apiv1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/tbhub/tbhub/frontend-api/session"
	"github.com/tbhub/tbhub/frontend-api/webui"
	"github.com/tbhub/tbhub/services/internal/auth"
	"github.com/tbhub/tbhub/services/internal/backend"
	"github.com/tbhub/tbhub/services/internal/limits"
	"github.com/tbhub/tbhub/services/internal/reader"
	"github.com/tbhub/tbhub/services/internal/readpath"
	"github.com/tbhub/tbhub/services/internal/serve"
	"github.com/tbhub/tbhub/services/internal/signin"
	"github.com/tbhub/tbhub/services/internal/store/instrumented"
	"github.com/tbhub/tbhub/services/internal/store/spannerstore"
	"github.com/tbhub/tbhub/services/internal/store/sqlitestore"
	"github.com/tbhub/tbhub/services/serverkit/telemetry"
)

const usage = `usage:
  tbhub serve [--data DIR] [--addr HOST:PORT] [--grpc-addr HOST:PORT]
  tbhub serve --store spanner://projects/P/instances/I/databases/D --blobs gs://BUCKET[/PREFIX] [...]
  tbhub token create --user NAME [--data DIR | --store ... --blobs ...]
  tbhub migrate [--data DIR | --store ...]
`

// ErrUsage marks command-line mistakes (exit status 2).
var ErrUsage = errors.New("usage")

// Run runs one tbhub command. stdout gets what scripts read (a token); the
// banner and logs go to stderr.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return ErrUsage
	}
	switch args[0] {
	case "serve":
		return runServe(ctx, args[1:], stderr)
	case "token":
		if len(args) < 2 || args[1] != "create" {
			fmt.Fprint(stderr, usage)
			return ErrUsage
		}
		return runTokenCreate(ctx, args[2:], stdout, stderr)
	case "migrate":
		return runMigrate(ctx, args[1:], stderr)
	case "help", "-h", "--help":
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
	return spec
}

func parse(fs *flag.FlagSet, args []string, stderr io.Writer) error {
	fs.SetOutput(stderr)
	if err := fs.Parse(args); err != nil {
		return ErrUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "tbhub %s: unexpected arguments %q\n", fs.Name(), fs.Args())
		return ErrUsage
	}
	return nil
}

func defaultDataDir(spec *backend.Spec) error {
	if spec.Store == "" && spec.DataDir == "" {
		d, err := backend.DefaultDataDir()
		if err != nil {
			return fmt.Errorf("no --data given and no per-user data directory: %w", err)
		}
		spec.DataDir = d
	}
	return nil
}

// process says what a serving command runs.
type process struct {
	name        string
	service     string // service.name in traces
	defaultAddr string
	readPath    bool // mount the read service and TensorBoard's HTTP API
	firstStart  bool // create the owner user and print its token
}

func runServe(ctx context.Context, args []string, stderr io.Writer) error {
	return serveProcess(ctx, process{name: "serve", service: "tbhub", defaultAddr: "localhost:6006", readPath: true, firstStart: true}, args, stderr)
}

// RunWriteService runs the write service alone, as Cloud Run runs it: the
// writer, exporter, experiments and auth gRPC services and the uploader
// handshake on one port ($PORT, default 8080), configured by flags or
// TBHUB_* environment variables.
func RunWriteService(ctx context.Context, args []string, stderr io.Writer) error {
	return serveProcess(ctx, process{name: "write-service", service: "tbhub-write", defaultAddr: ":8080"}, args, stderr)
}

func serveProcess(ctx context.Context, proc process, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet(proc.name, flag.ContinueOnError)
	spec := storageFlags(fs)
	addr := fs.String("addr", proc.defaultAddr, "HTTP address (also gRPC unless --grpc-addr); $PORT overrides the default")
	grpcAddr := fs.String("grpc-addr", "", "separate gRPC address (default: the HTTP port)")
	origin := fs.String("public-origin", "", "origin users reach this server at (default: http://ADDR)")
	endpoint := fs.String("api-endpoint", "", "gRPC target told to uploaders (default: dns:///GRPC-ADDR)")
	issuer := fs.String("oidc-issuer", "https://accounts.google.com", "OpenID Connect issuer for sign-in")
	clientIDs := fs.String("oidc-client-ids", "", "accepted OAuth client IDs (comma-separated); OIDC sign-in is off without one")
	deviceClient := fs.String("oidc-device-client-id", "", "OAuth client `tbup auth login` signs in with by the device flow (default: the first of --oidc-client-ids)")
	deviceSecret := fs.String("oidc-device-client-secret", "", "that client's secret, if the issuer wants one (installed-app secrets are published to clients)")
	webClient := fs.String("oidc-web-client-id", "", "OAuth web client the web UI signs in with (authorization code + PKCE; redirect URI ORIGIN/auth/callback; default: the first of --oidc-client-ids)")
	webSecret := fs.String("oidc-web-client-secret", "", "that web client's secret, if the issuer wants one (kept on the server)")
	testRPCs := fs.Bool("enable-test-rpcs", false, "enable PurgeData and DeleteOwnUser")
	lim := limits.Default()
	fs.Int64Var(&lim.MaxBlobBytes, "max-blob-bytes", lim.MaxBlobBytes, "largest blob accepted (advertised to uploaders)")
	fs.Int64Var(&lim.MaxExperimentsPerUser, "max-experiments-per-user", lim.MaxExperimentsPerUser, "experiments quota per user (0: unlimited)")
	fs.Int64Var(&lim.MaxPointsPerUser, "max-points-per-user", lim.MaxPointsPerUser, "scalar and tensor points quota per user (0: unlimited)")
	fs.Int64Var(&lim.MaxBlobBytesPerUser, "max-blob-bytes-per-user", lim.MaxBlobBytesPerUser, "blob bytes quota per user (0: unlimited)")
	fs.Float64Var(&lim.RequestsPerSecond, "requests-per-second", lim.RequestsPerSecond, "per-user write rate (0: unlimited)")
	tcfg := telemetry.Config{Service: proc.service}
	tcfg.RegisterFlags(fs, os.Getenv)
	if err := defaultsFromEnv(fs); err != nil {
		return err
	}
	if err := parse(fs, args, stderr); err != nil {
		return err
	}
	if port := os.Getenv("PORT"); port != "" && !flagSet(fs, "addr") && os.Getenv(envName("addr")) == "" {
		*addr = ":" + port
	}
	if err := defaultDataDir(spec); err != nil {
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
	b, err := backend.Open(ctx, *spec)
	if err != nil {
		return err
	}
	defer b.Close()
	st := instrumented.Wrap(b.Store, tel, metrics)
	cfg := serve.Config{HTTPAddr: *addr, GRPCAddr: *grpcAddr, PublicOrigin: *origin, APIEndpoint: *endpoint,
		EnableTestRPCs: *testRPCs, Limits: lim, Logger: logger, Metrics: metrics, Telemetry: tel}
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
	if proc.readPath {
		// The read path: TensorBoard's data provider on the gRPC server
		// and its HTTP API on the mux, calling back in over loopback gRPC.
		conn, err := grpc.NewClient(srv.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()), tel.GRPCClient())
		if err != nil {
			return err
		}
		defer conn.Close()
		if _, _, err := readpath.Mount(srv.GRPCServer(), srv.Mux(), conn, st, b.Blobs, readpath.Config{
			SignIn: webSignIn(cfg.OIDC, *webClient, *webSecret), PublicOrigin: srv.Origin(),
			Reader: reader.Config{BlobKeySecret: reader.RandomSecret()}, Logger: logger,
		}); err != nil {
			return err
		}
		ui, err := webui.New()
		if err != nil {
			return err
		}
		ui.Mount(srv.Mux())
	}
	token := ""
	if proc.firstStart {
		if token, err = srv.FirstStart(ctx); err != nil {
			return err
		}
	}
	printBanner(stderr, srv, b.Description, token, cfg.OIDC.Issuer, proc.readPath)
	return srv.Serve(ctx)
}

// webSignIn is how the web UI signs in with the OIDC issuer: nil (API
// tokens only) without accepted client IDs; the web client must be one of
// them, so the ID tokens it gets are accepted.
func webSignIn(o auth.OIDCConfig, clientID, secret string) *session.OIDC {
	if len(o.ClientIDs) == 0 {
		return nil
	}
	if clientID == "" {
		clientID = o.ClientIDs[0]
	}
	return &session.OIDC{Issuer: o.Issuer, ClientID: clientID, ClientSecret: secret}
}

// envName is the environment variable that sets a flag's default:
// TBHUB_ and the flag's name in upper case with underscores.
func envName(flagName string) string {
	return "TBHUB_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// defaultsFromEnv sets each flag from its TBHUB_* variable, if set, so that
// a deployment can configure everything through the environment; flags on
// the command line still win.
func defaultsFromEnv(fs *flag.FlagSet) error {
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		if v, ok := os.LookupEnv(envName(f.Name)); ok && err == nil {
			if serr := f.Value.Set(v); serr != nil {
				err = fmt.Errorf("%s=%q: %w", envName(f.Name), v, serr)
			}
		}
	})
	return err
}

func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

func printBanner(w io.Writer, srv *serve.Server, where, token, issuer string, readPath bool) {
	fmt.Fprintf(w, "tbhub is serving %s\n", where)
	if readPath {
		fmt.Fprintf(w, "  web UI:             %s/\n", srv.Origin())
		fmt.Fprintf(w, "  experiments:        %s/experiment/<id>/  (TensorBoard's JSON API under .../data/)\n", srv.Origin())
	}
	if readPath {
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

func runTokenCreate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("token create", flag.ContinueOnError)
	spec := storageFlags(fs)
	user := fs.String("user", "", "user name (created if it does not exist)")
	label := fs.String("name", "tbhub token create", "label of the token")
	if err := parse(fs, args, stderr); err != nil {
		return err
	}
	if *user == "" {
		fmt.Fprintln(stderr, "tbhub token create: --user is required")
		return ErrUsage
	}
	if err := defaultDataDir(spec); err != nil {
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

func runMigrate(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("migrate", flag.ContinueOnError)
	spec := storageFlags(fs)
	if err := parse(fs, args, stderr); err != nil {
		return err
	}
	if err := defaultDataDir(spec); err != nil {
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
	return nil
}

// Main is the body of a tbhub binary's main: it cancels the context on
// SIGINT or SIGTERM (a graceful stop for the serving commands), runs run
// and exits 2 on usage errors, 1 on other errors.
func Main(name string, run func(ctx context.Context) error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx)
	stop()
	switch {
	case errors.Is(err, ErrUsage):
		os.Exit(2)
	case err != nil:
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		os.Exit(1)
	}
}
