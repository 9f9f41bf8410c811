// Package frontend is the frontend service as Cloud Run runs it
// (frontend-api/cmd/frontend): tbhub's HTTP API (package httpapi), the
// browser sign-in (package session) and the web UI (package webui) on one
// HTTP port, calling the read service and the write service's experiment,
// writer and auth services over gRPC. Its life (probes, readiness, drain on
// SIGTERM) is package lifecycle's.
package frontend

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"log/slog"
	"net"
	"net/http"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/tbhub/tbhub/frontend-api/httpapi"
	"github.com/tbhub/tbhub/frontend-api/session"
	"github.com/tbhub/tbhub/frontend-api/webui"
	authv1 "github.com/tbhub/tbhub/schemas/gen/go/tbhub/auth/v1"
	experimentsv1 "github.com/tbhub/tbhub/schemas/gen/go/tbhub/experiments/v1"
	datapb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/data"
	servicepb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/service"
	"github.com/tbhub/tbhub/services/serverkit/clientaddr"
	"github.com/tbhub/tbhub/services/serverkit/config"
	"github.com/tbhub/tbhub/services/serverkit/lifecycle"
	"github.com/tbhub/tbhub/services/serverkit/telemetry"
)

// Config is the process's configuration.
type Config struct {
	// Addr is the listen address; Cloud Run's PORT sets it to ":PORT".
	Addr string
	// ReadService is the read service's gRPC address (host:port).
	ReadService string
	// ExperimentService is the write service's gRPC address (its
	// experiment, writer and auth services); without it /api/experiments
	// and the management routes answer 501.
	ExperimentService string
	// Insecure is plaintext gRPC (local runs); TLS with the system's roots
	// otherwise.
	Insecure bool
	// ShutdownTimeout bounds the drain on SIGTERM;
	// lifecycle.DefaultDrainTimeout if zero.
	ShutdownTimeout time.Duration
	// CallTimeout bounds how long a call waits for an unreachable service (a
	// replica being replaced); 10 s if zero.
	CallTimeout time.Duration
	// PublicOrigin and SignIn configure browser sign-in (package session).
	PublicOrigin string
	SignIn       *session.OIDC
	// Telemetry says where spans and metrics go.
	Telemetry telemetry.Config
	// SamplesPerPlugin is httpapi.Config.SamplesPerPlugin
	// (--samples_per_plugin).
	SamplesPerPlugin httpapi.SamplesPerPlugin
	// HTTP bounds what one client can hold of the server
	// (lifecycle.DefaultHTTPLimits if zero).
	HTTP lifecycle.HTTPLimits
	// Markdown bounds the rendering of descriptions and text summaries
	// (httpapi.DefaultMarkdownLimits if zero).
	Markdown httpapi.MarkdownLimits
	// Graphs bounds the graphs plugin's answers
	// (httpapi.DefaultGraphLimits if zero).
	Graphs httpapi.GraphLimits
	// Compare bounds comparisons
	// (httpapi.DefaultCompareLimits if zero).
	Compare httpapi.CompareLimits
	// RunsTable bounds the runs table route
	// (httpapi.DefaultRunsTableLimits if zero).
	RunsTable httpapi.RunsTableLimits
	// Live bounds the long polls of live pages
	// (httpapi.DefaultLiveLimits if zero).
	Live httpapi.LiveLimits
	// TrustedProxyHops is how many proxies in front of the frontend are
	// trusted to name the browser in X-Forwarded-For (Cloud Run: 1).
	TrustedProxyHops clientaddr.Hops
	// ForwardingSecret, shared with the read and write services, makes
	// them throttle invalid credentials by the browser's address (which
	// the frontend's calls carry) rather than the frontend's.
	ForwardingSecret string

	oidc session.OIDC
}

