package serve_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"google.golang.org/protobuf/types/known/timestamppb"

	servicepb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/service"
	"github.com/tbhub/tbhub/services/internal/assembly/serve"
	"github.com/tbhub/tbhub/services/serverkit/telemetry"
)

// TestMetrics: with metrics on, RPCs (by method and code), routes (by pattern, not
// by experiment id) and points written appear at GET /metrics.
func TestMetrics(t *testing.T) {
	t.Parallel()
	st, blobs := embedded(t)
	h := newHarness(t, st, blobs, func(c *serve.Config) { c.Metrics = telemetry.NewMetrics() })
	token, err := serve.IssueUserToken(t.Context(), st, h.srv.Authenticator(), "ada", "test")
	if err != nil {
		t.Fatal(err)
	}
	ctx := as(t.Context(), bearer(token))
	exp, err := h.Writer.CreateExperiment(ctx, &servicepb.CreateExperimentRequest{Name: "m"})
	if err != nil {
		t.Fatal(err)
	}
	points := []*servicepb.ScalarPoint{{Step: 1, WallTime: timestamppb.Now(), Value: 1}, {Step: 2, WallTime: timestamppb.Now(), Value: 2}}
	if _, err := h.Writer.WriteScalar(ctx, &servicepb.WriteScalarRequest{ExperimentId: exp.GetExperimentId(), Runs: []*servicepb.WriteScalarRequest_Run{
		{Name: "train", Tags: []*servicepb.WriteScalarRequest_Tag{{Name: "loss", Points: points}}}}}); err != nil {
		t.Fatal(err)
	}
	h.Writer.WriteScalar(t.Context(), &servicepb.WriteScalarRequest{ExperimentId: exp.GetExperimentId()}) // no token: refused
	if resp, err := http.Get(h.srv.Origin() + "/healthz"); err == nil {
		resp.Body.Close()
	}
	resp, err := http.Get(h.srv.Origin() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		`tbhub_grpc_requests_total{code="OK",method="tensorboard.service.TensorBoardWriterService/WriteScalar"} 1`,
		`tbhub_grpc_requests_total{code="Unauthenticated",method="tensorboard.service.TensorBoardWriterService/WriteScalar"} 1`,
		`tbhub_points_written_total{class="scalar"} 2`,
		`tbhub_upload_sessions_total 1`,
		`tbhub_http_requests_total{route="GET /healthz",status="200"} 1`,
		`tbhub_grpc_request_seconds_count{method="tensorboard.service.TensorBoardWriterService/CreateExperiment"} 1`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}
