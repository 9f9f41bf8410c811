package upload

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/tbhub/tbhub/uploader/internal/client"
	"github.com/tbhub/tbhub/uploader/internal/corpustest"
	"github.com/tbhub/tbhub/uploader/internal/logdir"
	"github.com/tbhub/tbhub/uploader/internal/state"
)

// fakeClock is a clock tests move by hand.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time      { return c.t }
func (c *fakeClock) add(d time.Duration) { c.t = c.t.Add(d) }
func newClock() *fakeClock               { return &fakeClock{time.Date(2026, 11, 25, 14, 3, 0, 0, time.UTC)} }
func progressAt(c *fakeClock) *Progress  { p := &Progress{Now: c.now}; p.begin(); return p }
func mib(n float64) int64                { return int64(n * (1 << 20)) }
func wantParts(t *testing.T, line string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(line, w) {
			t.Errorf("line lacks %q:\n%s", w, line)
		}
	}
}
func wantNot(t *testing.T, line string, not ...string) {
	t.Helper()
	for _, w := range not {
		if strings.Contains(line, w) {
			t.Errorf("line has %q:\n%s", w, line)
		}
	}
}

// Before the logdir is scanned, the line says so instead of zeros.
func TestProgressBeforeScan(t *testing.T) {
	c := newClock()
	p := progressAt(c)
	p.setActivity("reading")
	line := p.line(false)
	wantParts(t, line, "scanning the logdir")
	wantNot(t, line, "%", "ETA", "/s", "sending")
}

// Once the logdir is scanned: bytes read of the total, percentage, the rate
// and an ETA from it. Resuming, what an earlier run sent counts in the
// percentage, is shown as skipped, and counts in neither the rate nor the
// ETA. With sizes not all known: bytes read, no percentage.
func TestProgressReading(t *testing.T) {
	for _, tc := range []struct {
		name              string
		total, sent, read int64
		known             bool
		after             time.Duration
		want, not         []string
	}{
		{"fresh", mib(40), 0, mib(10), true, 10 * time.Second,
			[]string{"10.0 MiB of 40.0 MiB (25%)", "1.0 MiB/s", "ETA 30s"}, []string{"sent before"}},
		{"resumed", mib(40), mib(30), mib(2), true, 4 * time.Second,
			[]string{"32.0 MiB of 40.0 MiB (80%)", "30.0 MiB sent before, skipped", "512.0 KiB/s", "ETA 16s"}, nil},
		{"sizes unknown", mib(1), 0, mib(4), false, 2 * time.Second,
			[]string{"4.0 MiB read", "2.0 MiB/s"}, []string{"%", "ETA"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newClock()
			p := progressAt(c)
			p.scanned(tc.total, tc.sent, tc.known)
			c.add(tc.after)
			p.read(tc.read)
			line := p.line(false)
			wantParts(t, line, tc.want...)
			wantNot(t, line, tc.not...)
			// The final line keeps the totals, without a rate or an ETA.
			wantParts(t, p.line(true), tc.want[0])
			wantNot(t, p.line(true), "/s", "ETA")
		})
	}
	// A later scan of a grown logdir keeps what was skipped.
	c := newClock()
	p := progressAt(c)
	p.scanned(mib(40), mib(30), true)
	p.read(mib(2))
	p.scanned(mib(50), mib(32), true)
	wantParts(t, p.line(false), "32.0 MiB of 50.0 MiB (64%)", "30.0 MiB sent before, skipped")
}

