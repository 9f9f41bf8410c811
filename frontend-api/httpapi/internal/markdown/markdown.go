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

	"github.com/tbhub/tbhub/services/serverkit/config"
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
// Limits says how; a Renderer applies them.
//
//   - Input: at most MaxInputBytes of a text are rendered (cut at a line
//     end); the reader sees a note saying the text was truncated. This
//     bounds one render's time (32 KiB of the worst inputs found, ">" and
//     "[a](" repeated, take about 1 s on one core). The text route asks the
//     read service for no more than MaxInputBytes+1 bytes of each string
//     (ReadLimit), so a longer text never travels whole.
//   - Time: a caller waits at most RenderTimeout, or until its context
//     ends (the client went away); it then gets the text escaped in a
//     <pre> with a note instead. A render that started runs to its end on
//     a bounded input and is cached, so the next request gets it.
//   - Cores: at most MaxConcurrentRenders renders run at once; a render
//     waits for its turn only while one of its callers still waits, and is
//     dropped when they have all gone.
//   - Memory: the cache holds at most MaxCacheBytes of rendered HTML,
//     keyed by a hash of the markdown, and starts over when full; one
//     text's HTML is at most MaxGrowth times its markdown.
type Limits struct {
	MaxInputBytes        int
	RenderTimeout        time.Duration
	MaxCacheBytes        int
	MaxConcurrentRenders int
}

// DefaultLimits: 32 KiB per text, 2 s, 32 MiB of cache, half the cores.
func DefaultLimits() Limits {
	return Limits{MaxInputBytes: 32 << 10, RenderTimeout: 2 * time.Second, MaxCacheBytes: 32 << 20,
		MaxConcurrentRenders: max(1, runtime.GOMAXPROCS(0)/2)}
}

// OrDefaults is l with DefaultLimits' value for each field that is zero.
func (l Limits) OrDefaults() Limits {
	def := DefaultLimits()
	if l.MaxInputBytes == 0 {
		l.MaxInputBytes = def.MaxInputBytes
	}
	if l.RenderTimeout == 0 {
		l.RenderTimeout = def.RenderTimeout
	}
	if l.MaxCacheBytes == 0 {
		l.MaxCacheBytes = def.MaxCacheBytes
	}
	if l.MaxConcurrentRenders == 0 {
		l.MaxConcurrentRenders = def.MaxConcurrentRenders
	}
	return l
}

// Settings describes --markdown-max-input-bytes,
// --markdown-render-timeout, --markdown-cache-bytes and
// --markdown-max-renders for an assembly's flag set, defaulting to l's values.
func (l *Limits) Settings() []config.Setting {
	return []config.Setting{
		{Name: "markdown-max-input-bytes", Usage: "bytes of one text or description rendered as markdown; the rest is cut, with a note to the reader", Value: &l.MaxInputBytes},
		{Name: "markdown-render-timeout", Usage: "longest a request waits for markdown to render before showing the text unformatted", Value: &l.RenderTimeout},
		{Name: "markdown-cache-bytes", Usage: "bytes of rendered markdown kept for later requests", Value: &l.MaxCacheBytes},
		{Name: "markdown-max-renders", Usage: "markdown renders running at once (default: half the cores)", Value: &l.MaxConcurrentRenders},
	}
}

// Validate reports limits that would leave rendering unbounded.
func (l Limits) Validate() error {
	if l.MaxInputBytes <= 0 || l.RenderTimeout <= 0 || l.MaxCacheBytes <= 0 || l.MaxConcurrentRenders <= 0 {
		return fmt.Errorf("markdown limits must be positive: %+v", l)
	}
	return nil
}

// ReadLimit is how many bytes of a text to read for rendering: one more
// than is rendered, so that a longer text is known to be longer.
func (l Limits) ReadLimit() int { return l.MaxInputBytes + 1 }

type cacheKey = [sha256.Size]byte

// renderCall is one render, shared by every caller of the same markdown.
type renderCall struct {
	done    chan struct{}
	html    string
	ok      bool
	waiters int           // callers waiting for it (under Renderer.mu)
	started bool          // it holds a render slot (under Renderer.mu)
	gone    chan struct{} // closed when every caller left before it started
}

// Renderer renders markdown within its Limits; one per server, shared by
// every request.
type Renderer struct {
	lim   Limits
	slots chan struct{}
	// convert is renderMarkdown; tests replace it to watch renders.
	convert func(string) string

	mu       sync.Mutex
	cache    map[cacheKey]string
	bytes    int
	inflight map[cacheKey]*renderCall
}

// New returns a Renderer with the given limits.
func New(l Limits) (*Renderer, error) {
	if err := l.Validate(); err != nil {
		return nil, err
	}
	return &Renderer{lim: l, slots: make(chan struct{}, l.MaxConcurrentRenders), convert: renderMarkdown,
		cache: map[cacheKey]string{}, inflight: map[cacheKey]*renderCall{}}, nil
}

// Limits returns the renderer's limits.
func (r *Renderer) Limits() Limits { return r.lim }

// ToSafeHTML renders markdown to sanitized HTML within the bounds above,
// without a caller's context (descriptions of series).
func (r *Renderer) ToSafeHTML(md string) string { return r.Render(context.Background(), md) }

// Render renders markdown to sanitized HTML within the bounds above;
// NUL bytes are removed first, with a warning in the output, as
// TensorBoard does. It returns when ctx ends, with the plain-text form.
func (r *Renderer) Render(ctx context.Context, md string) string {
	if md == "" {
		return ""
	}
	key := sha256.Sum256([]byte(md))
	r.mu.Lock()
	if html, ok := r.cache[key]; ok {
		r.mu.Unlock()
		return html
	}
	call, running := r.inflight[key]
	haveSlot := false
	if !running {
		call = &renderCall{done: make(chan struct{}), gone: make(chan struct{})}
		r.inflight[key] = call
		// A free slot is taken at once: the render then runs to its end
		// even if this caller leaves.
		select {
		case r.slots <- struct{}{}:
			call.started, haveSlot = true, true
		default:
		}
	}
	call.waiters++
	r.mu.Unlock()
	if !running {
		// The background render keeps only the part it renders: a copy,
		// so the caller's string is not held by it.
		head, note := r.truncate(md)
		go r.renderInBackground(key, strings.Clone(head), note, call, haveSlot)
	}
	timer := time.NewTimer(r.lim.RenderTimeout)
	defer timer.Stop()
	select {
	case <-call.done:
		if call.ok {
			return call.html
		}
	case <-timer.C:
	case <-ctx.Done():
	}
	r.leave(key, call)
	return r.plainText(md)
}

// leave says a caller stopped waiting for call; when it was the last and
// the render has not started, the render is dropped. That happens once:
// a call not started is still in inflight until then (its render ends
// only once started or gone), so no caller can join it after.
func (r *Renderer) leave(key cacheKey, call *renderCall) {
	r.mu.Lock()
	defer r.mu.Unlock()
	call.waiters--
	if call.waiters == 0 && !call.started {
		close(call.gone)
		delete(r.inflight, key)
	}
}

// renderInBackground renders head (the note appended) once a slot is
// free, caches the result and wakes the callers waiting for it.
// It holds a slot already if haveSlot.
func (r *Renderer) renderInBackground(key cacheKey, head, note string, call *renderCall, haveSlot bool) {
	defer func() {
		r.mu.Lock()
		if r.inflight[key] == call {
			delete(r.inflight, key)
		}
		if call.ok && len(call.html) <= r.lim.MaxCacheBytes {
			if r.bytes+len(call.html) > r.lim.MaxCacheBytes {
				r.cache, r.bytes = map[cacheKey]string{}, 0
			}
			r.cache[key] = call.html
			r.bytes += len(call.html)
		}
		r.mu.Unlock()
		close(call.done)
	}()
	if !haveSlot {
		select {
		case r.slots <- struct{}{}:
		case <-call.gone:
			return // every caller left while it waited: they have their plain text
		}
		r.mu.Lock()
		select {
		case <-call.gone:
			r.mu.Unlock()
			<-r.slots
			return
		default:
			call.started = true
		}
		r.mu.Unlock()
	}
	defer func() { <-r.slots }()
	html := r.convert(head)
	if len(html) > MaxGrowth*max(len(head), 1024) {
		html = unformatted(head, fmt.Sprintf("This text is shown as it is: as HTML it would be more than %d times its size.", MaxGrowth))
	}
	call.html, call.ok = html+note, true
}

// MaxGrowth bounds rendered HTML to this many times the markdown's size
// (of at least 1 KiB): ordinary markdown grows 2 to 6 times (a table of
// one-letter cells about 6), but nesting grows without such a bound (32 KiB
// of ">" is 32,768 nested blockquotes, 884 KB of HTML), which every answer
// and the cache would carry. Such a text is shown unformatted instead.
const MaxGrowth = 16

// truncate cuts md to MaxInputBytes at the last line end (or rune
// boundary) before it, and returns the note that says so. The note does
// not give md's length: the read service may have sent only its start.
func (r *Renderer) truncate(md string) (head, note string) {
	limit := r.lim.MaxInputBytes
	if len(md) <= limit {
		return md, ""
	}
	cut := limit
	if i := strings.LastIndexByte(md[:cut], '\n'); i > limit/2 {
		cut = i
	}
	for cut > 0 && !utf8.RuneStart(md[cut]) {
		cut--
	}
	return md[:cut], fmt.Sprintf("\n<p><em>Truncated: this text is longer than %d bytes; the first %d are shown.</em></p>", limit, cut)
}

// plainText is md escaped in a <pre> (at most MaxInputBytes of it), for a
// caller that could not wait for its rendering.
func (r *Renderer) plainText(md string) string {
	head, note := r.truncate(md)
	return unformatted(head, "This text is shown unformatted: rendering it took too long.") + note
}

// unformatted is md escaped in a <pre>, NUL bytes removed, with a note
// saying why it is not rendered.
func unformatted(md, note string) string {
	md = strings.ReplaceAll(md, "\x00", "")
	return "<pre>" + escapeText(md) + "</pre>\n<p><em>" + note + "</em></p>"
}

// SafeText is text (not markdown) as sanitized HTML (SafeHTML), cut to
// MaxInputBytes as Render cuts markdown.
func (r *Renderer) SafeText(text string) string {
	head, note := r.truncate(text)
	return SafeHTML(head) + note
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
				b.WriteString(" " + a.Key + `="` + attrEscaper.Replace(a.Val) + `"`)
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

// The escapers of text and attribute values, built once: SafeHTML runs
// for every text cell and description (strings.Replacer is safe for
// concurrent use).
var (
	textEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")
	attrEscaper = strings.NewReplacer("&", "&amp;", `"`, "&quot;")
)

func escapeText(s string) string { return textEscaper.Replace(s) }

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
