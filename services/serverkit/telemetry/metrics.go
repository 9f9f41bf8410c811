package telemetry

// Metrics count what the services do, for Prometheus (GET /metrics) and, through
// ExportMetrics, Cloud Monitoring.
//
// They observe from the outside: gRPC interceptors time every RPC and read the
// requests the write and read services take (points and blob bytes written, blob
// bytes served, experiments created), an HTTP middleware times every route by its
// mux pattern, and ObserveStore times store calls (package
// services/internal/storage/store/instrumented). No handler needs to know about them.

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/status"

	datapb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/data"
	servicepb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/service"
)

// Metrics holds one process's collectors.
type Metrics struct {
	reg *prometheus.Registry

	rpcs        *prometheus.CounterVec
	rpcSeconds  *prometheus.HistogramVec
	http        *prometheus.CounterVec
	httpSeconds *prometheus.HistogramVec
	points      *prometheus.CounterVec
	blobWritten prometheus.Counter
	blobServed  prometheus.Counter
	experiments prometheus.Counter
	storeSecs   *prometheus.HistogramVec
	storeErrors *prometheus.CounterVec
}

// NewMetrics registers the collectors (and Go runtime and process collectors).
func NewMetrics() *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry()}
	latency := []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}
	m.rpcs = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "tbhub_grpc_requests_total", Help: "gRPC calls by method and status code.",
	}, []string{"method", "code"})
	m.rpcSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "tbhub_grpc_request_seconds", Help: "gRPC call latency by method.", Buckets: latency,
	}, []string{"method"})
	m.http = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "tbhub_http_requests_total", Help: "HTTP requests by route pattern and status.",
	}, []string{"route", "status"})
	m.httpSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "tbhub_http_request_seconds", Help: "HTTP request latency by route pattern.", Buckets: latency,
	}, []string{"route"})
	m.points = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "tbhub_points_written_total", Help: "Scalar and tensor points accepted by the write service.",
	}, []string{"class"})
	m.blobWritten = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "tbhub_blob_bytes_written_total", Help: "Blob bytes received by WriteBlob.",
	})
	m.blobServed = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "tbhub_blob_bytes_served_total", Help: "Blob bytes sent by ReadBlob.",
	})
	m.experiments = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "tbhub_upload_sessions_total", Help: "Experiments created or continued by uploaders.",
	})
	m.storeSecs = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "tbhub_store_seconds", Help: "Store (Spanner or SQLite) call latency by operation, including the time read visitors take.", Buckets: latency,
	}, []string{"op"})
	m.storeErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "tbhub_store_errors_total", Help: "Store calls that failed by operation (not counting not-found answers).",
	}, []string{"op"})
	m.reg.MustRegister(m.rpcs, m.rpcSeconds, m.http, m.httpSeconds, m.points, m.blobWritten, m.blobServed, m.experiments,
		m.storeSecs, m.storeErrors,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Handler serves the Prometheus exposition format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// Registry is where other packages may register collectors.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// ObserveStore records one store call of operation op (a method name such as
// "ReadScalars") that took d; notFound says whether err is the store's ordinary
// not-found answer, which is not counted as a failure.
func (m *Metrics) ObserveStore(op string, d time.Duration, err error, notFound bool) {
	m.storeSecs.WithLabelValues(op).Observe(d.Seconds())
	if err != nil && !notFound && !errors.Is(err, context.Canceled) {
		m.storeErrors.WithLabelValues(op).Inc()
	}
}

// Unary times unary RPCs and counts what write requests carry.
func (m *Metrics) Unary() grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		start := time.Now()
		resp, err := handler(ctx, req)
		m.observe(info.FullMethod, start, err)
		if err == nil {
			m.countRequest(req)
		}
		return resp, err
	}
}

// Stream times streaming RPCs and counts blob bytes in and out.
func (m *Metrics) Stream() grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		start := time.Now()
		err := handler(srv, &countingStream{ServerStream: ss, m: m})
		m.observe(info.FullMethod, start, err)
		return err
	}
}

func (m *Metrics) observe(method string, start time.Time, err error) {
	method = strings.TrimPrefix(method, "/")
	m.rpcs.WithLabelValues(method, status.Code(err).String()).Inc()
	m.rpcSeconds.WithLabelValues(method).Observe(time.Since(start).Seconds())
}

// countRequest counts points in accepted write requests. (A request with some bad
// points is refused as a whole by status, so only fully accepted ones count.)
func (m *Metrics) countRequest(req any) {
	switch r := req.(type) {
	case *servicepb.WriteScalarRequest:
		n := 0
		for _, run := range r.GetRuns() {
			for _, tag := range run.GetTags() {
				n += len(tag.GetPoints())
			}
		}
		m.points.WithLabelValues("scalar").Add(float64(n))
	case *servicepb.WriteTensorRequest:
		n := 0
		for _, run := range r.GetRuns() {
			for _, tag := range run.GetTags() {
				n += len(tag.GetPoints())
			}
		}
		m.points.WithLabelValues("tensor").Add(float64(n))
	case *servicepb.CreateExperimentRequest:
		m.experiments.Inc()
	}
}

type countingStream struct {
	grpc.ServerStream
	m *Metrics
}

func (s *countingStream) RecvMsg(msg any) error {
	err := s.ServerStream.RecvMsg(msg)
	if r, ok := msg.(*servicepb.WriteBlobRequest); ok && err == nil {
		s.m.blobWritten.Add(float64(len(r.GetData())))
	}
	return err
}

func (s *countingStream) SendMsg(msg any) error {
	err := s.ServerStream.SendMsg(msg)
	if r, ok := msg.(*datapb.ReadBlobResponse); ok && err == nil {
		s.m.blobServed.Add(float64(len(r.GetData())))
	}
	return err
}

// HTTP wraps a handler (a ServeMux, typically) and records each request under the
// pattern that matched, so that experiment ids do not become label values.
func (m *Metrics) HTTP(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(rec, r)
		route := r.Pattern
		if route == "" {
			route = "unmatched"
		}
		m.http.WithLabelValues(route, strconv.Itoa(rec.status)).Inc()
		m.httpSeconds.WithLabelValues(route).Observe(time.Since(start).Seconds())
	})
}

type statusRecorder struct {
	http.ResponseWriter
	status int
	wrote  bool
}

func (r *statusRecorder) WriteHeader(code int) {
	if !r.wrote {
		r.status, r.wrote = code, true
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Write(b []byte) (int, error) {
	r.wrote = true
	return r.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the underlying writer (flushes for streams).
func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }
