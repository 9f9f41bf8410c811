package upload

import (
	"sync"

	"github.com/tbhub/tbhub/uploader/internal/migrate"
	"github.com/tbhub/tbhub/uploader/internal/state"
)

// segmentBytes is how much request payload a segment gathers before it is sealed.
const segmentBytes = 16 << 20

// maxQueuedBytes bounds request and blob bytes held in memory, waiting or in flight.
const maxQueuedBytes = 96 << 20

// ledger is the record of what the server has acknowledged, and the only writer of
// the state file.
//
// Requests join segments in the order they are submitted. A segment is a stretch
// of records: once sealed, it carries the read position reached in each file it
// covers, and the series those records introduced. When every request of a sealed
// segment and of all segments before it has been acknowledged, its positions and
// series go into the state, which is saved. The caller must seal a segment only
// once every point read before the positions it notes has joined it or an earlier
// one (docs/delivery.md).
type ledger struct {
	st    *state.State
	save  func(*state.State) error // nil: a dry run
	crash func(CrashPoint)
	// failed reports a failure of sending, after which nothing more is
	// committed (the next run resends); fail reports a failure to save.
	failed func() bool
	fail   func(error)
	// segmentBytes is the payload at which a segment is full (segmentBytes; tests
	// make it small to get many segments).
	segmentBytes int

	mu       sync.Mutex
	space    *sync.Cond // signalled when a request is acknowledged or sending fails
	segments []*segment // unsealed or uncommitted, oldest first
	cur      *segment   // the segment requests join; nil until one does
	queued   int64      // bytes held by submitted, unacknowledged requests
	// inflight counts, per series, submitted requests holding its points that the
	// server has not acknowledged yet.
	inflight map[*migrate.Series]int
}

// segment is a stretch of records whose requests are committed together.
type segment struct {
	pending int                                 // requests not yet acknowledged
	sealed  bool                                // no more requests will join
	bytes   int                                 // request payload gathered
	offsets map[fileKey]int64                   // end offsets reached in this segment
	stopped map[fileKey]string                  // files that cannot be read further
	skipped map[fileKey]int64                   // damaged records passed over before the offsets
	series  map[string]map[string]*state.Series // series first seen in this segment
}

type fileKey struct{ run, file string }

func newLedger(st *state.State, save func(*state.State) error, crash func(CrashPoint), failed func() bool, fail func(error)) *ledger {
	l := &ledger{st: st, save: save, crash: crash, failed: failed, fail: fail, segmentBytes: segmentBytes, inflight: map[*migrate.Series]int{}}
	l.space = sync.NewCond(&l.mu)
	return l
}

func (l *ledger) curLocked() *segment {
	if l.cur == nil {
		l.cur = &segment{offsets: map[fileKey]int64{}, stopped: map[fileKey]string{}, skipped: map[fileKey]int64{}, series: map[string]map[string]*state.Series{}}
		l.segments = append(l.segments, l.cur)
	}
	return l.cur
}

// join adds a request of size bytes holding points of series to the current
// segment, first waiting while too much is queued. It returns the segment, and
// full when the segment has gathered enough to be sealed; nil once sending failed.
func (l *ledger) join(size int, series []*migrate.Series) (seg *segment, full bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for l.queued > maxQueuedBytes && !l.failed() {
		l.space.Wait()
	}
	if l.failed() {
		return nil, false
	}
	seg = l.curLocked()
	seg.pending++
	seg.bytes += size
	l.queued += int64(size)
	for _, s := range series {
		l.inflight[s]++
	}
	return seg, seg.bytes >= l.segmentBytes
}

// done records the end of a request that joined seg: acknowledged (ok), or failed
// for good. An acknowledgement commits what it completes.
func (l *ledger) done(seg *segment, size int, series []*migrate.Series, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	seg.pending--
	l.queued -= int64(size)
	for _, s := range series {
		l.inflight[s]--
	}
	if ok {
		l.commitLocked()
	}
	l.space.Broadcast()
}

// reached notes that reading key reached offset, in the current segment.
func (l *ledger) reached(key fileKey, offset int64) { l.reachedSkipping(key, offset, 0) }

