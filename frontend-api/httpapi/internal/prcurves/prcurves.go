// Package prcurves serves the PR curves plugin's routes.
package prcurves

import (
	"fmt"
	"math"
	"net/http"

	"github.com/tbhub/tbhub/frontend-api/httpapi/internal/route"
	tbpb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard"
)

// PR curves: a tensor [6, num_thresholds] per step, rows true positives,
// false positives, true negatives, false negatives, precision, recall.

func (h Plugin) PRCurveTags(w http.ResponseWriter, r *route.Request) error {
	series, err := h.ListTensors(r, "pr_curves", nil)
	if err != nil {
		return err
	}
	return route.WriteJSON(w, h.TagInfos(series))
}

type prCurveEntry struct {
	WallTime       route.Float   `json:"wall_time"`
	Step           int64         `json:"step"`
	Precision      []route.Float `json:"precision"`
	Recall         []route.Float `json:"recall"`
	TruePositives  []int64       `json:"true_positives"`
	FalsePositives []int64       `json:"false_positives"`
	TrueNegatives  []int64       `json:"true_negatives"`
	FalseNegatives []int64       `json:"false_negatives"`
	Thresholds     []route.Float `json:"thresholds"`
}

func (h Plugin) PRCurves(w http.ResponseWriter, r *route.Request) error {
	q := r.URL.Query()
	runs, tag := q["run"], q.Get("tag")
	if len(runs) == 0 || !q.Has("tag") {
		return route.Errorf(http.StatusBadRequest, "at least one run and a tag are required")
	}
	series, err := h.ReadTensors(r, "pr_curves", route.Filter(runs, []string{tag}), h.Samples("pr_curves", route.SamplesPRCurves))
	if err != nil {
		return err
	}
	out := map[string][]prCurveEntry{}
	for _, s := range series {
		out[s.Run] = []prCurveEntry{}
	}
	for _, run := range runs {
		if _, ok := out[run]; !ok {
			return route.Errorf(http.StatusBadRequest, "No PR curves could be found for run %s and tag %s", route.PyRepr(run), route.PyRepr(tag))
		}
	}
	for _, s := range series {
		d := s.Data
		for i, step := range d.GetStep() {
			e, err := prCurveEntryOf(d.GetValue()[i])
			if err != nil {
				return fmt.Errorf("run %q tag %q step %d: %w", s.Run, s.Tag, step, err)
			}
			e.WallTime, e.Step = route.Float(d.GetWallTime()[i]), step
			out[s.Run] = append(out[s.Run], e)
		}
	}
	return route.WriteJSON(w, out)
}

// prCurveEntryOf decodes one PR curve as TensorBoard does: counts as
// integers (truncated), thresholds evenly spaced on [0, 1] (NumPy's
// linspace: i * (1/(n-1)), the last exactly 1), trailing thresholds where
// the truncated true and false positives sum to zero (precision
// undefined) dropped.
func prCurveEntryOf(t *tbpb.TensorProto) (prCurveEntry, error) {
	vals, err := route.TensorFloats(t)
	if err != nil {
		return prCurveEntry{}, err
	}
	shape := route.ShapeOf(t)
	if len(shape) != 2 || shape[0] != 6 {
		return prCurveEntry{}, fmt.Errorf("PR curve tensor of shape %v, want [6, n]", shape)
	}
	n := int(shape[1])
	row := func(i int) []float64 { return vals[i*n : (i+1)*n] }
	tp, fp := ints(row(0)), ints(row(1))
	end := n
	for end > 1 && tp[end-1]+fp[end-1] == 0 {
		end--
	}
	thresholds := make([]float64, n)
	if n > 1 {
		step := 1 / float64(n-1)
		for i := range thresholds {
			thresholds[i] = float64(i) * step
		}
		thresholds[n-1] = 1
	}
	return prCurveEntry{
		TruePositives: tp[:end], FalsePositives: fp[:end],
		TrueNegatives: ints(row(2))[:end], FalseNegatives: ints(row(3))[:end],
		Precision: route.Floats(row(4)[:end]), Recall: route.Floats(row(5)[:end]),
		Thresholds: route.Floats(thresholds[:end]),
	}, nil
}

// ints truncates counts toward zero, as Python's int() does.
func ints(vs []float64) []int64 {
	out := make([]int64, len(vs))
	for i, v := range vs {
		if !math.IsNaN(v) {
			out[i] = int64(v)
		}
	}
	return out
}

// Plugin serves the plugin's routes from the data of Env.
type Plugin struct{ *route.Env }
