package tbhubcmd

import (
	"bytes"
	"context"
	"errors"
	"hash/crc32"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/spanner"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	servicepb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/service"
	"github.com/tbhub/tbhub/services/internal/assembly/tbhubcmd/tbhubcmdtest"
	"github.com/tbhub/tbhub/services/internal/storage/blob"
	"github.com/tbhub/tbhub/services/internal/storage/store"
	"github.com/tbhub/tbhub/services/internal/storage/store/spannerstore"
	"github.com/tbhub/tbhub/services/internal/testenv/fakegcs"
	"github.com/tbhub/tbhub/services/internal/testenv/spanneremu"
)

// emulatorDatabase starts a Spanner emulator of the test's own, names it
// in SPANNER_EMULATOR_HOST for the test (the commands under test read it),
// and returns a fresh database on it with the schema applied.
func emulatorDatabase(t *testing.T) *spanneremu.Database {
	t.Helper()
	spanneremu.SkipIfShort(t)
	emu, err := spanneremu.Start(context.Background())
	if err != nil {
		t.Fatalf("Spanner emulator: %v", err)
	}
	t.Cleanup(emu.Stop)
	t.Setenv("SPANNER_EMULATOR_HOST", emu.Host)
	db, err := emu.NewDatabase(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Drop(context.Background()) })
	return db
}

