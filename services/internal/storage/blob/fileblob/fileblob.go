// Package fileblob is a blob.Store on a local folder, used when tbhub runs
// embedded on one machine.
//
// Each object is one file at <root>/<key>. The file starts with a 16-byte
// header (the magic "tbhubblb", the content's CRC32C, the object's
// generation) followed by the content, so the checksum travels with the
// bytes and is replaced atomically with them. The generation is a random
// non-zero 32-bit number drawn for each Put (a file written before
// generations has zero there and the generation legacyGeneration): a
// conditional Put or DeleteGeneration that expects an object replaced since
// passes only if its successor drew the same number, a chance of 2^-32.
// Renames and removals are serialized within the process (Store.commit), so
// a condition is checked atomically with the rename or removal it guards;
// two processes must not share one folder. A write goes to a temporary file under
// <root>/.tmp, is fsynced, and is renamed over the final name; the parent
// directory is fsynced after the rename. All file access goes through an
// os.Root, so no key can reach outside the folder even through symlinks, and
// keys are validated with blob.ValidateKey before use.
package fileblob

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/tbhub/tbhub/services/internal/storage/blob"
)

const (
	headerSize = 16
	magic      = "tbhubblb"
	tmpDir     = ".tmp"
	// staleTemp is how old a leftover temporary file (from a crashed write)
	// must be before Open removes it.
	staleTemp = time.Hour
	copyBuf   = 256 << 10
	// legacyGeneration is the generation of a file written before files
	// carried one (its header's last four bytes are zero).
	legacyGeneration int64 = 1 << 32
)

// Store is a blob.Store rooted at one directory.
type Store struct {
	root *os.Root
	// commit serializes renames into place and removals, so that a
	// generation condition holds from its check to the change it guards.
	commit sync.Mutex
	// tempWriter, if set, stands between Put and the temporary file's
	// content writes (tests make it fail as a full disk would).
	tempWriter func(io.Writer) io.Writer
}

var _ blob.Store = (*Store)(nil)

// Open opens (creating if needed) the folder dir as a blob store and removes
// temporary files left by writes that crashed more than an hour ago.
func Open(dir string) (*Store, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("fileblob.Open: %w", err)
	}
	// A folder made by an older release is 0755: closed to others, so
	// the 0644 blobs inside cannot be reached.
	if err := os.Chmod(dir, 0o700); err != nil {
		return nil, fmt.Errorf("fileblob.Open: %w", err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("fileblob.Open: %w", err)
	}
	if err := root.MkdirAll(tmpDir, 0o700); err != nil {
		root.Close()
		return nil, fmt.Errorf("fileblob.Open: %w", err)
	}
	s := &Store{root: root}
	s.removeStaleTemps(time.Now().Add(-staleTemp))
	return s, nil
}

// Close releases the folder.
func (s *Store) Close() error { return s.root.Close() }

func (s *Store) removeStaleTemps(before time.Time) {
	entries, err := fs.ReadDir(s.root.FS(), tmpDir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if info, err := e.Info(); err == nil && info.ModTime().Before(before) {
			_ = s.root.Remove(path.Join(tmpDir, e.Name()))
		}
	}
}

// Put implements blob.Store.
// A file system out of space (or the owner's quota) fails it with
// blob.ErrDiskFull.
func (s *Store) Put(ctx context.Context, key string, r io.Reader, opts blob.PutOptions) (attrs blob.Attrs, err error) {
	if err := blob.ValidateKey(key); err != nil {
		return blob.Attrs{}, err
	}
	defer func() {
		if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
			err = fmt.Errorf("%w: %w", blob.ErrDiskFull, err)
		}
	}()
	var rnd [12]byte
	_, _ = rand.Read(rnd[:])
	tmp := path.Join(tmpDir, hex.EncodeToString(rnd[:]))
	f, err := s.root.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return blob.Attrs{}, fmt.Errorf("fileblob.Put %s: %w", key, err)
	}
	committed := false
	defer func() {
		if !committed {
			f.Close()
			_ = s.root.Remove(tmp)
		}
	}()

	var header [headerSize]byte
	if _, err := f.Write(header[:]); err != nil {
		return blob.Attrs{}, fmt.Errorf("fileblob.Put %s: %w", key, err)
	}
	var content io.Writer = f
	if s.tempWriter != nil {
		content = s.tempWriter(f)
	}
	size, crc, err := copyWithCRC(ctx, content, r)
	if err != nil {
		return blob.Attrs{}, fmt.Errorf("fileblob.Put %s: %w", key, err)
	}
	if opts.WantCRC32C != nil && *opts.WantCRC32C != crc {
		return blob.Attrs{}, fmt.Errorf("fileblob.Put %s: %w: got %08x, want %08x", key, blob.ErrChecksum, crc, *opts.WantCRC32C)
	}
	copy(header[:8], magic)
	binary.BigEndian.PutUint32(header[8:12], crc)
	gen := newGeneration()
	binary.BigEndian.PutUint32(header[12:16], gen)
	if _, err := f.WriteAt(header[:], 0); err != nil {
		return blob.Attrs{}, fmt.Errorf("fileblob.Put %s: %w", key, err)
	}
	if err := f.Sync(); err != nil {
		return blob.Attrs{}, fmt.Errorf("fileblob.Put %s: %w", key, err)
	}
	info, err := f.Stat()
	if err != nil {
		return blob.Attrs{}, fmt.Errorf("fileblob.Put %s: %w", key, err)
	}
	if err := f.Close(); err != nil {
		return blob.Attrs{}, fmt.Errorf("fileblob.Put %s: %w", key, err)
	}
	if err := s.rename(tmp, key, opts.IfGeneration); err != nil {
		return blob.Attrs{}, fmt.Errorf("fileblob.Put %s: %w", key, err)
	}
	committed = true
	return blob.Attrs{Key: key, Size: size, CRC32C: crc, Updated: info.ModTime(), Generation: int64(gen)}, nil
}

