package e2e_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	tbpb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard"
	servicepb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/service"
	"github.com/tbhub/tbhub/services/internal/store"
	"github.com/tbhub/tbhub/services/internal/testenv/spanneremu"
)

// TestPointsQuotaAcrossInstances is issue 22's quota test: two write
// service processes on one Spanner emulator database, one user under a
// 200,000-point quota uploading 150,000 points through each at once. Each
// instance's cached usage is made stale for the whole test, not by
// timing: --usage-refresh is an hour, and each instance reads the user's
// usage (near zero) before the uploads start, so each would admit its
// 150,000 points on its own count. The store counts the points and checks
// the quota in each write's transaction, so at most one request's worth
// is refused short of the quota, nothing past it is stored, and the
// refused upload says it hit the quota.
func TestPointsQuotaAcrossInstances(t *testing.T) {
	const quota, each, perRequest = 200_000, 150_000, 5_000
	bins := buildServerBinaries(t)
	db := spanneremu.NewDatabase(t)
	base := cloudEnv(t, db)
	token := createToken(t, bins, base, db, "researcher")
	ctx := metadata.AppendToOutgoingContext(t.Context(), "authorization", "Bearer "+token)

	var writers []servicepb.TensorBoardWriterServiceClient
	for range 2 {
		port := freePort(t)
		startProcess(t, bins["write-service"], append(base, "PORT="+port,
			"TBHUB_PUBLIC_ORIGIN=http://127.0.0.1:"+port, fmt.Sprintf("TBHUB_MAX_POINTS_PER_USER=%d", quota),
			"TBHUB_USAGE_REFRESH=1h"))
		waitHTTPReady(t, "http://127.0.0.1:"+port+"/readyz")
		conn, err := grpc.NewClient("127.0.0.1:"+port, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		writers = append(writers, servicepb.NewTensorBoardWriterServiceClient(conn))
	}
	request := func(eid string, lo, n int64) *servicepb.WriteScalarRequest {
		tag := &servicepb.WriteScalarRequest_Tag{Name: "loss",
			Metadata: &tbpb.SummaryMetadata{PluginData: &tbpb.SummaryMetadata_PluginData{PluginName: "scalars"}, DataClass: tbpb.DataClass_DATA_CLASS_SCALAR}}
		now := timestamppb.Now()
		for step := lo; step < lo+n; step++ {
			tag.Points = append(tag.Points, &servicepb.ScalarPoint{Step: step, WallTime: now, Value: float64(step) / 7})
		}
		return &servicepb.WriteScalarRequest{ExperimentId: eid, Runs: []*servicepb.WriteScalarRequest_Run{{Name: "train", Tags: []*servicepb.WriteScalarRequest_Tag{tag}}}}
	}
	// One experiment per instance, and one point through each: both
	// instances now hold the user's usage, at most 2 points, for an hour.
	eids := make([]string, len(writers))
	for i, w := range writers {
		ce, err := w.CreateExperiment(ctx, &servicepb.CreateExperimentRequest{Name: fmt.Sprintf("through instance %d", i)})
		if err != nil {
			t.Fatal(err)
		}
		eids[i] = ce.GetExperimentId()
		if _, err := w.WriteScalar(ctx, request(eids[i], each, 1)); err != nil {
			t.Fatal(err)
		}
	}
	errs := make([]error, len(writers))
	var wg sync.WaitGroup
	for i, w := range writers {
		wg.Go(func() { errs[i] = upload(ctx, w, eids[i], each, perRequest, request) })
	}
	wg.Wait()
	refused := 0
	for i, err := range errs {
		if err == nil {
			continue
		}
		refused++
		if status.Code(err) != codes.ResourceExhausted || !strings.Contains(err.Error(), fmt.Sprintf("points per user is %d", quota)) {
			t.Errorf("upload through instance %d: %v, want RESOURCE_EXHAUSTED naming the %d-point quota", i, err, quota)
		}
		t.Logf("upload through instance %d refused: %v", i, err)
	}
	if refused == 0 {
		t.Errorf("both uploads of %d points passed a quota of %d", each, quota)
	}
	st := db.Store(t)
	var stored int64
	for _, eid := range eids {
		err := st.ReadScalars(t.Context(), eid, store.Query{MaxPoints: store.AllPoints}, func(_ *store.TimeSeries, ps []store.ScalarPoint) error {
			stored += int64(len(ps))
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("stored %d of %d points under a quota of %d", stored, 2*each+2, quota)
	if stored > quota || stored <= quota-perRequest {
		t.Errorf("stored %d points under a quota of %d: want at most the quota, and less than one request (%d) short of it", stored, quota, perRequest)
	}
	e, err := st.GetExperiment(t.Context(), eids[0])
	if err != nil {
		t.Fatal(err)
	}
	u, err := st.UserUsage(t.Context(), e.Owner)
	if err != nil {
		t.Fatal(err)
	}
	if u.Points != stored {
		t.Errorf("the user's usage row says %d points, %d are stored", u.Points, stored)
	}
}

// upload sends steps [0, n) to eid in requests of perRequest points and
// stops at the first error.
func upload(ctx context.Context, w servicepb.TensorBoardWriterServiceClient, eid string, n, perRequest int64,
	request func(eid string, lo, n int64) *servicepb.WriteScalarRequest) error {
	for lo := int64(0); lo < n; lo += perRequest {
		if _, err := w.WriteScalar(ctx, request(eid, lo, perRequest)); err != nil {
			return err
		}
	}
	return nil
}
