package upload

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	servicepb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/service"
)

// TestSenderRetriesThenFailsForGood: UNAVAILABLE is retried until the call
// succeeds; PERMISSION_DENIED stops every request and is the sender's error.
func TestSenderRetriesThenFailsForGood(t *testing.T) {
	srv, client := newFakeServer(t)
	var calls atomic.Int64
	srv.fault = func(c call) error {
		switch n := calls.Add(1); {
		case n <= 2:
			return status.Error(codes.Unavailable, "restarting")
		case n == 4:
			return status.Error(codes.PermissionDenied, "token revoked")
		}
		return nil
	}
	prog := &Progress{}
	s := newSender(context.Background(), 1, testRetry, prog)
	write := func(ctx context.Context) error {
		_, err := client.WriteScalar(ctx, &servicepb.WriteScalarRequest{})
		return err
	}
	results := make(chan error, 3)
	for range 3 {
		s.start(func(ctx context.Context) error { return s.call(ctx, write) }, func(err error) { results <- err })
	}
	s.wait(context.Background())
	var ok, denied, stopped int
	for range 3 {
		switch err := <-results; {
		case err == nil:
			ok++
		case status.Code(err) == codes.PermissionDenied:
			denied++
		default:
			stopped++
		}
	}
	if ok != 1 || denied != 1 || stopped != 1 {
		t.Errorf("%d succeeded, %d denied, %d stopped; want one each (the first after 2 retries)", ok, denied, stopped)
	}
	if prog.Retries.Load() != 2 {
		t.Errorf("%d retries, want 2", prog.Retries.Load())
	}
	if status.Code(s.err()) != codes.PermissionDenied {
		t.Errorf("sender error %v", s.err())
	}
}

// TestSenderRejectedPointsGoOn: INVALID_ARGUMENT with a BadRequest is counted
// per violation and does not stop the upload.
func TestSenderRejectedPointsGoOn(t *testing.T) {
	st, _ := status.New(codes.InvalidArgument, "bad points").WithDetails(&errdetails.BadRequest{FieldViolations: []*errdetails.BadRequest_FieldViolation{
		{Field: "runs[0].tags[0].points[1]", Description: `run "a" tag "b" step 1: no wall time`},
		{Field: "runs[0].tags[0].points[2]", Description: `run "a" tag "b" step 2: no wall time`},
	}})
	prog := &Progress{}
	s := newSender(context.Background(), 1, testRetry, prog)
	if !s.rejected(st.Err()) || prog.Rejected.Load() != 2 {
		t.Errorf("rejected: %d counted, want 2", prog.Rejected.Load())
	}
	if s.rejected(status.Error(codes.Unavailable, "x")) || s.rejected(errors.New("x")) {
		t.Error("a retryable or non-gRPC error counted as a rejection")
	}
	if s.err() != nil {
		t.Errorf("rejections failed the sender: %v", s.err())
	}
}

// TestPacerSpacesRequests: requests of one kind leave at least the interval
// apart, even when asked for at once.
func TestPacerSpacesRequests(t *testing.T) {
	p := pacer{interval: 20 * time.Millisecond}
	prog := &Progress{}
	times := make(chan time.Time, 4)
	for range 4 {
		go func() { p.wait(prog); times <- time.Now() }()
	}
	var got []time.Time
	for range 4 {
		got = append(got, <-times)
	}
	first, last := got[0], got[0]
	for _, g := range got {
		if g.Before(first) {
			first = g
		}
		if g.After(last) {
			last = g
		}
	}
	if d := last.Sub(first); d < 3*p.interval {
		t.Errorf("4 paced requests within %v, want at least %v", d, 3*p.interval)
	}
}

// While a call waits for a server it cannot reach, the progress says so with
// the address; once the call goes through, it says what it said before.
func TestSenderSaysWhatItWaitsFor(t *testing.T) {
	srv, client := newFakeServer(t)
	prog := &Progress{}
	prog.setActivity("sending")
	var calls atomic.Int64
	var during atomic.Value
	srv.fault = func(c call) error {
		if calls.Add(1) == 1 {
			return status.Error(codes.Unavailable, `cannot reach the server at 10.0.0.1:443 (connection error: desc = "refused")`)
		}
		during.Store(prog.activity.Load())
		return nil
	}
	s := newSender(context.Background(), 1, testRetry, prog)
	done := make(chan error, 1)
	s.start(func(ctx context.Context) error {
		return s.call(ctx, func(ctx context.Context) error {
			_, err := client.WriteScalar(ctx, &servicepb.WriteScalarRequest{})
			return err
		})
	}, func(err error) { done <- err })
	s.wait(context.Background())
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if d, _ := during.Load().(string); !strings.HasPrefix(d, "cannot reach the server at 10.0.0.1:443, retrying in ") {
		t.Errorf("activity while retrying: %q", d)
	}
	if a := prog.activity.Load(); a != "sending" {
		t.Errorf("activity after: %q, want %q", a, "sending")
	}
}
