package serve_test

import (
	"testing"
	"time"

	"github.com/tbhub/tbhub/services/internal/assembly/serve"
)

// Three servers sweep one store: the purge runs under a lease one of them
// takes, and servers that stop release their leases, so the purge is free
// for another process at once instead of after the lease's five minutes.
func TestSweepLeaseTakenAndReleased(t *testing.T) {
	t.Parallel()
	st, blobs := embedded(t)
	const purge = "purge-deleted-experiments"
	var servers []*harness
	for range 3 {
		servers = append(servers, newHarness(t, st, blobs, func(c *serve.Config) { c.SweepInterval = 10 * time.Millisecond }))
	}
	// probe reports whether the lease is free now, leaving it free.
	probe := func() bool {
		free, err := st.TakeLease(t.Context(), purge, "probe", time.Now(), time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if free {
			if err := st.ReleaseLease(t.Context(), purge, "probe"); err != nil {
				t.Fatal(err)
			}
		}
		return free
	}
	waitFor(t, "no server took the purge's lease", func() bool { return !probe() })
	for _, h := range servers {
		if err := h.stop(); err != nil {
			t.Fatalf("stopping a server: %v", err)
		}
	}
	if !probe() {
		t.Error("the purge's lease is still held after every server stopped")
	}
}
