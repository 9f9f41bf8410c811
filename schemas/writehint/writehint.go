// Package writehint names what a client of tbhub's write service
// (tensorboard.service.TensorBoardWriterService) may send it beyond
// TensorBoard's protocol. Like package readhint's, the hints travel as
// request metadata, so TensorBoard's messages stay as they are and a
// client that sends none (TensorBoard's own uploader) gets TensorBoard's
// behaviour.
package writehint

import (
	"context"
	"crypto/rand"
	"fmt"

	"google.golang.org/grpc/metadata"
)

// RequestIDKey is CreateExperiment request metadata: an ID the client
// chose for this creation, 1 to MaxRequestIDBytes printable ASCII bytes
// (NewRequestID makes one). A CreateExperiment retried with the same ID by
// the same user, within a day (the server's create request TTL), answers
// the experiment the first attempt created, even if that answer was lost,
// and creates nothing more.
const RequestIDKey = "tbhub-request-id"

// MaxRequestIDBytes bounds a request ID.
const MaxRequestIDBytes = 128

// NewRequestID returns a fresh request ID: 128 random bits, text.
func NewRequestID() string { return rand.Text() }

// WithRequestID returns ctx carrying the RequestIDKey hint to the calls
// made with it.
func WithRequestID(ctx context.Context, id string) context.Context {
	return metadata.AppendToOutgoingContext(ctx, RequestIDKey, id)
}

// RequestID returns the RequestIDKey hint of an incoming call: "" if there
// is none, an error if there is more than one or it is not 1 to
// MaxRequestIDBytes printable ASCII bytes.
func RequestID(ctx context.Context) (string, error) {
	v := metadata.ValueFromIncomingContext(ctx, RequestIDKey)
	if len(v) == 0 {
		return "", nil
	}
	if len(v) > 1 {
		return "", fmt.Errorf("%s: %d values, want one", RequestIDKey, len(v))
	}
	if !ValidRequestID(v[0]) {
		return "", fmt.Errorf("%s of %d bytes: want 1 to %d printable ASCII bytes, no spaces", RequestIDKey, len(v[0]), MaxRequestIDBytes)
	}
	return v[0], nil
}

// ValidRequestID reports whether id is 1 to MaxRequestIDBytes printable
// ASCII bytes, no spaces.
func ValidRequestID(id string) bool {
	if id == "" || len(id) > MaxRequestIDBytes {
		return false
	}
	for i := 0; i < len(id); i++ {
		if id[i] < 0x21 || id[i] > 0x7e {
			return false
		}
	}
	return true
}
