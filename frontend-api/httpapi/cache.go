package httpapi

import (
	"bytes"
	"context"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/tbhub/tbhub/frontend-api/httpapi/internal/compare"
	"github.com/tbhub/tbhub/frontend-api/httpapi/internal/route"
	"google.golang.org/grpc/metadata"
)

// responseCache keeps the answers of recent GET requests for a short time,
// keyed by the caller's credential and the request URI, so that a burst
// of identical requests (dashboards polling, many tabs, a popular public
// experiment read anonymously) costs one call to the services. It is safe
// to lose and never shares an answer between credentials; what it can do
// is answer with data up to one TTL old, and keep serving a caller whose
// access was withdrawn for at most one TTL. A change made through this
// handler (package account's management routes) drops what it made stale
// at once, for every credential (mutation); changes made elsewhere (another
// replica, tbup, the write service directly) are seen within one TTL
// (docs/operations.md).
//
// Identical requests that arrive while the first is being answered wait
// for it and are then answered from the cache (lead): a crowd of anonymous
// readers of one public experiment's 20,000-run list costs one listing per
// TTL, not one per reader (issue 20 #1), and identical requests whose
// answer cannot be kept are answered one at a time.
type responseCache struct {
	ttl      time.Duration
	maxBytes int // per entry
	maxTotal int // all entries

	mu      sync.Mutex
	entries map[string]*cachedResponse
	total   int
	// inflight holds, per key being answered, a channel closed when the
	// answer is done; waiting counts the requests waiting on one.
	inflight map[string]chan struct{}
	waiting  int
}

type cachedResponse struct {
	eid         string // the experiment the answer is about; "" for lists and the caller's own
	expires     time.Time
	contentType string
	cacheCtl    string
	readAt      string // readAtHeader of the answer kept
	body        []byte
	gzipped     []byte // body compressed once, for clients that accept gzip; nil if not worth it
}

// maxBlobEntryBytes bounds the answers kept that are not JSON (blobs).
const maxBlobEntryBytes = 256 << 10

// The largest answer kept, 24 MiB, holds the longest run list the default
// runs per experiment limit allows (20,000 names of 1 KiB); all entries
// together, compressed copies included, take at most 96 MiB.
func newResponseCache(ttl time.Duration) *responseCache {
	return &responseCache{ttl: ttl, maxBytes: 24 << 20, maxTotal: 96 << 20,
		entries: map[string]*cachedResponse{}, inflight: map[string]chan struct{}{}}
}

