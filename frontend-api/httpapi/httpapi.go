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
// This package is the router: the Handler (credentials, the response
// cache, gzip, errors) and the one route table (routes.go). Each plugin's
// routes and logic are a package under internal/ (core, scalars,
// histograms, media, text, graphs, prcurves, customscalars, hparams, mesh,
// timeseries, legacy), tbhub's account API is internal/account, the web
// UI's runs table internal/runstable, and what they all build on is
// internal/route; markdown is rendered in one place,
// internal/markdown.
//
// See docs/http-api.md for the route list and every place where tbhub's
// answer deliberately differs from TensorBoard's.
package httpapi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/tbhub/tbhub/frontend-api/httpapi/internal/compare"
	"github.com/tbhub/tbhub/frontend-api/httpapi/internal/graphs"
	"github.com/tbhub/tbhub/frontend-api/httpapi/internal/live"
	"github.com/tbhub/tbhub/frontend-api/httpapi/internal/markdown"
	"github.com/tbhub/tbhub/frontend-api/httpapi/internal/route"
	"github.com/tbhub/tbhub/frontend-api/httpapi/internal/runstable"
	"github.com/tbhub/tbhub/frontend-api/httperr"
	authv1 "github.com/tbhub/tbhub/schemas/gen/go/tbhub/auth/v1"
	experimentsv1 "github.com/tbhub/tbhub/schemas/gen/go/tbhub/experiments/v1"
	datapb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/data"
	servicepb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/service"
)

// Version is reported as TensorBoard's version by data/environment: the
// TensorBoard release whose HTTP API this package follows.
const Version = route.Version

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
	// Markdown bounds the rendering of descriptions and text summaries;
	// DefaultMarkdownLimits for each field that is zero.
	Markdown MarkdownLimits
	// Graphs bounds the graphs plugin's text answers;
	// DefaultGraphLimits for each field that is zero.
	Graphs GraphLimits
	// Compare bounds comparisons (/compare/{eid}/);
	// DefaultCompareLimits for each field that is zero.
	Compare CompareLimits

	// RunsTable bounds the runs table route; DefaultRunsTableLimits for
	// each field that is zero.
	RunsTable RunsTableLimits
	// Live bounds the long polls of live pages; DefaultLiveLimits for
	// each field that is zero.
	Live   LiveLimits
	Logger *slog.Logger
}

// GraphLimits bound the graphs plugin's answers (graphs/graph,
// graphs/run_metadata): the bytes of one text, the nesting of its
// messages and of Keras models, a Keras node's name, the bytes of answers
// kept by blob, and how many are computed at once (docs/operations.md).
// Settings lists their flags.
type GraphLimits = graphs.Limits

// DefaultGraphLimits: 320 MiB per answer, 100 levels, 4 KiB names,
// 128 MiB of cache, 2 conversions at once.
func DefaultGraphLimits() GraphLimits { return graphs.DefaultLimits() }

// MarkdownLimits bound the rendering of markdown: the bytes of one text
// rendered, how long a request waits for it, the bytes of HTML kept for
// later requests, and how many renders run at once (docs/operations.md).
// Settings lists their flags.
type MarkdownLimits = markdown.Limits

// DefaultMarkdownLimits: 32 KiB per text, 2 s, 32 MiB of cache, half the
// cores.
func DefaultMarkdownLimits() MarkdownLimits { return markdown.DefaultLimits() }

// CompareLimits bound a comparison (/compare/{id1}+{id2}+…/): how many
// experiments it holds, and how many of them one request reads at once
// (docs/operations.md). Settings lists their flags.
type CompareLimits = compare.Limits

// DefaultCompareLimits: 10 experiments, 4 read at once.
func DefaultCompareLimits() CompareLimits { return compare.DefaultLimits() }

// RunsTableLimits bound the runs table route (data/runs_table): the runs
// × tags one answer reads. Settings lists their flag.
type RunsTableLimits = runstable.Limits

// DefaultRunsTableLimits: 20,000 series.
func DefaultRunsTableLimits() RunsTableLimits { return runstable.DefaultLimits() }

// Handler serves the API. Create it with New.
type Handler struct {
	*route.Env
	cfg    Config
	exps   experimentsv1.ExperimentServiceClient
	creds  Credentials
	cache  *responseCache // nil: off
	mux    *http.ServeMux
	logger *slog.Logger

	live *live.Hub // the long polls of live pages (followable)

	// compare is Env.Data: the read service, and comparisons over it.
	compare *compare.Client
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
	cfg.Markdown = cfg.Markdown.OrDefaults()
	cfg.Graphs = cfg.Graphs.OrDefaults()
	cfg.RunsTable = cfg.RunsTable.OrDefaults()
	if err := cfg.RunsTable.Validate(); err != nil {
		return nil, fmt.Errorf("httpapi.New: %w", err)
	}
	if err := cfg.Graphs.Validate(); err != nil {
		return nil, fmt.Errorf("httpapi.New: %w", err)
	}
	cfg.Compare = cfg.Compare.OrDefaults()
	if err := cfg.Compare.Validate(); err != nil {
		return nil, fmt.Errorf("httpapi.New: %w", err)
	}
	renderer, err := markdown.New(cfg.Markdown)
	if err != nil {
		return nil, fmt.Errorf("httpapi.New: %w", err)
	}
	cfg.Live = cfg.Live.OrDefaults()
	if err := cfg.Live.Validate(); err != nil {
		return nil, fmt.Errorf("httpapi.New: %w", err)
	}
	cmp := compare.New(cfg.Data, cfg.Compare)
	h := &Handler{cfg: cfg, exps: cfg.Experiments, creds: cfg.Credentials, mux: http.NewServeMux(), logger: cfg.Logger, compare: cmp, live: live.NewHub(cfg.Live),
		Env: &route.Env{Data: cmp, SamplesPerPlugin: cfg.SamplesPerPlugin, Markdown: renderer,
			CallOpts: []grpc.CallOption{grpc.MaxCallRecvMsgSize(cfg.MaxResponseBytes)}}}
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

// CompareLimits are the limits comparisons are held to (Config.Compare
// with the defaults filled in).
func (h *Handler) CompareLimits() CompareLimits { return h.compare.Limits() }

// GraphLimits are the limits the graphs plugin applies (Config.Graphs
// with the defaults filled in).
func (h *Handler) GraphLimits() GraphLimits { return h.cfg.Graphs }

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	gz := route.NewGzipWriter(w, r)
	defer gz.Close()
	h.mux.ServeHTTP(gz, r)
}

