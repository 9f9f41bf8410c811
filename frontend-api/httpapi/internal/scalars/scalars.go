// Package scalars serves the scalars plugin's routes: tags, one series
// (JSON or CSV), and several runs' series of one tag (TensorBoard's
// answer, or tbhub's columns with ?format=columns).
package scalars

import (
	"encoding/json"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/tbhub/tbhub/frontend-api/httpapi/internal/route"
	"github.com/tbhub/tbhub/schemas/readhint"
)

func (h Plugin) ScalarTags(w http.ResponseWriter, r *route.Request) error {
	series, err := h.ListScalars(r, "scalars", nil)
	if err != nil {
		return err
	}
	return route.WriteJSON(w, h.TagInfos(series))
}

func (h Plugin) Scalars(w http.ResponseWriter, r *route.Request) error {
	run, tag, err := route.RequireRunTag(r)
	if err != nil {
		return err
	}
	d, err := h.OneScalarSeries(r, "scalars", run, tag, h.Samples("scalars", route.SamplesScalars))
	if err != nil {
		return err
	}
	if r.URL.Query().Get("format") == "csv" {
		return route.WriteBody(w, "text/csv; charset=utf-8", route.ScalarCSV("Wall time,Step,Value", d))
	}
	return route.WriteBody(w, "application/json", route.AppendScalarJSON(nil, d))
}

// maxSamplesParam bounds the samples parameter: more points per series
// than a chart has pixel columns; every point is the download route's job.
const maxSamplesParam = 10_000

