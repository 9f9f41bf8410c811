package markdown

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tbhub/tbhub/services/serverkit/config"
)

func newRenderer(t *testing.T, l Limits) *Renderer {
	t.Helper()
	r, err := New(l)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// waitRendered waits (bounded) until md's rendering is in the cache.
func waitRendered(t *testing.T, r *Renderer, md string) string {
	t.Helper()
	for range 6000 { // at most a minute: a bounded render takes about a second
		if html := r.Render(context.Background(), md); !strings.Contains(html, "shown unformatted") {
			return html
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("a %d-byte text was never rendered", len(md))
	return ""
}

// waitFor polls cond for at most a minute.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for range 6000 {
		if cond() {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("never: %s", what)
}

// The hostile texts (each under the 1 MiB tensor limit) render
// from a bounded prefix, with a note telling the reader, instead of
// keeping a core busy for minutes.
func TestHostileMarkdownIsTruncated(t *testing.T) {
	r := newRenderer(t, DefaultLimits())
	for _, md := range []string{strings.Repeat(">", 900_000), strings.Repeat("[a](", 225_000)} {
		html := waitRendered(t, r, md)
		want := fmt.Sprintf("Truncated: this text is longer than %d bytes", 32<<10)
		if !strings.Contains(html, want) {
			t.Errorf("%q×%d: no note %q in %.200q", md[:4], len(md), want, html)
		}
	}
}

// A caller whose client has gone stops waiting at once and gets the text
// unformatted; the render goes on (bounded) and a later caller gets it.
func TestRenderStopsWhenTheClientGoes(t *testing.T) {
	r := newRenderer(t, DefaultLimits())
	md := strings.Repeat("> - ", 8000) + "unique-to-this-test"
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	got := r.Render(ctx, md)
	if !strings.HasPrefix(got, "<pre>&gt; - ") || !strings.Contains(got, "shown unformatted") {
		t.Fatalf("after the client went: %.200q", got)
	}
	if html := waitRendered(t, r, md); !strings.Contains(html, "<blockquote>") {
		t.Errorf("rendered later: %.200q", html)
	}
}

// The render cache holds at most MaxCacheBytes of HTML however many
// large texts are read.
func TestRenderCacheIsBounded(t *testing.T) {
	l := DefaultLimits()
	l.MaxCacheBytes = 1 << 20
	r := newRenderer(t, l)
	block := strings.Repeat("word ", l.MaxInputBytes/5-10)
	for i := range 2 * l.MaxCacheBytes / l.MaxInputBytes {
		waitRendered(t, r, fmt.Sprintf("%d %s", i, block))
		r.mu.Lock()
		n := r.bytes
		r.mu.Unlock()
		if n > l.MaxCacheBytes {
			t.Fatalf("after %d texts the cache holds %d bytes; the bound is %d", i+1, n, l.MaxCacheBytes)
		}
	}
}

// A text over the limit is cut at a line end, and its note is visible
// (an allowed tag, kept by the cleaner).
func TestTruncateAtLineEnd(t *testing.T) {
	r := newRenderer(t, DefaultLimits())
	limit := r.Limits().MaxInputBytes
	md := strings.Repeat("line of text\n", limit/13+100)
	head, note := r.truncate(md)
	if len(head) > limit || !strings.HasSuffix(head, "line of text") {
		t.Errorf("head ends %q (%d bytes)", head[len(head)-20:], len(head))
	}
	if !strings.Contains(SafeHTML(note), "<em>Truncated: this text is ") {
		t.Errorf("note %q", note)
	}
}

// A text of exactly MaxInputBytes is rendered whole; one byte more (what
// the read service sends of a longer text) is cut, with the note.
func TestReadLimitIsOneMoreThanRendered(t *testing.T) {
	l := DefaultLimits()
	l.MaxInputBytes = 100
	r := newRenderer(t, l)
	if head, note := r.truncate(strings.Repeat("a", 100)); len(head) != 100 || note != "" {
		t.Errorf("100 bytes: head %d bytes, note %q", len(head), note)
	}
	if head, note := r.truncate(strings.Repeat("a", l.ReadLimit())); len(head) != 100 || !strings.Contains(note, "longer than 100 bytes") {
		t.Errorf("%d bytes: head %d bytes, note %q", l.ReadLimit(), len(head), note)
	}
	if got := r.SafeText(strings.Repeat("<b>x</b>", 50)); !strings.Contains(got, "Truncated") || strings.Count(got, "&lt;b&gt;x&lt;/b&gt;") != 12 {
		t.Errorf("SafeText of 400 bytes: %q", got)
	}
}

// watchedRenders replaces r's renders by ones that block until release
// is closed, and counts how many run at once.
type watchedRenders struct {
	mu            sync.Mutex
	running, peak int
	rendered      []string
	release       chan struct{}
}

func watchRenders(r *Renderer) *watchedRenders {
	w := &watchedRenders{release: make(chan struct{})}
	r.convert = func(md string) string {
		w.mu.Lock()
		w.running++
		w.peak = max(w.peak, w.running)
		w.rendered = append(w.rendered, md)
		w.mu.Unlock()
		<-w.release
		w.mu.Lock()
		w.running--
		w.mu.Unlock()
		return "<p>" + md + "</p>"
	}
	return w
}

func (w *watchedRenders) get() (running, peak int, rendered []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.running, w.peak, append([]string(nil), w.rendered...)
}

// However many requests ask at once, at most MaxConcurrentRenders renders
// run; the others wait their turn.
func TestConcurrentRendersAreBounded(t *testing.T) {
	l := DefaultLimits()
	l.MaxConcurrentRenders, l.RenderTimeout = 2, time.Minute
	r := newRenderer(t, l)
	w := watchRenders(r)
	var wg sync.WaitGroup
	out := make([]string, 8)
	for i := range out {
		wg.Go(func() { out[i] = r.Render(context.Background(), fmt.Sprintf("text %d", i)) })
	}
	waitFor(t, "two renders running", func() bool { running, _, _ := w.get(); return running == 2 })
	waitFor(t, "eight callers waiting", func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return len(r.inflight) == 8
	})
	close(w.release)
	wg.Wait()
	for i, html := range out {
		if want := fmt.Sprintf("<p>text %d</p>", i); html != want {
			t.Errorf("caller %d got %q, want %q", i, html, want)
		}
	}
	if _, peak, _ := w.get(); peak != 2 {
		t.Errorf("%d renders ran at once; the bound is 2", peak)
	}
}

// A render still waiting for its turn when every caller has gone is
// dropped: clients that ask and leave cannot queue work for the cores.
func TestQueuedRenderIsDroppedWhenItsCallersGo(t *testing.T) {
	l := DefaultLimits()
	l.MaxConcurrentRenders, l.RenderTimeout = 1, time.Minute
	r := newRenderer(t, l)
	w := watchRenders(r)
	gone, leave := context.WithCancel(context.Background())
	leave()
	r.Render(gone, "busy") // takes the only slot, its caller gone at once
	waitFor(t, "the first render running", func() bool { running, _, _ := w.get(); return running == 1 })
	if got := r.Render(gone, "queued"); !strings.Contains(got, "shown unformatted") {
		t.Errorf("a caller that left got %q", got)
	}
	close(w.release)
	waitFor(t, "every render over", func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return len(r.inflight) == 0
	})
	if html := waitRendered(t, r, "busy"); html != "<p>busy</p>" {
		t.Errorf("the started render: %q", html)
	}
	if _, _, rendered := w.get(); len(rendered) != 1 || rendered[0] != "busy" {
		t.Errorf("rendered %q; the queued render had no caller left", rendered)
	}
}

// Each flag sets its limit.
func TestLimitsFlags(t *testing.T) {
	l := DefaultLimits()
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	config.Bind(fs, l.Settings()...)
	if err := fs.Parse([]string{"--markdown-max-input-bytes=1000", "--markdown-render-timeout=3s",
		"--markdown-cache-bytes=5000", "--markdown-max-renders=7"}); err != nil {
		t.Fatal(err)
	}
	if want := (Limits{1000, 3 * time.Second, 5000, 7}); l != want {
		t.Errorf("limits %+v, want %+v", l, want)
	}
	for _, bad := range []Limits{{0, time.Second, 1, 1}, {1, 0, 1, 1}, {1, time.Second, 0, 1}, {1, time.Second, 1, 0}} {
		if _, err := New(bad); err == nil {
			t.Errorf("New(%+v) accepted", bad)
		}
	}
}

// Markdown whose HTML would grow past MaxGrowth times its size (nested
// quotes: 27 times) is shown unformatted, so answers and the cache do not
// carry it; a table of one-letter cells (about 6 times) renders.
func TestRenderedSizeIsBounded(t *testing.T) {
	l := DefaultLimits()
	l.MaxInputBytes = 4000
	r := newRenderer(t, l)
	nested := strings.Repeat(">", 4000)
	got := waitRendered(t, r, nested)
	if !strings.HasPrefix(got, "<pre>&gt;&gt;") || !strings.Contains(got, "shown as it is: as HTML it would be more than 16 times its size") {
		t.Errorf("4,000 nested quotes: %.200q", got)
	}
	if len(got) > MaxGrowth*len(nested) {
		t.Errorf("4,000 nested quotes: %d bytes of HTML", len(got))
	}
	table := "|a|b|\n|-|-|\n" + strings.Repeat("|a|b|\n", 600)
	if got := waitRendered(t, r, table); strings.Count(got, "<td>a</td>") != 600 {
		t.Errorf("a table of %d bytes: %.200q", len(table), got)
	}
}
