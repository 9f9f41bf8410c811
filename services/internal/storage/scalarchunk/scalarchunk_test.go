package scalarchunk

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/tbhub/tbhub/services/internal/storage/store"
)

// specialFloats are the float64s whose bits an encoding is most likely to
// lose.
var specialFloats = []float64{
	0, math.Copysign(0, -1), 1, -1, math.Inf(1), math.Inf(-1),
	math.NaN(),
	math.Float64frombits(0x7ff8000000000001),                       // quiet NaN, low payload
	math.Float64frombits(0xfff8000000000000),                       // negative NaN
	math.Float64frombits(0x7ff0000000000001),                       // signaling NaN
	math.Float64frombits(0x7ff4000020000000),                       // NaN a float32 payload widens to
	math.Float64frombits(widen(0x7fc00001)),                        // float32 quiet NaN with payload
	math.Float64frombits(widen(0xff800001)),                        // float32 negative signaling NaN
	math.MaxFloat64, -math.MaxFloat64, math.SmallestNonzeroFloat64, // float64 extremes
	math.Float64frombits(0x000fffffffffffff),                                   // largest float64 subnormal
	math.MaxFloat32, math.SmallestNonzeroFloat32, -math.SmallestNonzeroFloat32, // float32 extremes
	float64(float32(0.1)), 0.1, 1.7e9, 1.7e9 + 0.123456789,
}

// sameBits tells whether two point lists are equal to the bit.
func sameBits(a, b []store.ScalarPoint) bool {
	return slices.EqualFunc(a, b, func(p, q store.ScalarPoint) bool {
		return p.Step == q.Step && math.Float64bits(p.WallTime) == math.Float64bits(q.WallTime) &&
			math.Float64bits(p.Value) == math.Float64bits(q.Value)
	})
}

// wantHeader computes the header of points the plain way.
func wantHeader(points []store.ScalarPoint) Header {
	var h Header
	h.Count = len(points)
	if len(points) == 0 {
		return h
	}
	h.FirstStep, h.LastStep = points[0].Step, points[len(points)-1].Step
	h.First, h.Last = points[0].Value, points[len(points)-1].Value
	finite := false
	for _, p := range points {
		v := p.Value
		switch {
		case math.IsNaN(v):
			h.NaN++
		case math.IsInf(v, 1):
			h.PosInf++
		case math.IsInf(v, -1):
			h.NegInf++
		case !finite:
			h.Min, h.Max, finite = v, v, true
		case v < h.Min: // -0 and +0 tie: the first one seen stays
			h.Min = v
		case v > h.Max:
			h.Max = v
		}
	}
	return h
}

// checkRoundTrip encodes points, decodes them back and checks the header.
func checkRoundTrip(t *testing.T, points []store.ScalarPoint) []byte {
	t.Helper()
	chunk, err := Encode(points)
	if err != nil {
		t.Fatalf("Encode: %v", err)
	}
	got, err := Decode(chunk, nil)
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	if !sameBits(got, points) {
		t.Fatalf("round trip changed the points:\n got %v\nwant %v", got, points)
	}
	h, err := ReadHeader(chunk)
	if err != nil {
		t.Fatalf("ReadHeader: %v", err)
	}
	if want := wantHeader(points); !h.same(want) {
		t.Fatalf("header %+v, want %+v", h, want)
	}
	return chunk
}

func TestRoundTripSpecialFloats(t *testing.T) {
	t.Parallel()
	n := len(specialFloats)
	tests := map[string][]store.ScalarPoint{
		"empty":     nil,
		"one point": {{Step: 7, WallTime: 1.7e9, Value: 0.5}},
		"extreme steps": {
			{Step: math.MinInt64, WallTime: math.NaN(), Value: math.Inf(-1)},
			{Step: -1, WallTime: 0, Value: math.Copysign(0, -1)},
			{Step: 0, WallTime: 1.5, Value: math.NaN()},
			{Step: math.MaxInt64, WallTime: math.Inf(1), Value: math.MaxFloat64},
		},
		"zero then negative zero": {{Step: 0, Value: 0}, {Step: 1, Value: math.Copysign(0, -1)}},
		"negative zero then zero": {{Step: 0, Value: math.Copysign(0, -1)}, {Step: 1, Value: 0}},
		"all special":             {{Step: 0, Value: math.NaN()}, {Step: 1, Value: math.Inf(1)}, {Step: 3, Value: math.Inf(-1)}},
	}
	// Every special value after every other, as values and as wall times.
	var pairs []store.ScalarPoint
	for i := range n * n {
		a, b := specialFloats[i/n], specialFloats[i%n]
		pairs = append(pairs, store.ScalarPoint{Step: int64(2 * i), WallTime: b, Value: a},
			store.ScalarPoint{Step: int64(2*i + 1), WallTime: a, Value: b})
	}
	tests["special pairs"] = pairs
	for _, v := range specialFloats {
		tests[fmt.Sprintf("constant %x", math.Float64bits(v))] = []store.ScalarPoint{
			{Step: 1, WallTime: v, Value: v}, {Step: 2, WallTime: v, Value: v}, {Step: 1 << 40, WallTime: v, Value: v}}
	}
	for name, points := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			checkRoundTrip(t, points)
		})
	}
}

