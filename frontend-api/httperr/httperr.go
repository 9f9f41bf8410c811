// Package httperr is the one mapping from the services' gRPC status codes
// to HTTP statuses, for every HTTP handler of the frontend (the API in
// httpapi, the browser sign-in in session): a status means the same
// wherever a browser or a script meets it.
package httperr

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Status maps a gRPC code to an HTTP status: INVALID_ARGUMENT,
// OUT_OF_RANGE, FAILED_PRECONDITION 400; UNAUTHENTICATED 401;
// PERMISSION_DENIED 403; NOT_FOUND 404; ALREADY_EXISTS, ABORTED 409;
// RESOURCE_EXHAUSTED 429; UNIMPLEMENTED 501; UNAVAILABLE 503;
// DEADLINE_EXCEEDED 504; CANCELED 499 (the client went away); the rest
// 500.
func Status(c codes.Code) int {
	switch c {
	case codes.InvalidArgument, codes.OutOfRange, codes.FailedPrecondition:
		return http.StatusBadRequest
	case codes.Unauthenticated:
		return http.StatusUnauthorized
	case codes.PermissionDenied:
		return http.StatusForbidden
	case codes.NotFound:
		return http.StatusNotFound
	case codes.AlreadyExists, codes.Aborted:
		return http.StatusConflict
	case codes.ResourceExhausted:
		return http.StatusTooManyRequests
	case codes.Unimplemented:
		return http.StatusNotImplemented
	case codes.Unavailable:
		return http.StatusServiceUnavailable
	case codes.DeadlineExceeded:
		return http.StatusGatewayTimeout
	case codes.Canceled:
		return 499
	}
	return http.StatusInternalServerError
}

// Error is an error with the status and text a client sees.
type Error struct {
	Code int
	Msg  string
}

func (e *Error) Error() string { return e.Msg }

// Errorf returns an *Error.
func Errorf(code int, format string, args ...any) error {
	return &Error{Code: code, Msg: fmt.Sprintf(format, args...)}
}

// Of is what a client is told of err: an *Error as it says; a gRPC status
// by Status with the service's message (the services keep their messages
// fit for clients), except that a 500 says only "internal error"; anything
// else 500 "internal error". internal reports a 5xx, whose detail the
// caller logs.
func Of(err error) (code int, msg string, internal bool) {
	code, msg = http.StatusInternalServerError, "internal error"
	var e *Error
	if errors.As(err, &e) {
		code, msg = e.Code, e.Msg
	} else if st, ok := status.FromError(err); ok {
		code, msg = Status(st.Code()), st.Message()
		if code == http.StatusInternalServerError {
			msg = "internal error"
		}
	}
	return code, msg, code >= 500
}

// RetryAfter sets Retry-After (whole seconds, at least 1) on an answer
// to err when err is a status carrying google.rpc.RetryInfo: the
// services' throttles say when to come back (RESOURCE_EXHAUSTED, 429).
func RetryAfter(w http.ResponseWriter, err error) {
	st, ok := status.FromError(err)
	if !ok {
		return
	}
	for _, d := range st.Details() {
		if ri, ok := d.(*errdetails.RetryInfo); ok {
			secs := int64(math.Ceil(ri.GetRetryDelay().AsDuration().Seconds()))
			w.Header().Set("Retry-After", strconv.FormatInt(max(secs, 1), 10))
			return
		}
	}
}

// Write answers code with msg as text, never cached.
func Write(w http.ResponseWriter, code int, msg string) {
	w.Header().Del("Content-Encoding")
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	fmt.Fprintln(w, msg)
}
