package store

import (
	"fmt"
	"time"

	"github.com/tbhub/tbhub/schemas/writehint"
)

// MaxRequestIDBytes bounds CreateRequest.ID.
const MaxRequestIDBytes = writehint.MaxRequestIDBytes

// CreateRequest names one experiment creation a client may retry
// (Writer.CreateExperimentOnce).
type CreateRequest struct {
	// ID is chosen by the client, unique among its user's requests: 1 to
	// MaxRequestIDBytes printable ASCII bytes. Two users' equal IDs are
	// independent.
	ID string
	// Now is the time of the attempt: a record that expires at or before
	// it is forgotten.
	Now time.Time
	// Expire is until when a retry returns the same experiment; after
	// Now.
	Expire time.Time
}

// Validate reports, wrapping ErrInvalidArgument, an ID that is empty, too
// long or not printable ASCII, or an Expire not after Now.
func (r CreateRequest) Validate() error {
	if err := ValidateRequestID(r.ID); err != nil {
		return err
	}
	if !r.Expire.After(r.Now) {
		return fmt.Errorf("create request %q expires at %v, not after %v: %w", r.ID, r.Expire, r.Now, ErrInvalidArgument)
	}
	return nil
}

// ValidateRequestID reports, wrapping ErrInvalidArgument, a request ID
// that is empty, longer than MaxRequestIDBytes or not printable ASCII
// without spaces (package writehint, whose metadata carries it).
func ValidateRequestID(id string) error {
	if !writehint.ValidRequestID(id) {
		return fmt.Errorf("request id of %d bytes: want 1 to %d printable ASCII bytes, no spaces: %w", len(id), MaxRequestIDBytes, ErrInvalidArgument)
	}
	return nil
}
