package writer_test

import (
	"bytes"
	"errors"
	"fmt"
	"github.com/tbhub/tbhub/services/internal/testenv/inprocess"
	"hash/crc32"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	servicepb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/service"
	"github.com/tbhub/tbhub/services/internal/storage/blob"
	"github.com/tbhub/tbhub/services/internal/storage/blob/blobtest"
	"github.com/tbhub/tbhub/services/internal/storage/store"
)

// Blobs of runs and tags with any name upload and read back, issue 12's
// Chinese run name among them (its escaped object name was longer than a
// file name may be).
func TestBlobsOfHostileNames(t *testing.T) {
	t.Parallel()
	st, blobs := inprocess.Embedded(t)
	runBlobsOfHostileNames(t, st, blobs)
}

func TestBlobsOfHostileNamesSpanner(t *testing.T) {
	t.Parallel()
	st, blobs := inprocess.OnSpanner(t)
	runBlobsOfHostileNames(t, st, blobs)
}

func runBlobsOfHostileNames(t *testing.T, st store.Store, blobs blob.Store) {
	h := inprocess.Start(t, st, blobs, nil)
	ctx, eid := h.AdaExperiment(t, "names")
	rng := rand.New(rand.NewPCG(1, 2))
	for i, name := range blobtest.HostileNames() {
		if name == "" {
			continue // the writer refuses empty names
		}
		for _, rt := range [][2]string{{name, "images"}, {"train", name}} {
			data := fmt.Appendf(nil, "image %d of %q/%q", i, rt[0], rt[1])
			seq, err := h.Writer.GetOrCreateBlobSequence(ctx, &servicepb.GetOrCreateBlobSequenceRequest{
				ExperimentId: eid, Run: rt[0], Tag: rt[1], Step: int64(i), WallTime: timestamppb.Now(), FinalSequenceLength: 1})
			if err != nil {
				t.Fatalf("GetOrCreateBlobSequence(%q, %q): %v", rt[0], rt[1], err)
			}
			if err := sendFrom(ctx, h, seq.GetBlobSequenceId(), 0, data, 0, rng, -1, true); err != nil {
				t.Fatalf("WriteBlob(%q, %q): %v", rt[0], rt[1], err)
			}
			id := store.BlobID(eid, store.BlobRef{Run: rt[0], Tag: rt[1], Step: int64(i)})
			if got := h.ReadBlob(t, ctx, id); !bytes.Equal(got, data) {
				t.Errorf("blob of %q/%q reads back as %q, want %q", rt[0], rt[1], got, data)
			}
		}
	}
}

// oldObjectKey is the key layout before issue 12: run and tag escaped into
// the key (bytes outside [A-Za-z0-9_-] as %XX).
func oldObjectKey(eid, run, tag string, step, index int64) string {
	esc := func(s string) string {
		var b strings.Builder
		for i := 0; i < len(s); i++ {
			c := s[i]
			if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' {
				b.WriteByte(c)
			} else {
				fmt.Fprintf(&b, "%%%02X", c)
			}
		}
		return b.String()
	}
	return fmt.Sprintf("experiments/%s/runs/%s/tags/%s/steps/%d/%d", eid, esc(run), esc(tag), step, index)
}

// Blobs stored before the layout changed stay readable (rows keep the key
// their object was written under), and a partial blob under an old key is
// resumed from it and moves to the new key.
func TestBlobsUnderTheOldLayoutStayReadable(t *testing.T) {
	t.Parallel()
	st, blobs := inprocess.Embedded(t)
	h := inprocess.Start(t, st, blobs, nil)
	ctx, eid := h.AdaExperiment(t, "old layout")
	const run, tag, step = "archive/experiments/Exp_0_adam_200_0.2/train", "images", 4
	seq, err := h.Writer.GetOrCreateBlobSequence(ctx, &servicepb.GetOrCreateBlobSequenceRequest{
		ExperimentId: eid, Run: run, Tag: tag, Step: step, WallTime: timestamppb.New(time.Unix(1_700_000_000, 0)), FinalSequenceLength: 2})
	if err != nil {
		t.Fatal(err)
	}
	whole := []byte("a whole image written under the old layout")
	partial := []byte("half of an image, then the other half")
	const cut = 17
	for i, b := range []struct {
		data  []byte
		state store.BlobState
	}{{whole, store.BlobStateCurrent}, {partial[:cut], store.BlobStateUnfinalized}} {
		key := oldObjectKey(eid, run, tag, step, int64(i))
		if _, err := blobs.Put(ctx, key, bytes.NewReader(b.data), blob.PutOptions{}); err != nil {
			t.Fatal(err)
		}
		ref := store.BlobRef{Run: run, Tag: tag, Step: step, Index: int64(i)}
		if err := st.PutBlob(ctx, eid, ref, store.Blob{Index: int64(i), ObjectKey: key, Size: int64(len(b.data)),
			CRC32C: crc32.Checksum(b.data, blob.CastagnoliTable), State: b.state}); err != nil {
			t.Fatal(err)
		}
	}
	if got := h.ReadBlob(t, ctx, store.BlobID(eid, store.BlobRef{Run: run, Tag: tag, Step: step})); !bytes.Equal(got, whole) {
		t.Errorf("old-layout blob reads back as %q, want %q", got, whole)
	}
	md, err := h.Writer.GetBlobMetadata(ctx, &servicepb.GetBlobMetadataRequest{BlobSequenceId: seq.GetBlobSequenceId(), Index: 1})
	if err != nil || md.GetSize() != cut {
		t.Fatalf("GetBlobMetadata of the partial blob = %v, %v; want %d bytes", md, err, cut)
	}
	if err := sendFrom(ctx, h, seq.GetBlobSequenceId(), 1, partial, cut, rand.New(rand.NewPCG(3, 4)), -1, true); err != nil {
		t.Fatalf("resuming the partial blob: %v", err)
	}
	if got := h.ReadBlob(t, ctx, store.BlobID(eid, store.BlobRef{Run: run, Tag: tag, Step: step, Index: 1})); !bytes.Equal(got, partial) {
		t.Errorf("resumed blob reads back as %q, want %q", got, partial)
	}
	if _, err := blobs.Stat(ctx, oldObjectKey(eid, run, tag, step, 1)); !errors.Is(err, blob.ErrNotFound) {
		t.Errorf("the partial blob's old object: %v, want it deleted", err)
	}
	if _, err := blobs.Stat(ctx, blob.ObjectKey(eid, run, tag, step, 1)); err != nil {
		t.Errorf("the resumed blob's object under the current layout: %v", err)
	}
}
