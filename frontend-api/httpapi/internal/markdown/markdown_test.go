package markdown

import (
	"slices"
	"strings"
	"testing"

	nethtml "golang.org/x/net/html"
)

func TestMarkdownIsSanitized(t *testing.T) {
	r := newRenderer(t, DefaultLimits())
	got := r.ToSafeHTML("**bold** <script>alert(1)</script> <img src=x onerror=alert(2)> [link](javascript:alert(3))\n\n| a | b |\n|---|---|\n| 1 | 2 |")
	for _, bad := range []string{"<script", "onerror", "javascript:"} {
		if strings.Contains(got, bad) {
			t.Errorf("%q survived: %s", bad, got)
		}
	}
	for _, good := range []string{"<strong>bold</strong>", "<table>", "<td>1</td>"} {
		if !strings.Contains(got, good) {
			t.Errorf("%q missing: %s", good, got)
		}
	}
	if got := r.ToSafeHTML("a\x00b"); !strings.Contains(got, "discarded 1 null bytes") || strings.Contains(got, "\x00") {
		t.Errorf("NUL handling: %q", got)
	}
}

// FuzzToSafeHTML: whatever the markdown, the HTML holds only allowed tags
// with allowed attributes, and links and images only allowed URLs.
func FuzzToSafeHTML(f *testing.F) {
	for _, s := range []string{
		"**bold** <script>alert(1)</script>", "<img src=x onerror=alert(2)>", "[x](javascript:alert(3))",
		"| a | b |\n|---|---|\n| <b>1</b> | 2 |", "<a href=\"java\tscript:x\" title=t>y</a>", "<em>open",
		"</p></p><!-- c --><![CDATA[x]]><svg><style>x</style>",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, md string) {
		out := renderMarkdown(md)
		z := nethtml.NewTokenizer(strings.NewReader(out))
		for {
			tt := z.Next()
			if tt == nethtml.ErrorToken {
				return
			}
			if tt == nethtml.CommentToken && !strings.HasPrefix(string(z.Raw()), "<!-- WARNING: discarded ") {
				t.Fatalf("comment kept: %q in %q", z.Raw(), out)
			}
			if tt != nethtml.StartTagToken && tt != nethtml.SelfClosingTagToken {
				continue
			}
			tok := z.Token()
			if !allowedTags[tok.Data] {
				t.Fatalf("tag %q kept from %q: %q", tok.Data, md, out)
			}
			for _, a := range tok.Attr {
				if !slices.Contains(allowedAttrs[tok.Data], a.Key) {
					t.Fatalf("attribute %s=%q kept on %s: %q", a.Key, a.Val, tok.Data, out)
				}
				if (a.Key == "href" || a.Key == "src") && !allowedURL(a.Val) {
					t.Fatalf("URL %q kept: %q", a.Val, out)
				}
			}
		}
	})
}
