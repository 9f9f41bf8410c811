// Package live holds the long polls of pages following an experiment (or a
// comparison) that is still receiving data. A page asks "tell me when this
// changes"; the request is held until it does. However many pages follow
// one experiment, one check per interval reads its version (its update
// time) from the services, with the credential of one of the pages
// waiting, and wakes them all when it moves: 100 viewers cost one read per
// interval, not 100. Each page then reads the new answer with its own
// credential, so nothing read for one viewer reaches another.
package live

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/tbhub/tbhub/services/serverkit/config"
)

// Limits bound the long polls.
type Limits struct {
	// Check is how often the shared check reads a followed experiment's
	// version while pages wait on it.
	Check time.Duration
	// Wait is how long a long poll is held at most; it is then answered as
	// it stands and the page asks again.
	Wait time.Duration
	// PerClient is how many long polls one client (a credential, or an
	// address when signed out) may hold at once; more are answered 429.
	PerClient int
}

// DefaultLimits: a check every second (so a page rereads at most once a
// second however fast data arrives), a poll held 25 s at most, 128 per
// client (viewers behind one NAT share an address).
func DefaultLimits() Limits {
	return Limits{Check: time.Second, Wait: 25 * time.Second, PerClient: 128}
}

// OrDefaults is l with DefaultLimits' value for each field that is zero.
func (l Limits) OrDefaults() Limits {
	d := DefaultLimits()
	if l.Check == 0 {
		l.Check = d.Check
	}
	if l.Wait == 0 {
		l.Wait = d.Wait
	}
	if l.PerClient == 0 {
		l.PerClient = d.PerClient
	}
	return l
}

// Validate refuses a negative limit.
func (l Limits) Validate() error {
	switch {
	case l.Check < 0:
		return fmt.Errorf("--live-check-interval=%s: must be positive", l.Check)
	case l.Wait < 0:
		return fmt.Errorf("--live-max-wait=%s: must be positive", l.Wait)
	case l.PerClient < 0:
		return fmt.Errorf("--live-max-waits-per-client=%d: must be positive", l.PerClient)
	}
	return nil
}

// Settings describes the limits' flags for an assembly's flag set, defaulting to l's values.
func (l *Limits) Settings() []config.Setting {
	return []config.Setting{
		{Name: "live-check-interval", Usage: "how often one shared check per followed experiment reads whether it changed, for all the pages waiting on it", Value: &l.Check},
		{Name: "live-max-wait", Usage: "how long a page's long poll for changes is held at most before it is answered unchanged", Value: &l.Wait},
		{Name: "live-max-waits-per-client", Usage: "long polls for changes one credential (or address, signed out) may hold at once; more are answered 429 and the page polls", Value: &l.PerClient},
	}
}

// ErrTooMany is Wait's answer past Limits.PerClient.
var ErrTooMany = errors.New("too many pages following experiments at once")

// Version reads the version of what is followed (its update time) with
// one caller's credential.
type Version func(ctx context.Context) (string, error)

// Hub holds the waits. Create it with NewHub.
type Hub struct {
	limits Limits
	// ticks makes the checks' clock; time.NewTicker's outside tests.
	ticks func(d time.Duration) (<-chan time.Time, func())

	mu      sync.Mutex
	closed  bool // Close was called: nothing is held
	topics  map[string]*topic
	clients map[string]int // long polls held, by client
}

// topic is one followed thing (an experiment, a comparison) and its waiters.
type topic struct {
	version string
	waiters []*waiter // in the order they came; the first's read is the check's
}

type waiter struct {
	read Version
	woke chan struct{} // closed when the version moved or its read failed
}

// NewHub returns a Hub with l (defaults for zero fields).
func NewHub(l Limits) *Hub {
	return &Hub{
		limits:  l.OrDefaults(),
		topics:  map[string]*topic{},
		clients: map[string]int{},
		ticks: func(d time.Duration) (<-chan time.Time, func()) {
			t := time.NewTicker(d)
			return t.C, t.Stop
		},
	}
}

// Wait holds until key's version moves past current (the caller's own
// read, a moment ago), Limits.Wait passes or ctx ends, and says whether
// it moved (or the check could not tell: the caller reads again and
// sees). read reads the version with the caller's credential; the shared
// check uses the read of the longest waiting caller. client names the
// caller for Limits.PerClient.
func (h *Hub) Wait(ctx context.Context, key, client, current string, read Version) (bool, error) {
	w := &waiter{read: read, woke: make(chan struct{})}
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return false, nil
	}
	if h.clients[client] >= h.limits.PerClient {
		h.mu.Unlock()
		return false, ErrTooMany
	}
	h.clients[client]++
	t := h.topics[key]
	if t == nil {
		// The first caller's version is the check's starting point: a
		// change after its read is not missed.
		t = &topic{version: current}
		h.topics[key] = t
		go h.check(key, t)
	}
	t.waiters = append(t.waiters, w)
	h.mu.Unlock()

	timer := time.NewTimer(h.limits.Wait)
	defer timer.Stop()
	var moved bool
	select {
	case <-w.woke:
		moved = true
	case <-timer.C:
	case <-ctx.Done():
	}
	h.mu.Lock()
	t.remove(w)
	if h.clients[client]--; h.clients[client] == 0 {
		delete(h.clients, client)
	}
	h.mu.Unlock()
	return moved, nil
}

// Close wakes every waiter and holds no new one (Wait answers at once):
// a stopping process's drain then waits for no long poll, and its pages,
// answered, ask again (at another instance).
func (h *Hub) Close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	for _, t := range h.topics {
		for _, w := range t.waiters {
			close(w.woke)
		}
		t.waiters = nil
	}
}

// Waiting is how many callers wait on key.
func (h *Hub) Waiting(key string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	if t := h.topics[key]; t != nil {
		return len(t.waiters)
	}
	return 0
}

// check reads key's version every Limits.Check while anyone waits on it,
// and wakes every waiter when it moved. A read that fails wakes only the
// waiter whose credential it used (its page reads again and is told why),
// and the next check uses the next waiter's.
func (h *Hub) check(key string, t *topic) {
	tick, stop := h.ticks(h.limits.Check)
	defer stop()
	for range tick {
		h.mu.Lock()
		if len(t.waiters) == 0 {
			delete(h.topics, key)
			h.mu.Unlock()
			return
		}
		w := t.waiters[0]
		h.mu.Unlock()

		ctx, cancel := context.WithTimeout(context.Background(), h.limits.Check+10*time.Second)
		v, err := w.read(ctx)
		cancel()

		h.mu.Lock()
		switch {
		case err != nil:
			if t.remove(w) {
				close(w.woke)
			}
		case v != t.version:
			t.version = v
			for _, w := range t.waiters {
				close(w.woke)
			}
			t.waiters = nil
		}
		h.mu.Unlock()
	}
}

// remove takes w out of the waiters, saying whether it was there.
func (t *topic) remove(w *waiter) bool {
	for i, x := range t.waiters {
		if x == w {
			t.waiters = append(t.waiters[:i], t.waiters[i+1:]...)
			return true
		}
	}
	return false
}
