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

// newTestExperiment creates a user "u" and an experiment it owns in s.
func newTestExperiment(tb testing.TB, s *Store) string {
	tb.Helper()
	c := tb.Context()
	if err := s.CreateUser(c, store.User{ID: "u", Name: "u"}); err != nil {
		tb.Fatal(err)
	}
	eid := store.NewExperimentID()
	if err := s.CreateExperiment(c, store.Experiment{ID: eid, Owner: "u", Visibility: store.VisibilityPrivate}); err != nil {
		tb.Fatal(err)
	}
	return eid
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return newTestStore(t) })
}
