package inspect

import "math"

// fsum is an exactly rounded floating-point sum, the algorithm behind Python's
// math.fsum (Shewchuk's non-overlapping partials, then a correctly rounded total).
// The result does not depend on the order of the values, so sums can be compared
// across implementations.
type fsum struct {
	partials []float64
	overflow float64 // ±Inf once finite values overflowed; the sum is then that
}

// add adds a finite value.
func (s *fsum) add(x float64) {
	if s.overflow != 0 {
		return
	}
	i := 0
	for _, y := range s.partials {
		if math.Abs(x) < math.Abs(y) {
			x, y = y, x
		}
		hi := x + y
		if math.IsInf(hi, 0) {
			s.overflow = hi
			return
		}
		lo := y - (hi - x)
		if lo != 0 {
			s.partials[i] = lo
			i++
		}
		x = hi
	}
	s.partials = append(s.partials[:i], x)
}

// value is the correctly rounded sum.
func (s *fsum) value() float64 {
	if s.overflow != 0 {
		return s.overflow
	}
	n := len(s.partials)
	if n == 0 {
		return 0
	}
	hi := s.partials[n-1]
	n--
	var lo float64
	for n > 0 {
		x := hi
		y := s.partials[n-1]
		n--
		hi = x + y
		lo = y - (hi - x)
		if lo != 0 {
			break
		}
	}
	// Round half to even across partials: if the rest points the same way as lo,
	// the true sum is past the halfway point.
	if n > 0 && ((lo < 0 && s.partials[n-1] < 0) || (lo > 0 && s.partials[n-1] > 0)) {
		y := lo * 2
		x := hi + y
		if y == x-hi {
			hi = x
		}
	}
	return hi
}
