// Package markdown renders the markdown of descriptions and text summaries
// to HTML that is safe to put in the page, as TensorBoard does: one
// renderer and one cleaner for every route of the HTTP API.
package markdown

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"html"
	"net/url"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"
	gmhtml "github.com/yuin/goldmark/renderer/html"
	nethtml "golang.org/x/net/html"
)

// Descriptions and text summaries are markdown written by whoever uploaded
// the data, shown to everyone who may read the experiment. They are
// rendered and sanitized as TensorBoard does (plugin_util's
// markdown_to_safe_html): markdown with tables and fenced code, raw HTML
// passed through, then an allow-list cleaner in the manner of Python's
// bleach: the tags and attributes TensorBoard allows are kept (links and
// images only with http, https or mailto URLs, or relative ones), every
// other tag is shown as escaped text, comments are dropped. Nothing
// outside the allow list reaches the browser as markup: no script, style
// or event handler.
//
// The output format follows TensorBoard's: blocks joined by one newline
// and no trailing newline, quotes in text left as they are, void elements
// without a closing slash. The markdown dialect is CommonMark (goldmark)
// where TensorBoard's is Python-Markdown; they agree on paragraphs,
// emphasis, headings, lists, code and tables (docs/http-api.md).
var renderer = goldmark.New(goldmark.WithExtensions(extension.Table), goldmark.WithRendererOptions(gmhtml.WithUnsafe()))

// allowedTags and allowedAttrs are TensorBoard's (plugin_util.py).
var (
	allowedTags = map[string]bool{
		"ul": true, "ol": true, "li": true, "p": true, "pre": true, "code": true, "blockquote": true,
		"h1": true, "h2": true, "h3": true, "h4": true, "h5": true, "h6": true, "hr": true, "br": true,
		"strong": true, "em": true, "a": true, "img": true,
		"table": true, "thead": true, "tbody": true, "td": true, "tr": true, "th": true,
	}
	allowedAttrs = map[string][]string{"a": {"href", "title"}, "img": {"src", "title", "alt"}}
	voidTags     = map[string]bool{"br": true, "hr": true, "img": true}
)

// Rendering is bounded: markdown comes from whoever uploaded the data and
// is read by anyone the experiment is shared with, and goldmark's time
// grows with the square of some inputs (900 KB of ">" takes minutes).
//
//   - Input: at most MaxInputBytes are rendered (cut at a line end); the
//     reader sees a note saying the text was truncated and by how much.
//     This bounds one render's time (32 KiB of the worst inputs found,
//     ">" and "[a](" repeated, take about 1 s on one core).
//   - Time: a caller waits at most Timeout, or until its context ends
//     (the client went away); it then gets the text escaped in a <pre>
//     with a note instead. A render that started runs to its end on a
//     bounded input and is cached, so the next request gets it.
//   - Cores: at most Concurrency renders run at once (half the cores);
//     a render waiting longer than Timeout for its turn is dropped.
//   - Memory: the cache holds at most MaxCacheBytes of rendered HTML,
//     keyed by a hash of the markdown, and starts over when full.
const (
	MaxInputBytes = 32 << 10
	Timeout       = 2 * time.Second
	MaxCacheBytes = 32 << 20
)

// Concurrency is how many renders run at once.
var Concurrency = max(1, runtime.GOMAXPROCS(0)/2)

type renderCall struct {
	done chan struct{}
	html string
	ok   bool
}

var rendered = struct {
	sync.Mutex
	m        map[[sha256.Size]byte]string
	bytes    int
	inflight map[[sha256.Size]byte]*renderCall
}{m: map[[sha256.Size]byte]string{}, inflight: map[[sha256.Size]byte]*renderCall{}}

var renderSlots = make(chan struct{}, Concurrency)

// ToSafeHTML renders markdown to sanitized HTML within the bounds above,
// without a caller's context (descriptions of series).
func ToSafeHTML(md string) string { return Render(context.Background(), md) }

// Render renders markdown to sanitized HTML within the bounds above;
// NUL bytes are removed first, with a warning in the output, as
// TensorBoard does. It returns when ctx ends, with the plain-text form.
func Render(ctx context.Context, md string) string {
	if md == "" {
		return ""
	}
	key := sha256.Sum256([]byte(md))
	rendered.Lock()
	if html, ok := rendered.m[key]; ok {
		rendered.Unlock()
		return html
	}
	call, running := rendered.inflight[key]
	if !running {
		call = &renderCall{done: make(chan struct{})}
		rendered.inflight[key] = call
	}
	rendered.Unlock()
	if !running {
		// The background render keeps only the part it renders: a copy,
		// so the caller's (up to 1 MiB) string is not held by it.
		head, note := truncate(md)
		go renderInBackground(key, strings.Clone(head), note, call)
	}
	timer := time.NewTimer(Timeout)
	defer timer.Stop()
	select {
	case <-call.done:
		if call.ok {
			return call.html
		}
	case <-timer.C:
	case <-ctx.Done():
	}
	return plainText(md)
}

