package storetest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/tbhub/tbhub/services/internal/storage/store"
)

// testLeases checks TakeLease and ReleaseLease: a free lease goes to one
// of the holders racing for it; its holder renews it, the others cannot
// take it until it expires or is released; leases with other names are
// independent; bad arguments are refused.
func testLeases(t *testing.T, s store.Store) {
	c := ctx(t)
	t0 := time.Now().UTC().Truncate(time.Microsecond)
	const ttl = time.Minute
	take := func(name, holder string, at time.Time) bool {
		t.Helper()
		held, err := s.TakeLease(c, name, holder, at, ttl)
		must(t, fmt.Sprintf("TakeLease(%s, %s)", name, holder), err)
		return held
	}

	var wg sync.WaitGroup
	won := make([]bool, 5)
	for i := range won {
		wg.Add(1)
		go func() {
			defer wg.Done()
			held, err := s.TakeLease(c, "purge", fmt.Sprintf("h%d", i), t0, ttl)
			if err != nil {
				t.Errorf("racing TakeLease: %v", err)
			}
			won[i] = held
		}()
	}
	wg.Wait()
	holder := -1
	for i, w := range won {
		if w && holder >= 0 {
			t.Fatalf("holders %d and %d both took the free lease", holder, i)
		}
		if w {
			holder = i
		}
	}
	if holder < 0 {
		t.Fatal("no racing holder took the free lease")
	}
	h := fmt.Sprintf("h%d", holder)
	other := fmt.Sprintf("h%d", (holder+1)%len(won))

	if !take("purge", h, t0.Add(ttl/2)) {
		t.Error("the holder could not renew its lease")
	}
	// Renewed at t0+ttl/2, it holds until t0+3ttl/2.
	if take("purge", other, t0.Add(ttl)) {
		t.Error("another holder took a renewed lease before it expired")
	}
	if !take("sweep", other, t0) {
		t.Error("a lease of another name is not free")
	}
	if !take("purge", other, t0.Add(3*ttl/2)) {
		t.Error("another holder could not take the lease once it expired")
	}
	if take("purge", h, t0.Add(3*ttl/2)) {
		t.Error("the former holder took back a lease now held by another")
	}

	must(t, "ReleaseLease by a non-holder", s.ReleaseLease(c, "purge", h))
	if take("purge", h, t0.Add(2*ttl)) {
		t.Error("a release by a non-holder freed the lease")
	}
	must(t, "ReleaseLease", s.ReleaseLease(c, "purge", other))
	if !take("purge", h, t0.Add(2*ttl)) {
		t.Error("a released lease could not be taken at once")
	}
	must(t, "ReleaseLease of an unknown lease", s.ReleaseLease(c, "never-taken", h))

	for _, bad := range []struct {
		name, holder string
		ttl          time.Duration
	}{{"", "h", ttl}, {"n", "", ttl}, {"n", "h", 0}} {
		_, err := s.TakeLease(c, bad.name, bad.holder, t0, bad.ttl)
		wantErr(t, fmt.Sprintf("TakeLease(%q, %q, %v)", bad.name, bad.holder, bad.ttl), err, store.ErrInvalidArgument)
	}
}
