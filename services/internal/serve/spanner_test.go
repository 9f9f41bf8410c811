package serve_test

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/tbhub/tbhub/services/internal/blob"
	"github.com/tbhub/tbhub/services/internal/blob/fileblob"
	"github.com/tbhub/tbhub/services/internal/store"
	"github.com/tbhub/tbhub/services/internal/testenv/spanneremu"
)

// The Spanner variants of the whole-system tests share one emulator,
// started by the first test that needs it (so the embedded tests run
// without one) and stopped by TestMain. A test that needs it fails if it
// cannot start; it never skips.
var (
	emuOnce sync.Once
	emu     *spanneremu.Emulator
	emuErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if emu != nil {
		emu.Stop()
	}
	os.Exit(code)
}

// onSpanner returns a store on a fresh emulator database (blobs in a
// folder: the tests are about Spanner).
func onSpanner(t testing.TB) (store.Store, blob.Store) {
	t.Helper()
	spanneremu.SkipIfShort(t)
	emuOnce.Do(func() { emu, emuErr = spanneremu.Start(context.Background()) })
	if emuErr != nil {
		t.Fatalf("Spanner emulator: %v", emuErr)
	}
	db, err := emu.NewDatabase(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Drop(context.Background()) })
	blobs, err := fileblob.Open(filepath.Join(t.TempDir(), "blobs"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { blobs.Close() })
	return db.Store(t), blobs
}

func TestTenancyMatrixSpanner(t *testing.T) {
	st, blobs := onSpanner(t)
	runTenancyMatrix(t, newHarness(t, st, blobs, noCredentialThrottle))
}

func TestStockUploaderSequenceSpanner(t *testing.T) {
	st, blobs := onSpanner(t)
	runStockUploaderSequence(t, st, blobs)
}
