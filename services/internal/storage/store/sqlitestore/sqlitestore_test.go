package sqlitestore

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/tbhub/tbhub/services/internal/storage/store"
	"github.com/tbhub/tbhub/services/internal/storage/store/storetest"
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

// The store stamps rows with its own clock, which need not be the test
// process's: Spanner's commit timestamps on the emulator run milliseconds
// ahead of it. The suite holds with a store clock ahead or behind.
func TestConformanceOwnClock(t *testing.T) {
	for _, skew := range []time.Duration{2 * time.Second, -2 * time.Second} {
		t.Run(skew.String(), func(t *testing.T) {
			storetest.Run(t, func(t *testing.T) store.Store {
				s, err := Open(t.Context(), filepath.Join(t.TempDir(), DefaultFile), Options{Now: func() time.Time { return time.Now().Add(skew) }})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { s.Close() })
				return s
			})
		})
	}
}

// TestBytesPerScalarPoint holds the store to issue 21's target: the
// issue's 500,000 points (issueExperiment) take at most 8 bytes each in
// the database files after a clean stop.
func TestBytesPerScalarPoint(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 500,000 points")
	}
	t.Parallel()
	size, points := issueDatabase(t)
	if perPoint := float64(size) / float64(points); perPoint > 8 {
		t.Errorf("%d points take %d bytes: %.2f B per point, want at most 8", points, size, perPoint)
	}
}