// handle registers fn for pattern; errors fn returns are answered by
// writeError. A route of one experiment (/experiment/{eid}/data/...) is
// registered for a comparison too (/compare/{eid}/data/...), where fn
// reads the comparison's members (inComparison).
func (h *Handler) handle(pattern string, fn route.Func) {
	method, path, _ := strings.Cut(pattern, " ")
	if rest, ok := strings.CutPrefix(path, "/experiment/{eid}/data/"); ok {
		h.mux.HandleFunc(method+" /compare/{eid}/data/"+rest, h.serve(h.inComparison(fn)))
	} else if strings.HasPrefix(path, "/compare/{eid}/") {
		fn = h.inComparison(fn)
	}
	h.mux.HandleFunc(pattern, h.serve(fn))
}

// inComparison is fn for a comparison: which of its experiments the
// caller may read is resolved once, and fn's calls to the read service
// are answered from those (package compare).
func (h *Handler) inComparison(fn route.Func) route.Func {
	return func(w http.ResponseWriter, r *route.Request) error {
		cmp, err := h.compare.Resolve(r.Ctx, r.EID, h.CallOpts...)
		if err != nil {
			return err
		}
		r.Ctx = compare.With(r.Ctx, cmp)
		return fn(w, r)
	}
}

// serve is the http.HandlerFunc of fn: the caller's credential, the
// response cache, the call timeout, errors.
func (h *Handler) serve(fn route.Func) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		cred, err := h.creds(r)
		if err != nil {
			h.writeError(w, r, route.Errorf(http.StatusUnauthorized, "invalid credentials: %v", err))
			return
		}
		var key string
		// A long poll (followable) is never answered from the cache.
		if h.cache != nil && r.Method == http.MethodGet && !r.URL.Query().Has(waitParam) {
			key = cred + "\x00" + r.URL.RequestURI()
			// A client that knows the data changed (a live page) asks
			// past the cache with Cache-Control: no-cache; the answer it
			// gets is kept for the others.
			if e := h.cache.get(key, time.Now()); e != nil && !noCache(r) {
				e.write(w)
				return
			}
			// One identical request at a time: the others wait and take
			// its answer from the cache.
			release, err := h.cache.lead(r.Context(), key)
			if err != nil {
				return // the client went away
			}
			defer release()
			if e := h.cache.get(key, time.Now()); e != nil && !noCache(r) {
				e.write(w)
				return
			}
		}
		// When this answer's reads began: a live page compares the
		// experiment's update time with it (an answer kept in the cache
		// keeps the time of the reads that made it).
		w.Header().Set(readAtHeader, formatReadAt(time.Now()))
		ctx, cancel := context.WithTimeout(r.Context(), h.cfg.CallTimeout)
		defer cancel()
		if cred != "" {
			ctx = metadata.AppendToOutgoingContext(ctx, "authorization", cred)
		}
		rec := &recorder{ResponseWriter: w, limit: h.cacheLimit()}
		if err := fn(rec, &route.Request{Request: r, EID: r.PathValue("eid"), Ctx: ctx}); err != nil {
			h.writeError(rec, r, err)
			return
		}
		if key != "" {
			if e := rec.entry(r.PathValue("eid"), time.Now().Add(h.cfg.CacheTTL)); e != nil {
				h.cache.put(key, e, time.Now())
			}
		}
	}
}

// readAtHeader names the time, on the server's clock, at which the reads
// behind an answer began (RFC 3339, milliseconds, rounded down). A page
// that holds answers read before an experiment's update time may lack the
// update; live.ts reads again then (an answer taken from the cache, or
// read beside the experiment's metadata, can be older than it).
const readAtHeader = "X-Tbhub-Read-At"

func formatReadAt(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z07:00") }

// noCache says whether a request asks not to be answered from a cache
// (Cache-Control: no-cache or max-age=0, or Pragma: no-cache).
func noCache(r *http.Request) bool {
	for _, d := range strings.Split(r.Header.Get("Cache-Control"), ",") {
		if d = strings.TrimSpace(strings.ToLower(d)); d == "no-cache" || d == "max-age=0" {
			return true
		}
	}
	return r.Header.Get("Pragma") == "no-cache"
}

func (h *Handler) cacheLimit() int {
	if h.cache == nil {
		return 0
	}
	return h.cache.maxBytes
}

// writeError answers err as package httperr maps it; the detail of a 5xx
// is logged, never sent.
func (h *Handler) writeError(w http.ResponseWriter, r *http.Request, err error) {
	code, msg, internal := httperr.Of(err)
	if internal {
		h.logger.ErrorContext(r.Context(), "request failed", "path", r.URL.Path, "status", code, "error", err.Error())
	}
	httperr.RetryAfter(w, err)
	httperr.Write(w, code, msg)
}