// RegisterFlags defines the frontend's flags on fs and returns the other
// variables that set them, for config.Parse: PORT, the telemetry's
// standard variables, and the names of older releases (READ_SERVICE,
// OIDC_ISSUER, ...), which work for one more release with a warning. Call
// Validate after parsing.
func (c *Config) RegisterFlags(fs *flag.FlagSet) []config.Alias {
	fs.StringVar(&c.Addr, "addr", ":8080", "listen address")
	fs.StringVar(&c.ReadService, "read-service", "", "gRPC address of the read service (host:port; required)")
	fs.StringVar(&c.ExperimentService, "experiment-service", "", "gRPC address of the write service's experiment, writer and auth services")
	fs.BoolVar(&c.Insecure, "grpc-insecure", false, "plaintext gRPC to the services (local runs)")
	fs.StringVar(&c.PublicOrigin, "public-origin", "", "origin browsers reach this service at (the OIDC redirect URI is ORIGIN/auth/callback; default: each request's Host and X-Forwarded-Proto)")
	fs.StringVar(&c.oidc.Issuer, "oidc-issuer", "", "OpenID Connect issuer browsers sign in with")
	fs.StringVar(&c.oidc.ClientID, "oidc-web-client-id", "", "its web client (one of the write service's accepted client IDs)")
	fs.StringVar(&c.oidc.ClientSecret, "oidc-web-client-secret", "", "that client's secret, if the issuer wants one")
	fs.Var(&c.SamplesPerPlugin, "samples_per_plugin", httpapi.SamplesFlagUsage)
	c.HTTP = lifecycle.DefaultHTTPLimits()
	config.Bind(fs, c.HTTP.Settings()...)
	c.Markdown = httpapi.DefaultMarkdownLimits()
	config.Bind(fs, c.Markdown.Settings()...)
	c.Graphs = httpapi.DefaultGraphLimits()
	config.Bind(fs, c.Graphs.Settings()...)
	c.Compare = httpapi.DefaultCompareLimits()
	config.Bind(fs, c.Compare.Settings()...)
	c.RunsTable = httpapi.DefaultRunsTableLimits()
	config.Bind(fs, c.RunsTable.Settings()...)
	c.Live = httpapi.DefaultLiveLimits()
	config.Bind(fs, c.Live.Settings()...)
	config.Bind(fs, c.TrustedProxyHops.Setting())
	config.Bind(fs, clientaddr.SecretSetting(&c.ForwardingSecret))
	config.PortFlag(fs, "addr")
	c.Telemetry.Service = "tbhub-frontend"
	telemetrySettings, telemetryAliases := c.Telemetry.Settings()
	config.Bind(fs, telemetrySettings...)
	aliases := append([]config.Alias{config.Port("addr")}, telemetryAliases...)
	for _, old := range []struct{ env, flag string }{
		{"READ_SERVICE", "read-service"}, {"EXPERIMENT_SERVICE", "experiment-service"},
		{"GRPC_INSECURE", "grpc-insecure"}, {"PUBLIC_ORIGIN", "public-origin"},
		{"OIDC_ISSUER", "oidc-issuer"}, {"OIDC_WEB_CLIENT_ID", "oidc-web-client-id"},
		{"OIDC_WEB_CLIENT_SECRET", "oidc-web-client-secret"},
	} {
		aliases = append(aliases, config.Renamed(old.env, old.flag))
	}
	return aliases
}

// Validate checks the parsed flags.
func (c *Config) Validate() error {
	if err := c.Telemetry.Validate(); err != nil {
		return err
	}
	if (c.oidc.Issuer == "") != (c.oidc.ClientID == "") {
		return errors.New("browser sign-in needs both --oidc-issuer and --oidc-web-client-id (TBHUB_OIDC_ISSUER, TBHUB_OIDC_WEB_CLIENT_ID)")
	}
	if c.oidc.Issuer != "" {
		c.SignIn = &c.oidc
	}
	if c.ReadService == "" {
		return errors.New("--read-service (TBHUB_READ_SERVICE) is required")
	}
	if err := c.Markdown.Validate(); err != nil {
		return err
	}
	if err := c.Compare.Validate(); err != nil {
		return err
	}
	if err := c.RunsTable.Validate(); err != nil {
		return err
	}
	if err := c.Live.Validate(); err != nil {
		return err
	}
	return c.Graphs.Validate()
}

// Observers are where the process's spans, metrics and logs go.
type Observers struct {
	Tracing *telemetry.Telemetry // telemetry.Off() if nil
	Metrics *telemetry.Metrics   // a fresh set if nil; served at GET /metrics
	Logger  *slog.Logger         // nowhere if nil
}

