package writer

import (
	"fmt"
	"testing"
	"time"
)

func TestBlobCursors(t *testing.T) {
	t.Parallel()
	var c blobCursors
	now := time.Unix(1_700_000_000, 0)
	next := func(key string) string {
		seq, i, ok := c.next(key, now)
		if !ok {
			return "none"
		}
		return fmt.Sprintf("%s/%d", seq, i)
	}
	if got := next("a"); got != "none" {
		t.Errorf("no sequence yet: next = %s", got)
	}
	c.start("a", "S", 3, now)
	c.start("b", "T", 1, now)
	if got := next("a"); got != "S/0" {
		t.Errorf("after start: next = %s, want S/0", got)
	}
	c.wrote("a", "S", 1, now) // a stream with a message for slot 1
	if got := next("a"); got != "S/2" {
		t.Errorf("after slot 1: next = %s, want S/2", got)
	}
	if got := next("a"); got != "none" {
		t.Errorf("past the end: next = %s", got)
	}
	if got := next("b"); got != "T/0" {
		t.Errorf("another connection: next = %s, want T/0", got)
	}
	c.start("a", "S", 3, now)
	c.wrote("a", "U", 0, now) // a stream of another sequence: the cursor is unknown now
	if got := next("a"); got != "none" {
		t.Errorf("after a stream of another sequence: next = %s", got)
	}
	c.start("a", "S", 3, now)
	now = now.Add(cursorIdle + time.Second)
	if got := next("a"); got != "none" {
		t.Errorf("after %v idle: next = %s", cursorIdle, got)
	}
	for i := range maxBlobCursors + 10 {
		c.start(fmt.Sprint(i), "S", 1, now.Add(time.Duration(i)))
	}
	if len(c.m) > maxBlobCursors {
		t.Errorf("%d cursors kept, the bound is %d", len(c.m), maxBlobCursors)
	}
	if got := next(fmt.Sprint(maxBlobCursors + 9)); got != "S/0" {
		t.Errorf("the newest cursor was evicted: next = %s", got)
	}
}
