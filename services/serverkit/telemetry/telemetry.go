// Package telemetry is what every tbhub server process (tbhub serve, the
// write service, the read service, the frontend) uses to be observed:
// OpenTelemetry traces propagated over HTTP and gRPC (W3C traceparent, and
// Cloud Run's X-Cloud-Trace-Context on the way in), JSON logs with Cloud
// Logging's field names and the trace of the request that logged, and
// Prometheus metrics served at /metrics and optionally exported to Cloud
// Monitoring.
//
// It lives in the serverkit module (services/serverkit), which both services
// and frontend-api import and which imports neither, so the storage layer's
// instrumentation does not reach up into the frontend.
//
// Where spans and metrics go is configuration (Config): nowhere by
// default, OTLP (OTEL_EXPORTER_OTLP_ENDPOINT) or Google Cloud Trace and
// Cloud Monitoring. Even with no exporter, an incoming trace context is
// carried through the process and into its logs and outgoing calls.
package telemetry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"cloud.google.com/go/compute/metadata"
	promclient "github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	promexport "go.opentelemetry.io/contrib/bridges/prometheus"
	gcpdetector "go.opentelemetry.io/contrib/detectors/gcp"
	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc/filters"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
	"google.golang.org/grpc"

	"github.com/tbhub/tbhub/services/serverkit/config"
)

// Exporter names accepted by Config.TraceExporter and Config.MetricsExporter.
const (
	ExporterNone = "none"
	ExporterOTLP = "otlp" // traces only; OTEL_EXPORTER_OTLP_* configure it
	ExporterGCP  = "gcp"  // Cloud Trace, Cloud Monitoring
)

// Config says where a process's spans and metrics go.
type Config struct {
	// Service names the process in traces and metrics (service.name),
	// e.g. "tbhub-read".
	Service string
	// TraceExporter is "none" (the default), "otlp" or "gcp".
	TraceExporter string
	// MetricsExporter is "none" (the default: Prometheus /metrics only)
	// or "gcp" (also Cloud Monitoring, every MetricsInterval).
	MetricsExporter string
	// Project is the Google Cloud project: the exporters' destination and
	// the project in the logs' trace field. With a gcp exporter and no
	// project, the metadata server's project (Cloud Run) is used.
	Project string
	// SampleRatio is the share of traces started here (requests without
	// a sampled parent decision) that are recorded; an incoming sampled
	// flag is followed. 0 means 1.
	SampleRatio float64
	// MetricsInterval is how often metrics go to Cloud Monitoring; 60 s if
	// zero.
	MetricsInterval time.Duration
}

// Settings describes the telemetry flags for an assembly's flag set,
// setting c's fields to their defaults as flag definitions do, and returns
// the standard variables that also set them (for config.Parse):
// GOOGLE_CLOUD_PROJECT sets --gcp-project, and an OTLP endpoint
// (OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) makes
// --trace-exporter default to otlp. Call Validate after parsing.
func (c *Config) Settings() ([]config.Setting, []config.Alias) {
	c.TraceExporter, c.MetricsExporter, c.Project, c.SampleRatio = ExporterNone, ExporterNone, "", 1
	otlp := func(string) string { return ExporterOTLP }
	return []config.Setting{
			{Name: "trace-exporter", Value: &c.TraceExporter,
				Usage: "where spans go: none, otlp (OTEL_EXPORTER_OTLP_ENDPOINT) or gcp (Cloud Trace)"},
			{Name: "metrics-exporter", Value: &c.MetricsExporter,
				Usage: "where metrics go besides GET /metrics: none or gcp (Cloud Monitoring)"},
			{Name: "gcp-project", Value: &c.Project,
				Usage: "Google Cloud project for Cloud Trace, Cloud Monitoring and the logs' trace field (default on Cloud Run: the metadata server's) [$GOOGLE_CLOUD_PROJECT]"},
			{Name: "trace-sample-ratio", Value: &c.SampleRatio, Usage: "share of traces started here that are recorded (an incoming sampled flag is followed)"},
		}, []config.Alias{
			{Var: "GOOGLE_CLOUD_PROJECT", Flag: "gcp-project"},
			{Var: "OTEL_EXPORTER_OTLP_ENDPOINT", Flag: "trace-exporter", Value: otlp},
			{Var: "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", Flag: "trace-exporter", Value: otlp},
		}
}

