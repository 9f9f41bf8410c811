package sqlitestore

import (
	"path/filepath"
	"testing"

	"github.com/tbhub/tbhub/services/internal/store"
	"github.com/tbhub/tbhub/services/internal/store/storetest"
)

func newTestStore(t testing.TB) *Store {
	t.Helper()
	s, err := Open(t.Context(), filepath.Join(t.TempDir(), DefaultFile), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return newTestStore(t) })
}