// newGeneration draws a random non-zero generation.
func newGeneration() uint32 {
	var b [4]byte
	for {
		_, _ = rand.Read(b[:])
		if g := binary.BigEndian.Uint32(b[:]); g != 0 {
			return g
		}
	}
}

// generation is the generation of the object at key, blob.NoObject if
// there is none. The caller holds s.commit.
func (s *Store) generation(key string) (int64, error) {
	f, attrs, err := s.open(key)
	if errors.Is(err, blob.ErrNotFound) {
		return blob.NoObject, nil
	}
	if err != nil {
		return 0, err
	}
	f.Close()
	return attrs.Generation, nil
}

// rename moves the finished temporary file into place, if the object
// there is at generation *ifGen (when ifGen is set), and fsyncs the
// parent directory. A concurrent Delete may prune the freshly made parent
// directory between MkdirAll and Rename, so that pair is retried a few
// times.
func (s *Store) rename(tmp, key string, ifGen *int64) error {
	dir := path.Dir(key)
	s.commit.Lock()
	if ifGen != nil {
		gen, err := s.generation(key)
		if err != nil {
			s.commit.Unlock()
			return err
		}
		if gen != *ifGen {
			s.commit.Unlock()
			return fmt.Errorf("%w: at %d, expected %d", blob.ErrPrecondition, gen, *ifGen)
		}
	}
	var err error
	for range 5 {
		if err = s.root.MkdirAll(dir, 0o700); err != nil {
			continue
		}
		if err = s.root.Rename(tmp, key); err == nil {
			break
		}
		if !errors.Is(err, fs.ErrNotExist) {
			break
		}
	}
	s.commit.Unlock()
	if err != nil {
		return err
	}
	d, err := s.root.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// copyWithCRC copies r to w in bounded chunks, checking ctx between chunks.
func copyWithCRC(ctx context.Context, w io.Writer, r io.Reader) (int64, uint32, error) {
	buf := make([]byte, copyBuf)
	var n int64
	var crc uint32
	for {
		if err := ctx.Err(); err != nil {
			return n, crc, err
		}
		m, rerr := r.Read(buf)
		if m > 0 {
			crc = crc32.Update(crc, blob.CastagnoliTable, buf[:m])
			if _, err := w.Write(buf[:m]); err != nil {
				return n, crc, err
			}
			n += int64(m)
		}
		if rerr == io.EOF {
			return n, crc, nil
		}
		if rerr != nil {
			return n, crc, rerr
		}
	}
}

// open opens the object file and reads its header.
func (s *Store) open(key string) (*os.File, blob.Attrs, error) {
	if err := blob.ValidateKey(key); err != nil {
		return nil, blob.Attrs{}, err
	}
	f, err := s.root.Open(key)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, blob.Attrs{}, fmt.Errorf("%w: %s", blob.ErrNotFound, key)
		}
		return nil, blob.Attrs{}, err
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, blob.Attrs{}, err
	}
	if info.IsDir() {
		f.Close()
		return nil, blob.Attrs{}, fmt.Errorf("%w: %s", blob.ErrNotFound, key)
	}
	var header [headerSize]byte
	if _, err := io.ReadFull(f, header[:]); err != nil || string(header[:8]) != magic {
		f.Close()
		return nil, blob.Attrs{}, fmt.Errorf("%w: %s: bad object header", blob.ErrChecksum, key)
	}
	gen := int64(binary.BigEndian.Uint32(header[12:16]))
	if gen == 0 {
		gen = legacyGeneration
	}
	return f, blob.Attrs{
		Key:        key,
		Size:       info.Size() - headerSize,
		CRC32C:     binary.BigEndian.Uint32(header[8:12]),
		Updated:    info.ModTime(),
		Generation: gen,
	}, nil
}

