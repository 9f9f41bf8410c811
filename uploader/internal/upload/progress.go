package upload

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"
)

// Progress counts what an upload did and shows it: a live line on a terminal, plain
// timestamped lines otherwise (a line equal to the last one is not repeated).
// Warnings always get a line of their own.
//
// Once the logdir is scanned, the line gives the bytes of event files read of
// those listed, the percentage, the reading rate and an ETA, and what an
// earlier run of the same upload had sent already (skipped on resume). A
// continuous upload that has sent everything says "up to date, watching" and
// when data last came, instead of a rate.
type Progress struct {
	ExperimentID string
	Out          io.Writer // where progress and warnings go (stderr); nil: nowhere
	TTY          bool      // redraw one live line instead of printing lines
	Quiet        bool      // warnings only
	Verbose      bool      // also report skipped series
	Interval     time.Duration
	// Now is the clock (time.Now if nil; tests set their own).
	Now func() time.Time
	// Width, if set, is the terminal's width now: the live line is cut to
	// fit it, since a line that wraps cannot be redrawn in place.
	Width func() int

	Records, Scalars, Tensors, BlobSequences, Blobs, BlobBytes, Bytes   atomic.Int64
	Retries, Skipped, Invalid, TooLarge, Rejected, Unreadable, Warnings atomic.Int64

	runs     atomic.Int64
	activity atomic.Value

	// Bytes of event files: listed at the last scan (sizeKnown is false
	// when some size is not known), read up to, and found already sent at
	// the first scan (resumed); scans counts the scans.
	listed, reached, resumed, scans atomic.Int64
	sizeKnown                       atomic.Bool
	// finished: a one-shot upload read and sent all it could; the only
	// time the percentage reads 100.
	finished atomic.Bool

	rmu      sync.Mutex // guards what follows: the rate and the idle state
	idle     bool       // everything sent; watching for more
	busyAt   time.Time  // when the current stretch of reading began
	busyBase int64      // done at busyAt
	lastData time.Time  // when new event data was last read; zero: never

	mu       sync.Mutex // serializes output
	live     bool       // a live line is on screen
	lastLine string     // the last line printed (not on a terminal)
	start    time.Time
	stop     chan struct{}
	done     chan struct{}
}

func (p *Progress) setActivity(s string) { p.activity.Store(s) }
func (p *Progress) setRuns(n int)        { p.runs.Store(int64(n)) }

func (p *Progress) now() time.Time {
	if p.Now != nil {
		return p.Now()
	}
	return time.Now()
}

// scanned records a scan of the logdir: total bytes of event files listed
// (known is false if some file's size is not), of which done were read
// already (by this process, or by an earlier one: the first scan's done is
// what resuming skipped).
func (p *Progress) scanned(total, done int64, known bool) {
	p.listed.Store(total)
	p.sizeKnown.Store(known)
	p.reached.Store(done)
	if p.scans.Add(1) == 1 {
		p.resumed.Store(done)
		p.rmu.Lock()
		p.busyBase = done
		p.rmu.Unlock()
	}
}

// read counts n more bytes of event files read. New data after being up to
// date starts a new stretch, whose rate the line shows.
func (p *Progress) read(n int64) {
	if n <= 0 {
		return
	}
	d := p.reached.Add(n)
	now := p.now()
	p.rmu.Lock()
	p.lastData = now
	if p.idle {
		p.idle = false
		p.busyAt, p.busyBase = now, d-n
	}
	p.rmu.Unlock()
}

// caughtUp records that everything read was sent: the upload now watches.
func (p *Progress) caughtUp() {
	p.rmu.Lock()
	p.idle = true
	p.rmu.Unlock()
}

// finish records that the upload is done: everything it could read was
// sent and acknowledged.
func (p *Progress) finish() { p.finished.Store(true) }

// allRead says whether every byte of the event files listed was read.
func (p *Progress) allRead() bool {
	return p.scans.Load() > 0 && p.sizeKnown.Load() && p.reached.Load() >= p.listed.Load()
}

// begin starts the clock of the first stretch of reading.
func (p *Progress) begin() {
	p.start = p.now()
	p.rmu.Lock()
	p.busyAt = p.start
	p.rmu.Unlock()
}

// Start begins periodic reporting.
func (p *Progress) Start() {
	p.begin()
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
				p.report(false)
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
		p.report(true)
		p.mu.Lock()
		if p.live {
			fmt.Fprintln(p.Out)
			p.live = false
		}
		p.mu.Unlock()
	}
}

// report shows the line: redrawn on a terminal, else printed with the time
// unless it says what the last one printed did. The final one has no rate
// or ETA.
func (p *Progress) report(final bool) {
	line := p.line(final)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.TTY {
		if p.Width != nil {
			line = fit(line, p.Width()-1)
		}
		fmt.Fprintf(p.Out, "\r\033[K%s", line)
		p.live = true
		return
	}
	if line == p.lastLine {
		return
	}
	p.lastLine = line
	fmt.Fprintf(p.Out, "%s %s\n", p.now().Format(time.RFC3339), line)
}