// Validate checks the exporter names and the ratio.
func (c *Config) Validate() error {
	switch c.TraceExporter {
	case "", ExporterNone, ExporterOTLP, ExporterGCP:
	default:
		return fmt.Errorf("--trace-exporter %q: want none, otlp or gcp", c.TraceExporter)
	}
	switch c.MetricsExporter {
	case "", ExporterNone, ExporterGCP:
	default:
		return fmt.Errorf("--metrics-exporter %q: want none or gcp", c.MetricsExporter)
	}
	if c.SampleRatio < 0 || c.SampleRatio > 1 {
		return fmt.Errorf("--trace-sample-ratio %v: want a number in [0, 1]", c.SampleRatio)
	}
	return nil
}

// Telemetry is one process's tracing setup: the tracer provider, the
// propagators and the project named in log lines.
type Telemetry struct {
	tp       trace.TracerProvider
	prop     propagation.TextMapPropagator
	project  string
	shutdown []func(context.Context) error
}

// Propagator reads W3C trace context (traceparent, baggage) and, when no
// traceparent came, Cloud Run's X-Cloud-Trace-Context; it writes W3C only.
func Propagator() propagation.TextMapPropagator {
	return propagation.NewCompositeTextMapPropagator(cloudTraceContext{}, propagation.TraceContext{}, propagation.Baggage{})
}

// New wraps a tracer provider (tests pass one recording to
// go.opentelemetry.io/otel/sdk/trace/tracetest); project may be empty.
func New(tp trace.TracerProvider, project string) *Telemetry {
	return &Telemetry{tp: tp, prop: Propagator(), project: project}
}

// Off records no spans but still carries incoming trace context into logs
// and outgoing calls.
func Off() *Telemetry { return New(noop.NewTracerProvider(), "") }

// Start sets up what cfg asks for. Metrics, if not nil, are exported to
// Cloud Monitoring when cfg.MetricsExporter is "gcp" (only the tbhub_
// series, not the Go runtime's). Call Shutdown to flush before exiting.
func Start(ctx context.Context, cfg Config, metrics *Metrics) (*Telemetry, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	gcp := cfg.TraceExporter == ExporterGCP || cfg.MetricsExporter == ExporterGCP
	project := cfg.Project
	if project == "" && gcp {
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		p, err := metadata.ProjectIDWithContext(pctx)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("telemetry: no --gcp-project and none from the metadata server: %w", err)
		}
		project = p
	}
	res, err := processResource(ctx, cfg.Service, gcp)
	if err != nil {
		return nil, err
	}
	t := &Telemetry{tp: noop.NewTracerProvider(), prop: Propagator(), project: project}
	var spans sdktrace.SpanExporter
	switch cfg.TraceExporter {
	case ExporterOTLP:
		spans, err = otlptracegrpc.New(ctx)
	case ExporterGCP:
		spans, err = cloudTraceExporter(project)
	}
	if err != nil {
		return nil, fmt.Errorf("telemetry: %s trace exporter: %w", cfg.TraceExporter, err)
	}
	if spans != nil {
		ratio := cfg.SampleRatio
		if ratio == 0 {
			ratio = 1
		}
		tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(spans), sdktrace.WithResource(res),
			sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(ratio))))
		t.tp = tp
		t.shutdown = append(t.shutdown, tp.Shutdown)
	}
	if cfg.MetricsExporter == ExporterGCP && metrics != nil {
		exp, err := cloudMonitoringExporter(project)
		if err != nil {
			t.Shutdown(ctx)
			return nil, fmt.Errorf("telemetry: Cloud Monitoring exporter: %w", err)
		}
		interval := cfg.MetricsInterval
		if interval == 0 {
			interval = time.Minute
		}
		reader := sdkmetric.NewPeriodicReader(exp, sdkmetric.WithInterval(interval),
			sdkmetric.WithProducer(promexport.NewMetricProducer(promexport.WithGatherer(tbhubSeries(metrics.Registry())))))
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader), sdkmetric.WithResource(res))
		t.shutdown = append(t.shutdown, mp.Shutdown)
	}
	return t, nil
}

