package writer

import (
	"math"
	"testing"
	"time"

	servicepb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/service"
	"github.com/tbhub/tbhub/services/internal/store"
)

func TestTimestampOf(t *testing.T) {
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
		ts := timestampOf(tc.wall)
		if ts.GetSeconds() != tc.sec || ts.GetNanos() != tc.nanos {
			t.Errorf("timestampOf(%v) = %d s %d ns, want %d s %d ns", tc.wall, ts.GetSeconds(), ts.GetNanos(), tc.sec, tc.nanos)
		}
		if ts.GetNanos() < 0 || ts.GetNanos() >= 1e9 {
			t.Errorf("timestampOf(%v): nanos %d out of range", tc.wall, ts.GetNanos())
		}
		// What the write side accepts, the export gives back.
		if !math.IsNaN(tc.wall) && !math.IsInf(tc.wall, 0) {
			back, reason := wallSeconds(ts)
			if reason != "" || math.Abs(back-tc.wall) > 1e-6*math.Max(1, math.Abs(tc.wall)) {
				t.Errorf("wallSeconds(timestampOf(%v)) = %v, %q", tc.wall, back, reason)
			}
		}
	}
}

func TestExperimentProtoMask(t *testing.T) {
	e := &store.Experiment{ID: "id", Name: "n", Description: "d", Owner: "o", NumScalars: 3, NumRuns: 2, NumTags: 1,
		TotalTensorBytes: 4, TotalBlobBytes: 5, CreateTime: time.Unix(10, 0), UpdateTime: time.Unix(20, 0)}
	all := experimentProto(e, nil)
	if all.GetName() != "n" || all.GetOwner() != "o" || all.GetNumScalars() != 3 || all.GetTotalBlobBytes() != 5 ||
		all.GetUpdateTime().GetSeconds() != 20 {
		t.Errorf("no mask: %v", all)
	}
	some := experimentProto(e, &servicepb.ExperimentMask{Name: true, NumRuns: true})
	if some.GetExperimentId() != "id" || some.GetName() != "n" || some.GetNumRuns() != 2 ||
		some.GetDescription() != "" || some.GetOwner() != "" || some.GetCreateTime() != nil || some.GetNumScalars() != 0 {
		t.Errorf("mask name+num_runs: %v", some)
	}
}
