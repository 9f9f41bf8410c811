package browsertest

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"testing"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
)

// histogramSteps reads a histogram series from the HTTP API: step → its
// buckets [left, right, count].
func histogramSteps(t *testing.T, run, tag string) map[int64][][3]float64 {
	t.Helper()
	q := url.Values{"run": {run}, "tag": {tag}}
	code, body := api(t, http.MethodGet, "/experiment/"+env.eid+"/data/plugin/histograms/histograms?"+q.Encode(), env.token, "")
	if code != http.StatusOK {
		t.Fatalf("histograms of %s/%s: %d %s", run, tag, code, body)
	}
	var data [][]json.RawMessage
	if err := json.Unmarshal([]byte(body), &data); err != nil {
		t.Fatal(err)
	}
	out := map[int64][][3]float64{}
	for _, d := range data {
		var step int64
		var buckets [][3]any
		if err := json.Unmarshal(d[1], &step); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(d[2], &buckets); err != nil {
			t.Fatal(err)
		}
		for _, b := range buckets {
			var v [3]float64
			for k, x := range b {
				v[k] = jsonNumber(t, x)
			}
			out[step] = append(out[step], v)
		}
	}
	return out
}

// jsonNumber is a number of TensorBoard's JSON: a number, or "NaN",
// "Infinity", "-Infinity".
func jsonNumber(t *testing.T, x any) float64 {
	t.Helper()
	switch v := x.(type) {
	case float64:
		return v
	case string:
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			t.Fatalf("histogram value %q", v)
		}
		return f
	}
	t.Fatalf("histogram value %v", x)
	return 0
}

// readout is what the hover readout of a histogram shows, and where.
type readout struct {
	Hidden                  bool
	Step                    int64
	Left, Right, Count      float64
	Text                    string
	X, Y, W, H              float64 // its box
	InnerWidth, InnerHeight float64
}

func readReadout(t *testing.T, ctx context.Context, card int) readout {
	t.Helper()
	var r struct {
		Hidden                   bool
		Step, Left, Right, Count string
		Text                     string
		X, Y, W, H               float64
		InnerWidth, InnerHeight  float64
	}
	run(t, ctx, chromedp.Evaluate(fmt.Sprintf(`(() => {
		const el = document.querySelectorAll(".histogram-card")[%d].querySelector(".histogram-readout");
		const b = el.getBoundingClientRect();
		return {hidden: el.hidden, step: el.dataset.step ?? "", left: el.dataset.left ?? "", right: el.dataset.right ?? "", count: el.dataset.count ?? "",
			text: el.textContent, x: b.left, y: b.top, w: b.width, h: b.height, innerWidth, innerHeight};
	})()`, card), &r))
	out := readout{Hidden: r.Hidden, Text: r.Text, X: r.X, Y: r.Y, W: r.W, H: r.H, InnerWidth: r.InnerWidth, InnerHeight: r.InnerHeight}
	if r.Hidden {
		return out
	}
	var err error
	if out.Step, err = strconv.ParseInt(r.Step, 10, 64); err != nil {
		t.Fatalf("readout step %q (%s)", r.Step, r.Text)
	}
	for p, s := range map[*float64]string{&out.Left: r.Left, &out.Right: r.Right, &out.Count: r.Count} {
		if *p, err = strconv.ParseFloat(s, 64); err != nil {
			t.Fatalf("readout value %q (%s)", s, r.Text)
		}
	}
	return out
}

// TestHistogramHoverReadout moves the mouse over histograms of the corpus,
// in offset and overlay modes and at device pixel ratios 1 and 2, and
// checks that the readout names a step, a bucket and its count the API
// holds, follows the pointer and stays inside the window.
func TestHistogramHoverReadout(t *testing.T) {
	for _, dpr := range []float64{1, 2} {
		for _, mode := range []string{"offset", "overlay"} {
			t.Run(fmt.Sprintf("%s/dpr%v", mode, dpr), func(t *testing.T) { hoverHistograms(t, mode, dpr) })
		}
	}
}

