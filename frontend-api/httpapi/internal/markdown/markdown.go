// Package markdown renders the markdown of descriptions and text summaries
// to HTML that is safe to put in the page, as TensorBoard does: one
// renderer and one cleaner for every route of the HTTP API.
package markdown

import (
	"bytes"
	"fmt"
	"html"
	"net/url"
	"slices"
	"strings"
	"sync"

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

// rendered memoizes ToSafeHTML: a tags route renders one
// description per series, and across runs the same tag has the same
// description (50,000 series, 50 distinct texts is typical).
var rendered = struct {
	sync.Mutex
	m map[string]string
}{m: map[string]string{}}

// maxRendered bounds the memo; it starts over when full.
const maxRendered = 4096

// ToSafeHTML renders markdown to sanitized HTML. NUL bytes are
// removed first, with a warning in the output, as TensorBoard does.
func ToSafeHTML(md string) string {
	if md == "" {
		return ""
	}
	rendered.Lock()
	html, ok := rendered.m[md]
	rendered.Unlock()
	if ok {
		return html
	}
	html = renderMarkdown(md)
	rendered.Lock()
	if len(rendered.m) >= maxRendered {
		rendered.m = map[string]string{}
	}
	rendered.m[md] = html
	rendered.Unlock()
	return html
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
