package markdown

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// waitRendered waits (bounded) until md's rendering is in the cache.
func waitRendered(t *testing.T, md string) string {
	t.Helper()
	for range 6000 { // at most a minute: a bounded render takes about a second
		if html := Render(context.Background(), md); !strings.Contains(html, "shown unformatted") {
			return html
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("a %d-byte text was never rendered", len(md))
	return ""
}

// The hostile texts (each under the 1 MiB tensor limit) render
// from a bounded prefix, with a note telling the reader, instead of
// keeping a core busy for minutes.
func TestHostileMarkdownIsTruncated(t *testing.T) {
	for _, md := range []string{strings.Repeat(">", 900_000), strings.Repeat("[a](", 225_000)} {
		html := waitRendered(t, md)
		want := fmt.Sprintf("Truncated: this text is %d bytes", len(md))
		if !strings.Contains(html, want) {
			t.Errorf("%q×%d: no note %q in %.200q", md[:4], len(md), want, html)
		}
	}
}

// A caller whose client has gone stops waiting at once and gets the text
// unformatted; the render goes on (bounded) and a later caller gets it.
func TestRenderStopsWhenTheClientGoes(t *testing.T) {
	md := strings.Repeat("> - ", 8000) + "unique-to-this-test"
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	got := Render(ctx, md)
	if !strings.HasPrefix(got, "<pre>&gt; - ") || !strings.Contains(got, "shown unformatted") {
		t.Fatalf("after the client went: %.200q", got)
	}
	if html := waitRendered(t, md); !strings.Contains(html, "<blockquote>") {
		t.Errorf("rendered later: %.200q", html)
	}
}

// The render cache holds at most MaxCacheBytes of HTML however many
// large texts are read.
func TestRenderCacheIsBounded(t *testing.T) {
	block := strings.Repeat("word ", MaxInputBytes/5-10)
	for i := range 2 * MaxCacheBytes / MaxInputBytes {
		waitRendered(t, fmt.Sprintf("%d %s", i, block))
		rendered.Lock()
		n := rendered.bytes
		rendered.Unlock()
		if n > MaxCacheBytes {
			t.Fatalf("after %d texts the cache holds %d bytes; the bound is %d", i+1, n, MaxCacheBytes)
		}
	}
}

// A text over the limit is cut at a line end, and its note is visible
// (an allowed tag, kept by the cleaner).
func TestTruncateAtLineEnd(t *testing.T) {
	md := strings.Repeat("line of text\n", MaxInputBytes/13+100)
	head, note := truncate(md)
	if len(head) > MaxInputBytes || !strings.HasSuffix(head, "line of text") {
		t.Errorf("head ends %q (%d bytes)", head[len(head)-20:], len(head))
	}
	if !strings.Contains(SafeHTML(note), "<em>Truncated: this text is ") {
		t.Errorf("note %q", note)
	}
}
