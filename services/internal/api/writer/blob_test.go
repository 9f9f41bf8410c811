package writer_test

import (
	"bytes"
	"context"
	"errors"
	"github.com/tbhub/tbhub/services/internal/testenv/inprocess"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	servicepb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/service"
	"github.com/tbhub/tbhub/services/internal/storage/blob"
	"github.com/tbhub/tbhub/services/internal/storage/store"
)

// TestBlobResumesAfterBrokenStreams uploads a blob through streams that are
// cut (context canceled) after a random number of chunks of random sizes;
// after each break the client asks GetBlobMetadata, checks the CRC32C of
// what the server holds against its own bytes and continues from there,
// sending its own chunk CRCs on some streams and none on others. The
// result must be byte-identical.
func TestBlobResumesAfterBrokenStreams(t *testing.T) {
	t.Parallel()
	st, blobs := inprocess.Embedded(t)
	h := inprocess.Start(t, st, blobs, nil)
	ctx, eid := h.AdaExperiment(t, "resume")
	seq, err := h.Writer.GetOrCreateBlobSequence(ctx, &servicepb.GetOrCreateBlobSequenceRequest{
		ExperimentId: eid, Run: "r", Tag: "audio", Step: 3, WallTime: timestamppb.Now(), FinalSequenceLength: 4})
	if err != nil {
		t.Fatal(err)
	}
	resumed := 0 // streams that continued a partial upload
	for seed := range uint64(4) {
		rng := rand.New(rand.NewPCG(seed, 99))
		data := make([]byte, 3<<20+rng.IntN(1<<20))
		for i := range data {
			data[i] = byte(rng.UintN(256))
		}
		index := int64(seed)
		breaks := 0
		for attempt := 0; ; attempt++ {
			if attempt > 100 {
				t.Fatalf("seed %d: no progress after 100 streams", seed)
			}
			md, err := h.Writer.GetBlobMetadata(ctx, &servicepb.GetBlobMetadataRequest{BlobSequenceId: seq.GetBlobSequenceId(), Index: index})
			if err != nil {
				t.Fatal(err)
			}
			if md.GetBlobState() == servicepb.BlobState_BLOB_STATE_CURRENT {
				break
			}
			offset := md.GetSize()
			if offset > 0 {
				resumed++
			}
			if got := crc32.Checksum(data[:offset], blob.CastagnoliTable); got != md.GetCrc32C() {
				t.Fatalf("seed %d: server holds %d bytes with CRC32C %08x, ours is %08x", seed, offset, md.GetCrc32C(), got)
			}
			// Break the first few streams after a random number of chunks.
			cut := -1
			if breaks < 3 {
				cut = rng.IntN(4)
				breaks++
			}
			err = sendFrom(ctx, h, seq.GetBlobSequenceId(), index, data, offset, rng, cut, seed%2 == 0)
			switch status.Code(err) {
			case codes.OK, codes.Canceled:
			case codes.Aborted, codes.FailedPrecondition:
				// The previous stream was still being committed; ask again.
				time.Sleep(10 * time.Millisecond)
			default:
				t.Fatalf("seed %d: stream from %d: %v", seed, offset, err)
			}
		}
		if breaks == 0 {
			t.Fatalf("seed %d: no stream was broken", seed)
		}
		id := store.BlobID(eid, store.BlobRef{Run: "r", Tag: "audio", Step: 3, Index: index})
		if got := h.ReadBlob(t, ctx, id); !bytes.Equal(got, data) {
			t.Fatalf("seed %d: stored blob (%d bytes) differs from the %d bytes uploaded", seed, len(got), len(data))
		}
	}
	if resumed == 0 {
		t.Error("no stream resumed a partial upload; the breaks tested nothing")
	}
	t.Logf("%d streams resumed partial uploads", resumed)
}

