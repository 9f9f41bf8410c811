package markdown

import (
	"strings"
	"testing"
)

func TestMarkdownIsSanitized(t *testing.T) {
	got := ToSafeHTML("**bold** <script>alert(1)</script> <img src=x onerror=alert(2)> [link](javascript:alert(3))\n\n| a | b |\n|---|---|\n| 1 | 2 |")
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
	if got := ToSafeHTML("a\x00b"); !strings.Contains(got, "discarded 1 null bytes") || strings.Contains(got, "\x00") {
		t.Errorf("NUL handling: %q", got)
	}
}
