package scalarchunk

import (
	"math"
	"math/bits"

	"github.com/tbhub/tbhub/services/internal/store"
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
	wall, _ := wallTicks(p.WallTime, c.wallScale)
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

// numCodec encodes a step, or a float's bits, read as an integer by how far they are
// from a prediction: the previous bits (order 1) or the previous bits plus
// the previous difference (order 2). The order adapts without costing a
// bit: it is 2 while order 2's residuals have recently been shorter, which
// the decoder follows as it decodes. A residual is zigzagged and written
// '0' for 0, '10' + w bits when it fits in the window of the last w bits
// and needs more than w-6, else '11' + 6 bits of w-1 + w bits (w: its bit
// length), which sets the window.
type numCodec struct {
	prev, delta uint64
	// score is a decaying sum of order 1's residual bit lengths minus order
	// 2's; order 2 predicts while it is positive.
	score  int32
	window uint8
}

func newNumCodec(first uint64) numCodec { return numCodec{prev: first} }

func zigzag(v int64) uint64   { return uint64(v<<1) ^ uint64(v>>63) }
func unzigzag(z uint64) int64 { return int64(z>>1) ^ -int64(z&1) }

// prediction is what the next bits are expected to be.
func (c *numCodec) prediction() uint64 {
	if c.score > 0 {
		return c.prev + c.delta
	}
	return c.prev
}

// update moves to v.
func (c *numCodec) update(v uint64) {
	delta := v - c.prev
	len1, len2 := bits.Len64(zigzag(int64(delta))), bits.Len64(zigzag(int64(delta-c.delta)))
	c.score += int32(len1-len2)*16 - c.score/8
	c.prev, c.delta = v, delta
}

func (c *numCodec) write(w *bitWriter, v uint64) {
	z := zigzag(int64(v - c.prediction()))
	c.update(v)
	if z == 0 {
		w.writeBit(false)
		return
	}
	n := uint8(bits.Len64(z))
	if n <= c.window && n+6 > c.window {
		w.writeBits(0b10, 2)
		w.writeBits(z, c.window)
		return
	}
	c.window = n
	w.writeBits(0b11, 2)
	w.writeBits(uint64(n-1), 6)
	w.writeBits(z, n)
}

func (c *numCodec) read(r *bitReader) (uint64, bool) {
	class, ok := r.readUnary(2)
	if !ok {
		return 0, false
	}
	var z uint64
	switch class {
	case 1:
		if c.window == 0 {
			return 0, false
		}
		if z, ok = r.readBits(c.window); !ok {
			return 0, false
		}
	case 2:
		n, ok := r.readBits(6)
		if !ok {
			return 0, false
		}
		c.window = uint8(n + 1)
		if z, ok = r.readBits(c.window); !ok {
			return 0, false
		}
	}
	v := c.prediction() + uint64(unzigzag(z))
	c.update(v)
	return v, true
}
