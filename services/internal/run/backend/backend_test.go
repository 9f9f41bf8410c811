package backend

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/tbhub/tbhub/services/internal/storage/blob"
	"github.com/tbhub/tbhub/services/internal/storage/store"
	"github.com/tbhub/tbhub/services/internal/storage/store/sqlitestore"
)

// The embedded store's database and blob files hold private data: no
// file or folder it creates is readable by other local users, whatever
// the umask (issue 14 #11).
func TestEmbeddedFilesArePrivate(t *testing.T) {
	dir := storeOneBlob(t)
	n := 0
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		n++
		if perm := info.Mode().Perm(); perm&0o077 != 0 {
			t.Errorf("%s is %v: readable by others", p, perm)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 4 { // the folder, the database, the blob folder, the blob
		t.Fatalf("walked %d entries; the store created fewer files than expected", n)
	}
}

// A data folder made by an older release (0644 database, 0755 blob
// folder) is made private when the store opens it, and its data stays
// readable by the server (issue 14 #11).
func TestOldEmbeddedFilesMadePrivate(t *testing.T) {
	dir := storeOneBlob(t)
	db := filepath.Join(dir, sqlitestore.DefaultFile)
	blobs := filepath.Join(dir, "blobs")
	for name, mode := range map[string]os.FileMode{db: 0o644, db + "-wal": 0o644, blobs: 0o755} {
		if name == db+"-wal" {
			if err := os.WriteFile(name, nil, mode); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Chmod(name, mode); err != nil {
			t.Fatal(err)
		}
	}

	b, err := Open(t.Context(), Spec{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for _, name := range []string{db, db + "-wal", blobs} {
		info, err := os.Stat(name)
		if errors.Is(err, fs.ErrNotExist) && name == db+"-wal" {
			continue // SQLite replayed and removed it
		}
		if err != nil {
			t.Fatal(err)
		}
		if perm := info.Mode().Perm(); perm&0o077 != 0 {
			t.Errorf("%s is still %v after opening: readable by others", name, perm)
		}
	}
	rc, err := b.Blobs.NewRangeReader(t.Context(), "e1/k/1", 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(rc)
	rc.Close()
	if err != nil || string(got) != "secret" {
		t.Fatalf("blob after reopening = %q, %v", got, err)
	}
}

// storeOneBlob opens an embedded store in a new folder under the usual
// umask (under which 0644 files appeared), stores one blob, closes the
// store and returns the folder.
func storeOneBlob(t *testing.T) string {
	t.Helper()
	old := syscall.Umask(0o022)
	t.Cleanup(func() { syscall.Umask(old) })
	dir := filepath.Join(t.TempDir(), "data")
	b, err := Open(t.Context(), Spec{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	storeExperimentWithBlob(t, b)
	b.Close()
	return dir
}

// storeExperimentWithBlob stores an experiment (and its owner) and one
// blob "e1/k/1".
func storeExperimentWithBlob(t *testing.T, b *Backend) {
	t.Helper()
	ctx := t.Context()
	if err := b.Store.CreateUser(ctx, store.User{ID: "u", Name: "u"}); err != nil {
		t.Fatal(err)
	}
	if err := b.Store.CreateExperiment(ctx, store.Experiment{ID: store.NewExperimentID(), Owner: "u", Visibility: store.VisibilityPrivate}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Blobs.Put(ctx, "e1/k/1", strings.NewReader("secret"), blob.PutOptions{}); err != nil {
		t.Fatal(err)
	}
}

// A database deleted or emptied next to a blob folder holding data is
// not taken for a first start: the server refuses to start, says why and
// how to recover, and changes nothing; once the blob folder is moved away
// it starts an empty store (issue 20 #9).
func TestBlobsWithoutDatabaseRefused(t *testing.T) {
	for _, lose := range []string{"deleted", "emptied"} {
		t.Run(lose, func(t *testing.T) {
			dir := storeOneBlob(t)
			db := filepath.Join(dir, sqlitestore.DefaultFile)
			if lose == "deleted" {
				if err := os.Remove(db); err != nil {
					t.Fatal(err)
				}
			} else if err := os.Truncate(db, 0); err != nil {
				t.Fatal(err)
			}
			_, err := Open(t.Context(), Spec{DataDir: dir})
			if err == nil {
				t.Fatal("Open with blobs and no database succeeded")
			}
			for _, want := range []string{filepath.Join(dir, "blobs"), "restore", "move"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("the refusal %q does not say %q", err, want)
				}
			}
			if _, err := os.Stat(filepath.Join(dir, "blobs", "e1", "k", "1")); err != nil {
				t.Errorf("the blob after the refusal: %v", err)
			}
			if err := os.Rename(filepath.Join(dir, "blobs"), filepath.Join(dir, "blobs.orphaned")); err != nil {
				t.Fatal(err)
			}
			b, err := Open(t.Context(), Spec{DataDir: dir})
			if err != nil {
				t.Fatalf("Open once the blobs were moved away: %v", err)
			}
			b.Close()
		})
	}
}

// Two servers cannot open one data folder at once: the second is refused
// with a message naming the folder, and the folder is free again once the
// first closes it. Commands that only open it briefly (token create) do
// not take the lock and still work (issue 20 #9).
func TestSecondServerRefused(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	first, err := Open(t.Context(), Spec{DataDir: dir, LockDataDir: true})
	if err != nil {
		t.Fatal(err)
	}
	_, err = Open(t.Context(), Spec{DataDir: dir, LockDataDir: true})
	if err == nil || !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), "another tbhub server") {
		t.Errorf("second server on %s: %v, want a refusal naming the folder", dir, err)
	}
	token, err := Open(t.Context(), Spec{DataDir: dir})
	if err != nil {
		t.Errorf("opening without the lock while a server runs: %v", err)
	} else {
		token.Close()
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	again, err := Open(t.Context(), Spec{DataDir: dir, LockDataDir: true})
	if err != nil {
		t.Fatalf("a server once the first has stopped: %v", err)
	}
	again.Close()
}