func TestFloat32Detection(t *testing.T) {
	t.Parallel()
	for _, v := range specialFloats {
		f := narrow(v)
		if want := float64(float32(v)) == v || math.IsNaN(v); isFloat32(v) && !want {
			t.Errorf("isFloat32(%v) but float32 cannot hold it", v)
		}
		if isFloat32(v) && widen(f) != math.Float64bits(v) {
			t.Errorf("widen(narrow(%x)) = %x", math.Float64bits(v), widen(f))
		}
	}
	for _, f := range []uint32{0, 0x80000000, 1, 0x7f800000, 0xff800000, 0x7fc00000, 0x7f800001, 0xffffffff} {
		if v := math.Float64frombits(widen(f)); !isFloat32(v) || narrow(v) != f {
			t.Errorf("float32 bits %08x: widened %x not recognized", f, math.Float64bits(v))
		}
	}
}

// TestWallScale checks that a chunk keeps wall times as ticks of the
// coarsest unit that holds all of them, and rewrites itself when a point
// needs a finer one.
func TestWallScale(t *testing.T) {
	t.Parallel()
	tests := []struct {
		walls []float64
		scale uint8
	}{
		{[]float64{1.7e9, 1.7e9 + 1, 1.7e9 + 3}, 3},
		{[]float64{0, -5, 8e9}, 3},
		{[]float64{1.7e9, 1.7e9 + 0.5, 1.7e9 + 0.001}, 2},
		{[]float64{1.7e9, 1.7e9 + 0.5, 1515280094.15151}, 1},
		{[]float64{1.7e9, 1.7e9 + 0.25, 1515280094.15151, 1.7e9 + 0x1p-22}, 0},
		{[]float64{1.7e9, math.Copysign(0, -1)}, 0},
		{[]float64{1.7e9, math.NaN()}, 0},
		{[]float64{1.7e9, math.Inf(1)}, 0},
		{[]float64{1 << 53, 1<<53 + 2}, 0},
		{[]float64{1 << 52, 1.7e9 + 0.5}, 0}, // whole seconds, but too many µs for a float64
		{[]float64{9e9 - 1, 9e9 - 0.5}, 2},
		{[]float64{9e9, 9e9 + 1}, 0},
		{[]float64{float64(1700000000123456789) / 1e9}, 0}, // Python's time.time()
	}
	for _, tc := range tests {
		var ps []store.ScalarPoint
		for i, w := range tc.walls {
			ps = append(ps, store.ScalarPoint{Step: int64(i), WallTime: w, Value: 1})
		}
		chunk := checkRoundTrip(t, ps)
		if _, f, _, _ := parseHeader(chunk); f.wallScale != tc.scale {
			t.Errorf("wall times %v: scale %d, want %d", tc.walls, f.wallScale, tc.scale)
		}
	}
}

func TestStepOrder(t *testing.T) {
	t.Parallel()
	for _, steps := range [][]int64{{1, 1}, {5, 4}, {math.MaxInt64, math.MinInt64}, {0, 10, 9}} {
		var a Appender
		var err error
		for i, s := range steps {
			before := a.Bytes()
			if err = a.Append(store.ScalarPoint{Step: s, WallTime: float64(i), Value: float64(i)}); err != nil {
				if !bytes.Equal(a.Bytes(), before) {
					t.Errorf("steps %v: the rejected append changed the chunk", steps)
				}
				break
			}
		}
		if !errors.Is(err, ErrStepOrder) {
			t.Errorf("steps %v: err %v, want ErrStepOrder", steps, err)
		}
		if _, err := Encode(points(steps)); !errors.Is(err, ErrStepOrder) {
			t.Errorf("Encode(steps %v): err %v, want ErrStepOrder", steps, err)
		}
	}
}

func points(steps []int64) []store.ScalarPoint {
	var ps []store.ScalarPoint
	for i, s := range steps {
		ps = append(ps, store.ScalarPoint{Step: s, WallTime: 1.7e9 + float64(i), Value: float64(i)})
	}
	return ps
}

