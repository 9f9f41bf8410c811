package rpcerr

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/tbhub/tbhub/services/internal/storage/blob"
	"github.com/tbhub/tbhub/services/internal/storage/store"
)

func TestToStatus(t *testing.T) {
	secret := "sqlitestore.WriteScalars: table scalar_points at /var/lib/x"
	for _, tc := range []struct {
		err      error
		code     codes.Code
		internal bool
	}{
		{fmt.Errorf("%s: %w", secret, store.ErrNotFound), codes.NotFound, false},
		{fmt.Errorf("%s: %w", secret, blob.ErrNotFound), codes.NotFound, false},
		{fmt.Errorf("%s: %w", secret, store.ErrAlreadyExists), codes.AlreadyExists, false},
		{fmt.Errorf("%s: %w", secret, store.ErrInvalidArgument), codes.InvalidArgument, false},
		{fmt.Errorf("%s: %w", secret, store.ErrFailedPrecondition), codes.FailedPrecondition, false},
		{fmt.Errorf("%s: %w", secret, store.ErrUnavailable), codes.Unavailable, false},
		{fmt.Errorf("%s: %w", secret, &store.QuotaError{Quota: store.PointsQuotaName, Limit: 10, Used: 8, Adding: 5}), codes.ResourceExhausted, false},
		{fmt.Errorf("%s: %w", secret, store.ErrQuotaExceeded), codes.ResourceExhausted, false},
		{fmt.Errorf("%s: %w", secret, context.Canceled), codes.Canceled, false},
		{fmt.Errorf("%s: %w", secret, context.DeadlineExceeded), codes.DeadlineExceeded, false},
		{fmt.Errorf("%s: %w", secret, blob.ErrChecksum), codes.DataLoss, true},
		{fmt.Errorf("%s: %w", secret, store.ErrConflict), codes.Aborted, false},
		{fmt.Errorf("%s: %w", secret, blob.ErrPrecondition), codes.Aborted, false},
		{fmt.Errorf("%s: %w", secret, blob.ErrBusy), codes.ResourceExhausted, false},
		{fmt.Errorf("%s: %w", secret, store.ErrDiskFull), codes.Unavailable, true},
		{fmt.Errorf("%s: %w", secret, blob.ErrDiskFull), codes.Unavailable, true},
		{errors.New(secret), codes.Internal, true},
		{status.Error(codes.Internal, secret), codes.Internal, true},
		{New(codes.ResourceExhausted, "quota experiments (10) exceeded"), codes.ResourceExhausted, false},
	} {
		got, internal := ToStatus(tc.err)
		s := status.Convert(got)
		if s.Code() != tc.code || internal != tc.internal {
			t.Errorf("ToStatus(%v) = %v (internal %v), want %v (internal %v)", tc.err, s.Code(), internal, tc.code, tc.internal)
		}
		if strings.Contains(s.Message(), "sqlitestore") {
			t.Errorf("ToStatus(%v) leaks internal text: %q", tc.err, s.Message())
		}
	}
	if got, _ := ToStatus(nil); got != nil {
		t.Errorf("ToStatus(nil) = %v", got)
	}
}

func TestBadPoints(t *testing.T) {
	vs := []Violation{
		{Field: "runs[0].tags[0].points[1]", Reason: `run "a" tag "b" step 3: wall_time out of range`},
		{Field: "runs[1].name", Reason: "run name is not valid UTF-8"},
	}
	s := status.Convert(BadPoints("WriteScalar", vs))
	if s.Code() != codes.InvalidArgument || !strings.Contains(s.Message(), "2 rejected") || !strings.Contains(s.Message(), "step 3") {
		t.Errorf("BadPoints status = %v %q", s.Code(), s.Message())
	}
	var br *errdetails.BadRequest
	for _, d := range s.Details() {
		if b, ok := d.(*errdetails.BadRequest); ok {
			br = b
		}
	}
	if br == nil || len(br.FieldViolations) != 2 || br.FieldViolations[0].Field != vs[0].Field || br.FieldViolations[1].Description != vs[1].Reason {
		t.Errorf("BadRequest detail = %v", br)
	}
}

// A full disk, from SQLite (SQLITE_FULL) or the blob folder (ENOSPC), is
// retryable and says so plainly, without the internal error's text; it is
// logged, for the operator to free space (issue 20 #8).
func TestDiskFullMessage(t *testing.T) {
	got, internal := ToStatus(fmt.Errorf("sqlitestore.WriteScalars: %w: database or disk is full (13)", store.ErrDiskFull))
	s := status.Convert(got)
	if s.Code() != codes.Unavailable || !internal || !strings.Contains(s.Message(), "the server's disk is full") || strings.Contains(s.Message(), "13") {
		t.Errorf("ToStatus(disk full) = %v %q (internal %v), want Unavailable \"the server's disk is full...\"", s.Code(), s.Message(), internal)
	}
}
