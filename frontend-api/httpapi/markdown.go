package httpapi

import (
	"bytes"
	"fmt"
	"html"
	"strings"

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

// markdownToSafeHTML renders markdown to sanitized HTML. NUL bytes are
// removed first, with a warning in the output, as TensorBoard does.
func markdownToSafeHTML(md string) string {
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
