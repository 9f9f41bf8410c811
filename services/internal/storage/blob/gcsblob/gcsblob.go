// Package gcsblob is a blob.Store on a Google Cloud Storage bucket.
//
// Objects are written with resumable uploads in chunks (ChunkSize bytes are
// buffered per writer, never the whole object) and GCS itself stores and
// serves their CRC32C. When the caller declares a checksum it is sent with the
// upload and the upload is abandoned, unfinalized, if the streamed bytes do not
// match. Full reads are checked against the object's CRC32C.
//
// The Go client honours STORAGE_EMULATOR_HOST, so the same code runs against
// fake-gcs-server in tests and locally.
package gcsblob

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net/http"
	"strings"
	"time"

	"cloud.google.com/go/storage"
	"golang.org/x/sync/semaphore"
	"google.golang.org/api/googleapi"
	"google.golang.org/api/iterator"

	"github.com/tbhub/tbhub/services/internal/storage/blob"
)

// Options configures a Store.
type Options struct {
	// Prefix is prepended to every key (e.g. "tbhub/"), so one bucket can
	// hold several deployments. Empty means the bucket root.
	Prefix string
	// ChunkSize is the largest upload chunk, and so the most memory one
	// Put buffers; a Put that announces a smaller size (PutOptions.Size)
	// buffers only that, rounded up to the 256 KiB the API counts in.
	// Zero means the client default (16 MiB).
	ChunkSize int
	// MaxBufferBytes bounds the memory all Puts of the Store buffer at
	// once: each holds its chunk size (ChunkSize, or less for a small
	// announced size) from start to end, and one that would pass the bound
	// fails at once with blob.ErrBusy. Zero means unbounded.
	MaxBufferBytes int64
}

// defaultChunkSize is the client's chunk size when Options.ChunkSize is 0.
const defaultChunkSize = 16 << 20

// chunkQuantum is the unit of a resumable upload's chunks.
const chunkQuantum = 256 << 10

// chunkSize is the chunk (and buffer) of one Put: the configured chunk,
// or the announced size rounded up to chunkQuantum when that is smaller,
// so that a small blob goes up in one request from a buffer of its size.
func chunkSize(configured int, announced int64) int {
	if configured <= 0 {
		configured = defaultChunkSize
	}
	if announced <= 0 || announced >= int64(configured) {
		return configured
	}
	return int((announced + chunkQuantum - 1) / chunkQuantum * chunkQuantum)
}

// Store is a blob.Store on one bucket.
type Store struct {
	bucket  *storage.BucketHandle
	opts    Options
	buffers *semaphore.Weighted // of Options.MaxBufferBytes; nil if unbounded
}

var _ blob.Store = (*Store)(nil)

// New returns a Store on bucket using client; the caller owns client.
func New(client *storage.Client, bucket string, opts Options) *Store {
	s := &Store{bucket: client.Bucket(bucket), opts: opts}
	if opts.MaxBufferBytes > 0 {
		s.buffers = semaphore.NewWeighted(opts.MaxBufferBytes)
	}
	return s
}

// NewClient makes a storage client with application default credentials, or
// an unauthenticated one against the emulator named by STORAGE_EMULATOR_HOST.
func NewClient(ctx context.Context) (*storage.Client, error) {
	c, err := storage.NewClient(ctx)
	if err != nil {
		return nil, fmt.Errorf("gcsblob.NewClient: %w", err)
	}
	return c, nil
}

// translate maps client errors onto the blob sentinels.
func translate(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, storage.ErrObjectNotExist):
		return fmt.Errorf("%w: %v", blob.ErrNotFound, err)
	case isPreconditionFailed(err):
		return fmt.Errorf("%w: %v", blob.ErrPrecondition, err)
	case strings.Contains(err.Error(), "bad CRC on read"):
		// The client checks full reads itself but has no sentinel for it.
		return fmt.Errorf("%w: %v", blob.ErrChecksum, err)
	}
	return err
}

// isPreconditionFailed reports GCS's answer to a write or delete whose
// generation condition did not hold (HTTP 412).
func isPreconditionFailed(err error) bool {
	var ge *googleapi.Error
	return errors.As(err, &ge) && ge.Code == http.StatusPreconditionFailed
}