// Caught up while watching: "up to date, watching" and when data last came,
// with no rate shrinking as time passes and no "sending"; new data starts a
// new stretch whose rate counts from its start.
func TestProgressUpToDateWatching(t *testing.T) {
	c := newClock()
	p := progressAt(c)
	p.scanned(mib(8), 0, true)
	c.add(2 * time.Second)
	p.read(mib(8))
	p.setActivity("sending")
	p.caughtUp()
	p.setActivity("watching the logdir")
	idle := p.line(false)
	wantParts(t, idle, "up to date, watching · last data 14:03:02")
	wantNot(t, idle, "/s", "ETA", "sending", "%")
	c.add(time.Hour)
	p.setActivity("reading") // a pass that finds nothing new
	p.scanned(mib(8), mib(8), true)
	if later := p.line(false); later != idle {
		t.Errorf("an hour later, idle, the line changed:\n%s\n%s", idle, later)
	}
	p.scanned(mib(9), mib(8), true)
	p.read(mib(0.5))
	c.add(time.Second)
	line := p.line(false)
	wantParts(t, line, "8.5 MiB of 9.0 MiB (94%)", "512.0 KiB/s", "ETA 1s")
	wantNot(t, line, "up to date")
	// Another day: the time of last data gets its date.
	p.caughtUp()
	c.add(24 * time.Hour)
	wantParts(t, p.line(false), "last data 2026-11-25 15:03:02")
}

// Watching a logdir that brought nothing new since the start.
func TestProgressUpToDateNothingNew(t *testing.T) {
	c := newClock()
	p := progressAt(c)
	p.scanned(mib(8), mib(8), true)
	p.caughtUp()
	wantParts(t, p.line(false), "up to date, watching · no new data since 14:03:00")
}

// Counts are singular for one: "1 warning", "1 retry", "1 run"; they say
// that they count points sent (the server keeps one per step).
func TestProgressPlurals(t *testing.T) {
	c := newClock()
	p := progressAt(c)
	set := func(runs, scalars, tensors, blobs, warnings, retries int64) string {
		p.runs.Store(runs)
		p.Scalars.Store(scalars)
		p.Tensors.Store(tensors)
		p.Blobs.Store(blobs)
		p.Warnings.Store(warnings)
		p.Retries.Store(retries)
		return p.counts()
	}
	wantParts(t, set(1, 1, 1, 1, 1, 1), "1 run · sent: 1 scalar point, 1 tensor point, 1 blob (", "1 retry, 1 warning")
	line := set(2, 12_345, 0, 0, 2, 3)
	wantParts(t, line, "2 runs · sent: 12.3k scalar points, ", "3 retries, 2 warnings")
	wantNot(t, line, "tensor", "blob")
	if got := Plural(0, "warning", "warnings"); got != "0 warnings" {
		t.Errorf("Plural(0) = %q", got)
	}
}

