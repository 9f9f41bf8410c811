package httpapi

import (
	"bytes"
	"fmt"
	"html"
	"strings"
	"sync"

	"github.com/microcosm-cc/bluemonday"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"
)

// Descriptions and text summaries are markdown written by whoever uploaded
// the data, shown to everyone who may read the experiment: they are
// rendered (GitHub-flavoured tables and strikethrough, as TensorBoard
// enables) and then sanitized with a user-generated-content policy, so no
// script, style or event handler survives.
var (
	markdown  = goldmark.New(goldmark.WithExtensions(extension.Table, extension.Strikethrough))
	sanitizer = bluemonday.UGCPolicy()
)

// rendered memoizes markdownToSafeHTML: a tags route renders one
// description per series, and across runs the same tag has the same
// description (50,000 series, 50 distinct texts is typical).
var rendered = struct {
	sync.Mutex
	m map[string]string
}{m: map[string]string{}}

// maxRendered bounds the memo; it starts over when full.
const maxRendered = 4096

// markdownToSafeHTML renders markdown to sanitized HTML. NUL bytes are
// removed first, with a warning in the output, as TensorBoard does.
func markdownToSafeHTML(md string) string {
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
	if err := markdown.Convert([]byte(md), &buf); err != nil {
		// goldmark fails only on writer errors; show the source escaped.
		return "<pre>" + html.EscapeString(md) + "</pre>"
	}
	return warning + sanitizer.Sanitize(buf.String())
}
