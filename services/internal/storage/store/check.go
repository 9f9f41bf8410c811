package store

import (
	"fmt"
	"math"
	"slices"
)

// CheckSeries validates the series of a write whose values are of class c:
// run and tag must be non-empty and the declared class must be c or
// DataClassUnknown, which it sets to c. Errors wrap ErrInvalidArgument.
// Backends call it so that they reject the same writes.
func CheckSeries(s *TimeSeries, c DataClass) error {
	if s.Run == "" || s.Tag == "" {
		return fmt.Errorf("series (%q, %q): run and tag must be non-empty: %w", s.Run, s.Tag, ErrInvalidArgument)
	}
	switch s.DataClass {
	case DataClassUnknown:
		s.DataClass = c
	case c:
	default:
		return fmt.Errorf("series (%q, %q): data class %v written as %v: %w", s.Run, s.Tag, s.DataClass, c, ErrInvalidArgument)
	}
	return nil
}

// CheckRuns validates the runs of a PutRuns: names must be non-empty and
// start times finite. It returns, per run name, the start time to record
// (NaN for none: StartTime 0 or NaN); a name given twice keeps its last
// known time. Errors wrap ErrInvalidArgument.
func CheckRuns(runs []Run) (map[string]float64, error) {
	out := make(map[string]float64, len(runs))
	for _, r := range runs {
		if r.Name == "" {
			return nil, fmt.Errorf("run name must be non-empty: %w", ErrInvalidArgument)
		}
		if math.IsInf(r.StartTime, 0) {
			return nil, fmt.Errorf("run %q: start time %v: %w", r.Name, r.StartTime, ErrInvalidArgument)
		}
		start := r.StartTime
		if start == 0 {
			start = math.NaN()
		}
		if prev, ok := out[r.Name]; ok && math.IsNaN(start) {
			start = prev
		}
		out[r.Name] = start
	}
	return out, nil
}

// CheckQuery validates q; errors wrap ErrInvalidArgument.
func CheckQuery(q Query) error {
	if q.MaxPoints < 0 {
		return fmt.Errorf("downsample to %d points: must be >= 0: %w", q.MaxPoints, ErrInvalidArgument)
	}
	if q.Buckets < 0 {
		return fmt.Errorf("%d buckets: must be >= 0: %w", q.Buckets, ErrInvalidArgument)
	}
	if q.Buckets > 0 && q.MaxWallTime != nil {
		return fmt.Errorf("a bucketed read takes a step window only, no max wall time: %w", ErrInvalidArgument)
	}
	return nil
}

// Match reports whether f selects the series s.
func (f Filter) Match(s *TimeSeries) bool {
	return matchName(f.Runs, s.Run) && matchName(f.Tags, s.Tag) && matchName(f.Plugins, s.PluginName)
}

// Empty reports whether f selects nothing because one of its sets is empty
// and non-nil, so a backend can answer without a query.
func (f Filter) Empty() bool {
	return isNone(f.Runs) || isNone(f.Tags) || isNone(f.Plugins)
}

func matchName(set []string, name string) bool {
	return set == nil || slices.Contains(set, name)
}

func isNone(set []string) bool { return set != nil && len(set) == 0 }

// InWindow reports whether a point at (step, wallTime) lies in q's step and
// wall-time window.
func (q *Query) InWindow(step int64, wallTime float64) bool {
	return (q.MinStep == nil || step >= *q.MinStep) &&
		(q.MaxStep == nil || step <= *q.MaxStep) &&
		(q.MaxWallTime == nil || wallTime <= *q.MaxWallTime)
}
