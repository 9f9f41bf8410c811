package telemetry

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"net"
	"strings"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"

	"github.com/tbhub/tbhub/services/serverkit/config"
)

func TestParseCloudTrace(t *testing.T) {
	for _, tc := range []struct {
		header  string
		ok      bool
		span    string
		sampled bool
	}{
		{"105445aa7843bc8bf206b12000100000/1;o=1", true, "0000000000000001", true},
		{"105445AA7843BC8BF206B12000100000/18446744073709551615;o=0", true, "ffffffffffffffff", false},
		{"105445aa7843bc8bf206b12000100000/255", true, "00000000000000ff", false},
		{"105445aa7843bc8bf206b12000100000", false, "", false},       // no span
		{"105445aa7843bc8bf206b12000100000/0;o=1", false, "", false}, // span 0 is invalid
		{"xyz/1;o=1", false, "", false},
		{"", false, "", false},
	} {
		sc, ok := parseCloudTrace(tc.header)
		if ok != tc.ok || (ok && (sc.SpanID().String() != tc.span || sc.IsSampled() != tc.sampled ||
			sc.TraceID().String() != "105445aa7843bc8bf206b12000100000" || !sc.IsRemote())) {
			t.Errorf("%q: %v %v, want ok %v span %s sampled %v", tc.header, sc, ok, tc.ok, tc.span, tc.sampled)
		}
	}
}

// traceparent wins over X-Cloud-Trace-Context; the cloud header alone is used.
func TestPropagator(t *testing.T) {
	const (
		w3c   = "0af7651916cd43dd8448eb211c80319c"
		cloud = "105445aa7843bc8bf206b12000100000"
	)
	both := propagation.HeaderCarrier{}
	both.Set("traceparent", "00-"+w3c+"-b7ad6b7169203331-01")
	both.Set("X-Cloud-Trace-Context", cloud+"/1;o=1")
	if got := trace.SpanContextFromContext(Propagator().Extract(context.Background(), both)).TraceID().String(); got != w3c {
		t.Errorf("both headers: trace %s, want traceparent's %s", got, w3c)
	}
	only := propagation.HeaderCarrier{}
	only.Set("X-Cloud-Trace-Context", cloud+"/1;o=1")
	ctx := Propagator().Extract(context.Background(), only)
	if got := trace.SpanContextFromContext(ctx).TraceID().String(); got != cloud {
		t.Errorf("cloud header: trace %s, want %s", got, cloud)
	}
	out := propagation.HeaderCarrier{}
	Propagator().Inject(ctx, out)
	if out.Get("traceparent") == "" || out.Get("X-Cloud-Trace-Context") != "" {
		t.Errorf("injected %v: want traceparent only", out)
	}
}

func TestLogger(t *testing.T) {
	var buf bytes.Buffer
	log := NewLogger(&buf, "proj")
	sc := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{1}, SpanID: trace.SpanID{2}, TraceFlags: trace.FlagsSampled,
	})
	log.With("experiment_id", "e1").WarnContext(trace.ContextWithSpanContext(context.Background(), sc), "slow", "ms", 7)
	log.InfoContext(context.Background(), "no trace")
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines: %s", len(lines), buf.String())
	}
	var first, second map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &first); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(lines[1]), &second); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"severity": "WARNING", "message": "slow", "experiment_id": "e1", "ms": 7.0,
		"logging.googleapis.com/trace":         "projects/proj/traces/" + sc.TraceID().String(),
		"logging.googleapis.com/spanId":        sc.SpanID().String(),
		"logging.googleapis.com/trace_sampled": true,
	}
	for k, v := range want {
		if first[k] != v {
			t.Errorf("%s = %v, want %v (line %s)", k, first[k], v, lines[0])
		}
	}
	if first["time"] == nil {
		t.Errorf("no time: %s", lines[0])
	}
	if _, ok := second["logging.googleapis.com/trace"]; ok || second["severity"] != "INFO" {
		t.Errorf("line outside a trace: %s", lines[1])
	}
	// Without a project the bare id, still findable.
	buf.Reset()
	NewLogger(&buf, "").ErrorContext(trace.ContextWithSpanContext(context.Background(), sc), "x")
	if !strings.Contains(buf.String(), `"logging.googleapis.com/trace":"`+sc.TraceID().String()+`"`) ||
		!strings.Contains(buf.String(), `"severity":"ERROR"`) {
		t.Errorf("no project: %s", buf.String())
	}
}

