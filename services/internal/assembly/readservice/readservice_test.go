package readservice_test

import (
	"context"
	"net"
	"path/filepath"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	datapb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/data"
	"github.com/tbhub/tbhub/services/internal/api/reader"
	"github.com/tbhub/tbhub/services/internal/assembly/readservice"
	"github.com/tbhub/tbhub/services/internal/run/backend"
	"github.com/tbhub/tbhub/services/internal/storage/store"
)

// The process as Cloud Run runs it: health, the data provider behind the
// guard with the experiment-ID check in front, and a graceful stop.
func TestServe(t *testing.T) {
	dir := t.TempDir()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- readservice.Serve(ctx, lis, readservice.Config{
			Backend: backend.Spec{DataDir: filepath.Join(dir, "data")},
			Reader:  reader.Config{BlobKeySecret: reader.RandomSecret()},
		})
	}()
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	hc, err := grpc_health_v1.NewHealthClient(conn).Check(ctx, &grpc_health_v1.HealthCheckRequest{}, grpc.WaitForReady(true))
	if err != nil || hc.GetStatus() != grpc_health_v1.HealthCheckResponse_SERVING {
		t.Fatalf("health: %v, %v", hc, err)
	}
	dp := datapb.NewTensorBoardDataProviderClient(conn)
	if _, err := dp.ListRuns(ctx, &datapb.ListRunsRequest{}); status.Code(err) != codes.InvalidArgument {
		t.Errorf("ListRuns without an experiment: %v, want InvalidArgument", err)
	}
	if _, err := dp.ListRuns(ctx, &datapb.ListRunsRequest{ExperimentId: store.NewExperimentID()}); status.Code(err) != codes.NotFound {
		t.Errorf("ListRuns of a missing experiment: %v, want NotFound", err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Serve: %v", err)
	}
}

func TestValidate(t *testing.T) {
	for name, cfg := range map[string]readservice.Config{
		"no address": {Backend: backend.Spec{DataDir: "d"}, Reader: reader.Config{BlobKeySecret: reader.RandomSecret()}},
		"no secret":  {Addr: ":1", Backend: backend.Spec{DataDir: "d"}},
		"no backend": {Addr: ":1", Reader: reader.Config{BlobKeySecret: reader.RandomSecret()}},
	} {
		if err := cfg.Validate(); err == nil {
			t.Errorf("%s: valid", name)
		}
	}
}
