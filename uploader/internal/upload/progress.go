package upload

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Progress counts what an upload did and shows it: a live line on a terminal, plain
// timestamped lines otherwise. Warnings always get a line of their own.
type Progress struct {
	ExperimentID string
	Out          io.Writer // where progress and warnings go (stderr); nil: nowhere
	TTY          bool      // redraw one live line instead of printing lines
	Quiet        bool      // warnings only
	Verbose      bool      // also report skipped series
	Interval     time.Duration

	Records, Scalars, Tensors, BlobSequences, Blobs, BlobBytes, Bytes   atomic.Int64
	Retries, Skipped, Invalid, TooLarge, Rejected, Unreadable, Warnings atomic.Int64

	runs     atomic.Int64
	activity atomic.Value
	mu       sync.Mutex // serializes output
	live     bool       // a live line is on screen
	start    time.Time
	stop     chan struct{}
	done     chan struct{}
}

func (p *Progress) setActivity(s string) { p.activity.Store(s) }
func (p *Progress) setRuns(n int)        { p.runs.Store(int64(n)) }

// Start begins periodic reporting.
func (p *Progress) Start() {
	p.start = time.Now()
	if p.Out == nil || p.Quiet {
		return
	}
	if p.Interval <= 0 {
		p.Interval = 10 * time.Second
		if p.TTY {
			p.Interval = 250 * time.Millisecond
		}
	}
	p.stop, p.done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(p.done)
		t := time.NewTicker(p.Interval)
		defer t.Stop()
		for {
			select {
			case <-p.stop:
				return
			case <-t.C:
				p.report()
			}
		}
	}()
}

// Stop ends periodic reporting, leaving a final line.
func (p *Progress) Stop() {
	if p.stop != nil {
		close(p.stop)
		<-p.done
		p.stop = nil
	}
	if p.Out != nil && !p.Quiet {
		p.report()
		p.mu.Lock()
		if p.live {
			fmt.Fprintln(p.Out)
			p.live = false
		}
		p.mu.Unlock()
	}
}

func (p *Progress) report() {
	line := p.summary()
	if a, _ := p.activity.Load().(string); a != "" {
		line += " · " + a
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.TTY {
		fmt.Fprintf(p.Out, "\r\033[K%s", line)
		p.live = true
		return
	}
	fmt.Fprintf(p.Out, "%s %s\n", time.Now().Format(time.RFC3339), line)
}

// summary is one line of counts and rate.
func (p *Progress) summary() string {
	elapsed := time.Since(p.start).Seconds()
	points := p.Scalars.Load() + p.Tensors.Load()
	rate := ""
	if elapsed > 0.5 {
		rate = fmt.Sprintf(" · %s points/s, %s/s", count(int64(float64(points)/elapsed)), size(int64(float64(p.Bytes.Load())/elapsed)))
	}
	s := fmt.Sprintf("%d runs · %s scalars · %s tensors · %s blobs (%s) · %s sent%s",
		p.runs.Load(), count(p.Scalars.Load()), count(p.Tensors.Load()), count(p.Blobs.Load()), size(p.BlobBytes.Load()), size(p.Bytes.Load()), rate)
	var extra []string
	if n := p.Retries.Load(); n > 0 {
		extra = append(extra, fmt.Sprintf("%d retries", n))
	}
	if n := p.Warnings.Load(); n > 0 {
		extra = append(extra, fmt.Sprintf("%d warnings", n))
	}
	if len(extra) > 0 {
		s += " · " + strings.Join(extra, ", ")
	}
	return s
}

// warn prints a warning on a line of its own.
func (p *Progress) warn(format string, args ...any) {
	p.Warnings.Add(1)
	if p.Out == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clearLiveLocked()
	msg := fmt.Sprintf(format, args...)
	if p.TTY {
		fmt.Fprintf(p.Out, "warning: %s\n", msg)
	} else {
		fmt.Fprintf(p.Out, "%s warning: %s\n", time.Now().Format(time.RFC3339), msg)
	}
}

// Printf prints an informational line (not in quiet mode).
func (p *Progress) Printf(format string, args ...any) {
	if p.Out == nil || p.Quiet {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clearLiveLocked()
	fmt.Fprintf(p.Out, format+"\n", args...)
}

// clearLiveLocked erases the live line so that a message gets a line of its own.
func (p *Progress) clearLiveLocked() {
	if p.live {
		fmt.Fprint(p.Out, "\r\033[K")
		p.live = false
	}
}

func count(n int64) string {
	switch {
	case n >= 10_000_000:
		return fmt.Sprintf("%.1fM", float64(n)/1e6)
	case n >= 10_000:
		return fmt.Sprintf("%.1fk", float64(n)/1e3)
	}
	return fmt.Sprint(n)
}

func size(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
