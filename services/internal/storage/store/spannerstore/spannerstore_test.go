package spannerstore_test

import (
	"os"
	"testing"

	"github.com/tbhub/tbhub/services/internal/storage/store"
	"github.com/tbhub/tbhub/services/internal/storage/store/storetest"
	"github.com/tbhub/tbhub/services/internal/testenv/spanneremu"
)

// TestMain starts one Spanner emulator for the package; the tests fail, not
// skip, if it cannot start.
func TestMain(m *testing.M) { os.Exit(spanneremu.Main(m)) }

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		return spanneremu.NewDatabase(t).ConcurrentStore(t)
	})
}
