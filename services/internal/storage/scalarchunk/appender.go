package scalarchunk

import (
	"fmt"

	"github.com/tbhub/tbhub/services/internal/storage/store"
)

// Appender builds a chunk point by point. The zero value is an empty chunk.
type Appender struct {
	h     Header
	codec pointCodec
	body  bitWriter
}

// Reopen returns an Appender holding chunk's points, to append more: its
// bytes are then those of encoding all the points at once.
func Reopen(chunk []byte) (*Appender, error) {
	it, err := NewIterator(chunk)
	if err != nil {
		return nil, err
	}
	for it.Next() {
	}
	if err := it.Err(); err != nil {
		return nil, err
	}
	a := &Appender{h: it.h, codec: it.codec}
	a.body.b = append([]byte(nil), it.r.b...)
	a.body.free = uint8(uint64(len(a.body.b))*8 - it.r.pos)
	return a, nil
}

// Len is the number of points.
func (a *Appender) Len() int { return a.h.Count }

// Header is the header of the chunk so far.
func (a *Appender) Header() Header { return a.h }

// Append adds p after the points already in. Its step must be above theirs
// (ErrStepOrder otherwise, and nothing is added).
func (a *Appender) Append(p store.ScalarPoint) error {
	if a.h.Count > 0 && p.Step <= a.h.LastStep {
		return fmt.Errorf("%w: step %d after %d", ErrStepOrder, p.Step, a.h.LastStep)
	}
	// The form is the most compact one that holds every point: a point
	// that the chunk's form cannot hold makes the chunk be rewritten. Forms
	// only get wider (float32 to float64 values; wall times in s, ms, µs,
	// float64 bits), so that happens at most four times per chunk.
	f := form{float32: true, wallScale: 3}
	if a.h.Count > 0 {
		f = a.codec.form
	}
	f.float32 = f.float32 && isFloat32(p.Value)
	f.wallScale = wallScaleOf(p.WallTime, f.wallScale)
	if a.h.Count > 0 && f != a.codec.form {
		a.rewrite(f)
	}
	a.codec.form = f
	a.codec.write(&a.body, p, a.h.Count == 0)
	a.h.add(p)
	return nil
}

// rewrite re-encodes the points in form f.
func (a *Appender) rewrite(f form) {
	points, err := Decode(a.Bytes(), nil)
	if err != nil {
		panic("scalarchunk: decoding its own chunk: " + err.Error())
	}
	*a = Appender{codec: pointCodec{form: f}}
	for _, p := range points {
		a.codec.write(&a.body, p, a.h.Count == 0)
		a.h.add(p)
	}
}

// Size is the length of the chunk's bytes so far, without building them.
func (a *Appender) Size() int {
	var header [128]byte // the longest header is 1 + 3·10 + 3·10 + 4·8 bytes
	return len(appendHeader(header[:0], &a.h, a.codec.form)) + len(a.body.b)
}

// Bytes returns the chunk.
func (a *Appender) Bytes() []byte { return a.AppendTo(nil) }

// AppendTo appends the chunk to dst.
func (a *Appender) AppendTo(dst []byte) []byte {
	return append(appendHeader(dst, &a.h, a.codec.form), a.body.b...)
}

// Encode returns the chunk of points, which must ascend by step.
func Encode(points []store.ScalarPoint) ([]byte, error) {
	var a Appender
	for _, p := range points {
		if err := a.Append(p); err != nil {
			return nil, err
		}
	}
	return a.Bytes(), nil
}
