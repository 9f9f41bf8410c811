package scalars

import (
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
)

func TestAppendFloat32IsShortestJSON(t *testing.T) {
	for _, tc := range []struct {
		v    float32
		want string
	}{
		{0.1, "0.1"},
		{1, "1"},
		{-2.5e-7, "-2.5e-07"},
		{123456789, "1.2345679e+08"},
		{float32(math.NaN()), `"NaN"`},
		{float32(math.Inf(-1)), `"-Infinity"`},
	} {
		if got := string(appendFloat32(nil, tc.v)); got != tc.want {
			t.Errorf("appendFloat32(%v) = %s, want %s", tc.v, got, tc.want)
		}
	}
}

func TestAppendShortFloat(t *testing.T) {
	for _, tc := range []struct {
		f    float64
		want string
	}{
		{0, "0"},
		{22, "22"},
		{-0.5, "-0.5"},
		{1e-4, "0.0001"},
		{1.5e-7, "1.5e-07"},
		{19998.125, "19998.125"},
		{2e15, "2e+15"},
		{math.NaN(), `"NaN"`},
	} {
		if got := string(appendShortFloat(nil, tc.f)); got != tc.want {
			t.Errorf("appendShortFloat(%v) = %s, want %s", tc.f, got, tc.want)
		}
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 10_000 {
		f := (rng.Float64() - 0.5) * math.Pow(10, float64(rng.IntN(40)-20))
		back, err := strconv.ParseFloat(string(appendShortFloat(nil, f)), 64)
		if err != nil || back != f {
			t.Fatalf("appendShortFloat(%v) reads back as %v (%v)", f, back, err)
		}
	}
}

// Wall times as a base and offsets read back exactly, or the base is 0.
func TestWallTimeBase(t *testing.T) {
	for _, tc := range []struct {
		walls []float64
		want  float64
	}{
		{nil, 0},
		{[]float64{math.NaN(), 1.7e9 + 0.25, 1.7e9 + 22.125}, 1.7e9 + 0.25},
		{[]float64{1443856985.705543, 1443856986.123457, math.Inf(1)}, 1443856985.705543},
		// 1e-3 - 1.7e9 rounds: no base.
		{[]float64{1.7e9, 1e-3}, 0},
	} {
		base := wallTimeBase(tc.walls)
		if base != tc.want {
			t.Errorf("wallTimeBase(%v) = %v, want %v", tc.walls, base, tc.want)
		}
		for _, w := range tc.walls {
			if back := base + (w - base); back != w && !math.IsNaN(w) {
				t.Errorf("base %v: wall %v reads back as %v", base, w, back)
			}
		}
	}
}

// A wall time's offset is written with the fewest decimals that add back
// to exactly that wall time: eventgen's and a training loop's wall times
// 0.1 s apart from 1.7e9 are not exactly 0.1 apart in float64, and their
// exact offsets took 17 digits ("24.899999856948853" for "24.9").
func TestWallOffsetIsShortestThatAddsBack(t *testing.T) {
	for _, tc := range []struct {
		base, wall float64
		want       string
	}{
		{1.7e9, 1.7e9 + 249*0.1, "24.9"},
		{1.7e9, 1.7e9, "0"},
		{1.7e9 + 0.25, 1.7e9 + 22.125, "21.875"},
		{1.7e9 + 50, 1.7e9 + 0.1, "-49.9"},
		{1443856985.705543, 1443856986.123457, "0.417914"},
		{10.5, 11, "0.5"},
		{1.7e9, 1.7e9 + 0.05, "0.05"},
		{10.5, 10.5 - 0.0625, "-0.0625"},
		// Outside appendShortFloat's positional range, its digits.
		{0, 1e-5, "1e-05"},
		{0, 2e15, "2e+15"},
		{0, math.NaN(), `"NaN"`},
		{1.7e9, math.Inf(-1), `"-Infinity"`},
	} {
		if got := string(appendWallOffset(nil, tc.base, tc.wall)); got != tc.want {
			t.Errorf("appendWallOffset(%v, %v) = %s, want %s", tc.base, tc.wall, got, tc.want)
		}
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for range 100_000 {
		// Wall times as time.time() gives them, around a base of the
		// same series (wallTimeBase's condition holds for every one).
		base := 1e9 + rng.Float64()*1e9
		w := base + (rng.Float64()-0.3)*math.Pow(10, float64(rng.IntN(10)-3))
		if base+(w-base) != w {
			continue
		}
		s := string(appendWallOffset(nil, base, w))
		back, err := strconv.ParseFloat(s, 64)
		if err != nil || base+back != w {
			t.Fatalf("appendWallOffset(%v, %v) = %s reads back as %v (%v)", base, w, s, base+back, err)
		}
		if exact := string(appendShortFloat(nil, w-base)); len(s) > len(exact) {
			t.Fatalf("appendWallOffset(%v, %v) = %s, longer than the exact offset %s", base, w, s, exact)
		}
	}
}
