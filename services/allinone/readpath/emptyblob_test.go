package readpath_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"slices"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/timestamppb"

	tbpb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard"
	servicepb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/service"
	"github.com/tbhub/tbhub/services/internal/storage/store"
)

// TensorBoard's uploader sends a zero-byte blob as a WriteBlob stream with
// no message (one chunk per max_blob_request_size bytes: none). The server
// stores an empty blob in the slot that uploader writes next, so the graphs
// plugin answers for every tag graphs/info lists.
func TestEmptyBlobStreamOfTensorBoardsUploader(t *testing.T) {
	s := startServer(t)
	conn, err := grpc.NewClient(s.srv.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	w := servicepb.NewTensorBoardWriterServiceClient(conn)
	ctx := metadata.AppendToOutgoingContext(t.Context(), "authorization", "Bearer "+s.token)
	created, err := w.CreateExperiment(ctx, &servicepb.CreateExperimentRequest{Name: "stock"})
	if err != nil {
		t.Fatal(err)
	}
	eid := created.GetExperimentId()
	// send writes one blob as the stock uploader does and returns the
	// responses it counted.
	send := func(c servicepb.TensorBoardWriterServiceClient, seqID string, index int64, data []byte) int {
		t.Helper()
		stream, err := c.WriteBlob(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(data) > 0 {
			if err := stream.Send(&servicepb.WriteBlobRequest{BlobSequenceId: seqID, Index: index, Data: data,
				BlobBytes: int64(len(data)), FinalizeObject: true}); err != nil {
				t.Fatal(err)
			}
		}
		if err := stream.CloseSend(); err != nil {
			t.Fatal(err)
		}
		n := 0
		for {
			_, err := stream.Recv()
			if errors.Is(err, io.EOF) {
				return n
			}
			if err != nil {
				t.Fatalf("WriteBlob(%d bytes): %v", len(data), err)
			}
			n++
		}
	}
	sequence := func(run, tag, plugin string, blobs ...[]byte) {
		t.Helper()
		seq, err := w.GetOrCreateBlobSequence(ctx, &servicepb.GetOrCreateBlobSequenceRequest{ExperimentId: eid,
			Run: run, Tag: tag, WallTime: timestamppb.Now(), FinalSequenceLength: int64(len(blobs)),
			Metadata: &tbpb.SummaryMetadata{PluginData: &tbpb.SummaryMetadata_PluginData{PluginName: plugin},
				DataClass: tbpb.DataClass_DATA_CLASS_BLOB_SEQUENCE}})
		if err != nil {
			t.Fatal(err)
		}
		for i, b := range blobs {
			if n := send(w, seq.GetBlobSequenceId(), int64(i), b); n != 1 {
				t.Errorf("%s/%s blob %d (%d bytes): %d responses, want 1", run, tag, i, len(b), n)
			}
		}
	}
	sequence("train", "__run_graph__", "graphs", []byte{})
	sequence("train", "step1", "graph_tagged_run_metadata", []byte{})
	sequence("eval", "samples", "images", []byte("2"), []byte{}, []byte("png"))

	base := "/experiment/" + eid + "/data/plugin/graphs/"
	for _, path := range []string{base + "graph?run=train", base + "run_metadata?run=train&tag=step1"} {
		if r := s.do(t, http.MethodGet, path, s.token, nil); r.status != http.StatusOK {
			t.Errorf("%s: %d %.200q", path, r.status, r.body)
		}
	}
	var lengths []int64
	err = s.st.ReadBlobSequences(context.Background(), eid, allOf("eval", "samples"), func(_ *store.TimeSeries, points []store.BlobSequencePoint) error {
		for _, p := range points {
			for _, b := range p.Blobs {
				if b.State != store.BlobStateCurrent {
					t.Errorf("eval/samples blob %d is in state %d", b.Index, b.State)
				}
				lengths = append(lengths, b.Size)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(lengths, []int64{1, 0, 3}) {
		t.Errorf("eval/samples blob sizes = %v, want [1 0 3]: the empty stream did not fill slot 1", lengths)
	}

	// A connection that created no sequence: its empty stream names no
	// slot, is answered OK and stores nothing.
	other, err := grpc.NewClient(s.srv.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if n := send(servicepb.NewTensorBoardWriterServiceClient(other), "", 0, nil); n != 0 {
		t.Errorf("an empty stream with no sequence behind it got %d responses", n)
	}
	// Nor does a further empty stream past the end of the last sequence.
	if n := send(w, "", 0, nil); n != 0 {
		t.Errorf("an empty stream past the sequence's end got %d responses", n)
	}
	e, err := s.st.GetExperiment(context.Background(), eid)
	if err != nil || e.NumBlobs != 5 {
		t.Errorf("experiment holds %d blobs (%v), want 5", e.NumBlobs, err)
	}
}

func allOf(run, tag string) store.Query {
	return store.Query{Filter: store.Filter{Runs: []string{run}, Tags: []string{tag}}, MaxPoints: store.AllPoints}
}