// randomPoints returns n points of ascending steps with values and wall
// times drawn from a mix of shapes, special floats included.
func randomPoints(r *rand.Rand, n int) []store.ScalarPoint {
	ps := make([]store.ScalarPoint, n)
	step := r.Int64N(1000) - 500
	wall := 1.7e9
	unit := []float64{0, 1e6, 1e3, 1}[r.IntN(4)] // ticks per second, 0: none
	for i := range ps {
		if i > 0 {
			switch r.IntN(4) {
			case 0:
				step += 1 + r.Int64N(1<<uint(r.IntN(62)))
			default:
				step++
			}
		}
		wall += r.Float64() * 2
		w := wall
		if unit != 0 && r.IntN(50) != 0 {
			w = math.Round(wall*unit) / unit
		}
		v := float64(float32(math.Sin(float64(i) / 10)))
		switch r.IntN(10) {
		case 0:
			v = specialFloats[r.IntN(len(specialFloats))]
		case 1:
			v = r.NormFloat64()
		}
		ps[i] = store.ScalarPoint{Step: step, WallTime: w, Value: v}
	}
	for i := 1; i < n; i++ { // keep steps increasing despite overflow
		if ps[i].Step <= ps[i-1].Step {
			return ps[:i]
		}
	}
	return ps
}

func TestHeaderMatchesPoints(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		checkRoundTrip(t, randomPoints(r, 1+r.IntN(300)))
	}
}

func TestReopenAppendEqualsEncode(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(3, 4))
	for range 300 {
		all := randomPoints(r, 1+r.IntN(200))
		if r.IntN(2) == 0 { // float32 values only, then maybe one float64 after the cut
			for i := range all {
				all[i].Value = float64(float32(all[i].Value))
			}
		}
		cut := r.IntN(len(all) + 1)
		if cut < len(all) && r.IntN(3) == 0 {
			all[cut].Value = 0.1
		}
		want, err := Encode(all)
		if err != nil {
			t.Fatal(err)
		}
		head, err := Encode(all[:cut])
		if err != nil {
			t.Fatal(err)
		}
		a, err := Reopen(head)
		if err != nil {
			t.Fatalf("Reopen: %v", err)
		}
		if !bytes.Equal(a.Bytes(), head) {
			t.Fatalf("reopened chunk's bytes differ from the chunk")
		}
		for _, p := range all[cut:] {
			if err := a.Append(p); err != nil {
				t.Fatal(err)
			}
			if size, n := a.Size(), len(a.Bytes()); size != n {
				t.Fatalf("Size() = %d after %d points, the chunk is %d bytes", size, a.Len(), n)
			}
		}
		if got := a.Bytes(); !bytes.Equal(got, want) {
			t.Fatalf("%d points appended to a reopened chunk of %d: %x, encoded at once: %x", len(all)-cut, cut, got, want)
		}
	}
}

