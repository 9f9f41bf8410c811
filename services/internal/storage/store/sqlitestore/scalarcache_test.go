package sqlitestore

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/tbhub/tbhub/services/internal/storage/store"
)

// readLoss reads run "r", tag "loss" at k points.
func readLoss(t *testing.T, s *Store, eid string, k int64) []store.ScalarPoint {
	t.Helper()
	var out []store.ScalarPoint
	err := s.ReadScalars(t.Context(), eid, store.Query{MaxPoints: k}, func(_ *store.TimeSeries, ps []store.ScalarPoint) error {
		out = append(out, ps...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// A cached downsampled read never hides a write: not an overwrite of the
// same steps by this process (same count, max step and wall times), nor
// an append by another process on the same file.
func TestScalarCacheSeesWrites(t *testing.T) {
	path := filepath.Join(t.TempDir(), DefaultFile)
	a, err := Open(t.Context(), path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	eid := newTestExperiment(t, a)
	if err := a.WriteScalars(t.Context(), eid, []store.ScalarSeries{scalarBatch(0, 1000)}); err != nil {
		t.Fatal(err)
	}
	first := readLoss(t, a, eid, 10)
	if again := readLoss(t, a, eid, 10); len(again) != 10 || again[9] != first[9] {
		t.Fatalf("second read %v, first %v", again, first)
	}

	// Overwrite the latest point (always selected) with a new value.
	over := scalarBatch(999, 1)
	over.Points[0].Value = 42
	if err := a.WriteScalars(t.Context(), eid, []store.ScalarSeries{over}); err != nil {
		t.Fatal(err)
	}
	if got := readLoss(t, a, eid, 10); got[9].Step != 999 || got[9].Value != 42 {
		t.Errorf("after overwriting step 999 with 42, read %+v", got[9])
	}

	// Another process (a second Store on the file) appends a step.
	b, err := Open(t.Context(), path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := b.WriteScalars(t.Context(), eid, []store.ScalarSeries{scalarBatch(1000, 1)}); err != nil {
		t.Fatal(err)
	}
	if got := readLoss(t, a, eid, 10); got[9].Step != 1000 {
		t.Errorf("after another store appended step 1000, the latest point read is %+v", got[9])
	}
}

// The cache holds at most its bound, dropping the least recently used.
func TestScalarCacheBound(t *testing.T) {
	c := newScalarCache(25)
	si := &seriesInfo{}
	points := make([]store.ScalarPoint, 10)
	for i := range int64(4) {
		c.put(scalarKey{eid: "e", series: i}, 0, si, points)
	}
	if c.points > 25 || len(c.entries) != 2 {
		t.Fatalf("%d points in %d entries, want at most 25 in 2", c.points, len(c.entries))
	}
	if _, ok := c.get(scalarKey{eid: "e", series: 0}, 0, si); ok {
		t.Error("the oldest entry is still there")
	}
	if _, ok := c.get(scalarKey{eid: "e", series: 3}, 0, si); !ok {
		t.Error("the newest entry is gone")
	}
	c.wrote("e")
	if _, ok := c.get(scalarKey{eid: "e", series: 3}, 0, si); ok {
		t.Error("an entry read before a write is still served")
	}
}

// A bucketed read (a web UI card) is cached as a downsampled one is, and
// its cached answer never hides a write either: an overwrite by this
// process of a step inside a bucket, an append by another process.
func TestScalarCacheBucketedReads(t *testing.T) {
	path := filepath.Join(t.TempDir(), DefaultFile)
	a, err := Open(t.Context(), path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	eid := newTestExperiment(t, a)
	if err := a.WriteScalars(t.Context(), eid, []store.ScalarSeries{scalarBatch(0, 1000)}); err != nil {
		t.Fatal(err)
	}
	read := func() []store.ScalarPoint {
		t.Helper()
		var out []store.ScalarPoint
		if err := a.ReadScalars(t.Context(), eid, store.Query{Buckets: 10, MaxPoints: 10}, func(_ *store.TimeSeries, ps []store.ScalarPoint) error {
			out = append(out, ps...)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return out
	}
	first := read()
	a.scalars.mu.Lock()
	cached := len(a.scalars.entries)
	a.scalars.mu.Unlock()
	if cached != 1 {
		t.Fatalf("%d cache entries after a bucketed read, want 1", cached)
	}
	if again := read(); !slices.Equal(again, first) {
		t.Fatalf("second read %v, first %v", again, first)
	}

	// A spike written inside a bucket is its highest point.
	spike := scalarBatch(555, 1)
	spike.Points[0].Value = 1e9
	if err := a.WriteScalars(t.Context(), eid, []store.ScalarSeries{spike}); err != nil {
		t.Fatal(err)
	}
	if got := read(); !slices.Contains(got, spike.Points[0]) {
		t.Errorf("after writing a spike at step 555, read %v", got)
	}

	// Another process (a second Store on the file) appends a step.
	b, err := Open(t.Context(), path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := b.WriteScalars(t.Context(), eid, []store.ScalarSeries{scalarBatch(1000, 1)}); err != nil {
		t.Fatal(err)
	}
	if got := read(); got[len(got)-1].Step != 1000 {
		t.Errorf("after another store appended step 1000, the last point read is %+v", got[len(got)-1])
	}
}