// processResource describes the process: its service name and, on Google
// Cloud, where it runs (Cloud Monitoring needs that to tell instances apart).
func processResource(ctx context.Context, service string, gcp bool) (*resource.Resource, error) {
	opts := []resource.Option{resource.WithAttributes(attribute.String("service.name", service))}
	if gcp {
		opts = append(opts, resource.WithDetectors(gcpdetector.NewDetector()))
	}
	res, err := resource.New(ctx, opts...)
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, fmt.Errorf("telemetry: resource: %w", err)
	}
	return res, nil
}

// tbhubSeries gathers only the tbhub_ metric families from g.
func tbhubSeries(g promclient.Gatherer) promclient.Gatherer {
	return promclient.GathererFunc(func() ([]*dto.MetricFamily, error) {
		all, err := g.Gather()
		ours := all[:0]
		for _, f := range all {
			if strings.HasPrefix(f.GetName(), "tbhub_") {
				ours = append(ours, f)
			}
		}
		return ours, err
	})
}

// Shutdown flushes and stops the exporters.
func (t *Telemetry) Shutdown(ctx context.Context) error {
	var errs []error
	for _, f := range t.shutdown {
		errs = append(errs, f(ctx))
	}
	return errors.Join(errs...)
}

// TracerProvider is where spans go.
func (t *Telemetry) TracerProvider() trace.TracerProvider { return t.tp }

// Project is the Google Cloud project named in log lines ("" if unknown).
func (t *Telemetry) Project() string { return t.project }

// Tracer returns a tracer named for an instrumented package.
func (t *Telemetry) Tracer(name string) trace.Tracer { return t.tp.Tracer(name) }

// GRPCServer makes a gRPC server continue incoming traces with a span
// per RPC (health checks excepted).
func (t *Telemetry) GRPCServer() grpc.ServerOption {
	return grpc.StatsHandler(otelgrpc.NewServerHandler(t.grpcOptions()...))
}

// GRPCClient makes a gRPC client send the caller's trace context, with a
// span per call.
func (t *Telemetry) GRPCClient() grpc.DialOption {
	return grpc.WithStatsHandler(otelgrpc.NewClientHandler(t.grpcOptions()...))
}

func (t *Telemetry) grpcOptions() []otelgrpc.Option {
	return []otelgrpc.Option{
		otelgrpc.WithTracerProvider(t.tp), otelgrpc.WithPropagators(t.prop),
		// Latency and errors per RPC are counted by Metrics already.
		otelgrpc.WithMeterProvider(metricnoop.NewMeterProvider()),
		otelgrpc.WithFilter(filters.Not(filters.HealthCheck())),
	}
}

// HTTP continues incoming traces with a span per request, named after the
// mux pattern that matched (so experiment ids do not make names unique).
// Probes and /metrics are not traced.
func (t *Telemetry) HTTP(next http.Handler) http.Handler {
	return otelhttp.NewHandler(next, "http",
		otelhttp.WithTracerProvider(t.tp), otelhttp.WithPropagators(t.prop),
		otelhttp.WithMeterProvider(metricnoop.NewMeterProvider()),
		// Called again once a ServeMux has set r.Pattern.
		otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string {
			switch {
			case r.Pattern == "":
				return r.Method
			case strings.Contains(r.Pattern, " "):
				return r.Pattern
			}
			return r.Method + " " + r.Pattern
		}),
		otelhttp.WithFilter(func(r *http.Request) bool {
			switch r.URL.Path {
			case "/healthz", "/readyz", "/metrics":
				return false
			}
			return true
		}))
}

// SetGlobal makes t's tracer provider and propagator OpenTelemetry's
// global ones, for libraries that trace through them (the Cloud Spanner
// and Storage clients), and sends OpenTelemetry's own errors (a failed
// export) to logger as warnings.
func (t *Telemetry) SetGlobal(logger *slog.Logger) {
	otel.SetTracerProvider(t.tp)
	otel.SetTextMapPropagator(t.prop)
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		logger.Warn("telemetry export failed", "error", err.Error())
	}))
}
