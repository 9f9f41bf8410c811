package upload

import (
	"errors"
	"sync"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/tbhub/tbhub/uploader/internal/state"
)

// rateLimit is a per-user token bucket like tbhub's (limits.RequestsPerSecond
// and Burst): each call takes a token, and one without a token is refused
// RESOURCE_EXHAUSTED with a RetryInfo saying when the next token comes.
type rateLimit struct {
	mu      sync.Mutex
	every   time.Duration // a token per every
	burst   float64
	tokens  float64
	last    time.Time
	refused int
}

func (r *rateLimit) take(c call) error {
	if c.method == "WriteBlob" && !c.first {
		return nil // a stream's later messages are the same request
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	now := time.Now()
	if r.last.IsZero() {
		r.tokens = r.burst
	} else {
		r.tokens = min(r.burst, r.tokens+float64(now.Sub(r.last))/float64(r.every))
	}
	r.last = now
	if r.tokens < 1 {
		r.refused++
		wait := time.Duration((1 - r.tokens) * float64(r.every))
		st, _ := status.New(codes.ResourceExhausted, "rate limit exceeded").WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(wait)})
		return st.Err()
	}
	r.tokens--
	return nil
}

// A logdir of many small images, uploaded to a server that advertises the
// interval its per-user rate allows: tbup paces every request to it (two per
// image: the sequence, then the blob) and is never refused.
func TestUploadPacedToTheAdvertisedRateIsNeverRefused(t *testing.T) {
	m := newMemLogdir()
	w := m.file(t, "train", "events.out.tfevents.1")
	for step := range 80 {
		w.image("digits", int64(step), image(64, step))
	}
	fake, writer := newFakeServer(t)
	limit := &rateLimit{every: 4 * time.Millisecond, burst: 20} // tbhub by default: 2 ms (500/s), burst 1000
	fake.fault = limit.take
	cfg := newConfig(m, writer, state.New("", m.String()), nil)
	cfg.Limits.MinBlobInterval = limit.every // what the server advertises: 1 / its rate
	cfg.InFlight = 8
	if err := New(cfg).Run(t.Context()); err != nil {
		t.Fatal(err)
	}
	if limit.refused > 0 {
		t.Errorf("%d requests refused by the rate limit; want none when paced to it", limit.refused)
	}
	if n := fake.count("WriteBlob"); n < 80 {
		t.Errorf("%d blobs written, want 80", n)
	}
}

// A refusal carrying RetryInfo is retried no sooner than it says (not after
// the retry policy's first backoff, 1 ms here), and the upload completes.
func TestUploadWaitsAsTheRateLimitSays(t *testing.T) {
	m := newMemLogdir()
	w := m.file(t, "train", "events.out.tfevents.1")
	w.image("digits", 1, image(64, 1))
	fake, writer := newFakeServer(t)
	const told = 150 * time.Millisecond
	var mu sync.Mutex
	var refusedAt, retriedAt time.Time
	fake.fault = func(c call) error {
		if c.method != "GetOrCreateBlobSequence" {
			return nil
		}
		mu.Lock()
		defer mu.Unlock()
		if refusedAt.IsZero() {
			refusedAt = time.Now()
			st, _ := status.New(codes.ResourceExhausted, "rate limit exceeded").WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(told)})
			return st.Err()
		}
		if retriedAt.IsZero() {
			retriedAt = time.Now()
		}
		return nil
	}
	cfg := newConfig(m, writer, state.New("", m.String()), nil)
	if err := New(cfg).Run(t.Context()); err != nil {
		t.Fatal(err)
	}
	if retriedAt.IsZero() {
		t.Fatal(errors.New("the refused request was not retried"))
	}
	if d := retriedAt.Sub(refusedAt); d < told {
		t.Errorf("retried %v after the refusal; the server said to wait %v", d, told)
	}
}
