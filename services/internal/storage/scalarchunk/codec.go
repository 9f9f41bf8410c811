package scalarchunk

import (
	"fmt"
	"math"
	"math/bits"

	"github.com/tbhub/tbhub/services/internal/storage/store"
)

// pointCodec is the state shared by encoding and decoding: everything the
// next point's bits depend on.
type pointCodec struct {
	form
	step  numCodec
	wall  numCodec
	value numCodec
}

func (c *pointCodec) valueBits(v float64) uint64 {
	if c.float32 {
		return uint64(narrow(v))
	}
	return math.Float64bits(v)
}

func (c *pointCodec) valueOf(b uint64) float64 {
	if c.float32 {
		return math.Float64frombits(widen(uint32(b)))
	}
	return math.Float64frombits(b)
}

// write encodes p; first tells that p is the chunk's first point, whose
// step and value are in the header.
func (c *pointCodec) write(w *bitWriter, p store.ScalarPoint, first bool) {
	wall, ok := wallTicks(p.WallTime, c.wallScale)
	if !ok { // Append chose a scale that does not hold p
		panic(fmt.Sprintf("scalarchunk: wall time %v is no tick of scale %d", p.WallTime, c.wallScale))
	}
	if first {
		c.step = newNumCodec(uint64(p.Step))
		c.wall = newNumCodec(wall)
		c.value = newNumCodec(c.valueBits(p.Value))
		w.writeBits(wall, 64)
		return
	}
	c.step.write(w, uint64(p.Step))
	c.wall.write(w, wall)
	c.value.write(w, c.valueBits(p.Value))
}

// read decodes the point after the last one; h is the chunk's header.
func (c *pointCodec) read(r *bitReader, h *Header, first bool) (store.ScalarPoint, bool) {
	if first {
		wall, ok := r.readBits(64)
		if !ok {
			return store.ScalarPoint{}, false
		}
		c.step = newNumCodec(uint64(h.FirstStep))
		c.wall = newNumCodec(wall)
		c.value = newNumCodec(c.valueBits(h.First))
		return store.ScalarPoint{Step: h.FirstStep, WallTime: wallOf(wall, c.wallScale), Value: h.First}, true
	}
	prev := int64(c.step.prev)
	step64, ok1 := c.step.read(r)
	step := int64(step64)
	ok1 = ok1 && step > prev
	wall, ok2 := c.wall.read(r)
	value, ok3 := c.value.read(r)
	if !ok1 || !ok2 || !ok3 || c.float32 && value>>32 != 0 {
		return store.ScalarPoint{}, false
	}
	return store.ScalarPoint{Step: step, WallTime: wallOf(wall, c.wallScale), Value: c.valueOf(value)}, true
}

// numCodec encodes a step, or a float's bits, read as an integer by how
// far they are from a prediction: the previous number (order 1) or the
// previous number plus the previous difference (order 2). The order adapts
// without costing a bit: it is 2 while order 2's residuals have recently
// been shorter, which the decoder follows as it decodes. A residual is
// zigzagged to z and Rice-coded with a parameter k that follows the
// recent residuals' mean: z>>k in unary (that many ones, then a zero),
// then the low k bits of z; a z>>k of escapeOnes or more is written as
// escapeOnes ones, 6 bits of n-1 and the n bits of z (n its bit length).
type numCodec struct {
	prev, delta uint64
	// score is a decaying sum of order 1's residual bit lengths minus order
	// 2's; order 2 predicts while it is positive.
	score int32
	// mean is a decaying mean of the residuals (z).
	mean uint64
}

// escapeOnes is where unary gives way to a length and raw bits.
const escapeOnes = 24

func newNumCodec(first uint64) numCodec { return numCodec{prev: first} }

func zigzag(v int64) uint64   { return uint64(v<<1) ^ uint64(v>>63) }
func unzigzag(z uint64) int64 { return int64(z>>1) ^ -int64(z&1) }

// prediction is what the next number is expected to be.
func (c *numCodec) prediction() uint64 {
	if c.score > 0 {
		return c.prev + c.delta
	}
	return c.prev
}

// riceK is the Rice parameter for the next residual.
func (c *numCodec) riceK() uint8 {
	return uint8(max(bits.Len64(c.mean)-riceShift, 0))
}

const riceShift = 1

// update moves to v, whose residual was z.
func (c *numCodec) update(v, z uint64) {
	delta := v - c.prev
	len1, len2 := bits.Len64(zigzag(int64(delta))), bits.Len64(zigzag(int64(delta-c.delta)))
	c.score += int32(len1-len2)*16 - c.score/8
	c.prev, c.delta = v, delta
	c.mean = c.mean - c.mean>>meanShift + z>>meanShift
}

const meanShift = 2

func (c *numCodec) write(w *bitWriter, v uint64) {
	z := zigzag(int64(v - c.prediction()))
	k := c.riceK()
	c.update(v, z)
	if q := z >> k; q < escapeOnes {
		w.writeBits(1<<(q+1)-2, uint8(q+1)) // q ones, a zero
		w.writeBits(z, k)
		return
	}
	n := uint8(bits.Len64(z))
	w.writeBits(1<<escapeOnes-1, escapeOnes)
	w.writeBits(uint64(n-1), 6)
	w.writeBits(z, n)
}

func (c *numCodec) read(r *bitReader) (uint64, bool) {
	k := c.riceK()
	// The usual residual, its ones, zero and k low bits within the 57 bits
	// one peek holds: one peek instead of two.
	w := r.peek()
	if q := bits.LeadingZeros64(^w); q < escapeOnes {
		if n := uint64(q) + 1 + uint64(k); n <= 57 && n <= r.left() {
			r.pos += n
			z := uint64(q)<<k | w<<(q+1)>>(64-uint64(k))
			v := c.prediction() + uint64(unzigzag(z))
			c.update(v, z)
			return v, true
		}
	}
	q, ok := r.readUnary(escapeOnes)
	if !ok {
		return 0, false
	}
	var z uint64
	if q < escapeOnes {
		low, ok := r.readBits(k)
		if !ok {
			return 0, false
		}
		z = uint64(q)<<k | low
	} else {
		n, ok1 := r.readBits(6)
		raw, ok2 := r.readBits(uint8(n + 1))
		if !ok1 || !ok2 {
			return 0, false
		}
		z = raw
	}
	v := c.prediction() + uint64(unzigzag(z))
	c.update(v, z)
	return v, true
}