func hoverHistograms(t *testing.T, mode string, dpr float64) {
	ctx := tab(t, true)
	q := url.Values{"tab": {"histograms"}, "runFilter": {"^generated/histograms$"}}
	if mode != "offset" {
		q.Set("hmode", mode)
	}
	// A window narrow enough that the card spans it: the readout has to
	// turn back at its right edge.
	run(t, ctx,
		emulation.SetDeviceMetricsOverride(720, 800, dpr, false),
		navigate(experimentURL(env.eid, q)),
		waitFor(`document.querySelectorAll(".histogram-card").length === 4`),
		waitFor(paintedCanvases(".histogram-card canvas", 200)+" >= 4"),
	)
	// The histograms of a normal distribution whose mean moves with the step.
	const run0, tag = "generated/histograms", "normal/moving_mean"
	var card int
	run(t, ctx, chromedp.Evaluate(fmt.Sprintf(`[...document.querySelectorAll(".histogram-card")].findIndex(c => c.dataset.tag === %q)`, tag), &card))
	if card < 0 {
		t.Fatalf("no card of %s", tag)
	}
	steps := histogramSteps(t, run0, tag)
	if len(steps) < 2 {
		t.Fatalf("%s: %d steps; the test needs several", tag, len(steps))
	}
	first, last := int64(math.MaxInt64), int64(math.MinInt64)
	for s := range steps {
		first, last = min(first, s), max(last, s)
	}

	// The canvas's box, with the card at the bottom of the window, so that
	// the readout has to stay inside it at the bottom too.
	box := func() (left, top, width, height float64) {
		var b []float64
		run(t, ctx, chromedp.Evaluate(fmt.Sprintf(`(() => { const c = document.querySelectorAll(".histogram-card canvas")[%d];
			c.scrollIntoView({block: "end"}); const r = c.getBoundingClientRect(); return [r.left, r.top, r.width, r.height]; })()`, card), &b))
		return b[0], b[1], b[2], b[3]
	}
	left, top, width, height := box()
	hover := func(fx, y float64) readout {
		t.Helper()
		x := left + fx*width
		run(t, ctx,
			chromedp.MouseEvent(input.MouseMoved, x, y),
			// Shown, and moved to the pointer.
			waitFor(fmt.Sprintf(`(() => { const el = document.querySelectorAll(".histogram-card")[%d].querySelector(".histogram-readout");
				const b = el.getBoundingClientRect();
				return !el.hidden && Math.max(b.left - %[2]f, %[2]f - b.right) <= 40 && Math.max(b.top - %[3]f, %[3]f - b.bottom) <= 40; })()`, card, x, y)),
		)
		r := readReadout(t, ctx, card)
		// The readout names a bucket the step has, with its count.
		found := false
		for _, b := range steps[r.Step] {
			found = found || (b[0] == r.Left && b[1] == r.Right && b[2] == r.Count)
		}
		if !found {
			t.Errorf("at (%.0f, %.0f) the readout (%q) names step %d [%v, %v) count %v: not a bucket of the API's step (%d buckets)", x, y, r.Text, r.Step, r.Left, r.Right, r.Count, len(steps[r.Step]))
		}
		// Beside the pointer, inside the window.
		if r.X < 0 || r.Y < 0 || r.X+r.W > r.InnerWidth || r.Y+r.H > r.InnerHeight {
			t.Errorf("readout at %v,%v size %vx%v: outside the %vx%v window", r.X, r.Y, r.W, r.H, r.InnerWidth, r.InnerHeight)
		}
		if dx, dy := math.Max(r.X-x, x-(r.X+r.W)), math.Max(r.Y-y, y-(r.Y+r.H)); dx < 0 && dy < 0 {
			t.Errorf("readout at %v,%v size %vx%v covers the pointer at %v,%v", r.X, r.Y, r.W, r.H, x, y)
		}
		return r
	}

	if mode == "offset" {
		// Over the top ridge: the first step; just above the bottom ridge's
		// baseline (20 px above the canvas's bottom, the tick labels below
		// it): the last step.
		if r := hover(0.4, top+4); r.Step != first {
			t.Errorf("offset mode, top of the chart: readout step %d (%q), want the first step %d", r.Step, r.Text, first)
		}
		if r := hover(0.4, top+height-21); r.Step != last {
			t.Errorf("offset mode, bottom ridge: readout step %d (%q), want the last step %d", r.Step, r.Text, last)
		}
	}
	// Across the chart (the plot ends 56 px from the canvas's right edge,
	// where the step labels are), the bucket follows the pointer: further
	// right, a step's bucket lies no further left.
	prev := map[int64]float64{}
	for _, fx := range []float64{0.1, 0.3, 0.5, 0.7, (width - 58) / width} {
		r := hover(fx, top+height*0.6)
		if p, ok := prev[r.Step]; ok && r.Right < p {
			t.Errorf("moving right to %.2f of the chart, step %d's bucket moved left: [%v, %v)", fx, r.Step, r.Left, r.Right)
		}
		prev[r.Step] = r.Right
	}
	screenshot(t, ctx, fmt.Sprintf("histogram-hover-%s-dpr%v", mode, dpr))

	// Leaving the canvas hides it.
	run(t, ctx,
		chromedp.MouseEvent(input.MouseMoved, left-30, top-30),
		waitFor(fmt.Sprintf(`document.querySelectorAll(".histogram-card")[%d].querySelector(".histogram-readout").hidden`, card)),
	)
}
