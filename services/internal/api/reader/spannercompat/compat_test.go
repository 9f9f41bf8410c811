// Package spannercompat runs the read service's TensorBoard compatibility
// suite (readertest.RunCompat) on Cloud Spanner through the official
// emulator, so both backends answer TensorBoard's call patterns alike.
package spannercompat

import (
	"os"
	"testing"

	"github.com/tbhub/tbhub/services/internal/api/reader"
	"github.com/tbhub/tbhub/services/internal/api/reader/readertest"
	"github.com/tbhub/tbhub/services/internal/storage/blob/fileblob"
	"github.com/tbhub/tbhub/services/internal/testenv/spanneremu"
)

func TestMain(m *testing.M) { os.Exit(spanneremu.Main(m)) }

func TestCompatSpanner(t *testing.T) {
	readertest.RunCompat(t, func(t *testing.T) *readertest.Env {
		db := spanneremu.NewDatabase(t)
		st := db.Store(t)
		// Users and tokens live in SQLite: the authenticator is not what
		// this test is about.
		ids, _ := readertest.OpenEmbedded(t)
		bs, err := fileblob.Open(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { bs.Close() })
		return readertest.Start(t, st, ids, bs, reader.Config{BlobChunkBytes: 5})
	})
}
