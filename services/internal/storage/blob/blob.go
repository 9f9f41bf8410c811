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
// listed and swept by prefix. ObjectKey builds such keys; they never hold a
// user-chosen name (docs/object-layout.md).
package blob

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/tbhub/tbhub/services/internal/storage/store"
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
	// ErrPrecondition: a conditional Put found the object at another
	// generation than the one it was told to replace (or an object where
	// it was told there was none). Nothing was written.
	ErrPrecondition = errors.New("blob: the object is not at the expected generation")
	// ErrBusy: the store is writing as many bytes at once as the memory
	// it may buffer for writes allows; nothing was written, and the
	// caller may retry shortly.
	ErrBusy = errors.New("blob: the upload buffers are all in use")
	// ErrDiskFull: the object could not be written for want of space. It
	// is store.ErrDiskFull, so that one test covers both stores.
	ErrDiskFull = store.ErrDiskFull
)

// CastagnoliTable is the CRC32C polynomial table used for every checksum.
var CastagnoliTable = crc32.MakeTable(crc32.Castagnoli)

// Attrs describes a stored object.
type Attrs struct {
	Key     string
	Size    int64  // bytes of content
	CRC32C  uint32 // Castagnoli checksum of the whole content
	Updated time.Time
	// Generation names this version of the object: every Put that commits
	// gives the key a new one, never 0 (NoObject). Conditional writes and
	// deletes compare it.
	Generation int64
}

// NoObject is the generation a conditional Put gives to say that no
// object may exist under the key.
const NoObject int64 = 0

// PutOptions tunes one Put.
type PutOptions struct {
	// WantCRC32C, when non-nil, is the checksum the caller expects. If the
	// streamed bytes do not match it, Put fails with ErrChecksum and the
	// previous object (if any) stays in place.
	WantCRC32C *uint32
	// IfGeneration, when non-nil, makes the Put conditional: it commits
	// only if the key's current object has that generation (NoObject: if
	// there is none), checked atomically with the commit. Otherwise it
	// fails with ErrPrecondition and the object stays as it was.
	IfGeneration *int64
	// Size, when positive, is the object's size as announced by whoever
	// sends it; backends that buffer a write fit their buffer to it. A
	// stream of another length is still stored whole.
	Size int64
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

	// DeleteGeneration removes the object only while it is at the given
	// generation, checked atomically with the removal: a newer object
	// under the key, or none, is left alone, and neither is an error.
	DeleteGeneration(ctx context.Context, key string, generation int64) error

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
//
//	experiments/{eid}/blobs/{series}/{step}/{index}
//
// where {series} is SeriesDigest(run, tag). Run and tag names are chosen by
// users and may hold any character in any number (up to the writer's
// limit), so they never appear in the key: a key is short (at most
// MaxObjectKeyBytes for an experiment ID of up to 64 bytes), bounded, made
// only of [a-z0-9-/] after the experiment, and so safe as a GCS object
// name, a path on any local file system and a URL path segment on the
// emulators. It always passes ValidateKey.
//
// The key is a pure function of (experiment, run, tag, step, index), so a
// rewritten step's blobs go to the same keys. Readers never rebuild keys:
// every blob row records the key its object was written under, which is
// how objects written under the older layout
// (experiments/{eid}/runs/{escaped run}/tags/{escaped tag}/steps/{step}/{index})
// stay readable.
func ObjectKey(experimentID, run, tag string, step int64, index int64) string {
	return ExperimentPrefix(experimentID) + "blobs/" + SeriesDigest(run, tag) +
		"/" + strconv.FormatInt(step, 10) + "/" + strconv.FormatInt(index, 10)
}

// MaxObjectKeyBytes bounds the length of ObjectKey for experiment IDs of up
// to 64 bytes: "experiments/" (12) + ID (64) + "/blobs/" (7) + digest (64) +
// two signed 64-bit decimals with their slashes (2 × 21).
const MaxObjectKeyBytes = 12 + 64 + 7 + 64 + 2*21

// SeriesDigest is the lower-case hex SHA-256 of run and tag, each preceded
// by its length as a uvarint so that no two (run, tag) pairs share an
// encoding: 64 characters whatever the names.
func SeriesDigest(run, tag string) string {
	h := sha256.New()
	var n [binary.MaxVarintLen64]byte
	h.Write(n[:binary.PutUvarint(n[:], uint64(len(run)))])
	h.Write([]byte(run))
	h.Write(n[:binary.PutUvarint(n[:], uint64(len(tag)))])
	h.Write([]byte(tag))
	return hex.EncodeToString(h.Sum(nil))
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

// RowReader opens the whole object at key and checks it against the size
// and CRC32C a row recorded for it, not only against the checksum the
// object carries: an object replaced under the row (by a writer the row
// does not know of) fails with ErrChecksum at the end of the stream instead
// of passing for the blob the row describes.
func RowReader(ctx context.Context, s Store, key string, size int64, crc uint32) (io.ReadCloser, error) {
	r, err := s.NewRangeReader(ctx, key, 0, -1)
	if err != nil {
		return nil, err
	}
	return &rowReader{ReadCloser: r, check: &ChecksumReader{r: r, want: crc}, size: size}, nil
}

type rowReader struct {
	io.ReadCloser
	check *ChecksumReader
	size  int64
	n     int64
}

func (r *rowReader) Read(p []byte) (int, error) {
	n, err := r.check.Read(p)
	r.n += int64(n)
	if err == io.EOF && r.n != r.size {
		err = fmt.Errorf("%w: read %d bytes, the row says %d", ErrChecksum, r.n, r.size)
		r.check.err = err
	}
	return n, err
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