func TestConfigFlags(t *testing.T) {
	parse := func(env map[string]string, args ...string) (Config, error) {
		var c Config
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		settings, aliases := c.Settings()
		config.Bind(fs, settings...)
		if err := config.Parse(fs, args, config.MapEnv(env), aliases...); err != nil {
			return c, err
		}
		return c, c.Validate()
	}
	if c, err := parse(nil); err != nil || c.TraceExporter != ExporterNone || c.MetricsExporter != ExporterNone || c.SampleRatio != 1 {
		t.Errorf("defaults: %+v, %v", c, err)
	}
	if c, err := parse(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4317"}); err != nil || c.TraceExporter != ExporterOTLP {
		t.Errorf("with an OTLP endpoint: %+v, %v", c, err)
	}
	c, err := parse(map[string]string{"TBHUB_TRACE_EXPORTER": "gcp", "GOOGLE_CLOUD_PROJECT": "p1", "TBHUB_TRACE_SAMPLE_RATIO": "0.25"}, "--metrics-exporter", "gcp")
	if err != nil || c.TraceExporter != ExporterGCP || c.MetricsExporter != ExporterGCP || c.Project != "p1" || c.SampleRatio != 0.25 {
		t.Errorf("environment and flags: %+v, %v", c, err)
	}
	for _, args := range [][]string{{"--trace-exporter", "jaeger"}, {"--metrics-exporter", "otlp"}, {"--trace-sample-ratio", "2"}} {
		if _, err := parse(nil, args...); err == nil {
			t.Errorf("%v accepted", args)
		}
	}
}

// Only tbhub's own series go to Cloud Monitoring.
func TestTbhubSeries(t *testing.T) {
	m := NewMetrics()
	m.ObserveStore("ReadScalars", 0, nil, false)
	families, err := tbhubSeries(m.Registry()).Gather()
	if err != nil {
		t.Fatal(err)
	}
	var store bool
	for _, f := range families {
		if !strings.HasPrefix(f.GetName(), "tbhub_") {
			t.Errorf("exported %s", f.GetName())
		}
		store = store || f.GetName() == "tbhub_store_seconds"
	}
	if !store {
		t.Errorf("tbhub_store_seconds not among %d families", len(families))
	}
}

// collector is an OTLP trace receiver.
type collector struct {
	collectortrace.UnimplementedTraceServiceServer
	mu   sync.Mutex
	reqs []*collectortrace.ExportTraceServiceRequest
}

func (c *collector) Export(_ context.Context, r *collectortrace.ExportTraceServiceRequest) (*collectortrace.ExportTraceServiceResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reqs = append(c.reqs, r)
	return &collectortrace.ExportTraceServiceResponse{}, nil
}

// With the OTLP exporter, spans reach the endpoint OTEL_EXPORTER_OTLP_ENDPOINT
// names, under the process's service name, by Shutdown at the latest.
func TestStartOTLP(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	col := &collector{}
	srv := grpc.NewServer()
	collectortrace.RegisterTraceServiceServer(srv, col)
	go srv.Serve(lis)
	defer srv.Stop()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://"+lis.Addr().String())

	tel, err := Start(t.Context(), Config{Service: "tbhub-test", TraceExporter: ExporterOTLP}, NewMetrics())
	if err != nil {
		t.Fatal(err)
	}
	_, span := tel.Tracer("test").Start(context.Background(), "work")
	span.End()
	if err := tel.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	col.mu.Lock()
	defer col.mu.Unlock()
	var names []string
	var service string
	for _, r := range col.reqs {
		for _, rs := range r.GetResourceSpans() {
			for _, a := range rs.GetResource().GetAttributes() {
				if a.GetKey() == "service.name" {
					service = a.GetValue().GetStringValue()
				}
			}
			for _, ss := range rs.GetScopeSpans() {
				for _, s := range ss.GetSpans() {
					names = append(names, s.GetName())
				}
			}
		}
	}
	if len(names) != 1 || names[0] != "work" || service != "tbhub-test" {
		t.Errorf("collector got spans %v of service %q, want [work] of tbhub-test", names, service)
	}
}

// Off records nothing but keeps an incoming trace for logs and calls.
func TestOff(t *testing.T) {
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{9}, SpanID: trace.SpanID{8}, Remote: true})
	ctx, span := Off().Tracer("t").Start(trace.ContextWithRemoteSpanContext(context.Background(), sc), "x")
	if span.IsRecording() || trace.SpanContextFromContext(ctx).TraceID() != sc.TraceID() {
		t.Errorf("Off: recording %v, trace %s", span.IsRecording(), trace.SpanContextFromContext(ctx).TraceID())
	}
}
