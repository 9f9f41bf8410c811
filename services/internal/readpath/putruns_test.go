package readpath_test

import (
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	experimentsv1 "github.com/tbhub/tbhub/schemas/gen/go/tbhub/experiments/v1"
	servicepb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/service"
)

// PutRuns creates runs with no data, which data/runs lists in start-time
// order (a run with none last) and GetExperiment returns; a bad run name is
// INVALID_ARGUMENT and stores nothing of the request.
func TestPutRuns(t *testing.T) {
	s := startServer(t)
	conn, err := grpc.NewClient(s.srv.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	ctx := metadata.AppendToOutgoingContext(t.Context(), "authorization", "Bearer "+s.token)
	created, err := servicepb.NewTensorBoardWriterServiceClient(conn).CreateExperiment(ctx, &servicepb.CreateExperimentRequest{Name: "runs"})
	if err != nil {
		t.Fatal(err)
	}
	eid := created.GetExperimentId()
	x := experimentsv1.NewExperimentServiceClient(conn)
	_, err = x.PutRuns(ctx, &experimentsv1.PutRunsRequest{ExperimentId: eid, Runs: []*experimentsv1.RunStart{
		{Name: "hparams/1", StartTime: 1.7e9 + 5}, {Name: "starting"}, {Name: "first", StartTime: 1.7e9}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"", strings.Repeat("r", 1025)} {
		_, err = x.PutRuns(ctx, &experimentsv1.PutRunsRequest{ExperimentId: eid, Runs: []*experimentsv1.RunStart{{Name: "ok"}, {Name: bad}}})
		if status.Code(err) != codes.InvalidArgument {
			t.Errorf("PutRuns with run name %.20q: %v, want INVALID_ARGUMENT", bad, err)
		}
	}
	var list []string
	s.getJSON(t, "/experiment/"+eid+"/data/runs", &list)
	if want := []string{"first", "hparams/1", "starting"}; !slices.Equal(list, want) {
		t.Errorf("data/runs = %v, want %v", list, want)
	}
	got, err := x.GetExperiment(ctx, &experimentsv1.GetExperimentRequest{ExperimentId: eid})
	if err != nil {
		t.Fatal(err)
	}
	var runs []string
	for _, r := range got.GetRuns() {
		runs = append(runs, r.GetName())
	}
	if !slices.Equal(runs, []string{"first", "hparams/1", "starting"}) || got.GetExperiment().GetCounts().GetNumRuns() != 3 {
		t.Errorf("GetExperiment runs = %v, counts %v", got.GetRuns(), got.GetExperiment().GetCounts())
	}
}
