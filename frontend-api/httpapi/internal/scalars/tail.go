package scalars

import (
	"math"
	"slices"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/tbhub/tbhub/frontend-api/httpapi/internal/route"
	datapb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/data"
)

// Live reads: what a page holds of a series, sent back as scalars_multirun's
// "after" parameter (format=columns only), lets the route answer with the
// points after it instead of the whole series again:
//
//	after={"RUN": {"step": S, "wall_time": W, "value": V, "max_wall_time": M}, ...}
//
// S is the last step the page holds of RUN's series, W and V that point's
// wall time and value (null for a value JSON cannot hold: NaN, ±Inf), M the
// series' "max_wall_time" of the answer the page read it from.
// A run so named is answered with "after": S and only its points past S, at
// full resolution, when all of these hold (checked on the read service's
// answer to a tail read from S, which walks the step index from S, and
// on the series' listed largest wall time, listed after that read):
//
//   - the point at S is still there with wall time W and value V (a step
//     rewritten by a restarted job takes a new wall time, or value);
//   - no point of the series has a wall time above both M and the wall
//     times of the points read past S: nothing at or before S was written
//     since the page's read (a rewrite or a backfill there), as far as wall
//     times tell;
//   - at most `samples` points lie past S (more: the page should not hold
//     a series at full resolution; it gets the downsampled one).
//
// Otherwise the run is answered as without "after": its whole series
// downsampled to `samples` points, with no "after" key, which the page
// takes in place of what it held. What this cannot see: a step before S
// rewritten with a wall time no later than M (a clock set back, an old
// event file uploaded again with other values) while S itself is left
// alone; the page's periodic full read (web/src/dashboards/scalars.ts)
// bounds how long that shows.

// heldSeries is one run's entry of "after".
type heldSeries struct {
	Step        int64    `json:"step"`
	WallTime    float64  `json:"wall_time"`
	Value       *float64 `json:"value"` // nil: NaN or ±Inf
	MaxWallTime float64  `json:"max_wall_time"`
}

// columnsAnswer is one run's series as scalars_multirun answers it.
type columnsAnswer struct {
	route.ScalarSeries
	listed      bool // maxWallTime is known
	maxWallTime float64
	tail        bool // Data holds the points past after only
	after       int64
}

// readColumns reads the tag's series of runs for format=columns: tails
// for the runs of after that pass the checks above, the others whole
// (downsampled to k points, or bucketed).
func (h Plugin) readColumns(r *route.Request, runs, tags []string, k int64, after map[string]heldSeries, whole func(runs []string) ([]route.ScalarSeries, error)) ([]columnsAnswer, error) {
	// The tails first, one read per distinct step (the read service takes
	// one step per call), then the listing: a write landing between them
	// only makes the check fail (a full read), never pass wrongly.
	byStep := map[int64][]string{}
	for _, run := range slices.Compact(slices.Sorted(slices.Values(runs))) {
		if held, ok := after[run]; ok {
			byStep[held.Step] = append(byStep[held.Step], run)
		}
	}
	tails := map[string]*datapb.ScalarData{}
	for step, group := range byStep {
		series, err := h.ReadScalarTails(r, "scalars", route.Filter(group, tags), step, k+1)
		if status.Code(err) == codes.OutOfRange {
			continue // more than k new points: downsampled below
		}
		if err != nil {
			return nil, err
		}
		for _, s := range series {
			tails[s.Run] = s.Data
		}
	}
	listed, err := h.ListScalars(r, "scalars", route.Filter(runs, tags))
	if err != nil {
		return nil, err
	}
	var answers []columnsAnswer
	// The runs read whole, with their listed largest wall time: listed
	// before this read, a point written in between is in the answer with
	// a wall time above the max_wall_time the page keeps, which makes its
	// next tail check fail (one more full read), where a listing after the
	// read could hide a rewrite from the page.
	var full []string
	maxWall := map[string]float64{}
	for _, info := range listed {
		held := after[info.Run]
		d, ok := tails[info.Run]
		if !ok || !tailContinues(held, d, info.MaxWallTime) {
			full = append(full, info.Run)
			maxWall[info.Run] = info.MaxWallTime
			continue
		}
		answers = append(answers, columnsAnswer{
			ScalarSeries: route.ScalarSeries{Run: info.Run, Tag: info.Tag, Data: &datapb.ScalarData{Step: d.Step[1:], WallTime: d.WallTime[1:], Value: d.Value[1:]}},
			listed:       true, maxWallTime: info.MaxWallTime, tail: true, after: held.Step,
		})
	}
	if len(full) == 0 {
		return answers, nil
	}
	series, err := whole(full)
	if err != nil {
		return nil, err
	}
	for _, s := range series {
		m, ok := maxWall[s.Run]
		answers = append(answers, columnsAnswer{ScalarSeries: s, listed: ok, maxWallTime: m})
	}
	return answers, nil
}

// tailContinues reports whether d, a series' points from held.Step on,
// continues what the page holds (see the checks above); maxWall is the
// series' largest wall time, listed after d was read.
func tailContinues(held heldSeries, d *datapb.ScalarData, maxWall float64) bool {
	steps, walls, values := d.GetStep(), d.GetWallTime(), d.GetValue()
	if len(steps) == 0 || steps[0] != held.Step || !sameWall(walls[0], held.WallTime) {
		return false
	}
	if v := float64(values[0]); held.Value == nil && !math.IsNaN(v) && !math.IsInf(v, 0) || held.Value != nil && float32(*held.Value) != values[0] {
		return false // NaN and ±Inf kept only when the page held one of them
	}
	seen := held.MaxWallTime
	for _, w := range walls[1:] {
		if w > seen {
			seen = w
		}
	}
	return !(maxWall > seen)
}

// sameWall reports whether two wall times are the same (NaN equal to NaN).
func sameWall(a, b float64) bool {
	return a == b || math.IsNaN(a) && math.IsNaN(b)
}
