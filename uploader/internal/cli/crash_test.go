package cli

import (
	"strings"
	"testing"

	"github.com/tbhub/tbhub/uploader/internal/upload"
)

func TestCrashHookSpec(t *testing.T) {
	if h, err := crashHook(""); h != nil || err != nil {
		t.Errorf("an empty TBUP_CRASH_AT armed %v, %v", h != nil, err)
	}
	for spec, want := range map[string]string{
		"nowhere":           "unknown crash point; known: points-acked, sequence-created",
		"chunk-sent#0":      "positive integer",
		"chunk-sent#x":      "positive integer",
		"chunk-sent#-2":     "positive integer",
		"chunk-sent#1#2":    "positive integer",
		"Chunk-Sent":        "unknown crash point",
		"state-saved# 1":    "positive integer",
		"sequence-acked#":   "positive integer",
		" sequence-acked#1": "unknown crash point",
	} {
		if _, err := crashHook(spec); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("TBUP_CRASH_AT=%q: error %v, want one saying %q", spec, err, want)
		}
	}
	// Armed for the third chunk sent: other points and the first two pass (the
	// third would kill this test; the e2e crash tests see tbup die there).
	h, err := crashHook("chunk-sent#3")
	if err != nil || h == nil {
		t.Fatalf("crashHook: %v", err)
	}
	for _, p := range upload.CrashPoints {
		if p != upload.CrashChunkSent {
			h(p)
			h(p)
			h(p)
		}
	}
	h(upload.CrashChunkSent)
	h(upload.CrashChunkSent)
}
