// Package rpcerr is where errors become gRPC statuses: ToStatus is the one
// mapping from the store's and blob store's sentinel errors to codes, and
// the one place that decides what text a client sees. Handlers return
// either an error made here (New, BadPoints), which is meant for the
// client, or any wrapped internal error, which reaches the client only as
// its code and a fixed message; the internal text goes to the log.
//
// Retryable codes (Unavailable, Aborted, ResourceExhausted) are kept apart
// from permanent ones (InvalidArgument, FailedPrecondition, NotFound), so
// an uploader's retry policy does the right thing.
package rpcerr

import (
	"context"
	"errors"
	"fmt"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/tbhub/tbhub/services/internal/storage/blob"
	"github.com/tbhub/tbhub/services/internal/storage/store"
)

// New returns an error for the client with code c and a message that is
// shown as is.
func New(c codes.Code, format string, args ...any) error {
	return status.Errorf(c, format, args...)
}

// Throttled returns a ResourceExhausted error for the client, carrying
// a google.rpc.RetryInfo detail that says when to retry (HTTP front ends
// turn it into Retry-After).
func Throttled(retryAfter time.Duration, format string, args ...any) error {
	st := status.Newf(codes.ResourceExhausted, format, args...)
	if withDetails, err := st.WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(retryAfter)}); err == nil {
		st = withDetails
	}
	return st.Err()
}

// Violation is one rejected item of a request: where it is and why.
type Violation struct {
	Field  string // e.g. runs[0].tags[2].points[7]
	Reason string // e.g. `run "train" tag "loss" step 12: wall_time: seconds out of range`
}

// BadPoints returns an InvalidArgument error listing every violation in a
// google.rpc.BadRequest detail (the message names the first few too), for
// requests whose other items were accepted.
func BadPoints(summary string, vs []Violation) error {
	msg := fmt.Sprintf("%s: %d rejected", summary, len(vs))
	for i, v := range vs {
		if i == 3 {
			msg += "; ..."
			break
		}
		msg += "; " + v.Reason
	}
	st := status.New(codes.InvalidArgument, msg)
	br := &errdetails.BadRequest{}
	for _, v := range vs {
		br.FieldViolations = append(br.FieldViolations, &errdetails.BadRequest_FieldViolation{Field: v.Field, Description: v.Reason})
	}
	if withDetails, err := st.WithDetails(br); err == nil {
		st = withDetails
	}
	return st.Err()
}

// ToStatus translates err into a status error. Errors that already carry
// a status (made by New, BadPoints or gRPC itself) pass unchanged; the
// sentinels of package store and blob get their code and a fixed message;
// anything else is Internal. The second result reports whether err was
// internal (unexpected), which the caller should log.
func ToStatus(err error) (error, bool) {
	if err == nil {
		return nil, false
	}
	if s, ok := status.FromError(err); ok {
		if s.Code() == codes.Unknown || s.Code() == codes.Internal {
			return status.Error(s.Code(), "internal error"), true
		}
		return s.Err(), false
	}
	// A refused quota says which and by how much: its text is numbers
	// the caller gave or owns, nothing internal.
	if q := (*store.QuotaError)(nil); errors.As(err, &q) {
		return status.Error(codes.ResourceExhausted, q.Error()), false
	}
	switch {
	case errors.Is(err, context.Canceled):
		return status.Error(codes.Canceled, "call canceled"), false
	case errors.Is(err, context.DeadlineExceeded):
		return status.Error(codes.DeadlineExceeded, "deadline exceeded"), false
	case errors.Is(err, store.ErrNotFound), errors.Is(err, blob.ErrNotFound):
		return status.Error(codes.NotFound, "not found"), false
	case errors.Is(err, store.ErrAlreadyExists):
		return status.Error(codes.AlreadyExists, "already exists"), false
	case errors.Is(err, store.ErrInvalidArgument):
		return status.Error(codes.InvalidArgument, "invalid argument"), false
	case errors.Is(err, store.ErrFailedPrecondition):
		return status.Error(codes.FailedPrecondition, "request conflicts with stored data"), false
	case errors.Is(err, store.ErrConflict), errors.Is(err, blob.ErrPrecondition):
		// Another writer changed the row or object first: read and retry.
		return status.Error(codes.Aborted, "changed by another writer; read it again and retry"), false
	case errors.Is(err, blob.ErrBusy):
		return status.Error(codes.ResourceExhausted, "the server is receiving as many blob uploads as its memory allows; retry shortly"), false
	case errors.Is(err, store.ErrQuotaExceeded):
		return status.Error(codes.ResourceExhausted, "quota exceeded"), false
	case errors.Is(err, store.ErrUnavailable):
		return status.Error(codes.Unavailable, "temporarily unavailable; retry"), false
	case errors.Is(err, store.ErrDiskFull): // also blob.ErrDiskFull
		// Retryable: writes work again once space is freed. Logged, so
		// that the operator learns of it.
		return status.Error(codes.Unavailable, "the server's disk is full; retry later"), true
	case errors.Is(err, blob.ErrChecksum):
		return status.Error(codes.DataLoss, "stored data failed its checksum"), true
	}
	return status.Error(codes.Internal, "internal error"), true
}
