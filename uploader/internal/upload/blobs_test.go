package upload

import (
	"bytes"
	"context"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	servicepb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/service"

	"github.com/tbhub/tbhub/uploader/internal/migrate"
	"github.com/tbhub/tbhub/uploader/internal/state"
)

func testBlobWriter(client servicepb.TensorBoardWriterServiceClient, chunk int) *blobWriter {
	prog := &Progress{}
	return &blobWriter{
		writer: client, experimentID: "exp", chunk: chunk, send: newSender(context.Background(), 4, testRetry, prog),
		pace: &pacer{}, prog: prog, crash: func(CrashPoint) {},
	}
}

// TestBlobResumesFromWhatTheServerHolds: a stream cut after two chunks resumes
// at the server's size (GetBlobMetadata), not from the start; a finished blob
// sent again is taken as done.
func TestBlobResumesFromWhatTheServerHolds(t *testing.T) {
	srv, client := newFakeServer(t)
	var offsets []int64 // the first offset of each stream
	cut := true
	srv.fault = func(c call) error {
		if c.method != "WriteBlob" {
			return nil
		}
		if c.first {
			offsets = append(offsets, c.offset)
		}
		if cut && c.offset == 2*1000 {
			cut = false
			return status.Error(codes.Unavailable, "connection reset")
		}
		return nil
	}
	w := testBlobWriter(client, 1000)
	data := image(4500, 1)
	job := &blobJob{series: &migrate.Series{Tag: "img"}, run: "r", tag: "img", step: 3, blobs: [][]byte{data}, skip: []bool{false}, size: len(data)}
	if err := w.sendSequence(context.Background(), job); err != nil {
		t.Fatal(err)
	}
	if len(offsets) != 2 || offsets[0] != 0 || offsets[1] != 2000 {
		t.Errorf("streams started at %v, want [0 2000]", offsets)
	}
	if p, ok := srv.blobPoint("r", "img", 3); !ok || !bytes.Equal(p.blobs[0], data) {
		t.Error("the server does not hold the blob whole")
	}
	if err := w.sendSequence(context.Background(), job); err != nil {
		t.Errorf("sending a stored blob again: %v", err)
	}
	if n := srv.count("GetBlobMetadata"); n != 1 {
		t.Errorf("%d GetBlobMetadata calls, want 1", n)
	}
}

// TestBlobOverTheLimitKeepsItsSlot: a blob over the server's size limit is skipped,
// and the next keeps its index.
func TestBlobOverTheLimitKeepsItsSlot(t *testing.T) {
	srv, client := newFakeServer(t)
	logs := newMemLogdir()
	w := logs.file(t, "r", "events.out.tfevents.1")
	w.image("img", 0, image(50, 1), image(5000, 2), image(60, 3))
	cfg := newConfig(logs, client, state.New("fake", "memory"), nil)
	cfg.Limits.MaxBlobSize = 1000
	if err := New(cfg).Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	p, _ := srv.blobPoint("r", "img", 0)
	if len(p.blobs) != 5 || p.blobs[3] != nil || !bytes.Equal(p.blobs[2], image(50, 1)) || !bytes.Equal(p.blobs[4], image(60, 3)) {
		t.Errorf("slots %d: the skipped blob moved the others", len(p.blobs))
	}
}

// TestHeldBlobsLastWriteWins: a later point at a held step replaces it in place;
// jobs leave in the order read, and the bytes held follow.
func TestHeldBlobsLastWriteWins(t *testing.T) {
	s := &migrate.Series{Tag: "img"}
	var h heldBlobs
	a := &blobJob{series: s, step: 1, size: 10}
	b := &blobJob{series: s, step: 2, size: 20}
	a2 := &blobJob{series: s, step: 1, size: 5, rewrite: true}
	h.hold(a)
	h.hold(b)
	h.hold(a2)
	if h.bytes != 25 {
		t.Errorf("%d bytes held, want 25", h.bytes)
	}
	if j := h.next(); j != a2 || j.rewrite {
		t.Errorf("first out %+v, want the replacement, not marked as a rewrite (the first was never sent)", j)
	}
	if j := h.next(); j != b || h.next() != nil || h.bytes != 0 {
		t.Errorf("then %+v, %d bytes left", j, h.bytes)
	}
	if full := h.hold(&blobJob{series: s, step: 3, size: maxHeldBlobBytes + 1}); !full {
		t.Error("holding more than maxHeldBlobBytes did not ask for a flush")
	}
}

// TestBlobRewriteWaitsForTheEarlierWrite: a step written again after its first
// write was sent (more than maxHeldBlobBytes of images came between) is sent only
// once the first write is acknowledged, so the last write wins on the server. The
// server holds the first write until the rewrite arrives (a failure) or everything
// else is done.
func TestBlobRewriteWaitsForTheEarlierWrite(t *testing.T) {
	logs := newMemLogdir()
	w := logs.file(t, "r", "events.out.tfevents.1")
	first, last := image(1000, 1), image(1000, 2)
	w.image("img", 5, first)
	const fillers = 40
	for s := int64(6); s < 6+fillers; s++ {
		w.image("img", s, image(1_000_000, int(s)))
	}
	w.imageAt("img", 5, 1.8e9, last) // a job restarted from a checkpoint, later
	srv, client := newFakeServer(t)
	u := New(newConfig(logs, client, state.New("fake", "memory"), nil))
	var step5 atomic.Int64
	var overtaken atomic.Bool
	rewriteArrived := make(chan struct{})
	srv.fault = func(c call) error {
		switch {
		case c.method == "GetOrCreateBlobSequence" && c.step == 5 && step5.Add(1) == 2:
			close(rewriteArrived)
		case c.method == "WriteBlob" && c.step == 5 && step5.Load() == 1:
			for {
				select {
				case <-rewriteArrived:
					overtaken.Store(true)
					return nil
				default:
				}
				stored := 0
				for s := int64(6); s < 6+fillers; s++ {
					if _, ok := srv.blobPoint("r", "img", s); ok {
						stored++
					}
				}
				if stored == fillers && u.pendingRequests() == 1 {
					return nil
				}
				time.Sleep(time.Millisecond)
			}
		}
		return nil
	}
	if err := u.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if overtaken.Load() {
		t.Error("the rewrite of step 5 was sent while its first write was in flight")
	}
	if p, ok := srv.blobPoint("r", "img", 5); !ok || !bytes.Equal(p.blobs[2], last) {
		t.Error("the server holds the first write of step 5, not the last")
	}
}
