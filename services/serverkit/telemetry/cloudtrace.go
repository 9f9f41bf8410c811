package telemetry

import (
	"context"
	"encoding/binary"
	"strconv"
	"strings"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// cloudTraceHeader is the trace header Google's front ends (Cloud Run, load
// balancers) add: "TRACE_ID/SPAN_ID;o=OPTIONS", the trace id in 32 hex digits,
// the span id in decimal, o=1 if the trace is sampled.
const cloudTraceHeader = "X-Cloud-Trace-Context"

// cloudTraceContext reads cloudTraceHeader. It writes nothing: outgoing calls
// carry W3C traceparent, which Google's services read too. In Propagator it
// runs before propagation.TraceContext, so a traceparent, when present, wins.
type cloudTraceContext struct{}

func (cloudTraceContext) Inject(context.Context, propagation.TextMapCarrier) {}

func (cloudTraceContext) Extract(ctx context.Context, carrier propagation.TextMapCarrier) context.Context {
	sc, ok := parseCloudTrace(carrier.Get(cloudTraceHeader))
	if !ok {
		return ctx
	}
	return trace.ContextWithRemoteSpanContext(ctx, sc)
}

func (cloudTraceContext) Fields() []string { return []string{cloudTraceHeader} }

func parseCloudTrace(h string) (trace.SpanContext, bool) {
	ids, options, _ := strings.Cut(h, ";")
	traceHex, spanDec, ok := strings.Cut(ids, "/")
	if !ok {
		return trace.SpanContext{}, false
	}
	tid, err := trace.TraceIDFromHex(strings.ToLower(traceHex))
	if err != nil {
		return trace.SpanContext{}, false
	}
	span, err := strconv.ParseUint(spanDec, 10, 64)
	if err != nil || span == 0 {
		return trace.SpanContext{}, false
	}
	var sid trace.SpanID
	binary.BigEndian.PutUint64(sid[:], span)
	var flags trace.TraceFlags
	if options == "o=1" {
		flags = trace.FlagsSampled
	}
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: flags, Remote: true})
	return sc, sc.IsValid()
}
