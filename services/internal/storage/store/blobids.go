package store

import (
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/tbhub/tbhub/schemas/experimentid"
)

// The upload and export protocols name blob sequences and blobs by opaque
// strings (blob_sequence_id, blob_id). tbhub makes them self-describing:
// the experiment ID, a dot, and the base64url of the rest of the key
// (run, tag, step and, for a blob, index), so the server needs no lookup
// table and the tenancy check can read the experiment straight off the ID.
// A client that forges an ID can only name keys of experiments it is
// checked against like any other request.

// BlobSequenceID returns the ID of the blob sequence at (run, tag, step).
func BlobSequenceID(eid, run, tag string, step int64) string {
	b := appendName(nil, run)
	b = appendName(b, tag)
	b = binary.AppendVarint(b, step)
	return eid + "." + base64.RawURLEncoding.EncodeToString(b)
}

// BlobID returns the ID of one blob.
func BlobID(eid string, ref BlobRef) string {
	b := appendName(nil, ref.Run)
	b = appendName(b, ref.Tag)
	b = binary.AppendVarint(b, ref.Step)
	b = binary.AppendVarint(b, ref.Index)
	return eid + "." + base64.RawURLEncoding.EncodeToString(b)
}

// ParseBlobSequenceID is the inverse of BlobSequenceID; the returned ref
// has Index 0. Errors wrap ErrInvalidArgument.
func ParseBlobSequenceID(id string) (eid string, ref BlobRef, err error) {
	eid, ref, rest, err := parseBlobKey(id)
	if err == nil && len(rest) != 0 {
		err = fmt.Errorf("blob sequence id %q: trailing bytes: %w", id, ErrInvalidArgument)
	}
	if err == nil && BlobSequenceID(eid, ref.Run, ref.Tag, ref.Step) != id {
		err = fmt.Errorf("blob sequence id %q: %w", id, errNotCanonical)
	}
	return eid, ref, err
}

// errNotCanonical refuses an ID that decodes but is not the one its key
// encodes to (line breaks inside the base64, which the decoder skips, or
// over-long varints): one key, one ID, so IDs can be compared as strings.
var errNotCanonical = fmt.Errorf("not in canonical form: %w", ErrInvalidArgument)

// ParseBlobID is the inverse of BlobID. Errors wrap ErrInvalidArgument.
func ParseBlobID(id string) (eid string, ref BlobRef, err error) {
	eid, ref, rest, err := parseBlobKey(id)
	if err != nil {
		return "", BlobRef{}, err
	}
	index, n := binary.Varint(rest)
	if n <= 0 || n != len(rest) || index < 0 {
		return "", BlobRef{}, fmt.Errorf("blob id %q: bad index: %w", id, ErrInvalidArgument)
	}
	ref.Index = index
	if BlobID(eid, ref) != id {
		return "", BlobRef{}, fmt.Errorf("blob id %q: %w", id, errNotCanonical)
	}
	return eid, ref, nil
}

// ExperimentOfBlobKey returns the experiment part of a blob sequence or
// blob ID, without checking the rest.
func ExperimentOfBlobKey(id string) string {
	eid, _ := experimentid.OfBlobKey(id)
	return eid
}

func parseBlobKey(id string) (eid string, ref BlobRef, rest []byte, err error) {
	eid, enc, ok := strings.Cut(id, ".")
	if !ok {
		return "", BlobRef{}, nil, fmt.Errorf("blob key %q: no experiment part: %w", id, ErrInvalidArgument)
	}
	if err := ValidateExperimentID(eid); err != nil {
		return "", BlobRef{}, nil, err
	}
	// Strict decoding still skips CR and LF: one spelling per reference.
	b, err := base64.RawURLEncoding.Strict().DecodeString(enc)
	if err != nil || base64.RawURLEncoding.EncodeToString(b) != enc {
		return "", BlobRef{}, nil, fmt.Errorf("blob key %q: %w", id, ErrInvalidArgument)
	}
	var okRun, okTag bool
	ref.Run, b, okRun = readName(b)
	ref.Tag, b, okTag = readName(b)
	step, n := binary.Varint(b)
	if !okRun || !okTag || n <= 0 {
		return "", BlobRef{}, nil, fmt.Errorf("blob key %q: malformed: %w", id, ErrInvalidArgument)
	}
	ref.Step = step
	return eid, ref, b[n:], nil
}

func appendName(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func readName(b []byte) (string, []byte, bool) {
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)-k) {
		return "", nil, false
	}
	return string(b[k : k+int(n)]), b[k+int(n):], true
}
