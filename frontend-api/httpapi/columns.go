package httpapi

import (
	"encoding/json"
	"fmt"
	"math"
)

// ScalarColumns is one run of scalars_multirun's format=columns answer
// (docs/http-api.md), as a Go client (tbhub's tests and benchmarks)
// decodes it: a run's wall times are WallTimeBase + WallTime[i].
type ScalarColumns struct {
	WallTimeBase Float `json:"wall_time_base"`
	// MaxWallTime is the series' largest wall time, listed before its
	// points were read.
	MaxWallTime Float `json:"max_wall_time"`
	// After is set when the run was answered as a tail (the "after"
	// parameter): Step holds only the points past it.
	After    *int64  `json:"after"`
	WallTime []Float `json:"wall_time"`
	Step     []int64 `json:"step"`
	Value    []Float `json:"value"`
}

// Float is a number of the HTTP API's JSON: a JSON number, or one of the
// strings "NaN", "Infinity" and "-Infinity" TensorBoard writes for the
// values JSON has no number for.
type Float float64

// UnmarshalJSON implements json.Unmarshaler.
func (f *Float) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil {
		switch s {
		case "NaN":
			*f = Float(math.NaN())
		case "Infinity":
			*f = Float(math.Inf(1))
		case "-Infinity":
			*f = Float(math.Inf(-1))
		default:
			return fmt.Errorf("httpapi.Float: %q is not a number", s)
		}
		return nil
	}
	var v float64
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*f = Float(v)
	return nil
}
