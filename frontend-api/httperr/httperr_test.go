package httperr_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

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
