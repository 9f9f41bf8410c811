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

	"github.com/tbhub/tbhub/services/internal/blob"
	"github.com/tbhub/tbhub/services/internal/store/sqlitestore"
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
	if _, err := b.Blobs.Put(t.Context(), "e1/k/1", strings.NewReader("secret"), blob.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	b.Close()
	return dir
}