// TestServeOnSpannerAndGCS runs `tbhub serve --store spanner://... --blobs
// gs://...` against the Spanner emulator and fake-gcs-server, reads its
// banner, and uploads through it: an experiment, scalars, and a blob whose
// first stream breaks, so the resume reads the partial object back from
// GCS.
func TestServeOnSpannerAndGCS(t *testing.T) {
	db := emulatorDatabase(t)
	fakegcs.Start(t, "tbhub-test")

	origin, token := tbhubcmdtest.StartServe(t, func(ctx context.Context, stderr io.Writer) error {
		return Run(ctx, []string{"serve", "--store", "spanner://" + db.Name, "--blobs", "gs://tbhub-test/deploy", "--addr", "127.0.0.1:0"}, os.LookupEnv, io.Discard, stderr, nil)
	})

	// Handshake, then the uploader's calls.
	body, _ := proto.Marshal(&servicepb.ServerInfoRequest{Version: "2.16.0"})
	resp, err := http.Post(origin+"/api/uploader", "application/octet-stream", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	info := &servicepb.ServerInfoResponse{}
	if err := proto.Unmarshal(raw, info); err != nil {
		t.Fatal(err)
	}
	conn, err := grpc.NewClient(info.GetApiServer().GetEndpoint(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	w := servicepb.NewTensorBoardWriterServiceClient(conn)
	x := servicepb.NewTensorBoardExporterServiceClient(conn)
	auth := metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+token)
	ce, err := w.CreateExperiment(auth, &servicepb.CreateExperimentRequest{Name: "cloud"})
	if err != nil {
		t.Fatal(err)
	}
	eid := ce.GetExperimentId()
	if _, err := w.WriteScalar(auth, &servicepb.WriteScalarRequest{ExperimentId: eid, Runs: []*servicepb.WriteScalarRequest_Run{{
		Name: "train", Tags: []*servicepb.WriteScalarRequest_Tag{{Name: "loss", Points: []*servicepb.ScalarPoint{
			{Step: 1, WallTime: timestamppb.Now(), Value: 0.5}}}}}}}); err != nil {
		t.Fatal(err)
	}
	seq, err := w.GetOrCreateBlobSequence(auth, &servicepb.GetOrCreateBlobSequenceRequest{ExperimentId: eid,
		Run: "train", Tag: "graph", WallTime: timestamppb.Now(), FinalSequenceLength: 1})
	if err != nil {
		t.Fatal(err)
	}
	data := bytes.Repeat([]byte("0123456789abcdef"), 96<<10) // 1.5 MiB
	half := int64(len(data) / 2)

	// First stream: half the blob, then the connection is cut.
	sctx, scancel := context.WithCancel(auth)
	s, err := w.WriteBlob(sctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Send(&servicepb.WriteBlobRequest{BlobSequenceId: seq.GetBlobSequenceId(), Data: data[:half], BlobBytes: int64(len(data))}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Recv(); err != nil {
		t.Fatal(err)
	}
	scancel()
	// Wait until the server has committed what it received.
	var md *servicepb.GetBlobMetadataResponse
	for range 200 {
		md, err = w.GetBlobMetadata(auth, &servicepb.GetBlobMetadataRequest{BlobSequenceId: seq.GetBlobSequenceId()})
		if err != nil {
			t.Fatal(err)
		}
		if md.GetSize() == half {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if md.GetSize() != half || md.GetCrc32C() != crc32.Checksum(data[:half], blob.CastagnoliTable) ||
		md.GetBlobState() != servicepb.BlobState_BLOB_STATE_UNFINALIZED {
		t.Fatalf("after the break: %v, want %d bytes unfinalized", md, half)
	}
	// Second stream: the rest.
	s, err = w.WriteBlob(auth)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Send(&servicepb.WriteBlobRequest{BlobSequenceId: seq.GetBlobSequenceId(), Data: data[half:], Offset: half,
		BlobBytes: int64(len(data)), FinalizeObject: true}); err != nil {
		t.Fatal(err)
	}
	s.CloseSend()
	for {
		if _, err := s.Recv(); err != nil {
			if !errors.Is(err, io.EOF) {
				t.Fatal(err)
			}
			break
		}
	}
	bs, err := x.StreamBlobData(auth, &servicepb.StreamBlobDataRequest{BlobId: store.BlobID(eid, store.BlobRef{Run: "train", Tag: "graph"})})
	if err != nil {
		t.Fatal(err)
	}
	var got []byte
	for {
		r, err := bs.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, r.GetData()...)
	}
	if !bytes.Equal(got, data) {
		t.Errorf("blob read back from GCS: %d bytes, differs from the %d uploaded", len(got), len(data))
	}
}

// tbhub migrate on Spanner counts each user's points into UserUsage (a
// database whose rows predate 0014_user_usage.sql, made here by removing
// them), and a rerun has no user left to count.
func TestMigrateBackfillsUserUsageOnSpanner(t *testing.T) {
	db := emulatorDatabase(t)
	ctx := t.Context()
	st := spannerstore.New(db.Client, spannerstore.Options{})
	if err := st.CreateUser(ctx, store.User{ID: "u-ada", Name: "ada"}); err != nil {
		t.Fatal(err)
	}
	eid := store.NewExperimentID()
	if err := st.CreateExperiment(ctx, store.Experiment{ID: eid, Owner: "u-ada", Visibility: store.VisibilityPrivate}); err != nil {
		t.Fatal(err)
	}
	b := store.ScalarSeries{Series: store.TimeSeries{Run: "r", Tag: "t", PluginName: "scalars", DataClass: store.DataClassScalar}}
	for step := range int64(25) {
		b.Points = append(b.Points, store.ScalarPoint{Step: step, WallTime: 1, Value: 1})
	}
	if err := st.WriteScalars(ctx, eid, []store.ScalarSeries{b}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Client.Apply(ctx, []*spanner.Mutation{spanner.Delete("UserUsage", spanner.AllKeys())}); err != nil {
		t.Fatal(err)
	}
	migrate := func() string {
		t.Helper()
		var errOut strings.Builder
		if err := Run(ctx, []string{"migrate", "--store", "spanner://" + db.Name}, os.LookupEnv, io.Discard, &errOut, nil); err != nil {
			t.Fatalf("tbhub migrate: %v\n%s", err, errOut.String())
		}
		return errOut.String()
	}
	if out := migrate(); !strings.Contains(out, "user usage: 1/1 users counted") {
		t.Errorf("tbhub migrate said %q, want it to count the user's usage", out)
	}
	if u, err := st.UserUsage(ctx, "u-ada"); err != nil || u.Points != 25 {
		t.Errorf("UserUsage after tbhub migrate = %+v, %v; want 25 points", u, err)
	}
	if out := migrate(); strings.Contains(out, "users counted") {
		t.Errorf("a second tbhub migrate counted users again: %q", out)
	}
}
