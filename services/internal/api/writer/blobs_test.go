package writer

import (
	"bytes"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/tbhub/tbhub/services/internal/storage/blob"
	"github.com/tbhub/tbhub/services/internal/storage/blob/fileblob"
)

// The sweeper deletes an abandoned blob's object only if nothing wrote it
// since the row's cutoff: a stream of another process that resumed the
// blob and stored it meanwhile keeps it.
func TestDeleteUnlessWrittenSince(t *testing.T) {
	t.Parallel()
	blobs, err := fileblob.Open(filepath.Join(t.TempDir(), "blobs"))
	if err != nil {
		t.Fatal(err)
	}
	defer blobs.Close()
	ctx := t.Context()
	key := blob.ObjectKey("e", "r", "t", 1, 0)
	put := func() {
		t.Helper()
		if _, err := blobs.Put(ctx, key, bytes.NewReader([]byte("x")), blob.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// cutoff: a time after every write so far, and before every later one
	// (file times come from the kernel's coarse clock, a tick behind: the
	// wait leaves a margin of several ticks).
	cutoff := func() time.Time {
		at := time.Now().Add(10 * time.Millisecond)
		for deadline := time.Now().Add(time.Minute); !time.Now().After(at.Add(50 * time.Millisecond)); {
			if time.Now().After(deadline) {
				t.Fatal("the clock did not move")
			}
			time.Sleep(time.Millisecond)
		}
		return at
	}
	put()
	before := cutoff()
	put() // written again after the cutoff
	if err := deleteUnlessWrittenSince(ctx, blobs, key, before); err != nil {
		t.Fatal(err)
	}
	if _, err := blobs.Stat(ctx, key); err != nil {
		t.Errorf("an object written after the cutoff: %v, want it kept", err)
	}
	if err := deleteUnlessWrittenSince(ctx, blobs, key, cutoff()); err != nil {
		t.Fatal(err)
	}
	if _, err := blobs.Stat(ctx, key); !errors.Is(err, blob.ErrNotFound) {
		t.Errorf("an object written before the cutoff: %v, want it deleted", err)
	}
	if err := deleteUnlessWrittenSince(ctx, blobs, key, time.Now()); err != nil {
		t.Errorf("a missing object: %v, want success", err)
	}
}
