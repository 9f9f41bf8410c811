// Package readpath mounts the read path on a process: the read service
// (package reader) on its gRPC server and TensorBoard's HTTP API
// (frontend-api's httpapi) on its HTTP mux, the HTTP side calling the
// read and experiment services through a gRPC connection, exactly as the
// separately deployed frontend does. `tbhub serve` uses it (Serve, with
// the web UI); the Cloud Run binaries (services/cmd/read-service,
// frontend-api/cmd/frontend) run the two halves apart. It lives in the
// services/allinone module, above services and frontend-api, as the one
// place that imports both; its tests are the HTTP API's end-to-end goldens
// over the real stack.
package readpath

import (
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"google.golang.org/grpc"

	"github.com/tbhub/tbhub/frontend-api/httpapi"
	"github.com/tbhub/tbhub/frontend-api/session"
	"github.com/tbhub/tbhub/frontend-api/webui"
	authv1 "github.com/tbhub/tbhub/schemas/gen/go/tbhub/auth/v1"
	experimentsv1 "github.com/tbhub/tbhub/schemas/gen/go/tbhub/experiments/v1"
	datapb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/data"
	servicepb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/service"
	"github.com/tbhub/tbhub/services/internal/api/reader"
	"github.com/tbhub/tbhub/services/internal/assembly/serve"
	"github.com/tbhub/tbhub/services/internal/assembly/tbhubcmd"
	"github.com/tbhub/tbhub/services/internal/policy/auth"
	"github.com/tbhub/tbhub/services/internal/storage/blob"
	"github.com/tbhub/tbhub/services/internal/storage/store"
	"github.com/tbhub/tbhub/services/serverkit/config"
)

// Config configures both halves.
type Config struct {
	Reader reader.Config
	// Credentials for the HTTP side; the browser session's
	// (session.Handler.Credentials: the Authorization header, else the
	// session cookie) if nil.
	Credentials httpapi.Credentials
	// SignIn, if set, lets browsers sign in with this OIDC issuer (the
	// authorization-code flow); API-token sign-in is always there.
	SignIn *session.OIDC
	// PublicOrigin is where browsers reach the server (the OIDC redirect
	// URI, Secure cookies when https); from each request if empty.
	PublicOrigin string
	// CacheTTL is httpapi.Config.CacheTTL (0: its default; < 0: off).
	CacheTTL time.Duration
	// SamplesPerPlugin is httpapi.Config.SamplesPerPlugin (TensorBoard's
	// --samples_per_plugin).
	SamplesPerPlugin map[string]int64
	// Markdown is httpapi.Config.Markdown.
	Markdown httpapi.MarkdownLimits
	// Graphs is httpapi.Config.Graphs.
	Graphs httpapi.GraphLimits
	// Compare is httpapi.Config.Compare.
	Compare httpapi.CompareLimits
	// RunsTable is httpapi.Config.RunsTable.
	RunsTable httpapi.RunsTableLimits
	// Live is httpapi.Config.Live.
	Live   httpapi.LiveLimits
	Logger *slog.Logger
}

// Routes are the mux patterns the HTTP API is mounted under. The UI may
// mount /experiment/{eid}/ for its pages: these are more specific.
var Routes = httpapi.Routes