// renderInBackground renders head (the note appended) once a slot is free, caches the result and
// wakes the callers waiting for it.
func renderInBackground(key [sha256.Size]byte, head, note string, call *renderCall) {
	defer func() {
		rendered.Lock()
		delete(rendered.inflight, key)
		if call.ok && len(call.html) <= MaxCacheBytes {
			if rendered.bytes+len(call.html) > MaxCacheBytes {
				rendered.m, rendered.bytes = map[[sha256.Size]byte]string{}, 0
			}
			rendered.m[key] = call.html
			rendered.bytes += len(call.html)
		}
		rendered.Unlock()
		close(call.done)
	}()
	wait := time.NewTimer(Timeout)
	defer wait.Stop()
	select {
	case renderSlots <- struct{}{}:
	case <-wait.C:
		return // every slot busy all along: the callers have their plain text
	}
	defer func() { <-renderSlots }()
	call.html, call.ok = renderMarkdown(head)+note, true
}

// truncate cuts md to MaxInputBytes at the last line end (or rune
// boundary) before it, and returns the note that says so.
func truncate(md string) (head, note string) {
	if len(md) <= MaxInputBytes {
		return md, ""
	}
	cut := MaxInputBytes
	if i := strings.LastIndexByte(md[:cut], '\n'); i > MaxInputBytes/2 {
		cut = i
	}
	for cut > 0 && !utf8.RuneStart(md[cut]) {
		cut--
	}
	return md[:cut], fmt.Sprintf("\n<p><em>Truncated: this text is %d bytes; the first %d are shown.</em></p>", len(md), cut)
}

// plainText is md escaped in a <pre> (at most MaxInputBytes of it), for a
// caller that could not wait for its rendering.
func plainText(md string) string {
	head, note := truncate(md)
	head = strings.ReplaceAll(head, "\x00", "")
	return "<pre>" + escapeText(head) + "</pre>\n<p><em>This text is shown unformatted: rendering it took too long.</em></p>" + note
}

func renderMarkdown(md string) string {
	var warning string
	if n := strings.Count(md, "\x00"); n > 0 {
		md = strings.ReplaceAll(md, "\x00", "")
		warning = fmt.Sprintf("<!-- WARNING: discarded %d null bytes in markdown string after UTF-8 decoding -->\n", n)
	}
	var buf bytes.Buffer
	if err := renderer.Convert([]byte(md), &buf); err != nil {
		// goldmark fails only on writer errors; show the source escaped.
		return "<pre>" + html.EscapeString(md) + "</pre>"
	}
	return warning + SafeHTML(strings.TrimSuffix(buf.String(), "\n"))
}

// SafeHTML cleans HTML as TensorBoard's safe_html (bleach) does: allowed
// tags with their allowed attributes are kept, balanced (an unclosed one
// is closed at the end, a stray end tag dropped); any other tag is written
// as escaped text; comments and doctypes are dropped; text is escaped (&,
// <, >), quotes left as they are.
func SafeHTML(s string) string {
	var b strings.Builder
	var open []string
	z := nethtml.NewTokenizer(strings.NewReader(s))
	for {
		tt := z.Next()
		if tt == nethtml.ErrorToken {
			break
		}
		raw := string(z.Raw())
		switch tt {
		case nethtml.TextToken:
			b.WriteString(escapeText(html.UnescapeString(raw)))
		case nethtml.StartTagToken, nethtml.SelfClosingTagToken:
			tok := z.Token()
			if !allowedTags[tok.Data] {
				b.WriteString(escapeText(raw))
				continue
			}
			b.WriteString("<" + tok.Data)
			for _, a := range tok.Attr {
				if a.Namespace != "" || !slices.Contains(allowedAttrs[tok.Data], a.Key) {
					continue
				}
				if (a.Key == "href" || a.Key == "src") && !allowedURL(a.Val) {
					continue
				}
				b.WriteString(" " + a.Key + `="` + strings.NewReplacer("&", "&amp;", `"`, "&quot;").Replace(a.Val) + `"`)
			}
			b.WriteString(">")
			if !voidTags[tok.Data] && tt == nethtml.StartTagToken {
				open = append(open, tok.Data)
			}
		case nethtml.EndTagToken:
			tok := z.Token()
			if !allowedTags[tok.Data] {
				b.WriteString(escapeText(raw))
				continue
			}
			i := lastIndex(open, tok.Data)
			if i < 0 {
				continue
			}
			for len(open) > i {
				b.WriteString("</" + open[len(open)-1] + ">")
				open = open[:len(open)-1]
			}
		}
	}
	for len(open) > 0 {
		b.WriteString("</" + open[len(open)-1] + ">")
		open = open[:len(open)-1]
	}
	return b.String()
}

func lastIndex(s []string, v string) int {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == v {
			return i
		}
	}
	return -1
}

func escapeText(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// allowedURL: relative, or http, https or mailto (bleach's default
// protocols). Browsers ignore control characters and spaces in a scheme,
// so the scheme is read the way url.Parse reads it after removing them.
func allowedURL(v string) bool {
	clean := strings.Map(func(r rune) rune {
		if r <= ' ' || r == 0x7f {
			return -1
		}
		return r
	}, v)
	u, err := url.Parse(clean)
	if err != nil {
		return false
	}
	switch strings.ToLower(u.Scheme) {
	case "", "http", "https", "mailto":
		return true
	}
	return false
}
