package graphs

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/tbhub/tbhub/frontend-api/httpapi/internal/route"
)

// answers keeps answers and client errors (not failed calls), drops the
// oldest past MaxCacheBytes, and a caller waiting for a turn leaves when
// its request ends.
func TestAnswers(t *testing.T) {
	a := newAnswers(Limits{MaxCacheBytes: 10, MaxConversions: 1})
	ctx := context.Background()
	computed := map[string]int{}
	get := func(key string, body []byte, err error) ([]byte, error) {
		return a.get(ctx, key, func() ([]byte, error) { computed[key]++; return body, err })
	}
	if b, err := get("a", []byte("12345"), nil); err != nil || string(b) != "12345" {
		t.Fatalf("a: %q, %v", b, err)
	}
	get("a", nil, errors.New("computed again"))
	if computed["a"] != 1 {
		t.Errorf("a kept answer was computed again")
	}
	tooDeep := route.Errorf(http.StatusRequestEntityTooLarge, "x")
	get("e", nil, tooDeep)
	if _, err := get("e", nil, nil); err != tooDeep || computed["e"] != 1 {
		t.Errorf("a client error was not kept: %v, computed %d times", err, computed["e"])
	}
	failed := status.Error(codes.Unavailable, "down")
	get("f", nil, failed)
	if b, err := get("f", []byte("ok"), nil); err != nil || string(b) != "ok" || computed["f"] != 2 {
		t.Errorf("a failed call was kept: %q, %v, computed %d times", b, err, computed["f"])
	}
	// "a" (6 bytes with its key), "e" (2) and "f" (3) are 11 > 10 bytes:
	// the oldest, "a", went.
	get("a", []byte("12345"), nil)
	if computed["a"] != 2 {
		t.Errorf("the oldest answer was not dropped past MaxCacheBytes (computed %d times)", computed["a"])
	}

	// The one turn is taken: a caller whose request has ended does not wait.
	started, release := make(chan struct{}), make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		a.get(ctx, "slow", func() ([]byte, error) { close(started); <-release; return nil, nil })
	}()
	<-started
	gone, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := a.get(gone, "other", func() ([]byte, error) { return nil, nil }); status.Code(err) != codes.Canceled {
		t.Errorf("waiting for a turn after the request ended: %v, want Canceled", err)
	}
	if _, err := a.get(gone, "slow", func() ([]byte, error) { return nil, nil }); status.Code(err) != codes.Canceled {
		t.Errorf("waiting for another's conversion after the request ended: %v, want Canceled", err)
	}
	close(release)
	<-done
}
