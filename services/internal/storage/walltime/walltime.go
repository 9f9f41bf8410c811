// Package walltime converts wall times between the store's representation
// (float64 seconds since the Unix epoch, as TensorBoard keeps them) and the
// protobuf Timestamps of the wire: the write service reads them with
// Seconds, the export and the experiment service answer with Timestamp, and
// a wall time that went in comes back out.
package walltime

import (
	"math"

	"google.golang.org/protobuf/types/known/timestamppb"
)

// Seconds converts a point's wall time; a missing timestamp or one with
// nanos outside [0, 1e9) is a bad point, and the second result says why.
// Seconds are not limited to the Timestamp type's calendar range (years
// 1-9999): TensorBoard's wall times are doubles, and event files in the wild
// hold values far outside it.
func Seconds(ts *timestamppb.Timestamp) (float64, string) {
	if ts == nil {
		return 0, "wall_time is missing"
	}
	if n := ts.GetNanos(); n < 0 || n >= 1e9 {
		return 0, "wall_time has nanos outside [0, 1e9)"
	}
	return float64(ts.GetSeconds()) + float64(ts.GetNanos())/1e9, ""
}

// Timestamp converts stored wall seconds, rounded to the nanosecond; NaN
// and infinities (which no Timestamp can hold) become the zero Timestamp.
func Timestamp(wall float64) *timestamppb.Timestamp {
	if math.IsNaN(wall) || math.IsInf(wall, 0) {
		return &timestamppb.Timestamp{}
	}
	sec, frac := math.Modf(wall)
	nanos := math.Round(frac * 1e9)
	if nanos >= 1e9 {
		sec, nanos = sec+1, nanos-1e9
	}
	if nanos < 0 {
		sec, nanos = sec-1, nanos+1e9
	}
	return &timestamppb.Timestamp{Seconds: int64(sec), Nanos: int32(nanos)}
}