func TestVisitAndSkipTo(t *testing.T) {
	t.Parallel()
	var all []store.ScalarPoint
	for i := range 1000 {
		all = append(all, store.ScalarPoint{Step: int64(10 * i), WallTime: 1.7e9 + float64(i), Value: float64(i)})
	}
	chunk, err := Encode(all)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range [][2]int64{{math.MinInt64, math.MaxInt64}, {0, 0}, {5, 5}, {-20, 15}, {995, 4005}, {9990, 9990}, {9991, math.MaxInt64}, {100, 50}} {
		var got []store.ScalarPoint
		calls := 0
		err := Visit(chunk, w[0], w[1], func(ps []store.ScalarPoint) error {
			calls++
			if len(ps) == 0 || len(ps) > visitBatch {
				t.Errorf("window %v: a call with %d points", w, len(ps))
			}
			got = append(got, ps...)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		var want []store.ScalarPoint
		for _, p := range all {
			if p.Step >= w[0] && p.Step <= w[1] {
				want = append(want, p)
			}
		}
		if !sameBits(got, want) {
			t.Errorf("Visit(%v): %d points, want %d", w, len(got), len(want))
		}
		appended, err := AppendRange([]store.ScalarPoint{all[3]}, chunk, w[0], w[1])
		if err != nil || !sameBits(appended[1:], want) || !sameBits(appended[:1], all[3:4]) {
			t.Errorf("AppendRange(%v): %d points after the first, err %v; want %d", w, len(appended)-1, err, len(want))
		}
	}
	stop := errors.New("stop")
	if err := Visit(chunk, 0, math.MaxInt64, func([]store.ScalarPoint) error { return stop }); err != stop {
		t.Errorf("Visit returned %v, want the visitor's error", err)
	}

	it, err := NewIterator(chunk)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		to   int64
		want int64 // -1: none
	}{{-5, 0}, {0, 0}, {35, 40}, {20, 40}, {40, 40}, {9990, 9990}, {9991, -1}} {
		ok := it.SkipTo(c.to)
		if ok != (c.want >= 0) || ok && it.At().Step != c.want {
			t.Errorf("SkipTo(%d): %v at %d, want step %d", c.to, ok, it.At().Step, c.want)
		}
	}
	if it.Next() || it.Err() != nil {
		t.Errorf("after the end: Next true or error %v", it.Err())
	}
}

func TestCorruptChunks(t *testing.T) {
	t.Parallel()
	good, err := Encode(randomPoints(rand.New(rand.NewPCG(5, 6)), 100))
	if err != nil {
		t.Fatal(err)
	}
	bad := [][]byte{nil, {0}, {0x20, 0, 0}, {0x40, 0}, {0x21, 0}, {0x28, 0}, append(slices.Clone(good), 0)}
	for n := range len(good) {
		bad = append(bad, good[:n])
	}
	last := slices.Clone(good)
	last[len(last)-1] ^= 1 // the padding or the last value's bits
	bad = append(bad, last)
	// A header that does not describe the points.
	h, f, body, err := parseHeader(good)
	if err != nil {
		t.Fatal(err)
	}
	for _, change := range []func(*Header){
		func(h *Header) { h.Min = math.Nextafter(h.Min, math.Inf(-1)) },
		func(h *Header) { h.Max = math.Nextafter(h.Max, math.Inf(1)) },
		func(h *Header) { h.NaN++ },
		func(h *Header) { h.First = math.Copysign(0, -1) },
		func(h *Header) { h.LastStep++ },
	} {
		wrong := h
		change(&wrong)
		bad = append(bad, append(appendHeader(nil, &wrong, f), body...))
	}
	for _, b := range bad {
		if _, err := Decode(b, nil); !errors.Is(err, ErrCorrupt) {
			t.Errorf("Decode(%x): err %v, want ErrCorrupt", b, err)
		}
		if _, err := Reopen(b); !errors.Is(err, ErrCorrupt) {
			t.Errorf("Reopen(%x): err %v, want ErrCorrupt", b, err)
		}
		if err := Visit(b, math.MinInt64, math.MaxInt64, func([]store.ScalarPoint) error { return nil }); !errors.Is(err, ErrCorrupt) {
			t.Errorf("Visit(%x): err %v, want ErrCorrupt", b, err)
		}
	}
}

// fuzzPoints makes points of fuzz input, fuzzPointBytes a point: a step
// gap less one (255: 2^50), flags (bit 0: the value is the float32 of its
// low 4 bytes), the wall time's and the value's bits little-endian.
// uploader/internal/fuzzseed writes the corpus's scalar series so.
func fuzzPoints(data []byte) []store.ScalarPoint {
	var ps []store.ScalarPoint
	step := int64(-1 << 20)
	for b := data; len(b) >= fuzzPointBytes; b = b[fuzzPointBytes:] {
		gap := int64(b[0])
		if gap == 0xff {
			gap = 1 << 50
		}
		step += gap + 1
		v := math.Float64frombits(binary.LittleEndian.Uint64(b[10:]))
		if b[1]&1 == 1 {
			v = math.Float64frombits(widen(binary.LittleEndian.Uint32(b[10:])))
		}
		ps = append(ps, store.ScalarPoint{Step: step, WallTime: math.Float64frombits(binary.LittleEndian.Uint64(b[2:])), Value: v})
	}
	return ps
}

const fuzzPointBytes = 18

// FuzzChunkRoundTrip encodes the points fuzzPoints makes of the input,
// checks the round trip, the header and appending to the first cut points
// after Reopen, and decodes the raw input, which must fail cleanly or give
// points that encode again.
func FuzzChunkRoundTrip(f *testing.F) {
	f.Add([]byte{}, 0)
	f.Add(bytes.Repeat([]byte{0, 1, 0x41, 0xd9, 0x55, 0, 0, 0, 0, 0, 0x3f, 0x80, 0, 0, 0, 0, 0, 0}, 5), 2)
	chunk, _ := Encode(randomPoints(rand.New(rand.NewPCG(7, 8)), 50))
	f.Add(chunk, 20)
	f.Fuzz(func(t *testing.T, data []byte, cut int) {
		if ps, err := Decode(data, nil); err == nil {
			if again, err := Encode(ps); err != nil || !sameBits(mustDecode(t, again), ps) {
				t.Fatalf("a decoded chunk does not re-encode: %v", err)
			}
		}
		ps := fuzzPoints(data)
		all := checkRoundTrip(t, ps)
		c := min(max(cut, 0), len(ps))
		head, err := Encode(ps[:c])
		if err != nil {
			t.Fatal(err)
		}
		a, err := Reopen(head)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range ps[c:] {
			if err := a.Append(p); err != nil {
				t.Fatal(err)
			}
		}
		if !bytes.Equal(a.Bytes(), all) {
			t.Fatalf("appending to a reopened chunk of %d points differs from encoding all %d", c, len(ps))
		}
	})
}

func mustDecode(t *testing.T, chunk []byte) []store.ScalarPoint {
	t.Helper()
	ps, err := Decode(chunk, nil)
	if err != nil {
		t.Fatal(err)
	}
	return ps
}
