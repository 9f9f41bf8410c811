// Package blob stores the large, opaque payloads of an experiment (images,
// audio clips, graphs) in an object store: GCS in production, a local folder
// when tbhub runs embedded.
//
// Objects are immutable once written: Put replaces an object as a whole and
// atomically, so a reader sees either the old bytes or the new bytes, never a
// mix. Every object carries the CRC32C (Castagnoli) of its content, computed
// while it is written; a caller that already knows the checksum passes it in
// and the write fails with ErrChecksum instead of storing damaged bytes. A
// full read recomputes the checksum and fails with ErrChecksum at the end of
// the stream when it differs.
//
// Object keys are slash-separated paths that always begin with the owning
// experiment ("experiments/{eid}/..."), so that one experiment's objects can be
// listed and swept by prefix. ObjectKey builds such keys.
package blob

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"strings"
	"time"
)

// Sentinel errors; backends wrap them, callers test with errors.Is.
var (
	// ErrNotFound: no object has the key.
	ErrNotFound = errors.New("blob: object not found")
	// ErrChecksum: the bytes do not match their CRC32C, on write (against the
	// checksum the caller declared) or on read (against the stored one).
	ErrChecksum = errors.New("blob: CRC32C mismatch")
	// ErrInvalidKey: the key is empty, absolute, or has empty, "." or ".."
	// segments, or otherwise could not name an object safely.
	ErrInvalidKey = errors.New("blob: invalid object key")
)

// CastagnoliTable is the CRC32C polynomial table used for every checksum.
var CastagnoliTable = crc32.MakeTable(crc32.Castagnoli)

// Attrs describes a stored object.
type Attrs struct {
	Key     string
	Size    int64  // bytes of content
	CRC32C  uint32 // Castagnoli checksum of the whole content
	Updated time.Time
}

// PutOptions tunes one Put.
type PutOptions struct {
	// WantCRC32C, when non-nil, is the checksum the caller expects. If the
	// streamed bytes do not match it, Put fails with ErrChecksum and the
	// previous object (if any) stays in place.
	WantCRC32C *uint32
}

// Store is an object store. Implementations are safe for concurrent use.
type Store interface {
	// Put streams r into the object named key until r returns io.EOF,
	// replacing any object with that key once the whole stream is stored.
	// r is never held whole in memory. It returns the new object's attributes.
	Put(ctx context.Context, key string, r io.Reader, opts PutOptions) (Attrs, error)

	// NewRangeReader reads length bytes of the object from offset; length < 0
	// means to the end. Reads past the end are truncated to the end. When the
	// read covers the whole object (offset 0, length < 0 or >= size), the
	// reader checks the content against its CRC32C and returns ErrChecksum
	// instead of io.EOF on a mismatch. A missing object gives ErrNotFound.
	NewRangeReader(ctx context.Context, key string, offset, length int64) (io.ReadCloser, error)

	// Stat returns the object's attributes, or ErrNotFound.
	Stat(ctx context.Context, key string) (Attrs, error)

	// Delete removes the object. Deleting a missing object is not an error,
	// so that sweeps can be retried.
	Delete(ctx context.Context, key string) error

	// List calls fn for every object whose key starts with prefix, in
	// lexicographic key order. An error from fn stops the listing and is
	// returned.
	List(ctx context.Context, prefix string, fn func(Attrs) error) error

	// DeletePrefix removes every object whose key starts with prefix. The
	// prefix must be non-empty so that a bug cannot empty the whole store.
	DeletePrefix(ctx context.Context, prefix string) error
}

// ExperimentPrefix is the key prefix under which all of an experiment's
// objects live, ending in a slash.
func ExperimentPrefix(experimentID string) string {
	return "experiments/" + experimentID + "/"
}

// ObjectKey names the object holding one blob of a blob sequence:
// experiments/{eid}/runs/{run}/tags/{tag}/steps/{step}/{index}. Run and tag
// names may contain any character, so they are escaped with escapeSegment;
// the result always passes ValidateKey.
func ObjectKey(experimentID, run, tag string, step int64, index int64) string {
	return fmt.Sprintf("%sruns/%s/tags/%s/steps/%d/%d",
		ExperimentPrefix(experimentID), escapeSegment(run), escapeSegment(tag), step, index)
}

// escapeSegment turns an arbitrary string into one safe path segment: bytes
// outside [A-Za-z0-9_-] (including '.', '/' and '%') become %XX, and an empty
// string becomes "%". It is injective, so distinct names never collide.
func escapeSegment(s string) string {
	if s == "" {
		return "%"
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "%%%02X", c)
	}
	return b.String()
}

// ValidateKey reports ErrInvalidKey unless key is a relative slash-separated
// path of non-empty segments, none of which is "." or "..", or begins with a
// dot (backends keep their own bookkeeping under dot-names), and which holds
// no backslash or NUL byte.
func ValidateKey(key string) error {
	if key == "" || len(key) > 1024 {
		return fmt.Errorf("%w: %q", ErrInvalidKey, key)
	}
	if strings.ContainsAny(key, "\\\x00") {
		return fmt.Errorf("%w: %q", ErrInvalidKey, key)
	}
	for seg := range strings.SplitSeq(key, "/") {
		if seg == "" || seg[0] == '.' {
			return fmt.Errorf("%w: %q", ErrInvalidKey, key)
		}
	}
	return nil
}

// ChecksumReader wraps the full content of an object and, at io.EOF, compares
// the CRC32C of what it read with want. On a mismatch Read returns
// ErrChecksum instead of io.EOF. Backends use it to check full reads.
type ChecksumReader struct {
	r    io.Reader
	want uint32
	crc  uint32
	err  error
}

// NewChecksumReader returns a reader that checks r against want at EOF.
func NewChecksumReader(r io.Reader, want uint32) *ChecksumReader {
	return &ChecksumReader{r: r, want: want}
}

func (c *ChecksumReader) Read(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	n, err := c.r.Read(p)
	c.crc = crc32.Update(c.crc, CastagnoliTable, p[:n])
	if err == io.EOF && c.crc != c.want {
		err = fmt.Errorf("%w: read %08x, stored %08x", ErrChecksum, c.crc, c.want)
	}
	if err != nil {
		c.err = err
	}
	return n, err
}
