package fileblob

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tbhub/tbhub/services/internal/blob"
	"github.com/tbhub/tbhub/services/internal/blob/blobtest"
)

func newStore(t *testing.T) *Store {
	t.Helper()
	s, err := Open(filepath.Join(t.TempDir(), "blobs"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestAcceptance(t *testing.T) {
	blobtest.Run(t, blobtest.Harness{
		New: func(t *testing.T) blob.Store { return newStore(t) },
		Corrupt: func(t *testing.T, s blob.Store, key string) {
			blobtest.FlipByte(t, filepath.Join(s.(*Store).root.Name(), filepath.FromSlash(key)), headerSize+10)
		},
		// The copy buffer plus bookkeeping; far below the 64 MiB object.
		MaxStreamAlloc: 8 << 20,
	})
}

// A symlink planted inside the folder must not let a write escape it.
func TestSymlinkEscape(t *testing.T) {
	s := newStore(t)
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(s.root.Name(), "experiments")); err != nil {
		t.Fatal(err)
	}
	_, err := s.Put(t.Context(), "experiments/e1/x", bytes.NewReader([]byte("data")), blob.PutOptions{})
	if err == nil {
		t.Errorf("Put through a symlink leaving the folder succeeded")
	}
	entries, _ := os.ReadDir(outside)
	if len(entries) != 0 {
		t.Errorf("Put through a symlink created %d entries outside the folder", len(entries))
	}
}

func TestStaleTempFilesRemoved(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "blobs")
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	stale := filepath.Join(dir, tmpDir, "leftover")
	fresh := filepath.Join(dir, tmpDir, "inflight")
	for _, p := range []string{stale, fresh} {
		if err := os.WriteFile(p, []byte("partial"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Now().Add(-2 * staleTemp)
	if err := os.Chtimes(stale, old, old); err != nil {
		t.Fatal(err)
	}
	s, err = Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("stale temp file still there (Stat error = %v)", err)
	}
	if _, err := os.Stat(fresh); err != nil {
		t.Errorf("recent temp file removed: %v", err)
	}
}

func BenchmarkPut(b *testing.B) { blobtest.BenchmarkPut(b, newBenchStore(b)) }
func BenchmarkGet(b *testing.B) { blobtest.BenchmarkGet(b, newBenchStore(b)) }

func newBenchStore(b *testing.B) *Store {
	s, err := Open(filepath.Join(b.TempDir(), "blobs"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}
