package background_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/tbhub/tbhub/services/internal/run/background"
	"github.com/tbhub/tbhub/services/internal/storage/store/sqlitestore"
)

// clock is a clock the test moves.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) { c.mu.Lock(); defer c.mu.Unlock(); c.t = c.t.Add(d) }

// instance is one server process's runner and what its jobs did.
type instance struct {
	r   *background.Runner
	mu  sync.Mutex
	ran map[string]int
}

func (in *instance) count(job string) int { in.mu.Lock(); defer in.mu.Unlock(); return in.ran[job] }

var jobNames = []string{"purge", "sweep"}

func newInstances(t *testing.T, n int, ttl time.Duration, c *clock) []*instance {
	t.Helper()
	st, err := sqlitestore.Open(t.Context(), filepath.Join(t.TempDir(), sqlitestore.DefaultFile), sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	var out []*instance
	for i := range n {
		in := &instance{ran: map[string]int{}}
		var jobs []background.Job
		for _, name := range jobNames {
			jobs = append(jobs, background.Job{Name: name, Run: func(context.Context) (int, error) {
				in.mu.Lock()
				defer in.mu.Unlock()
				in.ran[name]++
				return 1, nil
			}})
		}
		in.r, err = background.New(st, background.Config{Holder: fmt.Sprintf("instance-%d", i), LeaseTTL: ttl, Now: c.now}, jobs...)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, in)
	}
	return out
}

// tickAll ticks the instances at once and returns, per job, which of them
// ran it.
func tickAll(t *testing.T, ins []*instance) map[string][]int {
	t.Helper()
	ran := make([][]string, len(ins))
	var wg sync.WaitGroup
	for i, in := range ins {
		wg.Add(1)
		go func() { defer wg.Done(); ran[i] = in.r.Tick(t.Context()) }()
	}
	wg.Wait()
	by := map[string][]int{}
	for i, names := range ran {
		for _, name := range names {
			by[name] = append(by[name], i)
		}
	}
	return by
}

// Three instances tick together on one store: each job runs on exactly one
// of them, the same one tick after tick while it renews its lease. When
// that instance stops without releasing, no one runs its jobs until the
// lease expires, and then exactly one other does; when an instance
// releases its leases, another takes them at its next tick.
func TestOneInstanceAtATime(t *testing.T) {
	const ttl, interval = 5 * time.Minute, time.Minute
	c := &clock{t: time.Date(2026, 11, 27, 17, 0, 0, 0, time.UTC)}
	ins := newInstances(t, 3, ttl, c)

	holder := map[string]int{}
	for round := range 4 {
		by := tickAll(t, ins)
		for _, job := range jobNames {
			if len(by[job]) != 1 {
				t.Fatalf("round %d: job %s ran on instances %v, want exactly one", round, job, by[job])
			}
			if h, ok := holder[job]; ok && by[job][0] != h {
				t.Errorf("round %d: job %s moved from instance %d to %d while its holder renewed", round, job, h, by[job][0])
			}
			holder[job] = by[job][0]
		}
		c.add(interval)
	}

	// The purge's holder stops (a crash: no release). Its last renewal was
	// one interval ago.
	stopped := holder["purge"]
	var alive []*instance
	for i, in := range ins {
		if i != stopped {
			alive = append(alive, in)
		}
	}
	c.add(ttl - interval - time.Nanosecond)
	if by := tickAll(t, alive); len(by["purge"]) != 0 {
		t.Errorf("purge ran on %v before the stopped holder's lease expired", by["purge"])
	}
	c.add(time.Nanosecond)
	by := tickAll(t, alive)
	if len(by["purge"]) != 1 {
		t.Fatalf("purge ran on %v of the two left once the lease expired, want exactly one", by["purge"])
	}
	next := alive[by["purge"][0]]
	for range 2 {
		c.add(interval)
		if by := tickAll(t, alive); len(by["purge"]) != 1 || alive[by["purge"][0]] != next {
			t.Errorf("purge ran on %v after the takeover, want the new holder alone", by["purge"])
		}
	}

	// The new holder stops gracefully: the last instance takes over at once.
	next.r.Release(t.Context())
	var last *instance
	for _, in := range alive {
		if in != next {
			last = in
		}
	}
	before := last.count("purge")
	if ran := last.r.Tick(t.Context()); !slices.Contains(ran, "purge") || last.count("purge") != before+1 {
		t.Errorf("after the holder released its lease the last instance ran %v, want purge", ran)
	}
	if ran := next.r.Tick(t.Context()); slices.Contains(ran, "purge") {
		t.Error("the instance that released the purge's lease ran it again while another holds it")
	}
}