// sendFrom streams data[offset:] in random chunks. With cut >= 0 it cancels
// the stream after cut chunks without finalizing.
func sendFrom(ctx context.Context, h *inprocess.Env, seqID string, index int64, data []byte, offset int64, rng *rand.Rand, cut int, withCRC bool) error {
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := h.Writer.WriteBlob(sctx)
	if err != nil {
		return err
	}
	sent := 0
	for off := offset; ; {
		n := min(int64(64<<10+rng.IntN(1<<20)), int64(len(data))-off)
		req := &servicepb.WriteBlobRequest{BlobSequenceId: seqID, Index: index, Data: data[off : off+n],
			Offset: off, BlobBytes: int64(len(data)), FinalizeObject: off+n == int64(len(data))}
		if withCRC {
			req.Crc32C = crc32.Checksum(req.Data, blob.CastagnoliTable)
			if req.FinalizeObject {
				req.FinalCrc32C = crc32.Checksum(data, blob.CastagnoliTable)
			}
		}
		if err := stream.Send(req); err != nil {
			break // the status comes from Recv
		}
		sent++
		off += n
		if sent == cut {
			// Let the server take some of what was sent, then break.
			if _, err := stream.Recv(); err != nil {
				return err
			}
			cancel()
			_, err := stream.Recv()
			return err
		}
		if req.FinalizeObject {
			break
		}
	}
	if err := stream.CloseSend(); err != nil {
		return err
	}
	return inprocess.Drain(stream.Recv)
}