// samplesParam reads tbhub's optional "samples" parameter of the scalar
// routes, the points per series to read instead of the route's default
// (a chart asks for about as many as it has pixel columns).
func samplesParam(v string, def int64) (int64, error) {
	if v == "" {
		return def, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 1 || n > maxSamplesParam {
		return 0, route.Errorf(http.StatusBadRequest, "samples=%q: want an integer from 1 to %d", v, maxSamplesParam)
	}
	return n, nil
}

func (h Plugin) ScalarsMultirun(w http.ResponseWriter, r *route.Request) error {
	form, err := route.PostForm(r)
	if err != nil {
		return err
	}
	tags := form["tag"]
	if len(tags) != 1 {
		return route.Errorf(http.StatusBadRequest, "exactly one tag is required, got %d", len(tags))
	}
	k, err := samplesParam(form.Get("samples"), h.Samples("scalars", route.SamplesScalars))
	if err != nil {
		return err
	}
	columns := false
	switch f := form.Get("format"); f {
	case "":
	case "columns":
		columns = true
	default:
		return route.Errorf(http.StatusBadRequest, "format=%q: want columns or nothing", f)
	}
	var after map[string]heldSeries
	if v := form.Get("after"); v != "" {
		if !columns {
			return route.Errorf(http.StatusBadRequest, "after is only read with format=columns")
		}
		if err := json.Unmarshal([]byte(v), &after); err != nil {
			return route.Errorf(http.StatusBadRequest, "after: want {run: {\"step\": S, \"wall_time\": W, \"value\": V, \"max_wall_time\": M}}: %v", err)
		}
	}
	window, err := bucketsParams(form)
	if err != nil {
		return err
	}
	if window != nil && after != nil && (window.minStep != nil || window.maxStep != nil) {
		return route.Errorf(http.StatusBadRequest, "after does not go with min_step or max_step: a tail is of the whole series")
	}
	runs := form["runs"]
	if len(runs) == 0 {
		return route.WriteBody(w, "application/json", []byte("{}"))
	}
	var answers []columnsAnswer
	// A whole read: TensorBoard's sample of k points, or buckets.
	whole := func(runs []string) ([]route.ScalarSeries, error) {
		if window != nil {
			return h.ReadScalarBuckets(r, "scalars", route.Filter(runs, tags), window.buckets, window.minStep, window.maxStep)
		}
		return h.ReadScalars(r, "scalars", route.Filter(runs, tags), k)
	}
	if columns && (window == nil || window.minStep == nil && window.maxStep == nil) {
		answers, err = h.readColumns(r, runs, tags, k, after, whole)
	} else {
		var series []route.ScalarSeries
		series, err = whole(runs)
		for _, s := range series {
			answers = append(answers, columnsAnswer{ScalarSeries: s})
		}
	}
	if err != nil {
		return err
	}
	// {run: series} written directly: through encoding/json, a map of
	// scalarJSON would be re-scanned and compacted, the larger part of
	// this route's time on big answers. Runs in name order, once each, as
	// encoding/json writes a map.
	slices.SortStableFunc(answers, func(a, b columnsAnswer) int { return strings.Compare(a.Run, b.Run) })
	b := append(make([]byte, 0, answerBytes(answers)), '{')
	for i, a := range answers {
		if i+1 < len(answers) && answers[i+1].Run == a.Run {
			continue // the map kept the last
		}
		if len(b) > 1 {
			b = append(b, ',')
		}
		name, err := json.Marshal(a.Run)
		if err != nil {
			return err
		}
		b = append(append(b, name...), ':')
		if columns {
			b = appendScalarColumns(b, a)
		} else {
			b = route.AppendScalarJSON(b, a.Data)
		}
	}
	return route.WriteBody(w, "application/json", append(b, '}'))
}

// answerBytes is about the size of scalars_multirun's answer of answers,
// a little more for usual values, so that the answer is written into one
// buffer instead of one that grows and is copied a dozen times.
func answerBytes(answers []columnsAnswer) int {
	n := 2
	for _, a := range answers {
		n += 128 + len(a.Run) + 32*len(a.Data.GetStep())
	}
	return n
}

// appendScalarColumns appends {"wall_time_base": B, "wall_time": [...],
// "step": [...], "value": [...]}: the points of a series as three arrays,
// which a browser parses several times faster than an array per point
// (tbhub's scalars_multirun format=columns). Wall times are written as
// offsets from B ("22.5", not "1700000042.5": wall times were nearly half
// the bytes), and B + offset is exactly the wall time in float64
// arithmetic (B is 0 for a series where it would not be). Values are
// float32 (ScalarData's type), so they are written with the fewest digits
// that read back as the same float32, not as the float64 that holds it:
// "0.1", not "0.10000000149011612".
//
// tbhub's live reads (see readColumns) add "max_wall_time": the series'
// largest wall time as listed before its points were read, and, for a
// series answered as a tail, "after": the step after which its points
// start.
func appendScalarColumns(b []byte, a columnsAnswer) []byte {
	d := a.Data
	base := wallTimeBase(d.GetWallTime())
	b = append(b, `{"wall_time_base":`...)
	b = route.AppendFloat(b, base)
	if a.listed {
		b = append(b, `,"max_wall_time":`...)
		b = route.AppendFloat(b, a.maxWallTime)
	}
	if a.tail {
		b = append(b, `,"after":`...)
		b = strconv.AppendInt(b, a.after, 10)
	}
	b = append(b, `,"wall_time":[`...)
	for i, w := range d.GetWallTime() {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendWallOffset(b, base, w)
	}
	b = append(b, `],"step":[`...)
	for i, step := range d.GetStep() {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, step, 10)
	}
	b = append(b, `],"value":[`...)
	for i, v := range d.GetValue() {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendFloat32(b, v)
	}
	return append(b, "]}"...)
}

// wallTimeBase returns the first finite wall time of walls if every wall
// time is exactly that base plus its offset from it, else 0.
func wallTimeBase(walls []float64) float64 {
	finite := func(w float64) bool { return !math.IsNaN(w) && !math.IsInf(w, 0) }
	i := slices.IndexFunc(walls, finite)
	if i < 0 {
		return 0
	}
	base := walls[i]
	for _, w := range walls {
		if finite(w) && base+(w-base) != w {
			return 0
		}
	}
	return base
}

// appendWallOffset appends the offset of wall time w from base: of the
// decimals o with base + o == w in float64 arithmetic (as a client adds
// them), the one with the fewest fractional digits, where the exact offset
// w - base may need 17 digits ("24.9", not "24.899999856948853", for
// 1.7e9 + 24.9 - 1.7e9). Base and w are those of wallTimeBase: base + (w -
// base) == w, or base is 0. The digits are those of an integer m, a
// fraction of k digits: m / 10^k is, for m below 2^53 and k up to 22, one
// correctly rounded division of exact numbers, so exactly the float64 a
// correct parser reads from the digits. Outside [1e-4, 1e15), or when no k
// fits (base 0 and w not a short decimal), it writes appendShortFloat(w -
// base), the exact offset.
func appendWallOffset(b []byte, base, w float64) []byte {
	d := w - base
	if a := math.Abs(d); a >= 1e-4 && a < 1e15 {
		for k, p := range pow10 {
			s := d * p
			if math.Abs(s) >= 1<<53 {
				break
			}
			if m := math.Round(s); base+m/p == w {
				return appendDecimal(b, m, k)
			}
		}
	}
	return appendShortFloat(b, d)
}

