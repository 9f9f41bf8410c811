package fileblob

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/tbhub/tbhub/services/internal/storage/blob"
	"github.com/tbhub/tbhub/services/internal/storage/blob/blobtest"
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

// A write on a full disk fails with blob.ErrDiskFull (one sentinel with
// store.ErrDiskFull, which the RPC edge turns into "the server's disk is
// full"), leaves no temporary file, keeps the object it was replacing,
// and writes work again once there is room (issue 20 #8).
func TestPutOnFullDisk(t *testing.T) {
	s := newStore(t)
	ctx := t.Context()
	if _, err := s.Put(ctx, "e/k", bytes.NewReader([]byte("old")), blob.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	s.tempWriter = func(w io.Writer) io.Writer { return &fullDisk{w: w, room: 1000} }
	_, err := s.Put(ctx, "e/k", bytes.NewReader(make([]byte, 5000)), blob.PutOptions{})
	if !errors.Is(err, blob.ErrDiskFull) {
		t.Fatalf("Put on a full disk = %v, want blob.ErrDiskFull", err)
	}
	if got := readAll(t, s, "e/k"); string(got) != "old" {
		t.Errorf("after the failed Put the object is %q, want the old one", got)
	}
	if entries, err := os.ReadDir(filepath.Join(s.root.Name(), tmpDir)); err != nil || len(entries) != 0 {
		t.Errorf("temporary folder after the failed Put: %d entries (%v)", len(entries), err)
	}
	s.tempWriter = nil // space freed
	if _, err := s.Put(ctx, "e/k", bytes.NewReader([]byte("new")), blob.PutOptions{}); err != nil {
		t.Fatalf("Put once space is free: %v", err)
	}
	if got := readAll(t, s, "e/k"); string(got) != "new" {
		t.Errorf("object = %q, want %q", got, "new")
	}
}

// fullDisk writes room bytes, then fails as write(2) does on a full file
// system.
type fullDisk struct {
	w    io.Writer
	room int
}

func (d *fullDisk) Write(p []byte) (int, error) {
	if len(p) <= d.room {
		d.room -= len(p)
		return d.w.Write(p)
	}
	n, _ := d.w.Write(p[:d.room])
	d.room = 0
	return n, &fs.PathError{Op: "write", Path: "tmp", Err: syscall.ENOSPC}
}

func readAll(t *testing.T, s *Store, key string) []byte {
	t.Helper()
	r, err := s.NewRangeReader(t.Context(), key, 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
