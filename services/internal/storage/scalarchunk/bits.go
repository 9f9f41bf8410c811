package scalarchunk

import (
	"encoding/binary"
	"math/bits"
)

// bitWriter appends bits, most significant first, to a byte slice.
type bitWriter struct {
	b    []byte
	free uint8 // bits not yet used in the last byte of b (0 when b is empty)
}

// writeBits writes the low n bits of v (n <= 64).
func (w *bitWriter) writeBits(v uint64, n uint8) {
	if n < 64 {
		v &= 1<<n - 1
	}
	if w.free > 0 && n > 0 { // the last byte's free bits first
		take := min(n, w.free)
		n -= take
		w.free -= take
		w.b[len(w.b)-1] |= byte(v>>n) << w.free
	}
	for n >= 8 {
		n -= 8
		w.b = append(w.b, byte(v>>n))
	}
	if n > 0 {
		w.free = 8 - n
		w.b = append(w.b, byte(v<<w.free))
	}
}

// bitReader reads what a bitWriter wrote.
type bitReader struct {
	b   []byte
	pos uint64 // in bits
}

// left is the number of bits not read.
func (r *bitReader) left() uint64 { return uint64(len(r.b))*8 - r.pos }

// peek returns the 64 bits from pos, the first at the top, zeros past the
// end; at least 57 of them are the stream's unless it ends before.
func (r *bitReader) peek() uint64 {
	i := r.pos >> 3
	var w uint64
	if i+8 <= uint64(len(r.b)) {
		w = binary.BigEndian.Uint64(r.b[i:])
	} else {
		for j := i; j < i+8; j++ {
			w <<= 8
			if j < uint64(len(r.b)) {
				w |= uint64(r.b[j])
			}
		}
	}
	return w << (r.pos & 7)
}

// readBits reads n bits (n <= 64) as the low bits of the result.
func (r *bitReader) readBits(n uint8) (uint64, bool) {
	if uint64(n) > r.left() {
		return 0, false
	}
	if n == 0 {
		return 0, true
	}
	if n > 56 {
		hi, _ := r.readBits(n - 32)
		lo, _ := r.readBits(32)
		return hi<<32 | lo, true
	}
	v := r.peek() >> (64 - n)
	r.pos += uint64(n)
	return v, true
}

// readUnary reads up to max (< 57) one-bits ending in a zero bit (not
// counted, and not read when max ones were read) and returns how many ones
// it read.
func (r *bitReader) readUnary(max int) (int, bool) {
	ones := min(bits.LeadingZeros64(^r.peek()), max)
	read := ones
	if ones < max {
		read++ // the zero
	}
	if uint64(read) > r.left() {
		return 0, false
	}
	r.pos += uint64(read)
	return ones, true
}
