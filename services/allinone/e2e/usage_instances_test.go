package e2e_test

import (
	"context"
	"errors"
	"fmt"
	"io"
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
	"github.com/tbhub/tbhub/services/internal/storage/store"
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

	writers := staleWriters(t, bins, base, fmt.Sprintf("TBHUB_MAX_POINTS_PER_USER=%d", quota))
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
	uploadThroughEach(t, writers, fmt.Sprintf("points per user is %d", quota), func(i int, w servicepb.TensorBoardWriterServiceClient) error {
		return upload(ctx, w, eids[i], each, perRequest, request)
	})
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

// uploadThroughEach runs upload through each writer at once and wants at
// least one refused, every refusal RESOURCE_EXHAUSTED naming the quota
// (quota is a piece of its message).
func uploadThroughEach(t *testing.T, writers []servicepb.TensorBoardWriterServiceClient, quota string,
	upload func(i int, w servicepb.TensorBoardWriterServiceClient) error) {
	t.Helper()
	errs := make([]error, len(writers))
	var wg sync.WaitGroup
	for i, w := range writers {
		wg.Go(func() { errs[i] = upload(i, w) })
	}
	wg.Wait()
	refused := 0
	for i, err := range errs {
		if err == nil {
			continue
		}
		refused++
		if status.Code(err) != codes.ResourceExhausted || !strings.Contains(err.Error(), quota) {
			t.Errorf("upload through instance %d: %v, want RESOURCE_EXHAUSTED naming the quota (%q)", i, err, quota)
		}
		t.Logf("upload through instance %d refused: %v", i, err)
	}
	if refused == 0 {
		t.Errorf("the uploads through every instance passed the quota (%q)", quota)
	}
}

// staleWriters starts two write service processes with env added, whose
// cached usage is trusted for an hour (--usage-refresh), and returns a
// client of each.
func staleWriters(t *testing.T, bins map[string]string, base []string, env ...string) []servicepb.TensorBoardWriterServiceClient {
	t.Helper()
	var writers []servicepb.TensorBoardWriterServiceClient
	for range 2 {
		port := freePort(t)
		startProcess(t, bins["write-service"], append(append(base, "PORT="+port,
			"TBHUB_PUBLIC_ORIGIN=http://127.0.0.1:"+port, "TBHUB_USAGE_REFRESH=1h"), env...))
		waitHTTPReady(t, "http://127.0.0.1:"+port+"/readyz")
		conn, err := grpc.NewClient("127.0.0.1:"+port, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		writers = append(writers, servicepb.NewTensorBoardWriterServiceClient(conn))
	}
	return writers
}

// TestBytesQuotaAcrossInstances is the byte quota's counterpart: two write
// service processes on one emulator database and one fake-gcs-server, one
// user under a byte quota uploading images through each at once, each
// instance's cached usage read before the uploads and kept for an hour.
// Every stored blob is counted in the usage row and the quota checked in
// the transaction writing the blob's row, so the user's stored bytes never
// pass the quota, and the refused upload says it hit the quota.
func TestBytesQuotaAcrossInstances(t *testing.T) {
	const image, each = 100_000, 30 // bytes per image, images per instance
	bins := buildServerBinaries(t)
	db := spanneremu.NewDatabase(t)
	base := cloudEnv(t, db)
	token := createToken(t, bins, base, db, "researcher")
	ctx := metadata.AppendToOutgoingContext(t.Context(), "authorization", "Bearer "+token)
	// The quota leaves room for one and a half instances' images beside
	// the token, runs and series metadata (well under 100 KB).
	const quota = 100_000 + each*image*3/2
	writers := staleWriters(t, bins, base, fmt.Sprintf("TBHUB_MAX_BLOB_BYTES_PER_USER=%d", quota))

	// Both experiments and image sequences are made through the first
	// instance; then each instance reads the user's usage (no blobs) with
	// its first image, and keeps it.
	seqs := make([]string, len(writers))
	for i := range writers {
		ce, err := writers[0].CreateExperiment(ctx, &servicepb.CreateExperimentRequest{Name: fmt.Sprintf("through instance %d", i)})
		if err != nil {
			t.Fatal(err)
		}
		seq, err := writers[0].GetOrCreateBlobSequence(ctx, &servicepb.GetOrCreateBlobSequenceRequest{ExperimentId: ce.GetExperimentId(),
			Run: "train", Tag: "images", Step: 1, WallTime: timestamppb.Now(), FinalSequenceLength: each + 1,
			Metadata: &tbpb.SummaryMetadata{PluginData: &tbpb.SummaryMetadata_PluginData{PluginName: "images"}, DataClass: tbpb.DataClass_DATA_CLASS_BLOB_SEQUENCE}})
		if err != nil {
			t.Fatal(err)
		}
		seqs[i] = seq.GetBlobSequenceId()
	}
	for i, w := range writers {
		if err := writeImage(ctx, w, seqs[i], each, 1); err != nil {
			t.Fatal(err)
		}
	}
	uploadThroughEach(t, writers, fmt.Sprintf("blob bytes per user is %d", quota), func(i int, w servicepb.TensorBoardWriterServiceClient) error {
		for index := range int64(each) {
			if err := writeImage(ctx, w, seqs[i], index, image); err != nil {
				return err
			}
		}
		return nil
	})
	st := db.Store(t)
	eid, _, err := store.ParseBlobSequenceID(seqs[0])
	if err != nil {
		t.Fatal(err)
	}
	e, err := st.GetExperiment(t.Context(), eid)
	if err != nil {
		t.Fatal(err)
	}
	u, err := st.UserUsage(t.Context(), e.Owner)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("stored %d bytes (%d of blobs) under a quota of %d", u.StoredBytes(), u.BlobBytes, quota)
	if u.StoredBytes() > quota || u.StoredBytes() <= quota-image {
		t.Errorf("stored %d bytes under a quota of %d: want at most the quota, and less than one image (%d) short of it", u.StoredBytes(), quota, image)
	}
}

// writeImage uploads n bytes as blob index of the sequence in one request.
func writeImage(ctx context.Context, w servicepb.TensorBoardWriterServiceClient, seq string, index, n int64) error {
	s, err := w.WriteBlob(ctx)
	if err != nil {
		return err
	}
	data := make([]byte, n)
	for i := range data {
		data[i] = byte(int64(i) * (index + 1))
	}
	if err := s.Send(&servicepb.WriteBlobRequest{BlobSequenceId: seq, Index: index, Data: data, BlobBytes: n, FinalizeObject: true}); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	if err := s.CloseSend(); err != nil {
		return err
	}
	for {
		if _, err := s.Recv(); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}