// pow10 are the powers of ten that appendWallOffset scales by, each exact.
var pow10 = [...]float64{1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17}

// appendDecimal appends the integer m (below 2^53) divided by 10^k, in
// positional notation without trailing fractional zeros.
func appendDecimal(b []byte, m float64, k int) []byte {
	if m < 0 {
		b, m = append(b, '-'), -m
	}
	u := uint64(m)
	for k > 0 && u%10 == 0 {
		u, k = u/10, k-1
	}
	start := len(b)
	b = strconv.AppendUint(b, u, 10)
	if k == 0 {
		return b
	}
	// Zeros before the digits for a fraction below 1 ("0.05" of 5, k = 2),
	// then the point k digits from the right.
	if pad := k + 1 - (len(b) - start); pad > 0 {
		b = append(b, make([]byte, pad)...)
		copy(b[start+pad:], b[start:])
		for i := range pad {
			b[start+i] = '0'
		}
	}
	b = append(b, 0)
	dot := len(b) - 1 - k
	copy(b[dot+1:], b[dot:len(b)-1])
	b[dot] = '.'
	return b
}

// appendFloat32 appends v in its shortest round-trip form as a JSON
// number, or as the strings of Float for NaN and infinities.
func appendFloat32(b []byte, v float32) []byte {
	if f := float64(v); math.IsNaN(f) || math.IsInf(f, 0) {
		return route.AppendFloat(b, f)
	}
	return strconv.AppendFloat(b, float64(v), 'g', -1, 32)
}

// appendShortFloat appends f in its shortest round-trip form as a JSON
// number (22, not 22.0; no exponent for magnitudes from 1e-4 to 1e15),
// or as the strings of Float for NaN and infinities.
func appendShortFloat(b []byte, f float64) []byte {
	switch a := math.Abs(f); {
	case math.IsNaN(f) || math.IsInf(f, 0):
		return route.AppendFloat(b, f)
	case a == 0 || (a >= 1e-4 && a < 1e15):
		return strconv.AppendFloat(b, f, 'f', -1, 64)
	}
	return strconv.AppendFloat(b, f, 'g', -1, 64)
}

// bucketWindow is a bucketed read asked of scalars_multirun.
type bucketWindow struct {
	buckets          int
	minStep, maxStep *int64
}

// bucketsParams reads tbhub's "buckets", "min_step" and "max_step" form
// fields of scalars_multirun: nil without buckets (then neither step may
// be given); an error (400) for a value that is not an integer, buckets
// outside 1 to readhint.MaxBuckets, or min_step above max_step.
func bucketsParams(form url.Values) (*bucketWindow, error) {
	steps := [2]*int64{}
	for i, key := range []string{"min_step", "max_step"} {
		v := form.Get(key)
		if v == "" {
			continue
		}
		if form.Get("buckets") == "" {
			return nil, route.Errorf(http.StatusBadRequest, "%s is only read with buckets", key)
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return nil, route.Errorf(http.StatusBadRequest, "%s=%q: want an integer step", key, v)
		}
		steps[i] = &n
	}
	v := form.Get("buckets")
	if v == "" {
		return nil, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > readhint.MaxBuckets {
		return nil, route.Errorf(http.StatusBadRequest, "buckets=%q: want an integer from 1 to %d", v, readhint.MaxBuckets)
	}
	if steps[0] != nil && steps[1] != nil && *steps[0] > *steps[1] {
		return nil, route.Errorf(http.StatusBadRequest, "min_step %d is above max_step %d", *steps[0], *steps[1])
	}
	return &bucketWindow{buckets: n, minStep: steps[0], maxStep: steps[1]}, nil
}

// Plugin serves the plugin's routes from the data of Env.
type Plugin struct{ *route.Env }
