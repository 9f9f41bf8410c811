package scalarchunk

// bitWriter appends bits, most significant first, to a byte slice.
type bitWriter struct {
	b    []byte
	free uint8 // bits not yet used in the last byte of b (0 when b is empty)
}

func (w *bitWriter) writeBit(one bool) {
	if w.free == 0 {
		w.b = append(w.b, 0)
		w.free = 8
	}
	w.free--
	if one {
		w.b[len(w.b)-1] |= 1 << w.free
	}
}

// writeBits writes the low n bits of v (n <= 64).
func (w *bitWriter) writeBits(v uint64, n uint8) {
	if n < 64 {
		v &= 1<<n - 1
	}
	for n > 0 {
		if w.free == 0 {
			w.b = append(w.b, 0)
			w.free = 8
		}
		take := min(n, w.free)
		n -= take
		w.free -= take
		w.b[len(w.b)-1] |= byte(v>>n&(1<<take-1)) << w.free
	}
}

// bitReader reads what a bitWriter wrote.
type bitReader struct {
	b   []byte
	pos uint64 // in bits
}

func (r *bitReader) readBit() (bool, bool) {
	if r.pos>>3 >= uint64(len(r.b)) {
		return false, false
	}
	one := r.b[r.pos>>3]&(0x80>>(r.pos&7)) != 0
	r.pos++
	return one, true
}

// readBits reads n bits (n <= 64) as the low bits of the result.
func (r *bitReader) readBits(n uint8) (uint64, bool) {
	if uint64(n) > uint64(len(r.b))*8-r.pos {
		return 0, false
	}
	var v uint64
	for n > 0 {
		i, used := r.pos>>3, uint8(r.pos&7)
		take := min(n, 8-used)
		chunk := uint64(r.b[i]>>(8-used-take)) & (1<<take - 1)
		v = v<<take | chunk
		n -= take
		r.pos += uint64(take)
	}
	return v, true
}

// readUnary reads up to max one-bits ending in a zero bit (not counted, and
// not read when max ones were read) and returns how many ones it read.
func (r *bitReader) readUnary(max int) (int, bool) {
	for n := 0; n < max; n++ {
		one, ok := r.readBit()
		if !ok {
			return 0, false
		}
		if !one {
			return n, true
		}
	}
	return max, true
}
