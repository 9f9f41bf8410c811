package serve_test

import (
	"context"
	"errors"
	"github.com/tbhub/tbhub/services/internal/testenv/inprocess"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	experimentsv1 "github.com/tbhub/tbhub/schemas/gen/go/tbhub/experiments/v1"
	servicepb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/service"
	"github.com/tbhub/tbhub/services/internal/assembly/serve"
	"github.com/tbhub/tbhub/services/internal/policy/limits"
	"github.com/tbhub/tbhub/services/internal/storage/blob"
	"github.com/tbhub/tbhub/services/internal/storage/store"
	"github.com/tbhub/tbhub/services/internal/storage/store/storetest"
)

// waitFor polls cond until it holds, failing the test after safetyTimeout.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(safetyTimeout); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %s", safetyTimeout, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// abandonBlob starts a stream that sends one byte of a 1 MiB blob and
// vanishes, and waits until the server has stored that byte as an
// unfinished blob.
func abandonBlob(t *testing.T, h *harness, ctx context.Context, seqID string, index int64) {
	t.Helper()
	streamCtx, cancel := context.WithCancel(ctx)
	if _, err := h.OpenStalledStream(streamCtx, t, seqID, index); err != nil {
		t.Fatal(err)
	}
	cancel()
	waitFor(t, "the abandoned stream's byte is not stored", func() bool {
		state, size := h.BlobState(t, ctx, seqID, index)
		return state == servicepb.BlobState_BLOB_STATE_UNFINALIZED && size == 1
	})
}

// abandonedSlot starts a server on st and blobs and leaves slot 0 of a
// new experiment's image sequence abandoned after one byte; it returns
// the owner's context, the experiment and the sequence ID.
func abandonedSlot(t *testing.T, st store.Store, blobs blob.Store, name string) (*harness, context.Context, string, string) {
	t.Helper()
	h := newHarness(t, st, blobs, nil)
	ctx, eid := h.AdaExperiment(t, name)
	id := h.ImageSequence(t, ctx, eid, 1)
	abandonBlob(t, h, ctx, id, 0)
	return h, ctx, eid, id
}

