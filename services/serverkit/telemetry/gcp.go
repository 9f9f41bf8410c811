//lint:file-ignore SA1019 Google's Cloud Trace and Cloud Monitoring exporters are deprecated in favour of OTLP to telemetry.googleapis.com (archived after 2027-01-01); they are what tbhub's service accounts are granted (cloudtrace.agent, monitoring.metricWriter) today. --trace-exporter otlp is the way out.

package telemetry

import (
	mexporter "github.com/GoogleCloudPlatform/opentelemetry-operations-go/exporter/metric"
	texporter "github.com/GoogleCloudPlatform/opentelemetry-operations-go/exporter/trace"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// cloudTraceExporter sends spans to Cloud Trace in project, with the
// process's Application Default Credentials.
func cloudTraceExporter(project string) (sdktrace.SpanExporter, error) {
	return texporter.New(texporter.WithProjectID(project))
}

// cloudMonitoringExporter sends metrics to Cloud Monitoring in project (as
// workload.googleapis.com/NAME), with Application Default Credentials.
func cloudMonitoringExporter(project string) (sdkmetric.Exporter, error) {
	return mexporter.New(mexporter.WithProjectID(project))
}
