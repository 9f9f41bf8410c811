package scalarchunk

import (
	"fmt"
	"slices"

	"github.com/tbhub/tbhub/services/internal/storage/store"
)

// Iterator reads a chunk's points in step order:
//
//	it, err := NewIterator(chunk)
//	for it.Next() { p := it.At() ... }
//	err = it.Err()
type Iterator struct {
	h     Header
	codec pointCodec
	r     bitReader
	n     int    // points read
	seen  Header // of the points read
	at    store.ScalarPoint
	err   error
}

// NewIterator reads chunk's header and returns an iterator before its
// first point.
func NewIterator(chunk []byte) (*Iterator, error) {
	h, f, body, err := parseHeader(chunk)
	if err != nil {
		return nil, err
	}
	it := &Iterator{h: h, r: bitReader{b: body}}
	it.codec.form = f
	if h.Count == 0 {
		it.r.b = nil
	}
	return it, nil
}

// Header is the chunk's header.
func (it *Iterator) Header() Header { return it.h }

// Next moves to the next point and tells whether there is one.
func (it *Iterator) Next() bool {
	if it.err != nil || it.n == it.h.Count {
		return false
	}
	p, ok := it.codec.read(&it.r, &it.h, it.n == 0)
	if !ok {
		it.err = fmt.Errorf("%w: point %d of %d", ErrCorrupt, it.n, it.h.Count)
		return false
	}
	it.at = p
	it.n++
	it.seen.add(p)
	if it.n == it.h.Count {
		it.err = it.checkEnd()
		return it.err == nil
	}
	return true
}

// checkEnd checks that the header describes the points read, and that the
// stream ends with the last one.
func (it *Iterator) checkEnd() error {
	used := (it.r.pos + 7) / 8
	switch {
	case !it.seen.same(it.h):
		return fmt.Errorf("%w: header %+v, points %+v", ErrCorrupt, it.h, it.seen)
	case used != uint64(len(it.r.b)):
		return fmt.Errorf("%w: %d bytes after the last point", ErrCorrupt, uint64(len(it.r.b))-used)
	case it.r.pos%8 != 0 && it.r.b[used-1]<<(it.r.pos%8) != 0:
		return fmt.Errorf("%w: padding bits set", ErrCorrupt)
	}
	return nil
}

// At is the current point.
func (it *Iterator) At() store.ScalarPoint { return it.at }

// SkipTo moves to the first point whose step is step or above, if the
// current point's is below, and tells whether there is one. Points must be
// decoded in order, so SkipTo reads those before; a step past the header's
// last step ends the iteration without reading any.
func (it *Iterator) SkipTo(step int64) bool {
	if it.n > 0 && it.at.Step >= step {
		return it.err == nil
	}
	if step > it.h.LastStep || it.h.Count == 0 {
		it.n = it.h.Count
		return false
	}
	for it.Next() {
		if it.at.Step >= step {
			return true
		}
	}
	return false
}

// Err is the error that ended the iteration, if any (ErrCorrupt).
func (it *Iterator) Err() error { return it.err }

// visitBatch is the most points Visit passes in one call.
const visitBatch = 256

// Visit calls fn with the points of chunk whose steps are in [lo, hi], in
// step order, in slices of at most visitBatch points that are valid only
// during the call, and returns fn's first error. A chunk whose header
// shows no step in [lo, hi] is not decoded. A corrupt chunk gives
// ErrCorrupt, possibly after its first points went to fn.
func Visit(chunk []byte, lo, hi int64, fn func([]store.ScalarPoint) error) error {
	it, err := NewIterator(chunk)
	if err != nil {
		return err
	}
	if it.h.Count == 0 || it.h.FirstStep > hi || !it.SkipTo(lo) {
		return it.Err()
	}
	buf := make([]store.ScalarPoint, 0, min(visitBatch, it.h.Count))
	for ok := true; ok && it.at.Step <= hi; ok = it.Next() {
		if buf = append(buf, it.at); len(buf) == visitBatch {
			if err := fn(buf); err != nil {
				return err
			}
			buf = buf[:0]
		}
	}
	if err := it.Err(); err != nil {
		return err
	}
	if len(buf) > 0 {
		return fn(buf)
	}
	return nil
}

// AppendRange appends to dst the points of chunk whose steps are in [lo,
// hi], in step order, growing dst once by what the header says is left. A
// chunk whose header shows no step in [lo, hi] is not decoded. A corrupt
// chunk gives ErrCorrupt, possibly after its first points were appended.
func AppendRange(dst []store.ScalarPoint, chunk []byte, lo, hi int64) ([]store.ScalarPoint, error) {
	it, err := NewIterator(chunk)
	if err != nil {
		return dst, err
	}
	if it.h.Count == 0 || it.h.FirstStep > hi || !it.SkipTo(lo) {
		return dst, it.Err()
	}
	dst = slices.Grow(dst, it.h.Count-it.n+1)
	for ok := true; ok && it.at.Step <= hi; ok = it.Next() {
		dst = append(dst, it.at)
	}
	return dst, it.Err()
}

// Decode appends chunk's points to dst.
func Decode(chunk []byte, dst []store.ScalarPoint) ([]store.ScalarPoint, error) {
	it, err := NewIterator(chunk)
	if err != nil {
		return dst, err
	}
	for it.Next() {
		dst = append(dst, it.at)
	}
	return dst, it.Err()
}