// Mount registers the read service on grpcServer, and the HTTP API and the
// browser sign-in routes (package session) on mux.
// conn must reach grpcServer (and the write service's experiment, writer
// and auth services, which the management routes call); a client made
// with grpc.NewClient connects lazily, so it may be made before the
// server serves. grpcServer's interceptors must include tenancy.Guard.
func Mount(grpcServer grpc.ServiceRegistrar, mux *http.ServeMux, conn grpc.ClientConnInterface, st store.Reader, blobs blob.Store, cfg Config) (*reader.Server, *httpapi.Handler, error) {
	if cfg.Reader.Logger == nil {
		cfg.Reader.Logger = cfg.Logger
	}
	rs, err := reader.New(st, blobs, cfg.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("readpath: %w", err)
	}
	rs.Register(grpcServer)
	sess, err := session.New(session.Config{Auth: authv1.NewAuthServiceClient(conn), OIDC: cfg.SignIn, PublicOrigin: cfg.PublicOrigin, Logger: cfg.Logger})
	if err != nil {
		return nil, nil, fmt.Errorf("readpath: %w", err)
	}
	if cfg.Credentials == nil {
		cfg.Credentials = sess.Credentials
	}
	h, err := httpapi.New(httpapi.Config{
		Data:        datapb.NewTensorBoardDataProviderClient(conn),
		Experiments: experimentsv1.NewExperimentServiceClient(conn),
		Writer:      servicepb.NewTensorBoardWriterServiceClient(conn),
		Auth:        authv1.NewAuthServiceClient(conn),
		Credentials: cfg.Credentials,
		CacheTTL:    cfg.CacheTTL,
		Logger:      cfg.Logger,

		SamplesPerPlugin: cfg.SamplesPerPlugin,
		Markdown:         cfg.Markdown,
		Graphs:           cfg.Graphs,
		Compare:          cfg.Compare,
		RunsTable:        cfg.RunsTable,
		Live:             cfg.Live,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("readpath: %w", err)
	}
	for _, p := range Routes {
		mux.Handle(p, h)
	}
	sess.Mount(mux)
	return rs, h, nil
}

// Serve is `tbhub serve`'s read path (a tbhubcmd.ReadPath): Mount's read
// service and HTTP API, configured by the HTTP API's flags, and the web
// UI.
type Serve struct {
	samples   httpapi.SamplesPerPlugin
	markdown  httpapi.MarkdownLimits
	graphs    httpapi.GraphLimits
	compare   httpapi.CompareLimits
	runsTable httpapi.RunsTableLimits
	live      httpapi.LiveLimits
}

var _ tbhubcmd.ReadPath = (*Serve)(nil)

// NewServe returns the read path with the HTTP API's default limits.
func NewServe() *Serve {
	return &Serve{markdown: httpapi.DefaultMarkdownLimits(), graphs: httpapi.DefaultGraphLimits(),
		compare: httpapi.DefaultCompareLimits(), runsTable: httpapi.DefaultRunsTableLimits(), live: httpapi.DefaultLiveLimits()}
}

// RegisterFlags defines the HTTP API's flags on fs.
func (s *Serve) RegisterFlags(fs *flag.FlagSet) {
	fs.Var(&s.samples, "samples_per_plugin", httpapi.SamplesFlagUsage)
	config.Bind(fs, s.markdown.Settings()...)
	config.Bind(fs, s.graphs.Settings()...)
	config.Bind(fs, s.compare.Settings()...)
	config.Bind(fs, s.runsTable.Settings()...)
	config.Bind(fs, s.live.Settings()...)
}

// Config is the read path's configuration from serve's settings and the
// flags: the web UI's sign-in, the HTTP API's limits, a fresh blob-key
// secret.
func (s *Serve) Config(c tbhubcmd.ReadPathConfig) Config {
	return Config{
		SignIn: webSignIn(c.OIDC, c.WebClientID, c.WebClientSecret), PublicOrigin: c.PublicOrigin,
		Reader: reader.Config{BlobKeySecret: reader.RandomSecret(), MaxListedRuns: c.MaxListedRuns}, Logger: c.Logger,
		SamplesPerPlugin: s.samples, Markdown: s.markdown, Graphs: s.graphs, Compare: s.compare, RunsTable: s.runsTable,
		Live: s.live,
	}
}

// Mount mounts the read service, the HTTP API and the web UI on srv. The
// returned stop answers the HTTP API's held long polls.
func (s *Serve) Mount(srv *serve.Server, conn grpc.ClientConnInterface, st store.Reader, blobs blob.Store, c tbhubcmd.ReadPathConfig) (stop func(), err error) {
	_, api, err := Mount(srv.GRPCServer(), srv.Mux(), conn, st, blobs, s.Config(c))
	if err != nil {
		return nil, err
	}
	ui, err := webui.New()
	if err != nil {
		return nil, err
	}
	ui.Mount(srv.Mux())
	return api.StopLive, nil
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
