// Package diskspace keeps a reserve of free space on the file system of
// the embedded store's data folder. Below the reserve, writes that add
// data (new experiments, points, runs, blob sequences, blob objects) fail
// with store.ErrDiskFull before they touch the disk, so that the database
// can still commit what frees space (deletes, purges) and the small
// writes that keep the server usable (sign-in, tokens, the rows of blobs
// already written); /readyz reports not ready meanwhile. Writes resume by
// themselves once space is freed.
//
// The free space is asked of the file system (statfs) at most once per
// Monitor's MaxAge, not once per write.
package diskspace

import (
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/tbhub/tbhub/services/internal/storage/store"

	"github.com/tbhub/tbhub/services/serverkit/config"
)

// Reserve is the free space writes must leave: both MinFreeBytes and
// MinFreePercent of the file system's size. Zero turns a bound off.
type Reserve struct {
	MinFreeBytes   int64
	MinFreePercent float64
}

// DefaultReserve keeps 256 MiB and 1% of the file system free: room for
// SQLite to commit a purge (and its write-ahead log) on a full disk.
func DefaultReserve() Reserve { return Reserve{MinFreeBytes: 256 << 20, MinFreePercent: 1} }

// Settings describes --min-free-disk-bytes and --min-free-disk-percent
// for an assembly's flag set, defaulting to r's values.
func (r *Reserve) Settings() []config.Setting {
	return []config.Setting{
		{Name: "min-free-disk-bytes", Usage: "embedded store: writes that add data are refused (UNAVAILABLE, \"the server's disk is full\") and /readyz is not ready while the data folder's file system has less free space than this (0: no bound)", Value: &r.MinFreeBytes},
		{Name: "min-free-disk-percent", Usage: "embedded store: the same, as a percentage of the file system's size (0: no bound)", Value: &r.MinFreePercent},
	}
}

// Validate reports a reserve that cannot work.
func (r Reserve) Validate() error {
	if r.MinFreeBytes < 0 || r.MinFreePercent < 0 || r.MinFreePercent >= 100 {
		return fmt.Errorf("diskspace: the free space reserve needs --min-free-disk-bytes >= 0 and 0 <= --min-free-disk-percent < 100")
	}
	return nil
}

// Off reports whether r bounds nothing.
func (r Reserve) Off() bool { return r.MinFreeBytes == 0 && r.MinFreePercent == 0 }

// Usage is a file system's space, in bytes.
type Usage struct {
	Free  uint64 // available to the server's user
	Total uint64
}

// DefaultMaxAge is how long Monitor reuses a free-space answer by default.
const DefaultMaxAge = 2 * time.Second

// Options tunes a Monitor.
type Options struct {
	// Statfs reports the space of the file system holding a folder;
	// the operating system's (statfs(2)) if nil.
	Statfs func(dir string) (Usage, error)
	// MaxAge is how long an answer is reused; DefaultMaxAge if zero.
	MaxAge time.Duration
	// Now is the clock; time.Now if nil.
	Now func() time.Time
	// Logger is told when the free space falls below the reserve and when
	// it is back; nowhere if nil.
	Logger *slog.Logger
}

// Monitor checks a folder's file system against a reserve. It is safe for
// concurrent use.
type Monitor struct {
	dir     string
	reserve Reserve
	statfs  func(string) (Usage, error)
	maxAge  time.Duration
	now     func() time.Time
	logger  *slog.Logger

	mu      sync.Mutex
	checked time.Time // zero: never
	err     error
}

// NewMonitor returns a monitor of dir's file system against r.
func NewMonitor(dir string, r Reserve, opts Options) (*Monitor, error) {
	if err := r.Validate(); err != nil {
		return nil, err
	}
	m := &Monitor{dir: dir, reserve: r, statfs: opts.Statfs, maxAge: opts.MaxAge, now: opts.Now, logger: opts.Logger}
	if m.statfs == nil {
		m.statfs = Statfs
	}
	if m.maxAge == 0 {
		m.maxAge = DefaultMaxAge
	}
	if m.now == nil {
		m.now = time.Now
	}
	if m.logger == nil {
		m.logger = slog.New(slog.DiscardHandler)
	}
	return m, nil
}

// Check returns an error wrapping store.ErrDiskFull while the free space
// is below the reserve, nil otherwise; its text names no path, as /readyz
// shows it. A file system that cannot be asked (or an operating system
// without statfs) counts as having room: the writes themselves still fail
// with store.ErrDiskFull on a full disk.
func (m *Monitor) Check() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	if !m.checked.IsZero() && now.Sub(m.checked) < m.maxAge {
		return m.err
	}
	was := m.err
	m.checked, m.err = now, nil
	u, err := m.statfs(m.dir)
	if err != nil {
		return nil
	}
	need := uint64(m.reserve.MinFreeBytes)
	if p := uint64(m.reserve.MinFreePercent / 100 * float64(u.Total)); p > need {
		need = p
	}
	if u.Free < need {
		m.err = fmt.Errorf("%w: %d bytes free, below the reserve of %d", store.ErrDiskFull, u.Free, need)
	}
	switch {
	case was == nil && m.err != nil:
		m.logger.Error("the data folder's disk is below its free space reserve: writes that add data are refused and /readyz is not ready until space is freed",
			"folder", m.dir, "free_bytes", u.Free, "reserve_bytes", need)
	case was != nil && m.err == nil:
		m.logger.Info("the data folder's disk has room again: writes resume", "folder", m.dir, "free_bytes", u.Free)
	}
	return m.err
}
