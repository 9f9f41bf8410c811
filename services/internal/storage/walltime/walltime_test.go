package walltime

import (
	"math"
	"testing"

	"google.golang.org/protobuf/types/known/timestamppb"
)

func TestTimestamp(t *testing.T) {
	for _, tc := range []struct {
		wall  float64
		sec   int64
		nanos int32
	}{
		{0, 0, 0},
		{1.5, 1, 500_000_000},
		{-1.5, -2, 500_000_000},
		{1700000000.123456789, 1700000000, 123456717}, // nearest float64, rounded to ns
		{0.9999999999, 1, 0},
		{math.NaN(), 0, 0},
		{math.Inf(1), 0, 0},
		{1.1e12, 1_100_000_000_000, 0},
	} {
		ts := Timestamp(tc.wall)
		if ts.GetSeconds() != tc.sec || ts.GetNanos() != tc.nanos {
			t.Errorf("Timestamp(%v) = %d s %d ns, want %d s %d ns", tc.wall, ts.GetSeconds(), ts.GetNanos(), tc.sec, tc.nanos)
		}
		if ts.GetNanos() < 0 || ts.GetNanos() >= 1e9 {
			t.Errorf("Timestamp(%v): nanos %d out of range", tc.wall, ts.GetNanos())
		}
		// What the write side accepts, the export gives back.
		if !math.IsNaN(tc.wall) && !math.IsInf(tc.wall, 0) {
			back, reason := Seconds(ts)
			if reason != "" || math.Abs(back-tc.wall) > 1e-6*math.Max(1, math.Abs(tc.wall)) {
				t.Errorf("Seconds(Timestamp(%v)) = %v, %q", tc.wall, back, reason)
			}
		}
	}
}

func TestSecondsRefusesBadTimestamps(t *testing.T) {
	for _, ts := range []*timestamppb.Timestamp{nil, {Nanos: -1}, {Nanos: 1e9}} {
		if _, reason := Seconds(ts); reason == "" {
			t.Errorf("Seconds(%v) accepted", ts)
		}
	}
}
