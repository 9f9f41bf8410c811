package httpapi_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/tbhub/tbhub/frontend-api/httpapi"
	tbpb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard"
)

// The text route asks the read service for one byte more of each string
// than it renders (readhint.MaxStringBytesKey), so a hostile 900 KB text
// does not travel whole; a read service that sends more anyway is cut by
// the route itself. Config.Markdown.MaxInputBytes sets both, and the note
// tells the reader, with markdown and without.
func TestTextRouteReadsOnlyWhatItRenders(t *testing.T) {
	long := strings.Repeat("word ", 100) // 500 bytes
	p, srv := serveTable(t, httpapi.Config{Markdown: httpapi.MarkdownLimits{MaxInputBytes: 100}},
		series{plugin: "text", run: "r", tag: "long", steps: []int64{0}, tensors: []*tbpb.TensorProto{stringTensor(nil, long)}},
		series{plugin: "text", run: "r", tag: "short", steps: []int64{0}, tensors: []*tbpb.TensorProto{stringTensor(nil, "*short*")}})
	u := srv.URL + "/experiment/e1/data/plugin/text/text?run=r&tag="
	text := func(q string) string {
		t.Helper()
		_, body := get(t, u+q)
		var got []struct {
			Text string `json:"text"`
		}
		if err := json.Unmarshal([]byte(body), &got); err != nil || len(got) != 1 {
			t.Fatalf("%s: %v %s", q, err, body)
		}
		return got[0].Text
	}
	for _, q := range []string{"long", "long&markdown=false"} {
		got := text(q)
		if !strings.Contains(got, "Truncated: this text is longer than 100 bytes") || strings.Count(got, "word") != 20 {
			t.Errorf("%s: %q", q, got)
		}
		p.mu.Lock()
		cut := p.cut["text"]
		p.mu.Unlock()
		if cut != "101" {
			t.Errorf("%s: the route asked for strings of %q bytes, want 101", q, cut)
		}
	}
	if got := text("short"); got != "<p><em>short</em></p>" {
		t.Errorf("short text: %q", got)
	}
}