// reachedSkipping notes that reading key reached offset, passing over
// skipped damaged records since the position noted before, in the current
// segment: the state gets both at once, so that a resumed upload, which
// reads on from the offset, counts each skipped record once.
func (l *ledger) reachedSkipping(key fileKey, offset, skipped int64) {
	l.mu.Lock()
	s := l.curLocked()
	s.offsets[key] = offset
	if skipped > 0 {
		s.skipped[key] += skipped
	}
	l.mu.Unlock()
}

// stop notes that key cannot be read past offset, for the reason why.
func (l *ledger) stop(key fileKey, offset int64, why string) { l.stopSkipping(key, offset, why, 0) }

// stopSkipping is stop after skipped damaged records (reachedSkipping).
func (l *ledger) stopSkipping(key fileKey, offset int64, why string, skipped int64) {
	l.mu.Lock()
	s := l.curLocked()
	s.offsets[key] = offset
	s.stopped[key] = why
	if skipped > 0 {
		s.skipped[key] += skipped
	}
	l.mu.Unlock()
}

// seal closes the current segment to new requests, if it is seg (or seg is
// nil), and commits what that completes.
func (l *ledger) seal(seg *segment) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cur != nil && (seg == nil || seg == l.cur) {
		l.cur.sealed = true
		l.cur = nil
	}
	l.commitLocked()
}

// newSeries records a series first seen in the current segment, unless the state
// knows it already.
func (l *ledger) newSeries(run, tag string, s *state.Series) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if r := l.st.Runs[run]; r != nil && r.Series[tag] != nil {
		return
	}
	seg := l.curLocked()
	if seg.series[run] == nil {
		seg.series[run] = map[string]*state.Series{}
	}
	seg.series[run][tag] = s
}

// readOffset is where reading key resumes: past what this process's uncommitted
// segments read, or at the committed offset.
func (l *ledger) readOffset(key fileKey) state.File {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := len(l.segments) - 1; i >= 0; i-- {
		s := l.segments[i]
		if why, ok := s.stopped[key]; ok {
			return state.File{Offset: s.offsets[key], Stopped: why}
		}
		if off, ok := s.offsets[key]; ok {
			return state.File{Offset: off}
		}
	}
	if r := l.st.Runs[key.run]; r != nil {
		if f := r.Files[key.file]; f != nil {
			return *f
		}
	}
	return state.File{}
}

// waitSeries waits until no submitted request holding points of s is
// unacknowledged (or sending failed).
func (l *ledger) waitSeries(s *migrate.Series) {
	l.mu.Lock()
	for l.inflight[s] > 0 && !l.failed() {
		l.space.Wait()
	}
	l.mu.Unlock()
}

// pending counts submitted requests not yet acknowledged.
func (l *ledger) pending() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, s := range l.segments {
		n += s.pending
	}
	return n
}

// commit writes every fully acknowledged leading segment to the state.
func (l *ledger) commit() {
	l.mu.Lock()
	l.commitLocked()
	l.mu.Unlock()
}

func (l *ledger) commitLocked() {
	if l.failed() {
		return // after a failure nothing more is committed: the next run resends
	}
	changed := false
	for len(l.segments) > 0 {
		s := l.segments[0]
		if !s.sealed || s.pending > 0 {
			break
		}
		for k, off := range s.offsets {
			f := l.st.Run(k.run).Files[k.file]
			if f == nil {
				f = &state.File{}
				l.st.Run(k.run).Files[k.file] = f
			}
			f.Offset = off
			f.Skipped += s.skipped[k]
			if why, ok := s.stopped[k]; ok {
				f.Stopped = why
			}
		}
		for run, tags := range s.series {
			for tag, ser := range tags {
				l.st.Run(run).Series[tag] = ser
			}
		}
		l.segments = l.segments[1:]
		changed = true
	}
	if changed && l.save != nil {
		l.crash(CrashStateSaving)
		if err := l.save(l.st); err != nil {
			l.fail(err)
			return
		}
		l.crash(CrashStateSaved)
	}
}