// object is the handle of key, conditional on generation *ifGen if set.
func (s *Store) object(key string, ifGen *int64) *storage.ObjectHandle {
	obj := s.bucket.Object(s.opts.Prefix + key)
	switch {
	case ifGen == nil:
	case *ifGen == blob.NoObject:
		obj = obj.If(storage.Conditions{DoesNotExist: true})
	default:
		obj = obj.If(storage.Conditions{GenerationMatch: *ifGen})
	}
	return obj
}

// Put implements blob.Store.
func (s *Store) Put(ctx context.Context, key string, r io.Reader, opts blob.PutOptions) (blob.Attrs, error) {
	if err := blob.ValidateKey(key); err != nil {
		return blob.Attrs{}, err
	}
	// Cancelling the writer's context before Close abandons the upload
	// without finalizing the object; that is how a bad stream is dropped.
	chunk := chunkSize(s.opts.ChunkSize, opts.Size)
	if s.buffers != nil {
		n := min(int64(chunk), s.opts.MaxBufferBytes)
		if !s.buffers.TryAcquire(n) {
			return blob.Attrs{}, fmt.Errorf("gcsblob.Put %s: %w: %d bytes buffered at most, a %d-byte chunk more would pass it",
				key, blob.ErrBusy, s.opts.MaxBufferBytes, n)
		}
		defer s.buffers.Release(n)
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w := s.object(key, opts.IfGeneration).NewWriter(wctx)
	w.ChunkSize = chunk
	if opts.WantCRC32C != nil {
		w.CRC32C = *opts.WantCRC32C
		w.SendCRC32C = true
	}
	h := crc32.New(blob.CastagnoliTable)
	size, err := io.Copy(io.MultiWriter(w, h), r)
	if err != nil {
		cancel()
		_ = w.Close()
		return blob.Attrs{}, fmt.Errorf("gcsblob.Put %s: %w", key, err)
	}
	crc := h.Sum32()
	if opts.WantCRC32C != nil && *opts.WantCRC32C != crc {
		cancel()
		_ = w.Close()
		return blob.Attrs{}, fmt.Errorf("gcsblob.Put %s: %w: got %08x, want %08x", key, blob.ErrChecksum, crc, *opts.WantCRC32C)
	}
	if err := w.Close(); err != nil {
		return blob.Attrs{}, fmt.Errorf("gcsblob.Put %s: %w", key, translate(err))
	}
	a := w.Attrs()
	if a.CRC32C != crc {
		// The bytes changed between us and the bucket. Remove exactly the
		// generation we made, never a newer concurrent write.
		_ = s.bucket.Object(s.opts.Prefix + key).If(storage.Conditions{GenerationMatch: a.Generation}).Delete(ctx)
		return blob.Attrs{}, fmt.Errorf("gcsblob.Put %s: %w: sent %08x, stored %08x", key, blob.ErrChecksum, crc, a.CRC32C)
	}
	return blob.Attrs{Key: key, Size: size, CRC32C: crc, Updated: a.Updated, Generation: a.Generation}, nil
}

// NewRangeReader implements blob.Store.
func (s *Store) NewRangeReader(ctx context.Context, key string, offset, length int64) (io.ReadCloser, error) {
	if err := blob.ValidateKey(key); err != nil {
		return nil, err
	}
	if offset < 0 {
		return nil, fmt.Errorf("gcsblob.NewRangeReader %s: negative offset %d", key, offset)
	}
	obj := s.bucket.Object(s.opts.Prefix + key)
	// Size and checksum come from a metadata call, and the read is pinned
	// to the generation they describe. If that generation is replaced in
	// between, the pinned read finds nothing and we look again.
	var err error
	for attempt := range 100 {
		// Back off after the first tries: writers replacing the object
		// faster than a metadata call and a read take (the acceptance
		// suite's concurrent writers under the race detector) would
		// otherwise starve the reader.
		if attempt >= 10 {
			select {
			case <-ctx.Done():
				return nil, fmt.Errorf("gcsblob.NewRangeReader %s: %w", key, ctx.Err())
			case <-time.After(time.Duration(attempt-9) * time.Millisecond):
			}
		}
		var attrs *storage.ObjectAttrs
		attrs, err = obj.Attrs(ctx)
		if err != nil {
			return nil, fmt.Errorf("gcsblob.NewRangeReader %s: %w", key, translate(err))
		}
		off := min(offset, attrs.Size)
		n := length
		if n < 0 || off+n > attrs.Size {
			n = attrs.Size - off
		}
		if n == 0 {
			return io.NopCloser(strings.NewReader("")), nil
		}
		var r *storage.Reader
		r, err = obj.Generation(attrs.Generation).NewRangeReader(ctx, off, n)
		if errors.Is(err, storage.ErrObjectNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("gcsblob.NewRangeReader %s: %w", key, translate(err))
		}
		rc := &reader{r: r, key: key}
		if off == 0 && n == attrs.Size {
			rc.check = blob.NewChecksumReader(r, attrs.CRC32C)
		}
		return rc, nil
	}
	return nil, fmt.Errorf("gcsblob.NewRangeReader %s: replaced during every attempt to read it: %w", key, translate(err))
}

type reader struct {
	r     *storage.Reader
	check *blob.ChecksumReader
	key   string
}

func (r *reader) Read(p []byte) (int, error) {
	var n int
	var err error
	if r.check != nil {
		n, err = r.check.Read(p)
	} else {
		n, err = r.r.Read(p)
	}
	if err != nil && err != io.EOF {
		err = fmt.Errorf("gcsblob: reading %s: %w", r.key, translate(err))
	}
	return n, err
}

func (r *reader) Close() error { return r.r.Close() }

// Stat implements blob.Store.
func (s *Store) Stat(ctx context.Context, key string) (blob.Attrs, error) {
	if err := blob.ValidateKey(key); err != nil {
		return blob.Attrs{}, err
	}
	a, err := s.bucket.Object(s.opts.Prefix + key).Attrs(ctx)
	if err != nil {
		return blob.Attrs{}, fmt.Errorf("gcsblob.Stat %s: %w", key, translate(err))
	}
	return blob.Attrs{Key: key, Size: a.Size, CRC32C: a.CRC32C, Updated: a.Updated, Generation: a.Generation}, nil
}

// DeleteGeneration implements blob.Store by deleting that one generation:
// a live object of another generation stays (GCS answers a missing
// generation as a missing object). On a versioned bucket the generation
// is removed for good, not kept as a noncurrent version, and a
// noncurrent one of that generation is removed too; Delete, which
// archives, is what purges of deleted experiments use.
func (s *Store) DeleteGeneration(ctx context.Context, key string, generation int64) error {
	if err := blob.ValidateKey(key); err != nil {
		return err
	}
	err := s.bucket.Object(s.opts.Prefix + key).Generation(generation).Delete(ctx)
	if err != nil && !errors.Is(err, storage.ErrObjectNotExist) && !isPreconditionFailed(err) {
		return fmt.Errorf("gcsblob.DeleteGeneration %s: %w", key, err)
	}
	return nil
}

// Delete implements blob.Store.
func (s *Store) Delete(ctx context.Context, key string) error {
	if err := blob.ValidateKey(key); err != nil {
		return err
	}
	err := s.bucket.Object(s.opts.Prefix + key).Delete(ctx)
	if err != nil && !errors.Is(err, storage.ErrObjectNotExist) {
		return fmt.Errorf("gcsblob.Delete %s: %w", key, err)
	}
	return nil
}

// List implements blob.Store.
func (s *Store) List(ctx context.Context, prefix string, fn func(blob.Attrs) error) error {
	q := &storage.Query{Prefix: s.opts.Prefix + prefix}
	if err := q.SetAttrSelection([]string{"Name", "Size", "CRC32C", "Updated", "Generation"}); err != nil {
		return fmt.Errorf("gcsblob.List: %w", err)
	}
	it := s.bucket.Objects(ctx, q)
	for {
		a, err := it.Next()
		if err == iterator.Done {
			return nil
		}
		if err != nil {
			return fmt.Errorf("gcsblob.List %q: %w", prefix, err)
		}
		key := strings.TrimPrefix(a.Name, s.opts.Prefix)
		if err := fn(blob.Attrs{Key: key, Size: a.Size, CRC32C: a.CRC32C, Updated: a.Updated, Generation: a.Generation}); err != nil {
			return err
		}
	}
}

// DeletePrefix implements blob.Store.
func (s *Store) DeletePrefix(ctx context.Context, prefix string) error {
	if prefix == "" {
		return fmt.Errorf("gcsblob.DeletePrefix: %w: empty prefix", blob.ErrInvalidKey)
	}
	// GCS pages listings by name, so deleting behind the cursor is safe.
	return s.List(ctx, prefix, func(a blob.Attrs) error { return s.Delete(ctx, a.Key) })
}
