package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	experimentsv1 "github.com/tbhub/tbhub/schemas/gen/go/tbhub/experiments/v1"
)

// heldCounts is an experiment service that knows one experiment's counts.
type heldCounts struct {
	experimentsv1.ExperimentServiceClient
	eid    string
	counts *experimentsv1.ExperimentCounts
}

func (h heldCounts) GetExperiment(_ context.Context, req *experimentsv1.GetExperimentRequest, _ ...grpc.CallOption) (*experimentsv1.GetExperimentResponse, error) {
	if req.GetExperimentId() != h.eid {
		return nil, status.Error(codes.NotFound, "no such experiment")
	}
	return &experimentsv1.GetExperimentResponse{Experiment: &experimentsv1.Experiment{ExperimentId: h.eid, Counts: h.counts}}, nil
}

// After an upload tbup says what the server holds, counted as 'tbup list'
// counts (one point per step: a rewritten step keeps its last point), so
// that the numbers people compare agree: the upload's own counts are of
// points sent, 32,684 scalars for the corpus where the server keeps 32,372.
func TestUploadSaysWhatTheServerHolds(t *testing.T) {
	api := heldCounts{eid: "E", counts: &experimentsv1.ExperimentCounts{NumRuns: 61, NumScalarPoints: 32372, NumTensorPoints: 409, NumBlobs: 681, TotalBlobBytes: 20245154}}
	var out bytes.Buffer
	if err := reportStored(context.Background(), &out, api, "E"); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"61 runs", "32372 scalar points", "409 tensor points", "681 blobs (19.3 MiB)", "last", "tbup list"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("%q does not say %q", out.String(), want)
		}
	}
}
