package writer_test

import (
	"bytes"
	"context"
	"github.com/tbhub/tbhub/services/internal/testenv/inprocess"
	"hash/crc32"
	"io"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	servicepb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/service"
	"github.com/tbhub/tbhub/services/internal/storage/blob"
	"github.com/tbhub/tbhub/services/internal/storage/blob/gcsblob"
	"github.com/tbhub/tbhub/services/internal/storage/store"
	"github.com/tbhub/tbhub/services/internal/testenv/fakegcs"
)

// heldBlobs is the blob store of instance A in the race tests: one Put is
// held, either when its stream has ended and before it commits, or right
// after it commits (before the stream writes the blob's row), until the
// test releases it.
type heldBlobs struct {
	blob.Store
	afterCommit bool
	arm         sync.Once // only the first Put is held
	held        chan struct{}
	release     chan struct{}
}

func newHeldBlobs(s blob.Store, afterCommit bool) *heldBlobs {
	return &heldBlobs{Store: s, afterCommit: afterCommit, held: make(chan struct{}), release: make(chan struct{})}
}

func (h *heldBlobs) Put(ctx context.Context, key string, r io.Reader, opts blob.PutOptions) (blob.Attrs, error) {
	hold := false
	h.arm.Do(func() { hold = true })
	if !hold {
		return h.Store.Put(ctx, key, r, opts)
	}
	if !h.afterCommit {
		return h.Store.Put(ctx, key, &holdAtEOF{r: r, h: h}, opts)
	}
	a, err := h.Store.Put(ctx, key, r, opts)
	h.wait()
	return a, err
}

func (h *heldBlobs) wait() {
	close(h.held)
	<-h.release
}

// holdAtEOF passes r on and waits for the release before its end.
type holdAtEOF struct {
	r io.Reader
	h *heldBlobs
}

func (r *holdAtEOF) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if err == io.EOF {
		r.h.wait()
	}
	return n, err
}

// sendPart sends data as one chunk at offset of a blob of total bytes,
// finalizing it if it is the last part, and ends the stream.
func sendPart(ctx context.Context, h *inprocess.Env, seqID string, data []byte, offset, total int64) error {
	s, err := h.Writer.WriteBlob(ctx)
	if err != nil {
		return err
	}
	req := &servicepb.WriteBlobRequest{BlobSequenceId: seqID, Data: data, Offset: offset, BlobBytes: total,
		FinalizeObject: offset+int64(len(data)) == total}
	if err := s.Send(req); err != nil {
		return err
	}
	if err := s.CloseSend(); err != nil {
		return err
	}
	return inprocess.Drain(s.Recv)
}

// runBlobRace is the race of issue 22 item 4 between two instances on one
// store and one bucket. A first stream stores part of a blob. A second
// stream continues it on instance A and ends; A is held (before its Put
// commits, or after, before its row is written). Meanwhile the client,
// told by GetBlobMetadata that only the first part is stored, resumes on
// instance B and finishes the blob. Then A goes on: it must keep nothing
// (ABORTED), the blob must stay current and byte-exact, and the sweeper
// must leave it alone.
func runBlobRace(t *testing.T, st store.Store, blobs blob.Store, afterCommit bool) {
	held := newHeldBlobs(blobs, afterCommit)
	a := inprocess.Start(t, st, held, nil)
	b := inprocess.Start(t, st, blobs, nil)
	ctx, eid := a.AdaExperiment(t, "race")
	id := a.ImageSequence(t, ctx, eid, 1)
	data := make([]byte, 300<<10)
	for i := range data {
		data[i] = byte(i * 7 / 5)
	}
	total := int64(len(data))
	first, second := int64(100<<10), int64(200<<10)

	// The first part, through B: an unfinished row of 100 KiB.
	if err := sendPart(ctx, b, id, data[:first], 0, total); err != nil {
		t.Fatalf("first part: %v", err)
	}
	if state, size := b.BlobState(t, ctx, id, 0); state != servicepb.BlobState_BLOB_STATE_UNFINALIZED || size != first {
		t.Fatalf("after the first part: %v, %d bytes", state, size)
	}
	// The second part, through A, held.
	aDone := make(chan error, 1)
	go func() { aDone <- sendPart(ctx, a, id, data[first:second], first, total) }()
	select {
	case <-held.held:
	case err := <-aDone:
		t.Fatalf("instance A's stream ended before it was held: %v", err)
	}
	// The client resumes on B from what GetBlobMetadata says, and finishes.
	state, size := b.BlobState(t, ctx, id, 0)
	if state != servicepb.BlobState_BLOB_STATE_UNFINALIZED || size != first {
		t.Fatalf("while A is held: %v, %d bytes; want the first part", state, size)
	}
	if err := sendPart(ctx, b, id, data[size:], size, total); err != nil {
		t.Fatalf("resuming on B: %v", err)
	}
	close(held.release)
	if err := <-aDone; status.Code(err) != codes.Aborted {
		t.Errorf("instance A's late stream: %v; want ABORTED", err)
	}

	row, err := st.GetBlob(ctx, eid, store.BlobRef{Run: "r", Tag: "images", Step: 1})
	if err != nil {
		t.Fatal(err)
	}
	if row.State != store.BlobStateCurrent || row.Size != total || row.CRC32C != crc32.Checksum(data, blob.CastagnoliTable) {
		t.Fatalf("the blob's row after the race: %+v; want current, %d bytes", row, total)
	}
	checkBlobBytes := func(when string) {
		t.Helper()
		r, err := blob.RowReader(ctx, blobs, row.ObjectKey, row.Size, row.CRC32C)
		if err != nil {
			t.Fatalf("%s: %v", when, err)
		}
		defer r.Close()
		got, err := io.ReadAll(r)
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("%s: read %d bytes (%v); want the %d uploaded", when, len(got), err, total)
		}
	}
	checkBlobBytes("reading the blob after the race")
	// Every row is abandoned by a cutoff a day ahead: the sweep still
	// finds nothing to remove, and the object stays.
	n, err := store.SweepAbandonedBlobs(ctx, st, inprocess.DeleteAbandoned(blobs), nil, time.Now().Add(24*time.Hour), 10)
	if err != nil || n != 0 {
		t.Errorf("sweep after the race removed %d blobs (%v); want none", n, err)
	}
	checkBlobBytes("reading the blob after the sweep")
	if state, size := a.BlobState(t, ctx, id, 0); state != servicepb.BlobState_BLOB_STATE_CURRENT || size != total {
		t.Errorf("GetBlobMetadata on A after the race: %v, %d bytes", state, size)
	}
}

