// Package histograms serves the histograms and distributions plugins'
// routes, and decodes histogram tensors for the legacy and time-series
// routes.
package histograms

import (
	"fmt"
	"net/http"
	"sort"

	"github.com/tbhub/tbhub/frontend-api/httpapi/internal/route"
	tbpb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard"
)

func (h Plugin) HistogramTags(w http.ResponseWriter, r *route.Request) error {
	series, err := h.ListTensors(r, "histograms", nil)
	if err != nil {
		return err
	}
	return route.WriteJSON(w, h.TagInfos(series))
}

// histogramPoint is one step of a histogram series: its buckets as
// (left, right, count) rows.
type Point struct {
	WallTime float64
	Step     int64
	Buckets  [][]float64
}

// readHistograms reads one histogram series at k points.
func (h Plugin) ReadHistograms(r *route.Request, run, tag string, k int64) ([]Point, error) {
	series, err := h.ReadTensors(r, "histograms", route.One(run, tag), k)
	if err != nil {
		return nil, err
	}
	if len(series) == 0 {
		return nil, route.Errorf(http.StatusNotFound, "no histogram data for run=%q, tag=%q", run, tag)
	}
	d := series[0].Data
	out := make([]Point, 0, len(d.GetStep()))
	for i, step := range d.GetStep() {
		buckets, err := Buckets(d.GetValue()[i])
		if err != nil {
			return nil, fmt.Errorf("run %q tag %q step %d: %w", run, tag, step, err)
		}
		out = append(out, Point{d.GetWallTime()[i], step, buckets})
	}
	return out, nil
}

// histogramBuckets decodes a [k, 3] histogram tensor.
func Buckets(t *tbpb.TensorProto) ([][]float64, error) {
	vals, err := route.TensorFloats(t)
	if err != nil {
		return nil, err
	}
	if shape := route.ShapeOf(t); len(shape) != 2 || shape[1] != 3 {
		if len(vals) == 0 {
			return [][]float64{}, nil
		}
		return nil, route.Errorf(http.StatusBadRequest, "stored tensor cannot be shown: histogram tensor of shape %v, want [k, 3]", shape)
	}
	return route.Rows(vals, 3), nil
}

func (h Plugin) Histograms(w http.ResponseWriter, r *route.Request) error {
	run, tag, err := route.RequireRunTag(r)
	if err != nil {
		return err
	}
	// TensorBoard keeps samples_per_plugin histograms per series and its
	// route shows at most 51 of them.
	points, err := h.ReadHistograms(r, run, tag, min(h.Samples("histograms", route.SamplesHistograms), route.HistogramsRoutePoints))
	if err != nil {
		return err
	}
	out := make([][]any, 0, len(points))
	for _, p := range points {
		out = append(out, []any{route.Float(p.WallTime), p.Step, route.FloatRows(p.Buckets)})
	}
	return route.WriteJSON(w, out)
}

func (h Plugin) Distributions(w http.ResponseWriter, r *route.Request) error {
	run, tag, err := route.RequireRunTag(r)
	if err != nil {
		return err
	}
	points, err := h.ReadHistograms(r, run, tag, min(h.Samples("histograms", route.SamplesHistograms), route.DistributionsRoutePoints))
	if err != nil {
		return err
	}
	return route.WriteJSON(w, CompressedPoints(points))
}

// compressedPoints is the distributions shape: [[wall_time, step,
// [[basis_point, value], ...]], ...].
func CompressedPoints(points []Point) [][]any {
	out := make([][]any, 0, len(points))
	for _, p := range points {
		var pairs [][]any
		for _, c := range compressHistogram(p.Buckets) {
			pairs = append(pairs, []any{c.bps, route.Float(c.value)})
		}
		out = append(out, []any{route.Float(p.WallTime), p.Step, pairs})
	}
	return out
}

// normalBasisPoints are the percentiles (in basis points) a distribution
// shows: the median and ±1, 2, 3 standard deviations of a normal
// distribution, and the extremes.
var normalBasisPoints = []int{0, 668, 1587, 3085, 5000, 6915, 8413, 9332, 10000}

type compressedValue struct {
	bps   int
	value float64
}

// compressHistogram estimates the value at each basis point of the
// distribution a histogram describes, interpolating linearly inside the
// bucket where the cumulative count crosses the basis point (TensorBoard's
// distribution compression). Each bucket's range is clipped to the
// histogram's overall range, and empty buckets are skipped.
func compressHistogram(buckets [][]float64) []compressedValue {
	out := make([]compressedValue, 0, len(normalBasisPoints))
	if len(buckets) == 0 {
		for _, bp := range normalBasisPoints {
			out = append(out, compressedValue{bp, 0})
		}
		return out
	}
	lo, hi := buckets[0][0], buckets[len(buckets)-1][1]
	total := 0.0
	for _, b := range buckets {
		total += b[2]
	}
	if total == 0 {
		total = 1
	}
	// cum[i] is the cumulative weight (in basis points) through bucket i.
	cum := make([]float64, len(buckets))
	acc := 0.0
	for i, b := range buckets {
		acc += b[2] * 10000 / total
		cum[i] = acc
	}
	i := 0
	for _, bp := range normalBasisPoints {
		target := float64(bp)
		// The first bucket whose cumulative weight exceeds the target.
		j := sort.Search(len(cum), func(j int) bool { return cum[j] > target })
		found := false
		for ; j < len(cum); j++ {
			prev := 0.0
			if j > 0 {
				prev = cum[j-1]
			}
			if cum[j] == prev {
				continue // empty bucket
			}
			left := lo
			if j > 0 && prev != 0 {
				left = max(buckets[j-1][1], lo)
			}
			right := min(buckets[j][1], hi)
			out = append(out, compressedValue{bp, left + (target-prev)*(right-left)/(cum[j]-prev)})
			found = true
			break
		}
		if !found {
			break
		}
		i++
	}
	for _, bp := range normalBasisPoints[i:] {
		out = append(out, compressedValue{bp, hi})
	}
	return out
}

// Plugin serves the plugin's routes from the data of Env.
type Plugin struct{ *route.Env }