// NewRangeReader implements blob.Store.
func (s *Store) NewRangeReader(ctx context.Context, key string, offset, length int64) (io.ReadCloser, error) {
	if offset < 0 {
		return nil, fmt.Errorf("fileblob.NewRangeReader %s: negative offset %d", key, offset)
	}
	f, attrs, err := s.open(key)
	if err != nil {
		return nil, fmt.Errorf("fileblob.NewRangeReader: %w", err)
	}
	offset = min(offset, attrs.Size)
	end := attrs.Size
	if length >= 0 && offset+length < end {
		end = offset + length
	}
	var r io.Reader = io.NewSectionReader(f, headerSize+offset, end-offset)
	if offset == 0 && end == attrs.Size {
		r = blob.NewChecksumReader(r, attrs.CRC32C)
	}
	return &fileReader{Reader: r, f: f}, nil
}

type fileReader struct {
	io.Reader
	f *os.File
}

func (r *fileReader) Close() error { return r.f.Close() }

// Stat implements blob.Store.
func (s *Store) Stat(ctx context.Context, key string) (blob.Attrs, error) {
	f, attrs, err := s.open(key)
	if err != nil {
		return blob.Attrs{}, fmt.Errorf("fileblob.Stat: %w", err)
	}
	f.Close()
	return attrs, nil
}

// Delete implements blob.Store. Emptied parent directories are pruned.
func (s *Store) Delete(ctx context.Context, key string) error {
	if err := blob.ValidateKey(key); err != nil {
		return err
	}
	if info, err := s.root.Lstat(key); err == nil && info.IsDir() {
		return nil // a directory is not an object; nothing to delete
	}
	s.commit.Lock()
	err := s.root.Remove(key)
	s.commit.Unlock()
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("fileblob.Delete %s: %w", key, err)
	}
	s.pruneDirs(key)
	return nil
}

// DeleteGeneration implements blob.Store.
func (s *Store) DeleteGeneration(ctx context.Context, key string, generation int64) error {
	if err := blob.ValidateKey(key); err != nil {
		return err
	}
	s.commit.Lock()
	gen, err := s.generation(key)
	if err == nil && gen == generation {
		err = s.root.Remove(key)
	}
	s.commit.Unlock()
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("fileblob.DeleteGeneration %s: %w", key, err)
	}
	s.pruneDirs(key)
	return nil
}

// pruneDirs removes the emptied parent directories of a removed key.
func (s *Store) pruneDirs(key string) {
	for dir := path.Dir(key); dir != "."; dir = path.Dir(dir) {
		if s.root.Remove(dir) != nil { // fails when not empty
			break
		}
	}
}

// List implements blob.Store.
func (s *Store) List(ctx context.Context, prefix string, fn func(blob.Attrs) error) error {
	keys, err := s.keys(prefix)
	if err != nil {
		return fmt.Errorf("fileblob.List %q: %w", prefix, err)
	}
	for _, key := range keys {
		if err := ctx.Err(); err != nil {
			return err
		}
		attrs, err := s.Stat(ctx, key)
		if errors.Is(err, blob.ErrNotFound) {
			continue // deleted since the walk
		}
		if err != nil {
			return err
		}
		if err := fn(attrs); err != nil {
			return err
		}
	}
	return nil
}

// keys returns the sorted keys starting with prefix. It walks only the
// deepest directory the prefix names.
func (s *Store) keys(prefix string) ([]string, error) {
	start := "."
	if i := strings.LastIndexByte(prefix, '/'); i > 0 {
		start = prefix[:i]
		if blob.ValidateKey(start) != nil {
			return nil, nil // no object can live under an invalid directory
		}
	}
	var keys []string
	err := fs.WalkDir(s.root.FS(), start, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if d.IsDir() {
			if p == tmpDir {
				return fs.SkipDir
			}
			return nil
		}
		if strings.HasPrefix(p, prefix) {
			keys = append(keys, p)
		}
		return nil
	})
	slices.Sort(keys)
	return keys, err
}

// HasObjects reports whether the folder holds any object; it stops at
// the first one found.
func (s *Store) HasObjects() (bool, error) {
	found := false
	err := fs.WalkDir(s.root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && p == tmpDir:
			return fs.SkipDir
		case !d.IsDir():
			found = true
			return fs.SkipAll
		}
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("fileblob.HasObjects: %w", err)
	}
	return found, nil
}

// DeletePrefix implements blob.Store.
func (s *Store) DeletePrefix(ctx context.Context, prefix string) error {
	if prefix == "" {
		return fmt.Errorf("fileblob.DeletePrefix: %w: empty prefix", blob.ErrInvalidKey)
	}
	keys, err := s.keys(prefix)
	if err != nil {
		return fmt.Errorf("fileblob.DeletePrefix %q: %w", prefix, err)
	}
	for _, key := range keys {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := s.Delete(ctx, key); err != nil {
			return err
		}
	}
	return nil
}