// On a terminal the line is redrawn in place; otherwise each line carries
// the time, and a line saying what the last one did is not repeated.
func TestProgressOutputModes(t *testing.T) {
	c := newClock()
	var tty bytes.Buffer
	p := progressAt(c)
	p.Out, p.TTY = &tty, true
	p.scanned(mib(8), mib(8), true)
	p.caughtUp()
	p.report(false)
	p.report(false)
	if got := strings.Count(tty.String(), "\r\033[K"); got != 2 || strings.Contains(tty.String(), "\n") {
		t.Errorf("terminal output %q: want the line redrawn twice, no newline", tty.String())
	}
	p.warn("one %s", "thing")
	if !strings.Contains(tty.String(), "\r\033[Kwarning: one thing\n") {
		t.Errorf("terminal output %q: want the live line cleared for the warning", tty.String())
	}

	var log bytes.Buffer
	p = progressAt(c)
	p.Out = &log
	p.scanned(mib(8), mib(8), true)
	p.caughtUp()
	p.report(false)
	c.add(10 * time.Second)
	p.report(false)
	lines := strings.Split(strings.TrimSuffix(log.String(), "\n"), "\n")
	if len(lines) != 1 || !strings.HasPrefix(lines[0], "2026-11-25T14:03:00Z up to date, watching") {
		t.Errorf("log output:\n%s\nwant one timestamped line", log.String())
	}
	p.report(true) // final, and the same: not repeated
	p.warn("w")
	c.add(10 * time.Second)
	p.report(false)
	p.scanned(mib(9), mib(8), true)
	p.read(mib(1))
	p.finish() // as Run does once what it read was sent
	p.report(true)
	lines = strings.Split(strings.TrimSuffix(log.String(), "\n"), "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[1], "2026-11-25T14:03:10Z warning: w") ||
		!strings.HasPrefix(lines[2], "2026-11-25T14:03:20Z up to date") || !strings.Contains(lines[2], "1 warning") ||
		!strings.HasPrefix(lines[3], "2026-11-25T14:03:20Z 9.0 MiB of 9.0 MiB (100%)") {
		t.Errorf("log output:\n%s\nwant the line again after a warning, and a final line", log.String())
	}
}

// Remaining times read 45s, 3m20s, 1h05m.
func TestETAFormat(t *testing.T) {
	for d, want := range map[time.Duration]string{
		45 * time.Second:                          "45s",
		200 * time.Second:                         "3m20s",
		time.Hour + 5*time.Minute + 9*time.Second: "1h05m",
	} {
		if got := eta(d); got != want {
			t.Errorf("eta(%v) = %q, want %q", d, got, want)
		}
	}
}

// On a terminal the live line is cut to its width (a wrapped line cannot be
// redrawn in place), keeping its start: where the upload stands and what
// it is waiting for.
func TestProgressFitsTheTerminal(t *testing.T) {
	c := newClock()
	var tty bytes.Buffer
	p := progressAt(c)
	width := 40
	p.Out, p.TTY, p.Width = &tty, true, func() int { return width }
	p.scanned(mib(40), 0, true)
	p.setActivity("cannot reach the server at 10.0.0.1:443, retrying in 2s")
	p.setRuns(12)
	p.report(false)
	drawn := strings.TrimPrefix(tty.String(), "\r\033[K")
	if n := utf8.RuneCountInString(drawn); n != width-1 || !strings.HasSuffix(drawn, "…") || !strings.HasPrefix(drawn, "0 B of 40.0 MiB (0%) · cannot reach") {
		t.Errorf("drawn %q (%d characters), want the line's start cut to %d", drawn, n, width-1)
	}
	tty.Reset()
	width = 500
	p.report(false)
	if !strings.Contains(tty.String(), "12 runs") || strings.Contains(tty.String(), "…") {
		t.Errorf("a wide terminal got %q, want the whole line", tty.String())
	}
}

// The percentage reads 100 exactly when the upload is done: not while the
// last bytes read are still being sent, and always once it finished, also
// with bytes left in a file that ends with an incomplete record (it was
// "22.0 MiB of 22.0 MiB (99%)" at the end of a one-shot upload). The bytes
// left unread are said.
func TestProgressHundredPercentWhenDone(t *testing.T) {
	c := newClock()
	p := progressAt(c)
	p.scanned(mib(22), 0, true)
	p.read(mib(22) - 1)
	wantParts(t, p.line(false), "(99%)")
	p.read(1)
	wantParts(t, p.line(false), "22.0 MiB of 22.0 MiB (99%)") // read, not yet sent
	p.finish()
	wantParts(t, p.line(true), "22.0 MiB of 22.0 MiB (100%)")
	wantNot(t, p.line(true), "unread")

	p = progressAt(c)
	p.scanned(mib(22), 0, true)
	p.read(mib(22) - 604)
	p.finish()
	wantParts(t, p.line(true), "22.0 MiB of 22.0 MiB (100%)", "604 B left unread")
}

// A one-shot upload of a logdir whose file ends with an incomplete record
// ends on a line reading 100%, and one that reads the whole logdir too.
func TestOneShotUploadEndsAtHundredPercent(t *testing.T) {
	for _, dir := range []string{"generated/damaged/truncated_mid_record", "generated/scalars"} {
		t.Run(dir, func(t *testing.T) {
			src, err := logdir.Open(context.Background(), filepath.Join(corpustest.Dir(t), dir))
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			prog := &Progress{Out: &out}
			limits := client.DefaultLimits // nothing is sent: no pacing
			limits.MinScalarInterval = 0
			up := New(Config{Source: src, Limits: limits, Plugins: map[string]bool{"scalars": true},
				State: state.New("", src.String()), OneShot: true, Retry: client.DefaultRetry, Progress: prog})
			prog.Start()
			err = up.Run(context.Background())
			prog.Stop()
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSpace(out.String()), "\n")
			wantParts(t, lines[len(lines)-1], "(100%)")
		})
	}
}