func TestBlobRaceLateCommit(t *testing.T) {
	t.Parallel()
	st, blobs := inprocess.Embedded(t)
	runBlobRace(t, st, blobs, false)
}

func TestBlobRaceLateRow(t *testing.T) {
	t.Parallel()
	st, blobs := inprocess.Embedded(t)
	runBlobRace(t, st, blobs, true)
}

// onSpannerGCS is a store on a fresh emulator database and a bucket on
// fake-gcs-server; the test must not be parallel (fakegcs.Start).
func onSpannerGCS(t *testing.T) (store.Store, blob.Store) {
	t.Helper()
	st, _ := inprocess.OnSpanner(t)
	fakegcs.Start(t, "tbhub")
	client, err := gcsblob.NewClient(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	return st, gcsblob.New(client, "tbhub", gcsblob.Options{})
}

func TestBlobRaceLateCommitSpannerGCS(t *testing.T) {
	st, blobs := onSpannerGCS(t)
	runBlobRace(t, st, blobs, false)
}

func TestBlobRaceLateRowSpannerGCS(t *testing.T) {
	st, blobs := onSpannerGCS(t)
	runBlobRace(t, st, blobs, true)
}

// recordingBlobs records the options of every Put.
type recordingBlobs struct {
	blob.Store
	mu   sync.Mutex
	opts []blob.PutOptions
}

func (r *recordingBlobs) Put(ctx context.Context, key string, rd io.Reader, opts blob.PutOptions) (blob.Attrs, error) {
	r.mu.Lock()
	r.opts = append(r.opts, opts)
	r.mu.Unlock()
	return r.Store.Put(ctx, key, rd, opts)
}

// A blob sent whole in one request goes to the object store with its
// CRC32C (for GCS to check, WantCRC32C), its size (to fit the upload's
// buffer) and the generation it may replace (none).
func TestWholeBlobPutDeclaresChecksumSizeAndGeneration(t *testing.T) {
	t.Parallel()
	st, blobs := inprocess.Embedded(t)
	rec := &recordingBlobs{Store: blobs}
	h := inprocess.Start(t, st, rec, nil)
	ctx, eid := h.AdaExperiment(t, "declared")
	id := h.ImageSequence(t, ctx, eid, 1)
	data := []byte("a small image")
	if err := h.WriteWholeBlob(ctx, id, 0, data); err != nil {
		t.Fatal(err)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.opts) != 1 {
		t.Fatalf("%d Puts; want 1", len(rec.opts))
	}
	o := rec.opts[0]
	if o.WantCRC32C == nil || *o.WantCRC32C != crc32.Checksum(data, blob.CastagnoliTable) {
		t.Errorf("WantCRC32C = %v; want the blob's CRC32C", o.WantCRC32C)
	}
	if o.Size != int64(len(data)) {
		t.Errorf("Size = %d; want %d", o.Size, len(data))
	}
	if o.IfGeneration == nil || *o.IfGeneration != blob.NoObject {
		t.Errorf("IfGeneration = %v; want NoObject", o.IfGeneration)
	}
}