// blobBytesUsed is the caller's blob bytes quota usage.
func blobBytesUsed(t *testing.T, h *harness, ctx context.Context) int64 {
	t.Helper()
	usage, err := h.Experiments.GetQuotaUsage(ctx, &experimentsv1.GetQuotaUsageRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range usage.GetUsages() {
		if u.GetQuota() == experimentsv1.Quota_QUOTA_BLOB_BYTES {
			return u.GetUsed()
		}
	}
	t.Fatal("no blob bytes quota reported")
	return 0
}

// An upload started and never finished (the client vanished) is removed
// by the server's sweep once its row is AbandonedBlobAge old, row and
// object, and its bytes leave the owner's quota (issue 14 #5); a finished
// blob of the same sequence stays.
func TestAbandonedBlobIsSwept(t *testing.T) {
	t.Parallel()
	st, blobs := embedded(t)
	h := newHarness(t, st, blobs, nil) // it never sweeps
	ctx, eid := h.AdaExperiment(t, "abandoned")
	id := h.ImageSequence(t, ctx, eid, 2)
	if err := h.WriteWholeBlob(ctx, id, 1, []byte("kept")); err != nil {
		t.Fatal(err)
	}
	abandonBlob(t, h, ctx, id, 0)
	// Only now does a server on the same store and blobs sweep: had it
	// swept from the start, its 100 ms age could pass, on a slow machine,
	// before abandonBlob saw the unfinished row, which it then waited for
	// in vain.
	sweeper := newHarness(t, st, blobs, func(c *serve.Config) {
		c.Limits.BlobStreamIdleTimeout = 50 * time.Millisecond
		c.Limits.BlobStreamTimeout = 50 * time.Millisecond
		c.AbandonedBlobAge = 100 * time.Millisecond
		c.SweepInterval = 10 * time.Millisecond
	})
	waitFor(t, "the abandoned blob's row is still there", func() bool {
		state, _ := h.BlobState(t, ctx, id, 0)
		return state == servicepb.BlobState_BLOB_STATE_UNKNOWN
	})
	// The object goes right after the row.
	waitFor(t, "the abandoned blob's object is still there", func() bool {
		_, err := blobs.Stat(ctx, blob.ObjectKey(eid, "r", "images", 1, 0))
		return errors.Is(err, blob.ErrNotFound)
	})
	if used, want := blobBytesUsed(t, h, ctx)-h.TokenBytes(t, ctx), 4+store.RowBytes("r"); used != want {
		t.Errorf("blob bytes used after the sweep, ada's token aside: %d, want %d (the finished blob's 4 and the run's)", used, want)
	}
	if state, size := h.BlobState(t, ctx, id, 1); state != servicepb.BlobState_BLOB_STATE_CURRENT || size != 4 {
		t.Errorf("the finished blob after the sweep: %v, %d bytes", state, size)
	}
	// The slot can be uploaded again. The sweeper stops first: its age is
	// shorter than an upload can take on a slow machine, and the upload's
	// server (with the default stream timeout) is another process to it.
	if err := sweeper.stop(); err != nil {
		t.Errorf("stopping the sweeping server: %v", err)
	}
	// ABORTED while the abandoned stream still holds the slot, as for any
	// upload of a blob in progress.
	var err error
	waitFor(t, "uploading the swept slot again", func() bool {
		err = h.WriteWholeBlob(ctx, id, 0, []byte("again"))
		return status.Code(err) != codes.Aborted
	})
	if err != nil {
		t.Errorf("uploading the swept slot again: %v", err)
	}
}

// A stream that resumes an abandoned blob rewrites its row when it
// starts, so the sweep of another process, which cannot see this
// process's streams, leaves the blob alone while the stream lasts,
// however old the row was.
func TestResumedBlobIsNotSwept(t *testing.T) {
	t.Parallel()
	st, blobs := embedded(t)
	h, ctx, _, id := abandonedSlot(t, st, blobs, "resumed")
	// Every row written so far is older than cutoff, by the store's clock
	// and this process's; the blob is abandoned by it.
	abandoned, err := st.ListAbandonedBlobs(ctx, time.Now().Add(24*time.Hour), 10)
	if err != nil || len(abandoned) != 1 {
		t.Fatalf("abandoned blobs: %+v, %v; want the one", abandoned, err)
	}
	cutoff := storetest.PastStoreTime(t, abandoned[0].WriteTime)

	streamCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	s, err := h.Writer.WriteBlob(streamCtx)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Send(&servicepb.WriteBlobRequest{BlobSequenceId: id, Data: []byte{2}, Offset: 1, BlobBytes: 1 << 20}); err != nil {
		t.Fatal(err)
	}
	if r, err := s.Recv(); err != nil || r.GetSize() != 2 {
		t.Fatalf("resuming: %v, %v", r, err)
	}
	n, err := store.SweepAbandonedBlobs(ctx, st, inprocess.DeleteAbandoned(blobs), nil, cutoff, 10)
	if err != nil || n != 0 {
		t.Fatalf("a sweep while the upload is resumed removed %d blobs (%v), want none", n, err)
	}
	if err := s.Send(&servicepb.WriteBlobRequest{BlobSequenceId: id, Data: make([]byte, 1<<20-2), Offset: 2, FinalizeObject: true}); err != nil {
		t.Fatal(err)
	}
	if r, err := s.Recv(); err != nil || r.GetBlobState() != servicepb.BlobState_BLOB_STATE_CURRENT {
		t.Fatalf("finishing the resumed upload: %v, %v", r, err)
	}
}

// A resume whose stored prefix was swept meanwhile (the row read before
// the sweep removed the object) starts over: ABORTED, and the row says
// nothing is stored.
func TestResumeOfASweptBlobStartsOver(t *testing.T) {
	t.Parallel()
	st, blobs := embedded(t)
	h, ctx, eid, id := abandonedSlot(t, st, blobs, "swept")
	if err := blobs.Delete(ctx, blob.ObjectKey(eid, "r", "images", 1, 0)); err != nil {
		t.Fatal(err)
	}
	s, err := h.Writer.WriteBlob(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Send(&servicepb.WriteBlobRequest{BlobSequenceId: id, Data: []byte{2}, Offset: 1, BlobBytes: 2, FinalizeObject: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Recv(); status.Code(err) != codes.Aborted || !strings.Contains(err.Error(), "offset 0") {
		t.Errorf("resuming a blob whose object is gone: %v, want ABORTED asking for offset 0", err)
	}
	if state, size := h.BlobState(t, ctx, id, 0); state != servicepb.BlobState_BLOB_STATE_UNFINALIZED || size != 0 {
		t.Errorf("after the failed resume: %v, %d bytes; want UNFINALIZED, 0", state, size)
	}
	if err := h.WriteWholeBlob(ctx, id, 0, []byte("xy")); err != nil {
		t.Errorf("starting over: %v", err)
	}
}

// openBlobFiles counts the files under dir the process holds open.
func openBlobFiles(t *testing.T, dir string) int {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, fd := range fds {
		target, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name()))
		if err == nil && strings.HasPrefix(target, dir+string(filepath.Separator)) {
			n++
		}
	}
	return n
}

// A WriteBlob stream's temporary file (the embedded store writes a blob
// to blobs/.tmp and renames it into place) is opened once the stream's
// first request is accepted, one per stream, and closed on every way the
// stream ends: the idle deadline, the client gone, a refused chunk. None
// is left open or behind.
func TestBlobStreamTempFileIsClosed(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("counts descriptors through /proc/self/fd")
	}
	dir := t.TempDir()
	st, blobs := embeddedIn(t, dir)
	blobDir := filepath.Join(dir, "blobs")
	h := newHarness(t, st, blobs, func(c *serve.Config) {
		c.Limits.BlobStreamIdleTimeout = 200 * time.Millisecond
	})
	ctx, eid := h.AdaExperiment(t, "tempfiles")
	id := h.ImageSequence(t, ctx, eid, 3)
	closed := func(what string) {
		t.Helper()
		waitFor(t, what+": a blob file is still open", func() bool { return openBlobFiles(t, blobDir) == 0 })
		temps, err := os.ReadDir(filepath.Join(blobDir, ".tmp"))
		if err != nil || len(temps) != 0 {
			t.Errorf("%s: temporary files left: %v (%v)", what, temps, err)
		}
	}
	closed("before any stream")

	// A stream that sent a byte holds one file; the idle deadline closes it.
	s, err := h.OpenStalledStream(ctx, t, id, 0)
	if err != nil {
		t.Fatal(err)
	}
	if n := openBlobFiles(t, blobDir); n != 1 {
		t.Errorf("a stream in progress holds %d blob files, want 1", n)
	}
	if _, err := s.Recv(); status.Code(err) != codes.DeadlineExceeded {
		t.Errorf("stalled stream: %v, want DEADLINE_EXCEEDED", err)
	}
	closed("after the idle deadline")

	// The client goes away.
	streamCtx, cancel := context.WithCancel(ctx)
	if _, err := h.OpenStalledStream(streamCtx, t, id, 1); err != nil {
		t.Fatal(err)
	}
	cancel()
	closed("after the client went away")

	// A chunk refused (it does not follow the bytes received).
	s, err = h.OpenStalledStream(ctx, t, id, 2)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Send(&servicepb.WriteBlobRequest{BlobSequenceId: id, Index: 2, Data: []byte{1}, Offset: 5}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Recv(); status.Code(err) != codes.FailedPrecondition {
		t.Errorf("a chunk at the wrong offset: %v, want FAILED_PRECONDITION", err)
	}
	closed("after a refused chunk")
}

// An abandoned-blob age under twice the blob stream timeout could remove
// a blob a live stream is writing: the server refuses to start with it.
func TestAbandonedBlobAgeMustOutlastStreams(t *testing.T) {
	t.Parallel()
	st, blobs := embedded(t)
	lim := limits.Default()
	cfg := serve.Config{HTTPAddr: "127.0.0.1:0", Limits: lim, AbandonedBlobAge: serve.MinAbandonedBlobAge(lim) - time.Second}
	if _, err := serve.New(st, blobs, cfg); err == nil || !strings.Contains(err.Error(), "abandoned blob age") {
		t.Errorf("AbandonedBlobAge %v with a %v stream timeout: %v, want refused", cfg.AbandonedBlobAge, lim.BlobStreamTimeout, err)
	}
}

// safetyTimeout bounds a test's wait for the server to act; the limits
// under test are far shorter, so reaching it means a limit did nothing.
const safetyTimeout = time.Minute
