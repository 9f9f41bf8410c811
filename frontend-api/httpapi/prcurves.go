package httpapi

import (
	"fmt"
	"math"
	"net/http"
	"regexp"
	"slices"

	"google.golang.org/protobuf/proto"

	tbpb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard"
)

// PR curves: a tensor [6, num_thresholds] per step, rows true positives,
// false positives, true negatives, false negatives, precision, recall.

func (h *Handler) prCurveTags(w http.ResponseWriter, r *request) error {
	series, err := h.listTensors(r, "pr_curves", nil)
	if err != nil {
		return err
	}
	return writeJSON(w, tagInfos(series))
}

type prCurveEntry struct {
	WallTime       Float   `json:"wall_time"`
	Step           int64   `json:"step"`
	Precision      []Float `json:"precision"`
	Recall         []Float `json:"recall"`
	TruePositives  []int64 `json:"true_positives"`
	FalsePositives []int64 `json:"false_positives"`
	TrueNegatives  []int64 `json:"true_negatives"`
	FalseNegatives []int64 `json:"false_negatives"`
	Thresholds     []Float `json:"thresholds"`
}

func (h *Handler) prCurves(w http.ResponseWriter, r *request) error {
	q := r.URL.Query()
	runs, tag := q["run"], q.Get("tag")
	if len(runs) == 0 || !q.Has("tag") {
		return errorf(http.StatusBadRequest, "at least one run and a tag are required")
	}
	series, err := h.readTensors(r, "pr_curves", filter(runs, []string{tag}), h.samples("pr_curves", samplesPRCurves))
	if err != nil {
		return err
	}
	out := map[string][]prCurveEntry{}
	for _, s := range series {
		out[s.run] = []prCurveEntry{}
	}
	for _, run := range runs {
		if _, ok := out[run]; !ok {
			return errorf(http.StatusBadRequest, "No PR curves could be found for run %s and tag %s", pyRepr(run), pyRepr(tag))
		}
	}
	for _, s := range series {
		d := s.data
		for i, step := range d.GetStep() {
			e, err := prCurveEntryOf(d.GetValue()[i])
			if err != nil {
				return fmt.Errorf("run %q tag %q step %d: %w", s.run, s.tag, step, err)
			}
			e.WallTime, e.Step = Float(d.GetWallTime()[i]), step
			out[s.run] = append(out[s.run], e)
		}
	}
	return writeJSON(w, out)
}

// prCurveEntryOf decodes one PR curve as TensorBoard does: counts as
// integers (truncated), thresholds evenly spaced on [0, 1] (NumPy's
// linspace: i * (1/(n-1)), the last exactly 1), trailing thresholds where
// the truncated true and false positives sum to zero (precision
// undefined) dropped.
func prCurveEntryOf(t *tbpb.TensorProto) (prCurveEntry, error) {
	vals, err := tensorFloats(t)
	if err != nil {
		return prCurveEntry{}, err
	}
	shape := shapeOf(t)
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
		Precision: floats(row(4)[:end]), Recall: floats(row(5)[:end]),
		Thresholds: floats(thresholds[:end]),
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

// customScalarsConfigTag holds a run's custom scalars layout.
const customScalarsConfigTag = "custom_scalars__config__"

// customScalarsLayout merges every run's layout: categories with the same
// title become one, keeping each distinct chart once.
func (h *Handler) customScalarsLayout(w http.ResponseWriter, r *request) error {
	series, err := h.readTensors(r, "custom_scalars", filter(nil, []string{customScalarsConfigTag}), 1)
	if err != nil {
		return err
	}
	merged := &tbpb.Layout{}
	byTitle := map[string]*tbpb.Category{}
	for _, s := range series {
		vals := s.data.GetValue()
		if len(vals) == 0 {
			continue
		}
		strs, err := tensorStrings(vals[len(vals)-1])
		if err != nil || len(strs) == 0 {
			continue
		}
		var layout tbpb.Layout
		if err := proto.Unmarshal(strs[0], &layout); err != nil {
			continue // a damaged layout hides itself, not the others
		}
		for _, c := range layout.GetCategory() {
			into := byTitle[c.GetTitle()]
			if into == nil {
				into = proto.Clone(c).(*tbpb.Category)
				byTitle[c.GetTitle()] = into
				merged.Category = append(merged.Category, into)
				continue
			}
			for _, chart := range c.GetChart() {
				if !slices.ContainsFunc(into.Chart, func(x *tbpb.Chart) bool { return proto.Equal(x, chart) }) {
					into.Chart = append(into.Chart, chart)
				}
			}
		}
	}
	if len(merged.Category) == 0 {
		return writeJSON(w, map[string]any{})
	}
	return writeTensorBoardProto(w, merged)
}

// customScalars serves the scalar series of one run whose tags match a
// regular expression (anchored at the start, as Python's re.match).
func (h *Handler) customScalars(w http.ResponseWriter, r *request) error {
	run, tag, err := requireRunTag(r)
	if err != nil {
		return err
	}
	re, err := regexp.Compile("^(?:" + tag + ")")
	if err != nil {
		return writeJSON(w, map[string]any{"regex_valid": false, "tag_to_events": map[string]any{}})
	}
	listed, err := h.listScalars(r, "scalars", filter([]string{run}, nil))
	if err != nil {
		return err
	}
	var tags []string
	for _, s := range listed {
		if re.MatchString(s.tag) {
			tags = append(tags, s.tag)
		}
	}
	events := map[string]scalarJSON{}
	if len(tags) > 0 {
		series, err := h.readScalars(r, "scalars", filter([]string{run}, tags), h.samples("scalars", samplesScalars))
		if err != nil {
			return err
		}
		for _, s := range series {
			events[s.tag] = scalarJSON{s.data}
		}
	}
	return writeJSON(w, map[string]any{"regex_valid": true, "tag_to_events": events})
}

// customScalarsDownload serves one scalar series of a custom-scalars chart
// as JSON ([[wall_time, step, value]]) or CSV, for the chart's download
// links.
func (h *Handler) customScalarsDownload(w http.ResponseWriter, r *request) error {
	run, tag, err := requireRunTag(r)
	if err != nil {
		return err
	}
	format, err := downloadFormat(r, "json", "csv")
	if err != nil {
		return err
	}
	d, err := h.oneScalarSeries(r, "scalars", run, tag, h.samples("scalars", samplesScalars))
	if err != nil {
		return err
	}
	if format == "csv" {
		return writeBody(w, "text/csv; charset=utf-8", scalarCSV("Wall time,Step,Value", d))
	}
	return writeBody(w, "application/json", appendScalarJSON(nil, d))
}
