package live

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// testHub is a Hub whose checks run when the test ticks.
func testHub(l Limits) (*Hub, chan time.Time) {
	h := NewHub(l)
	tick := make(chan time.Time)
	h.ticks = func(time.Duration) (<-chan time.Time, func()) { return tick, func() {} }
	return h, tick
}

// waitUntil waits for cond, failing the test near its deadline.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		if dl, ok := t.Deadline(); ok && time.Until(dl) < 5*time.Second {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// experiment is a followed experiment: its version, and the reads of it.
type experiment struct {
	mu      sync.Mutex
	version string
	reads   atomic.Int64
}

func (e *experiment) set(v string) {
	e.mu.Lock()
	e.version = v
	e.mu.Unlock()
}

func (e *experiment) read(context.Context) (string, error) {
	e.reads.Add(1)
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.version, nil
}

// TestOneCheckWakesEveryViewer is issue 23's many viewers: the pages
// following one experiment share its check. Ten viewers waiting cost one
// read per check, and the check that sees the change wakes all ten.
func TestOneCheckWakesEveryViewer(t *testing.T) {
	h, tick := testHub(Limits{Wait: time.Hour})
	e := &experiment{version: "t1"}
	const viewers = 10
	var woke atomic.Int64
	var wg sync.WaitGroup
	for i := range viewers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			moved, err := h.Wait(context.Background(), "E", fmt.Sprint("viewer ", i), "t1", e.read)
			if err != nil || !moved {
				t.Errorf("viewer %d: moved %v, error %v; want moved", i, moved, err)
			}
			woke.Add(1)
		}()
	}
	waitUntil(t, "every viewer waiting", func() bool { return h.Waiting("E") == viewers })

	tick <- time.Now() // unchanged: one read, nobody woken
	tick <- time.Now() // the tick is taken only after the first check is done
	if n := e.reads.Load(); n != 2 {
		t.Fatalf("%d reads for two checks of %d viewers, want 2", n, viewers)
	}
	if n := woke.Load(); n != 0 {
		t.Fatalf("%d viewers woken with nothing changed", n)
	}

	e.set("t2")
	tick <- time.Now()
	wg.Wait()
	if n := e.reads.Load(); n != 3 {
		t.Errorf("%d reads to tell %d viewers of one change, want 3 (one per check)", n, viewers)
	}
	if n := h.Waiting("E"); n != 0 {
		t.Errorf("%d still waiting", n)
	}
}

// TestWaitsPerClientAreCapped: a client holds at most PerClient long polls
// (tabs, or a script opening many); past it, ErrTooMany and nothing held,
// and a slot frees when a poll ends. Other clients are not affected.
func TestWaitsPerClientAreCapped(t *testing.T) {
	h, _ := testHub(Limits{Wait: time.Hour, PerClient: 2})
	e := &experiment{version: "t1"}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 2)
	for range 2 {
		go func() {
			_, err := h.Wait(ctx, "E", "alice", "t1", e.read)
			done <- err
		}()
	}
	waitUntil(t, "alice's two polls held", func() bool { return h.Waiting("E") == 2 })
	if _, err := h.Wait(context.Background(), "E", "alice", "t1", e.read); !errors.Is(err, ErrTooMany) {
		t.Fatalf("alice's third poll: %v, want ErrTooMany", err)
	}
	if n := h.Waiting("E"); n != 2 {
		t.Fatalf("%d waiting after a refused poll, want 2", n)
	}
	bob, bobCancel := context.WithCancel(context.Background())
	bobDone := make(chan error, 1)
	go func() {
		_, err := h.Wait(bob, "E", "bob", "t1", e.read)
		bobDone <- err
	}()
	waitUntil(t, "bob's poll held beside alice's", func() bool { return h.Waiting("E") == 3 })
	bobCancel()
	if err := <-bobDone; err != nil {
		t.Errorf("bob: %v", err)
	}

	cancel() // alice closes her tabs
	for range 2 {
		if err := <-done; err != nil {
			t.Errorf("alice: %v", err)
		}
	}
	again, againCancel := context.WithCancel(context.Background())
	againDone := make(chan error, 1)
	go func() {
		_, err := h.Wait(again, "E", "alice", "t1", e.read)
		againDone <- err
	}()
	waitUntil(t, "alice's poll held once hers ended", func() bool { return h.Waiting("E") == 1 })
	againCancel()
	if err := <-againDone; err != nil {
		t.Errorf("alice again: %v", err)
	}
}

// TestFailedCheckWakesOnlyItsViewer: a check whose credential no longer
// reads the experiment (a revoked grant) wakes that viewer alone, to be
// told by its own read; the others wait, checked with the next credential.
func TestFailedCheckWakesOnlyItsViewer(t *testing.T) {
	h, tick := testHub(Limits{Wait: time.Hour})
	e := &experiment{version: "t1"}
	revoked := func(context.Context) (string, error) { return "", errors.New("not found") }
	first := make(chan bool, 1)
	go func() {
		moved, _ := h.Wait(context.Background(), "E", "revoked", "t1", revoked)
		first <- moved
	}()
	waitUntil(t, "the first viewer waiting", func() bool { return h.Waiting("E") == 1 })
	second := make(chan bool, 1)
	go func() {
		moved, _ := h.Wait(context.Background(), "E", "reader", "t1", e.read)
		second <- moved
	}()
	waitUntil(t, "both waiting", func() bool { return h.Waiting("E") == 2 })
	tick <- time.Now()
	if !<-first {
		t.Error("the viewer whose read failed was not woken")
	}
	tick <- time.Now() // checked with the other viewer's credential: unchanged
	tick <- time.Now() // taken once that check is done
	select {
	case <-second:
		t.Fatal("the other viewer was woken with nothing changed")
	default:
	}
	if e.reads.Load() == 0 {
		t.Fatal("the check did not go on with the other viewer's credential")
	}
	e.set("t2")
	tick <- time.Now()
	if !<-second {
		t.Error("the other viewer was not woken by the change")
	}
}