// line is the progress line: where reading stands, what was sent, what
// went wrong, and what the upload is doing.
func (p *Progress) line(final bool) string {
	p.rmu.Lock()
	idle, busyAt, busyBase, lastData := p.idle, p.busyAt, p.busyBase, p.lastData
	p.rmu.Unlock()
	var parts []string
	total, done, resumed := p.listed.Load(), p.reached.Load(), p.resumed.Load()
	now := p.now()
	switch {
	case idle:
		if lastData.IsZero() {
			parts = append(parts, "up to date, watching · no new data since "+clock(p.start, now))
		} else {
			parts = append(parts, "up to date, watching · last data "+clock(lastData, now))
		}
	case p.scans.Load() == 0:
		parts = append(parts, "scanning the logdir")
	default:
		head := Size(done) + " read"
		if p.sizeKnown.Load() {
			total = max(total, done) // files grow while read
			head = fmt.Sprintf("%s of %s", Size(done), Size(total))
			if total > 0 {
				head += fmt.Sprintf(" (%d%%)", percent(done, total, p.finished.Load()))
			}
		}
		parts = append(parts, head)
		if left := total - done; p.finished.Load() && p.sizeKnown.Load() && left > 0 {
			parts = append(parts, Size(left)+" left unread (see the warnings)")
		}
		if resumed > 0 {
			parts = append(parts, Size(resumed)+" sent before, skipped")
		}
		if elapsed := now.Sub(busyAt); !final && elapsed >= time.Second && done > busyBase {
			rate := float64(done-busyBase) / elapsed.Seconds()
			parts = append(parts, Size(int64(rate))+"/s")
			if left := total - done; p.sizeKnown.Load() && left > 0 {
				parts = append(parts, "ETA "+eta(time.Duration(float64(left)/rate*float64(time.Second))))
			}
		}
	}
	if a, _ := p.activity.Load().(string); !idle && !final && a != "" && a != "reading" && a != "watching the logdir" {
		parts = append(parts, a)
	}
	parts = append(parts, p.counts())
	return strings.Join(parts, " · ")
}

// percent is done of total, rounded down, in percent: 100 once the upload
// finished, whatever bytes are left unread (an incomplete last record), and
// at most 99 before, even with every byte read, while it is being sent.
func percent(done, total int64, finished bool) int64 {
	if finished {
		return 100
	}
	return min(done*100/total, 99)
}

// counts says what was sent, and the retries and warnings there were: the
// end of the progress line, and of messages. Points are counted as sent, a
// step written twice in the logdir twice; the server keeps the last (what
// 'tbup list' counts, and tbup says at the end of an upload).
func (p *Progress) counts() string {
	s := Plural(p.runs.Load(), "run", "runs") + " · sent: " + Plural(p.Scalars.Load(), "scalar point", "scalar points")
	if n := p.Tensors.Load(); n > 0 {
		s += ", " + Plural(n, "tensor point", "tensor points")
	}
	if n := p.Blobs.Load(); n > 0 {
		s += fmt.Sprintf(", %s (%s)", Plural(n, "blob", "blobs"), Size(p.BlobBytes.Load()))
	}
	s += ", " + Size(p.Bytes.Load())
	var extra []string
	if n := p.Retries.Load(); n > 0 {
		extra = append(extra, Plural(n, "retry", "retries"))
	}
	if n := p.Warnings.Load(); n > 0 {
		extra = append(extra, Plural(n, "warning", "warnings"))
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
		fmt.Fprintf(p.Out, "%s warning: %s\n", p.now().Format(time.RFC3339), msg)
		p.lastLine = "" // the progress line is worth repeating after it
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

// Size is n bytes as tbup writes sizes: 512 B, 1.2 KiB, 19.3 MiB, 1.05 GiB.
func Size(n int64) string {
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

// fit cuts line to width characters (not cut if width < 2), ending in "…".
func fit(line string, width int) string {
	if width < 2 || utf8.RuneCountInString(line) <= width {
		return line
	}
	return string([]rune(line)[:width-1]) + "…"
}

// Plural is n (1.2k from 10,000 on) and the word for that many, as tbup's
// messages write counts: "1 warning", "2 warnings".
func Plural(n int64, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return count(n) + " " + many
}

// clock is t's time of day, with the date if that is not now's.
func clock(t, now time.Time) string {
	if t.Format(time.DateOnly) == now.Format(time.DateOnly) {
		return t.Format(time.TimeOnly)
	}
	return t.Format(time.DateTime)
}

// eta is a remaining time, to the second under a minute, then to the
// minute: 45s, 3m20s, 1h05m.
func eta(d time.Duration) string {
	switch d = d.Round(time.Second); {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
}
