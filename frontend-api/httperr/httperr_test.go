package httperr_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/tbhub/tbhub/frontend-api/httperr"
)

func TestOf(t *testing.T) {
	for _, tc := range []struct {
		err  error
		code int
		msg  string
	}{
		{status.Error(codes.NotFound, "experiment not found"), http.StatusNotFound, "experiment not found"},
		{status.Error(codes.DeadlineExceeded, "slow"), http.StatusGatewayTimeout, "slow"},
		{status.Error(codes.Unavailable, "down"), http.StatusServiceUnavailable, "down"},
		{status.Error(codes.Internal, "secret detail"), http.StatusInternalServerError, "internal error"},
		{fmt.Errorf("wrapped: %w", httperr.Errorf(http.StatusBadRequest, "bad %s", "run")), http.StatusBadRequest, "bad run"},
		{errors.New("disk on fire"), http.StatusInternalServerError, "internal error"},
		{context.Canceled, http.StatusInternalServerError, "internal error"},
	} {
		code, msg, internal := httperr.Of(tc.err)
		if code != tc.code || msg != tc.msg || internal != (code >= 500) {
			t.Errorf("Of(%v) = %d %q %v, want %d %q", tc.err, code, msg, internal, tc.code, tc.msg)
		}
	}
}

// A throttled call's RetryInfo becomes Retry-After in whole seconds, at
// least 1; other errors set none.
func TestRetryAfter(t *testing.T) {
	throttled := func(d time.Duration) error {
		st, err := status.New(codes.ResourceExhausted, "slow down").WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(d)})
		if err != nil {
			t.Fatal(err)
		}
		return st.Err()
	}
	for _, tc := range []struct {
		err  error
		want string
	}{
		{throttled(80 * time.Millisecond), "1"},
		{throttled(2500 * time.Millisecond), "3"},
		{status.Error(codes.ResourceExhausted, "quota"), ""},
		{errors.New("plain"), ""},
	} {
		w := httptest.NewRecorder()
		httperr.RetryAfter(w, tc.err)
		if got := w.Header().Get("Retry-After"); got != tc.want {
			t.Errorf("%v: Retry-After %q, want %q", tc.err, got, tc.want)
		}
	}
}