// Run serves on lis (bound first, by the caller) until ctx is done, then
// drains.
func Run(ctx context.Context, lis net.Listener, cfg Config, obs Observers) error {
	if obs.Tracing == nil {
		obs.Tracing = telemetry.Off()
	}
	if obs.Metrics == nil {
		obs.Metrics = telemetry.NewMetrics()
	}
	if obs.Logger == nil {
		obs.Logger = slog.New(slog.DiscardHandler)
	}
	// With the services' secret, each call names the browser it serves.
	forward, err := clientaddr.SharedInternal(cfg.ForwardingSecret)
	if err != nil {
		return err
	}
	creds := credentials.NewTLS(&tls.Config{MinVersion: tls.VersionTLS12})
	if cfg.Insecure {
		creds = insecure.NewCredentials()
	}
	dial := func(addr string) (*grpc.ClientConn, error) {
		return grpc.NewClient(addr, grpc.WithTransportCredentials(creds),
			// A replica being replaced (a deploy, a crash) must not fail browser
			// requests: calls wait for a ready connection, bounded by callTimeout,
			// and UNAVAILABLE is retried with backoff. Reads, and the management
			// calls, are idempotent; CreateToken is not retried (retryPolicy).
			grpc.WithDefaultServiceConfig(retryPolicy),
			grpc.WithDefaultCallOptions(grpc.WaitForReady(true)),
			grpc.WithChainUnaryInterceptor(boundCall(cfg.CallTimeout), forward.Unary()), // streams end with their HTTP request
			grpc.WithChainStreamInterceptor(forward.Stream()),
			obs.Tracing.GRPCClient(),
		)
	}
	readConn, err := dial(cfg.ReadService)
	if err != nil {
		return err
	}
	defer readConn.Close()
	hcfg := cfg.api(datapb.NewTensorBoardDataProviderClient(readConn), obs.Logger)
	scfg := session.Config{OIDC: cfg.SignIn, PublicOrigin: cfg.PublicOrigin, Logger: obs.Logger}
	if cfg.ExperimentService != "" {
		expConn, err := dial(cfg.ExperimentService)
		if err != nil {
			return err
		}
		defer expConn.Close()
		hcfg.Experiments = experimentsv1.NewExperimentServiceClient(expConn)
		hcfg.Writer = servicepb.NewTensorBoardWriterServiceClient(expConn)
		hcfg.Auth = authv1.NewAuthServiceClient(expConn)
		scfg.Auth = hcfg.Auth
	}
	// Browsers sign in with a session cookie (package session).
	sess, err := session.New(scfg)
	if err != nil {
		return err
	}
	hcfg.Credentials = sess.Credentials
	api, err := httpapi.New(hcfg)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	for _, p := range httpapi.Routes {
		mux.Handle(p, api)
	}
	sess.Mount(mux)
	// The web UI's pages and bundle (package webui) beside the API.
	ui, err := webui.New()
	if err != nil {
		return err
	}
	ui.Mount(mux)
	mux.Handle("GET /metrics", obs.Metrics.Handler())
	life := lifecycle.New(cfg.ShutdownTimeout, obs.Logger)
	if cfg.HTTP != (lifecycle.HTTPLimits{}) {
		if err := life.LimitHTTP(cfg.HTTP); err != nil {
			return err
		}
	}
	life.OnStop(api.StopLive) // held long polls answered, not waited for by the drain
	life.Probes(mux)
	life.HTTP(lis, cfg.TrustedProxyHops.Middleware(obs.Tracing.HTTP(obs.Metrics.HTTP(mux))))
	obs.Logger.InfoContext(ctx, "frontend listening", "addr", lis.Addr().String(), "read_service", cfg.ReadService)
	return life.Run(ctx)
}

// api is the HTTP API's configuration: the read service data, and the
// settings of c that are the API's.
func (c *Config) api(data datapb.TensorBoardDataProviderClient, logger *slog.Logger) httpapi.Config {
	return httpapi.Config{Data: data, Logger: logger, SamplesPerPlugin: c.SamplesPerPlugin, Markdown: c.Markdown, Graphs: c.Graphs, Compare: c.Compare, RunsTable: c.RunsTable, Live: c.Live}
}

// retryPolicy retries calls that found no server (UNAVAILABLE) with
// backoff, except CreateToken: a retry after a lost answer would mint a
// second token.
const retryPolicy = `{"methodConfig": [{"name": [{}], "retryPolicy": {
	"maxAttempts": 5, "initialBackoff": "0.1s", "maxBackoff": "2s", "backoffMultiplier": 2,
	"retryableStatusCodes": ["UNAVAILABLE"]}},
	{"name": [{"service": "tbhub.auth.v1.AuthService", "method": "CreateToken"}]}]}`

// boundCall limits every call to timeout (10 s if zero; an earlier deadline still
// wins), so that waiting for an unreachable service ends in a timely error.
func boundCall(timeout time.Duration) grpc.UnaryClientInterceptor {
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		return invoker(ctx, method, req, reply, cc, opts...)
	}
}
