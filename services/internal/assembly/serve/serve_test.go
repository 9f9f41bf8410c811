package serve_test

import (
	"context"
	"fmt"
	"github.com/tbhub/tbhub/services/internal/testenv/inprocess"
	"net/http"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	authv1 "github.com/tbhub/tbhub/schemas/gen/go/tbhub/auth/v1"
	servicepb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/service"
	"github.com/tbhub/tbhub/services/internal/assembly/serve"
	"github.com/tbhub/tbhub/services/internal/policy/limits"
	"github.com/tbhub/tbhub/services/internal/storage/blob"
	"github.com/tbhub/tbhub/services/internal/storage/store"
)

// With --grpc-addr, gRPC gets its own listener; the handshake points there.
func TestSeparateGRPCPort(t *testing.T) {
	t.Parallel()
	st, blobs := embedded(t)
	h := newHarness(t, st, blobs, func(c *serve.Config) { c.GRPCAddr = "localhost:0" })
	if !strings.HasSuffix(h.srv.APIEndpoint(), h.srv.GRPCAddr()) || strings.Contains(h.srv.Origin(), h.srv.GRPCAddr()) {
		t.Fatalf("endpoint %s, origin %s, gRPC at %s", h.srv.APIEndpoint(), h.srv.Origin(), h.srv.GRPCAddr())
	}
	info := handshake(t, h.srv.Origin())
	if info.GetApiServer().GetEndpoint() != h.srv.APIEndpoint() {
		t.Errorf("handshake endpoint %q, want %q", info.GetApiServer().GetEndpoint(), h.srv.APIEndpoint())
	}
	conn, err := grpc.NewClient(info.GetApiServer().GetEndpoint(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	hc, err := grpc_health_v1.NewHealthClient(conn).Check(t.Context(), &grpc_health_v1.HealthCheckRequest{})
	if err != nil || hc.GetStatus() != grpc_health_v1.HealthCheckResponse_SERVING {
		t.Errorf("health: %v, %v", hc, err)
	}
	ctx := h.UserContext(t, "ada")
	if who, err := authv1.NewAuthServiceClient(conn).WhoAmI(ctx, &authv1.WhoAmIRequest{}); err != nil || who.GetUserId() == "" {
		t.Errorf("WhoAmI on the gRPC port: %v, %v", who, err)
	}
	// The HTTP port still answers probes.
	resp, err := http.Get(h.srv.Origin() + "/readyz")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Errorf("readyz: %v %v", resp, err)
	}
}

func TestRequestAndBlobSizeLimits(t *testing.T) {
	t.Parallel()
	st, blobs := embedded(t)
	h := newHarness(t, st, blobs, func(c *serve.Config) { c.Limits.MaxPointsPerRequest = 1 << 30 })
	ctx := h.UserContext(t, "ada")
	ce, err := h.Writer.CreateExperiment(ctx, &servicepb.CreateExperimentRequest{})
	if err != nil {
		t.Fatal(err)
	}
	eid := ce.GetExperimentId()
	// A request above MaxRequestBytes (8 MiB) is refused by gRPC, naming
	// the limit.
	steps := make([]int64, 400_000)
	for i := range steps {
		steps[i] = int64(i)
	}
	_, err = h.Writer.WriteScalar(ctx, inprocess.ScalarRequest(eid, steps...))
	if status.Code(err) != codes.ResourceExhausted || !strings.Contains(err.Error(), "8388608") {
		t.Errorf("oversized request: %v, want RESOURCE_EXHAUSTED naming 8388608", err)
	}
	// The default blob limit is 64 MiB.
	seq, err := h.Writer.GetOrCreateBlobSequence(ctx, &servicepb.GetOrCreateBlobSequenceRequest{
		ExperimentId: eid, Run: "r", Tag: "b", WallTime: timestamppb.Now(), FinalSequenceLength: 1})
	if err != nil {
		t.Fatal(err)
	}
	s, err := h.Writer.WriteBlob(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s.Send(&servicepb.WriteBlobRequest{BlobSequenceId: seq.GetBlobSequenceId(), Data: []byte("x"), BlobBytes: limits.Default().MaxBlobBytes + 1})
	s.CloseSend()
	if _, err := s.Recv(); status.Code(err) != codes.ResourceExhausted || !strings.Contains(err.Error(), "67108864") {
		t.Errorf("blob of 64 MiB + 1: %v, want RESOURCE_EXHAUSTED naming 67108864", err)
	}
}

// The request sizes advertised in the handshake are enforced, and so is
// the size of a series' metadata (issue 14 #4, #8; what is stored of it
// counts toward the byte quota, TestMetadataCountsTowardTheByteQuota): a 5 MiB blob chunk, a 3 MB WriteScalar and a point carrying 100 KB
// of plugin_data.content are refused, and nothing of them is stored.
func TestAdvertisedSizesAreEnforced(t *testing.T) {
	t.Parallel()
	st, blobs := embedded(t)
	h := newHarness(t, st, blobs, nil)
	ctx, eid := h.AdaExperiment(t, "sizes")
	lim := limits.Default()
	steps := make([]int64, 150_000) // about 3 MB
	for i := range steps {
		steps[i] = int64(i)
	}
	_, err := h.Writer.WriteScalar(ctx, inprocess.ScalarRequest(eid, steps...))
	if status.Code(err) != codes.ResourceExhausted || !strings.Contains(err.Error(), fmt.Sprint(lim.MaxScalarRequestBytes)) {
		t.Errorf("3 MB WriteScalar: %v, want RESOURCE_EXHAUSTED naming %d", err, lim.MaxScalarRequestBytes)
	}
	big := inprocess.ScalarRequest(eid, 1)
	big.Runs[0].Tags[0].Name = "fat"
	big.Runs[0].Tags[0].Metadata.PluginData.Content = make([]byte, 100_000)
	if _, err := h.Writer.WriteScalar(ctx, big); status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "metadata limit") {
		t.Errorf("100 KB of metadata: %v, want INVALID_ARGUMENT naming the metadata limit", err)
	}
	seq, err := h.Writer.GetOrCreateBlobSequence(ctx, &servicepb.GetOrCreateBlobSequenceRequest{
		ExperimentId: eid, Run: "r", Tag: "b", WallTime: timestamppb.Now(), FinalSequenceLength: 1})
	if err != nil {
		t.Fatal(err)
	}
	s, err := h.Writer.WriteBlob(ctx)
	if err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 5<<20)
	s.Send(&servicepb.WriteBlobRequest{BlobSequenceId: seq.GetBlobSequenceId(), Data: chunk, BlobBytes: int64(len(chunk)), FinalizeObject: true})
	s.CloseSend()
	if _, err := s.Recv(); status.Code(err) != codes.ResourceExhausted || !strings.Contains(err.Error(), fmt.Sprint(lim.MaxBlobChunkBytes)) {
		t.Errorf("5 MiB chunk: %v, want RESOURCE_EXHAUSTED naming %d", err, lim.MaxBlobChunkBytes)
	}
	series, err := st.ListSeries(ctx, eid, store.DataClassUnknown, store.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	for _, ts := range series {
		if ts.DataClass != store.DataClassBlobSequence && ts.PointCount > 0 {
			t.Errorf("series %s/%s stored %d points from refused requests", ts.Run, ts.Tag, ts.PointCount)
		}
	}
	md, err := h.Writer.GetBlobMetadata(ctx, &servicepb.GetBlobMetadataRequest{BlobSequenceId: seq.GetBlobSequenceId()})
	if err != nil || md.GetSize() != 0 {
		t.Errorf("after the refused chunk: %v %v, want nothing stored", md, err)
	}
}

// PurgeData and DeleteOwnUser work when enabled.
func TestTestOnlyRPCsWhenEnabled(t *testing.T) {
	t.Parallel()
	st, blobs := embedded(t)
	h := newHarness(t, st, blobs, func(c *serve.Config) { c.EnableTestRPCs = true })
	ctx := h.UserContext(t, "ada")
	ce, err := h.Writer.CreateExperiment(ctx, &servicepb.CreateExperimentRequest{})
	if err != nil {
		t.Fatal(err)
	}
	seq, err := h.Writer.GetOrCreateBlobSequence(ctx, &servicepb.GetOrCreateBlobSequenceRequest{
		ExperimentId: ce.GetExperimentId(), Run: "r", Tag: "b", WallTime: timestamppb.Now(), FinalSequenceLength: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.WriteWholeBlob(ctx, seq.GetBlobSequenceId(), 0, []byte("bytes")); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Writer.DeleteOwnUser(ctx, &servicepb.DeleteOwnUserRequest{}); err != nil {
		t.Fatal(err)
	}
	// The user's tokens are revoked, the experiment deleted.
	if _, err := h.Account.WhoAmI(ctx, &authv1.WhoAmIRequest{}); status.Code(err) != codes.Unauthenticated {
		t.Errorf("token after DeleteOwnUser: %v", err)
	}
	// An object no row names (an upload cut off before its first row).
	orphan := blob.ObjectKey(ce.GetExperimentId(), "r", "b", 0, 7)
	if _, err := blobs.Put(context.Background(), orphan, strings.NewReader("orphan"), blob.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	admin := h.UserContext(t, "admin")
	purged, err := h.Writer.PurgeData(admin, &servicepb.PurgeDataRequest{BatchLimit: 10})
	if err != nil || purged.GetPurgeStats().GetExperiments() != 1 {
		t.Fatalf("PurgeData = %v, %v; want 1 experiment", purged, err)
	}
	// ... and its blob objects are gone with it.
	var left []string
	if err := blobs.List(context.Background(), "experiments/", func(a blob.Attrs) error {
		left = append(left, a.Key)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(left) != 0 {
		t.Errorf("objects left after PurgeData: %v", left)
	}
}
