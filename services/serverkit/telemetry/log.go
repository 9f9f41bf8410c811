package telemetry

import (
	"context"
	"io"
	"log/slog"

	"go.opentelemetry.io/otel/trace"
)

// Cloud Logging's names for the fields of a structured log line.
const (
	logTraceKey   = "logging.googleapis.com/trace"
	logSpanKey    = "logging.googleapis.com/spanId"
	logSampledKey = "logging.googleapis.com/trace_sampled"
)

// NewLogger returns a JSON logger writing to w with Cloud Logging's field
// names: severity (DEBUG, INFO, WARNING, ERROR), message, time, and, for a
// record logged with a context inside a trace, the trace
// ("projects/PROJECT/traces/TRACE_ID" when project is known, which lets
// Cloud Logging link the line to Cloud Trace; the bare id otherwise), span
// id and sampled flag.
func NewLogger(w io.Writer, project string) *slog.Logger {
	h := slog.NewJSONHandler(w, &slog.HandlerOptions{ReplaceAttr: cloudLoggingNames})
	return slog.New(&traceHandler{Handler: h, project: project})
}

func cloudLoggingNames(groups []string, a slog.Attr) slog.Attr {
	if len(groups) > 0 {
		return a
	}
	switch a.Key {
	case slog.LevelKey:
		a.Key = "severity"
		if l, ok := a.Value.Any().(slog.Level); ok && l >= slog.LevelWarn && l < slog.LevelError {
			a.Value = slog.StringValue("WARNING") // slog says WARN
		}
	case slog.MessageKey:
		a.Key = "message"
	}
	return a
}

// traceHandler adds the trace fields of the record's context.
type traceHandler struct {
	slog.Handler
	project string
}

func (h *traceHandler) Handle(ctx context.Context, r slog.Record) error {
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		id := sc.TraceID().String()
		if h.project != "" {
			id = "projects/" + h.project + "/traces/" + id
		}
		r = r.Clone()
		r.AddAttrs(slog.String(logTraceKey, id), slog.String(logSpanKey, sc.SpanID().String()),
			slog.Bool(logSampledKey, sc.IsSampled()))
	}
	return h.Handler.Handle(ctx, r)
}

func (h *traceHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &traceHandler{Handler: h.Handler.WithAttrs(attrs), project: h.project}
}

func (h *traceHandler) WithGroup(name string) slog.Handler {
	return &traceHandler{Handler: h.Handler.WithGroup(name), project: h.project}
}
