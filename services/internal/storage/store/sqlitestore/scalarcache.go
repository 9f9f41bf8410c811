package sqlitestore

import (
	"container/list"
	"math"
	"slices"
	"sync"

	"github.com/tbhub/tbhub/services/internal/storage/store"
)

// scalarCache keeps the answers of recent downsampled and bucketed scalar
// reads, series by series, so that a chart read again (a page reloaded, a
// link opened by many people, every card of a big experiment) costs no
// database reads. Reading one card of 100 runs × 10,000 steps at about 450
// points per run takes tens of milliseconds of SQLite row stepping; a hit
// copies 45,000 points. A bucketed card of runs of a few thousand points
// decodes every point (no summary level is fine enough): about 45 ms of
// CPU for 100 runs of 2,500 points, against a copy of its 100,000.
//
// An entry is valid while its experiment has had no scalar write committed
// by this process since the read began (gen), and while its series' facts
// (point count, max step, max wall time) are those the read saw, which
// catches appends by another process on the same file. Full reads
// (downloads) stream and are never cached.
type scalarCache struct {
	maxPoints int

	mu      sync.Mutex
	gens    map[string]uint64 // experiment → scalar writes committed
	entries map[scalarKey]*list.Element
	lru     list.List // of *scalarEntry, most recently used first
	points  int
}

// scalarCacheMaxPoints bounds what the cache holds: 2M points, about 48 MB.
const scalarCacheMaxPoints = 2_000_000

// scalarKey is one series read with one query window and k, or buckets.
type scalarKey struct {
	eid              string
	series           int64
	k                int64
	buckets          int
	minStep, maxStep int64
	maxWall          uint64 // bits of the bound
	bounds           uint8  // which of min step, max step, max wall time are set
}

type scalarEntry struct {
	key    scalarKey
	gen    uint64
	facts  store.SeriesSummary // PointCount, MaxStep, MaxWallTime as read
	points []store.ScalarPoint
}

func newScalarCache(maxPoints int) *scalarCache {
	return &scalarCache{maxPoints: maxPoints, gens: map[string]uint64{}, entries: map[scalarKey]*list.Element{}}
}

func newScalarKey(eid string, si *seriesInfo, q *store.Query) scalarKey {
	k := scalarKey{eid: eid, series: si.id, k: q.MaxPoints, buckets: q.Buckets}
	if q.MinStep != nil {
		k.minStep, k.bounds = *q.MinStep, k.bounds|1
	}
	if q.MaxStep != nil {
		k.maxStep, k.bounds = *q.MaxStep, k.bounds|2
	}
	if q.MaxWallTime != nil {
		k.maxWall, k.bounds = math.Float64bits(*q.MaxWallTime), k.bounds|4
	}
	return k
}

// gen returns the experiment's write generation; a read takes it before
// its snapshot begins.
func (c *scalarCache) gen(eid string) uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gens[eid]
}

// wrote records that a scalar write to eid has committed (or failed):
// entries read before it are stale.
func (c *scalarCache) wrote(eid string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gens[eid]++
}

func sameFacts(a, b *store.SeriesSummary) bool {
	return a.PointCount == b.PointCount && a.MaxStep == b.MaxStep &&
		math.Float64bits(a.MaxWallTime) == math.Float64bits(b.MaxWallTime)
}

// get returns a copy of the points cached for key, if still valid for a
// read that took gen and sees the series as si.
func (c *scalarCache) get(key scalarKey, gen uint64, si *seriesInfo) ([]store.ScalarPoint, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el := c.entries[key]
	if el == nil {
		return nil, false
	}
	e := el.Value.(*scalarEntry)
	if e.gen != gen || gen != c.gens[key.eid] || !sameFacts(&e.facts, &si.SeriesSummary) {
		c.remove(el)
		return nil, false
	}
	c.lru.MoveToFront(el)
	return slices.Clone(e.points), true
}

// put keeps a copy of points read under gen, unless a write has committed
// since (the answer may already be stale).
func (c *scalarCache) put(key scalarKey, gen uint64, si *seriesInfo, points []store.ScalarPoint) {
	if len(points) > c.maxPoints {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen != c.gens[key.eid] {
		return
	}
	if el := c.entries[key]; el != nil {
		c.remove(el)
	}
	for c.points+len(points) > c.maxPoints {
		c.remove(c.lru.Back())
	}
	e := &scalarEntry{key: key, gen: gen, facts: si.SeriesSummary, points: slices.Clone(points)}
	c.entries[key] = c.lru.PushFront(e)
	c.points += len(points)
}

func (c *scalarCache) remove(el *list.Element) {
	e := c.lru.Remove(el).(*scalarEntry)
	delete(c.entries, e.key)
	c.points -= len(e.points)
}