// TestBlobProtocolErrors covers the ways a WriteBlob stream is refused.
func TestBlobProtocolErrors(t *testing.T) {
	t.Parallel()
	st, blobs := inprocess.Embedded(t)
	h := inprocess.Start(t, st, blobs, func(c *inprocess.Config) { c.Limits.MaxBlobBytes = 1 << 20 })
	ctx, eid := h.AdaExperiment(t, "")
	seq, err := h.Writer.GetOrCreateBlobSequence(ctx, &servicepb.GetOrCreateBlobSequenceRequest{
		ExperimentId: eid, Run: "r", Tag: "t", Step: 1, WallTime: timestamppb.Now(), FinalSequenceLength: 2})
	if err != nil {
		t.Fatal(err)
	}
	id := seq.GetBlobSequenceId()
	one := func(reqs ...*servicepb.WriteBlobRequest) error {
		s, err := h.Writer.WriteBlob(ctx)
		if err != nil {
			return err
		}
		for _, r := range reqs {
			if err := s.Send(r); err != nil {
				break
			}
		}
		s.CloseSend()
		for {
			if _, err := s.Recv(); err != nil {
				if errors.Is(err, io.EOF) {
					return nil
				}
				return err
			}
		}
	}
	data := []byte("0123456789")
	for _, tc := range []struct {
		name string
		reqs []*servicepb.WriteBlobRequest
		want codes.Code
	}{
		{"too large", []*servicepb.WriteBlobRequest{{BlobSequenceId: id, Data: data, BlobBytes: 2 << 20}}, codes.ResourceExhausted},
		{"index outside", []*servicepb.WriteBlobRequest{{BlobSequenceId: id, Index: 2, Data: data, BlobBytes: 10, FinalizeObject: true}}, codes.InvalidArgument},
		{"no blob_bytes", []*servicepb.WriteBlobRequest{{BlobSequenceId: id, Data: data}}, codes.InvalidArgument},
		{"bad chunk crc", []*servicepb.WriteBlobRequest{{BlobSequenceId: id, Data: data, BlobBytes: 10, Crc32C: 1, FinalizeObject: true}}, codes.InvalidArgument},
		{"bad final crc", []*servicepb.WriteBlobRequest{{BlobSequenceId: id, Data: data, BlobBytes: 10, FinalCrc32C: 1, FinalizeObject: true}}, codes.InvalidArgument},
		{"gap", []*servicepb.WriteBlobRequest{{BlobSequenceId: id, Data: data[:5], BlobBytes: 10}, {BlobSequenceId: id, Data: data[5:], Offset: 6, BlobBytes: 10, FinalizeObject: true}}, codes.FailedPrecondition},
		{"short finalize", []*servicepb.WriteBlobRequest{{BlobSequenceId: id, Data: data[:5], BlobBytes: 10, FinalizeObject: true}}, codes.InvalidArgument},
		{"resume at wrong offset", []*servicepb.WriteBlobRequest{{BlobSequenceId: id, Data: data[7:], Offset: 7, BlobBytes: 10, FinalizeObject: true}}, codes.FailedPrecondition},
		{"unknown sequence", []*servicepb.WriteBlobRequest{{BlobSequenceId: store.BlobSequenceID(eid, "r", "t", 99), Data: data, BlobBytes: 10, FinalizeObject: true}}, codes.NotFound},
		{"finished", []*servicepb.WriteBlobRequest{{BlobSequenceId: id, Index: 1, Data: data, BlobBytes: 10, FinalizeObject: true}}, codes.OK},
		{"again", []*servicepb.WriteBlobRequest{{BlobSequenceId: id, Index: 1, Data: data, BlobBytes: 10, FinalizeObject: true}}, codes.AlreadyExists},
	} {
		if got := status.Code(one(tc.reqs...)); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
	// Chunks after the first may leave out blob_sequence_id.
	seq2, err := h.Writer.GetOrCreateBlobSequence(ctx, &servicepb.GetOrCreateBlobSequenceRequest{
		ExperimentId: eid, Run: "r", Tag: "t", Step: 2, WallTime: timestamppb.Now(), FinalSequenceLength: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := one(&servicepb.WriteBlobRequest{BlobSequenceId: seq2.GetBlobSequenceId(), Data: data[:4], BlobBytes: 10},
		&servicepb.WriteBlobRequest{Data: data[4:], Offset: 4, FinalizeObject: true}); err != nil {
		t.Errorf("chunks without the sequence id after the first: %v", err)
	}
	// After the rejected streams, slot 0 holds the 5 bytes of the "gap"
	// stream's first chunk... or whatever the last refused stream kept;
	// in any case GetBlobMetadata describes what the store has.
	md, err := h.Writer.GetBlobMetadata(ctx, &servicepb.GetBlobMetadataRequest{BlobSequenceId: id, Index: 0})
	if err != nil {
		t.Fatal(err)
	}
	if md.GetBlobState() == servicepb.BlobState_BLOB_STATE_CURRENT ||
		md.GetCrc32C() != crc32.Checksum(data[:md.GetSize()], blob.CastagnoliTable) {
		t.Errorf("slot 0 after refused streams: %v", md)
	}
}

// TestRewrittenBlobStepLastWriteWins: a step uploaded again in a later session with
// another wall time and fewer blobs (a job restarted from a checkpoint) replaces the
// old sequence: the old objects are deleted, and only the new blobs are served.
func TestRewrittenBlobStepLastWriteWins(t *testing.T) {
	t.Parallel()
	st, blobs := inprocess.Embedded(t)
	h := inprocess.Start(t, st, blobs, nil)
	ctx, eid := h.AdaExperiment(t, "rewrite")
	upload := func(wall time.Time, length int64, images ...[]byte) {
		t.Helper()
		seq, err := h.Writer.GetOrCreateBlobSequence(ctx, &servicepb.GetOrCreateBlobSequenceRequest{
			ExperimentId: eid, Run: "r", Tag: "samples", Step: 5, WallTime: timestamppb.New(wall), FinalSequenceLength: length})
		if err != nil {
			t.Fatal(err)
		}
		for i, img := range images {
			if err := sendFrom(ctx, h, seq.GetBlobSequenceId(), int64(i), img, 0, rand.New(rand.NewPCG(1, 2)), -1, true); err != nil {
				t.Fatal(err)
			}
		}
	}
	first := time.Unix(1_700_000_000, 0)
	upload(first, 3, []byte("old image 0"), []byte("old image 1"), []byte("old image 2"))
	// The same write again (a resumed session) keeps what is there.
	upload(first, 3)
	if got := h.ReadBlob(t, ctx, store.BlobID(eid, store.BlobRef{Run: "r", Tag: "samples", Step: 5, Index: 2})); string(got) != "old image 2" {
		t.Fatalf("after the same write again, blob 2 is %q", got)
	}
	upload(first.Add(time.Hour), 1, []byte("new image 0"))

	if got := h.ReadBlob(t, ctx, store.BlobID(eid, store.BlobRef{Run: "r", Tag: "samples", Step: 5, Index: 0})); string(got) != "new image 0" {
		t.Errorf("blob 0 is %q, want the new image", got)
	}
	for _, i := range []int64{1, 2} {
		if _, err := blobs.NewRangeReader(ctx, blob.ObjectKey(eid, "r", "samples", 5, i), 0, -1); !errors.Is(err, blob.ErrNotFound) {
			t.Errorf("old object %d: %v, want it deleted", i, err)
		}
	}
	e, err := st.GetExperiment(ctx, eid)
	if err != nil {
		t.Fatal(err)
	}
	if e.NumBlobSequences != 1 || e.NumBlobs != 1 || e.TotalBlobBytes != int64(len("new image 0")) {
		t.Errorf("counts = %d sequences, %d blobs, %d bytes; want 1, 1, %d", e.NumBlobSequences, e.NumBlobs, e.TotalBlobBytes, len("new image 0"))
	}
}
