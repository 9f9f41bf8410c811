// Package background runs the write service's background jobs (the purge
// of deleted experiments, the sweep of abandoned blobs, ...) on one server
// process at a time, however many run: each job has a lease in the store
// (store.Sweeper.TakeLease), and a process works on a job only while it
// holds the job's lease. The holder renews the lease each time it works, a
// batch at a time; when it stops, gracefully (it releases its leases) or
// not (they expire), another process takes over.
package background

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"
)

// Leases is what a Runner needs of the store.
type Leases interface {
	TakeLease(ctx context.Context, name, holder string, now time.Time, ttl time.Duration) (bool, error)
	ReleaseLease(ctx context.Context, name, holder string) error
}

// Job is one kind of background work, done a batch at a time.
type Job struct {
	// Name names the job and its lease; unique among a Runner's jobs.
	Name string
	// Run does one batch and returns how many items it handled. It must
	// be safe to stop at any point and resume on another process.
	Run func(ctx context.Context) (int, error)
}

// Config configures a Runner.
type Config struct {
	// Holder names this process among the lease holders; unique per
	// process (NewHolder).
	Holder string
	// LeaseTTL is how long a lease lasts without renewal: how long the
	// jobs of a process that stopped without releasing wait. Longer than
	// the interval between ticks, or the lease lapses between them. Each
	// batch is cut off after LeaseTTL, so it never runs on past its lease.
	LeaseTTL time.Duration
	// Now is the clock the leases are kept by; time.Now if nil.
	Now    func() time.Time
	Logger *slog.Logger
}

// NewHolder returns a name for this process as a lease holder: its host
// name (a Cloud Run instance's) and random bits, so two processes on one
// host differ.
func NewHolder() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "process"
	}
	return host + "-" + rand.Text()[:10]
}

// Runner runs jobs while it holds their leases.
type Runner struct {
	leases Leases
	cfg    Config
	jobs   []Job
	held   map[string]bool // jobs whose lease this runner took last
}

// New returns a Runner of jobs over leases.
func New(leases Leases, cfg Config, jobs ...Job) (*Runner, error) {
	if cfg.Holder == "" {
		return nil, errors.New("background.New: no holder name")
	}
	if cfg.LeaseTTL <= 0 {
		return nil, fmt.Errorf("background.New: lease TTL %v is not positive", cfg.LeaseTTL)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	seen := map[string]bool{}
	for _, j := range jobs {
		if j.Name == "" || seen[j.Name] {
			return nil, fmt.Errorf("background.New: job name %q empty or repeated", j.Name)
		}
		seen[j.Name] = true
	}
	return &Runner{leases: leases, cfg: cfg, jobs: jobs, held: map[string]bool{}}, nil
}

// Tick takes or renews each job's lease and runs one batch of every job
// whose lease this process holds, in order. It returns the names of the
// jobs it ran. Failures are logged; the next tick tries again. Tick must
// not be called concurrently on one Runner.
func (r *Runner) Tick(ctx context.Context) []string {
	var ran []string
	for _, j := range r.jobs {
		held, err := r.leases.TakeLease(ctx, j.Name, r.cfg.Holder, r.cfg.Now(), r.cfg.LeaseTTL)
		if err != nil {
			r.warn(ctx, j.Name, "taking its lease", err)
			continue
		}
		if held != r.held[j.Name] {
			r.cfg.Logger.InfoContext(ctx, "background job lease changed", "job", j.Name, "holder", r.cfg.Holder, "held", held)
		}
		r.held[j.Name] = held
		if !held {
			continue
		}
		ran = append(ran, j.Name)
		batchCtx, cancel := context.WithTimeout(ctx, r.cfg.LeaseTTL)
		n, err := j.Run(batchCtx)
		cancel()
		if err != nil {
			r.warn(ctx, j.Name, "its batch", err)
		} else if n > 0 {
			r.cfg.Logger.InfoContext(ctx, "background job done", "job", j.Name, "count", n)
		}
	}
	return ran
}

// Loop ticks every interval until ctx is done, then releases the leases
// this process holds, so that another takes the jobs over at once.
func (r *Runner) Loop(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			releaseCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
			r.Release(releaseCtx)
			cancel()
			return
		case <-t.C:
		}
		r.Tick(ctx)
	}
}

// releaseTimeout bounds the release of the leases when the loop stops: a
// store that does not answer leaves them to expire.
const releaseTimeout = 10 * time.Second

// Release gives up the leases this runner holds.
func (r *Runner) Release(ctx context.Context) {
	for _, j := range r.jobs {
		if !r.held[j.Name] {
			continue
		}
		if err := r.leases.ReleaseLease(ctx, j.Name, r.cfg.Holder); err != nil {
			r.warn(ctx, j.Name, "releasing its lease", err)
			continue
		}
		r.held[j.Name] = false
	}
}

func (r *Runner) warn(ctx context.Context, job, what string, err error) {
	if ctx.Err() == nil {
		r.cfg.Logger.WarnContext(ctx, "background job failed", "job", job, "step", what, "error", err.Error())
	}
}
