// Package httpapi is tbhub's HTTP API: TensorBoard's JSON routes (core,
// every plugin's, and the legacy routes of TensorBoard's original HTTP API
// document) under /experiment/{eid}/, plus tbhub's own routes under /api/.
// It holds no data: every answer is computed from calls to the read service
// (tensorboard.data.TensorBoardDataProvider) and the experiment service
// (tbhub.experiments.v1.ExperimentService) over gRPC, carrying the caller's
// credential, so access control happens there, once.
//
// Responses follow TensorBoard's conventions: JSON with NaN and infinities
// as the strings "NaN", "Infinity" and "-Infinity"; gzip when the client
// accepts it; errors as text with 400/401/403/404. A private experiment and
// a missing one give the same 404. Blob bytes (images, audio, graphs'
// sources) are addressed by blob keys that change when the data does, so
// they are served with long-lived private cache headers; everything else
// is not cached.
//
// See docs/http-api.md for the route list and the one place where
// TensorBoard's two HTTP APIs disagree (data/runs).
package httpapi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	authv1 "github.com/tbhub/tbhub/schemas/gen/go/tbhub/auth/v1"
	experimentsv1 "github.com/tbhub/tbhub/schemas/gen/go/tbhub/experiments/v1"
	datapb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/data"
	servicepb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/service"
)

// Version is reported as TensorBoard's version by data/environment: the
// TensorBoard release whose HTTP API this package follows.
const Version = "2.22.0a0"

// Credentials extracts the caller's credential from a request, as the
// value of an "authorization: Bearer ..." header; "" for an anonymous
// caller. An error is answered with 401.
type Credentials func(r *http.Request) (string, error)

// BearerHeader is the default Credentials: the request's Authorization
// header, passed on as it is.
func BearerHeader(r *http.Request) (string, error) {
	return r.Header.Get("Authorization"), nil
}

// Config configures a Handler.
type Config struct {
	// Data is the read service.
	Data datapb.TensorBoardDataProviderClient
	// Experiments serves /api/experiments; those routes answer 501 when
	// it is nil.
	Experiments experimentsv1.ExperimentServiceClient
	// Writer (TensorBoard's writer service: rename, re-describe, delete)
	// and Auth (tokens, who am I) are the write service's other services,
	// behind the management routes; those answer 501 without them.
	Writer servicepb.TensorBoardWriterServiceClient
	Auth   authv1.AuthServiceClient
	// Credentials finds the caller's credential; BearerHeader if nil. The
	// browser session (a cookie standing for a token) plugs in here.
	Credentials Credentials
	// SamplesPerPlugin overrides the number of points per series a plugin
	// route reads (TensorBoard's --samples_per_plugin), by plugin name.
	SamplesPerPlugin map[string]int64
	// CallTimeout bounds each call to the services; 30 s if zero.
	CallTimeout time.Duration
	// CacheTTL is how long a GET answer is reused for the same credential
	// and URI (see responseCache); 2 s if zero, no reuse if negative.
	CacheTTL time.Duration
	// MaxResponseBytes bounds one answer of the services; 256 MiB (the
	// limit stock TensorBoard sets) if zero. It is set on every call, so
	// the connection's own default (4 MiB) does not apply.
	MaxResponseBytes int
	Logger           *slog.Logger
}

// Handler serves the API. Create it with New.
type Handler struct {
	cfg   Config
	data  datapb.TensorBoardDataProviderClient
	exps  experimentsv1.ExperimentServiceClient
	creds Credentials
	// callOpts go with every call to the services.
	callOpts []grpc.CallOption
	cache    *responseCache // nil: off
	mux      *http.ServeMux
	logger   *slog.Logger
}

// New returns the API handler.
func New(cfg Config) (*Handler, error) {
	if cfg.Data == nil {
		return nil, errors.New("httpapi.New: Data (the read service client) is required")
	}
	for p, n := range cfg.SamplesPerPlugin {
		if n < 0 {
			return nil, fmt.Errorf("httpapi.New: SamplesPerPlugin[%q] = %d; must be >= 0", p, n)
		}
	}
	if cfg.CallTimeout == 0 {
		cfg.CallTimeout = 30 * time.Second
	}
	if cfg.CacheTTL == 0 {
		cfg.CacheTTL = 2 * time.Second
	}
	if cfg.MaxResponseBytes == 0 {
		cfg.MaxResponseBytes = 256 << 20
	}
	h := &Handler{cfg: cfg, data: cfg.Data, exps: cfg.Experiments, creds: cfg.Credentials, mux: http.NewServeMux(), logger: cfg.Logger,
		callOpts: []grpc.CallOption{grpc.MaxCallRecvMsgSize(cfg.MaxResponseBytes)}}
	if h.creds == nil {
		h.creds = BearerHeader
	}
	if cfg.CacheTTL > 0 {
		h.cache = newResponseCache(cfg.CacheTTL)
	}
	if h.logger == nil {
		h.logger = slog.New(slog.DiscardHandler)
	}
	h.routes()
	return h, nil
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	gz := newGzipWriter(w, r)
	defer gz.Close()
	h.mux.ServeHTTP(gz, r)
}

// request is what a route handler gets: the experiment of the path and a
// context carrying the caller's credential to the services.
type request struct {
	*http.Request
	eid string
	ctx context.Context
}

type routeFunc func(w http.ResponseWriter, r *request) error

// handle registers fn for pattern; errors fn returns are answered by
// writeError.
func (h *Handler) handle(pattern string, fn routeFunc) {
	h.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		cred, err := h.creds(r)
		if err != nil {
			h.writeError(w, r, errorf(http.StatusUnauthorized, "invalid credentials: %v", err))
			return
		}
		var key string
		if h.cache != nil && r.Method == http.MethodGet {
			key = cred + "\x00" + r.URL.RequestURI()
			if e := h.cache.get(key, time.Now()); e != nil {
				e.write(w)
				return
			}
		}
		ctx, cancel := context.WithTimeout(r.Context(), h.cfg.CallTimeout)
		defer cancel()
		if cred != "" {
			ctx = metadata.AppendToOutgoingContext(ctx, "authorization", cred)
		}
		rec := &recorder{ResponseWriter: w, limit: h.cacheLimit()}
		if err := fn(rec, &request{Request: r, eid: r.PathValue("eid"), ctx: ctx}); err != nil {
			h.writeError(rec, r, err)
			return
		}
		if key != "" {
			if e := rec.entry(time.Now().Add(h.cfg.CacheTTL)); e != nil {
				h.cache.put(key, e, time.Now())
			}
		}
	})
}

func (h *Handler) cacheLimit() int {
	if h.cache == nil {
		return 0
	}
	return h.cache.maxBytes
}

// samples returns how many points per series a plugin route reads.
func (h *Handler) samples(plugin string, def int64) int64 {
	if n, ok := h.cfg.SamplesPerPlugin[plugin]; ok {
		return n
	}
	return def
}

// Default points per series, as TensorBoard's plugins read them.
const (
	samplesScalars     = 1000
	samplesHistograms  = 500
	samplesImages      = 10
	samplesAudio       = 10
	samplesText        = 100
	samplesPRCurves    = 100
	samplesMesh        = 100
	samplesTimeSeriesH = 51

	// The histograms and distributions routes show at most this many of
	// the points kept (TensorBoard's SAMPLE_SIZE of each plugin).
	histogramsRoutePoints    = 51
	distributionsRoutePoints = 501
)