// lead returns once no other request is answering key, with the caller
// registered as the one answering it; release must then be called. It
// returns ctx's error if ctx ends first.
func (c *responseCache) lead(ctx context.Context, key string) (release func(), err error) {
	for {
		c.mu.Lock()
		busy, ok := c.inflight[key]
		if !ok {
			done := make(chan struct{})
			c.inflight[key] = done
			c.mu.Unlock()
			return func() {
				c.mu.Lock()
				delete(c.inflight, key)
				c.mu.Unlock()
				close(done)
			}, nil
		}
		c.waiting++
		c.mu.Unlock()
		select {
		case <-busy:
		case <-ctx.Done():
		}
		c.mu.Lock()
		c.waiting--
		c.mu.Unlock()
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
}

func (c *responseCache) get(key string, now time.Time) *cachedResponse {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.entries[key]
	if e == nil || now.After(e.expires) {
		return nil
	}
	return e
}

// size is what an entry takes: its body and its compressed copy.
func (e *cachedResponse) size() int { return len(e.body) + len(e.gzipped) }

func (c *responseCache) put(key string, e *cachedResponse, now time.Time) {
	if len(e.body) > c.maxBytes {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.total+e.size() > c.maxTotal {
		// Drop what expired; if that is not enough, start over: a cache
		// this short-lived refills within one TTL.
		for k, old := range c.entries {
			if now.After(old.expires) {
				c.total -= old.size()
				delete(c.entries, k)
			}
		}
		if c.total+e.size() > c.maxTotal {
			c.entries, c.total = map[string]*cachedResponse{}, 0
		}
	}
	if old := c.entries[key]; old != nil {
		c.total -= old.size()
	}
	c.entries[key] = e
	c.total += e.size()
}

// recorder passes a response through and keeps a copy of a 200 answer
// small enough to cache.
type recorder struct {
	http.ResponseWriter
	status int
	buf    bytes.Buffer
	over   bool
	limit  int
}

func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(p []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	if !r.over {
		limit := r.limit
		if !strings.HasPrefix(r.Header().Get("Content-Type"), "application/json") {
			// Images, audio and other blobs are kept only when small:
			// each request in flight holds its copy until it ends.
			limit = min(limit, maxBlobEntryBytes)
		}
		if r.buf.Len()+len(p) > limit {
			r.over = true
			r.buf = bytes.Buffer{}
		} else {
			r.buf.Write(p)
		}
	}
	return r.ResponseWriter.Write(p)
}

func (r *recorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// entry returns what to cache, about experiment eid (or none), or nil.
func (r *recorder) entry(eid string, expires time.Time) *cachedResponse {
	if r.status != http.StatusOK || r.over {
		return nil
	}
	h := r.Header()
	if h.Get("Content-Disposition") != "" {
		return nil // downloads are large and rare
	}
	e := &cachedResponse{eid: eid, expires: expires, contentType: h.Get("Content-Type"), cacheCtl: h.Get("Cache-Control"), readAt: h.Get(readAtHeader), body: bytes.Clone(r.buf.Bytes())}
	e.gzipped = route.Compressed(e.contentType, e.body)
	return e
}

func (e *cachedResponse) write(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Type", e.contentType)
	h.Set("Cache-Control", e.cacheCtl)
	h.Set(readAtHeader, e.readAt)
	h.Set("X-Content-Type-Options", "nosniff")
	if e.gzipped != nil && route.WriteGzipped(w, e.gzipped) {
		return
	}
	if len(e.body) < route.MinGzipBytes {
		route.SkipGzip(w)
	}
	w.Write(e.body)
}

// stale is what a mutation makes stale in the cache, beyond the caller's
// own answers.
type stale int

const (
	// staleCaller: only the caller's answers (a token made: its list).
	staleCaller stale = iota
	// staleExperiment: every credential's answers about the experiment
	// the route names, and every list (renamed, made private, deleted,
	// access granted or revoked).
	staleExperiment
	// staleAll: every answer. A revoked token's answers are cached under
	// its secret, which the revocation (by token ID) does not name.
	staleAll
)

// mutation wraps a route that changes something: after it succeeds, the
// caller's cached GET answers, and those of others that what says the
// change made stale, are dropped, so that the next read (the page
// re-listing experiments, a reader of an experiment just made private)
// sees the change at once.
func (h *Handler) mutation(what stale, fn route.Func) route.Func {
	return func(w http.ResponseWriter, r *route.Request) error {
		if err := fn(w, r); err != nil {
			return err
		}
		if h.cache == nil {
			return nil
		}
		prefix := "\x00" // the anonymous caller's
		if md, ok := metadata.FromOutgoingContext(r.Ctx); ok {
			if v := md.Get("authorization"); len(v) > 0 {
				prefix = v[len(v)-1] + "\x00"
			}
		}
		h.cache.drop(func(key string, e *cachedResponse) bool {
			switch {
			case what == staleAll, strings.HasPrefix(key, prefix):
				return true
			case what == staleExperiment:
				// A comparison's answers are about each of its experiments.
				return e.eid == "" || slices.Contains(strings.Split(e.eid, compare.Sep), r.EID)
			}
			return false
		})
		return nil
	}
}

// drop forgets every entry for which stale is true.
func (c *responseCache) drop(stale func(key string, e *cachedResponse) bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, e := range c.entries {
		if stale(k, e) {
			c.total -= e.size()
			delete(c.entries, k)
		}
	}
}
