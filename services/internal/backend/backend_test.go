package backend

import (
	"io/fs"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/tbhub/tbhub/services/internal/blob"
)

// The embedded store's database and blob files hold private data: no
// file or folder it creates is readable by other local users, whatever
// the umask (issue 14 #11).
func TestEmbeddedFilesArePrivate(t *testing.T) {
	old := syscall.Umask(0o022) // the usual umask, under which 0644 files appeared
	defer syscall.Umask(old)
	dir := filepath.Join(t.TempDir(), "data")
	b, err := Open(t.Context(), Spec{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Blobs.Put(t.Context(), "e1/k/1", strings.NewReader("secret"), blob.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	b.Close()
	n := 0
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
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
