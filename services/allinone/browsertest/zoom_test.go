package browsertest

import (
	"context"
	"fmt"
	"math"
	"net/url"
	"strconv"
	"testing"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
)

// chartFacts are what a scalar card's chart says of itself in its
// dataset (scalars.ts, linechart.ts): the zoom its points were read for,
// how many it holds and how many lie in the zoom's x range, the highest
// value drawn and the top of the y axis.
type chartFacts struct {
	Zoomed string `json:"zoomed"`
	Points string `json:"points"`
	InView string `json:"inview"`
	YHi    string `json:"yhi"`
	YMax   string `json:"ymax"`
}

// openCard opens experiment eid with view state q and returns the facts
// of tag's chart once it is drawn (for zoom, once drawn from the zoom's
// own read).
func openCard(t *testing.T, eid, tag string, q url.Values, zoom string) chartFacts {
	t.Helper()
	ctx := tab(t, true)
	errs := pageErrors(ctx)
	chart := `document.querySelector('.scalar-card[data-tag="` + tag + `"] .chart')`
	ready := chart + `?.dataset.yhi !== undefined && (` + chart + `.dataset.zoomed ?? "") === "` + zoom + `"`
	var f chartFacts
	run(t, ctx,
		navigate(experimentURL(eid, q)),
		waitFor(ready+` || document.querySelector('.scalar-card .error') !== null`),
		chromedp.Evaluate(`({...`+chart+`?.dataset})`, &f),
	)
	screenshot(t, ctx, "scalars-zoom-"+tag+"-"+strconv.Itoa(len(zoom)))
	if e := errs(); len(e) > 0 {
		t.Errorf("the page threw %q", e)
	}
	return f
}

// One spike among 1,000,000 points is in the chart at the default view
// and after a zoom that contains it: the cards read bucketed (a bucket's
// lowest and highest points are kept), where TensorBoard's sample of
// 1,000 points misses it 999 times in 1,000. Zooming into 100 steps of a
// 100,000-step series draws all 100 points (the zoom reads its range
// again at screen resolution), where the default view's 1,000-odd
// buckets hold a few of them.
func TestScalarsZoomShowsSpikesAndEveryPoint(t *testing.T) {
	const spikeStep, spike = 654_321, 1000.0
	values := make([]float64, 1_000_000)
	for s := range values {
		values[s] = 1 + 0.1*math.Sin(float64(s)/5000)
	}
	values[spikeStep] = spike
	eid := writeScalars(t, "one spike in a million", "r", map[string][]float64{"loss": values})
	for _, tc := range []struct{ name, zoom string }{{"default view", ""}, {"zoomed around the spike", "654000,655000"}} {
		// The y axis fitted to every point (not to the percentiles that
		// leave a spike above the chart, the default).
		q := url.Values{"smoothing": {"0"}, "outliers": {"0"}}
		key := ""
		if tc.zoom != "" {
			q.Set("zoom", tc.zoom)
			key = "step:654000:655000"
		}
		f := openCard(t, eid, "loss", q, key)
		if y, err := strconv.ParseFloat(f.YHi, 64); err != nil || y != spike {
			t.Errorf("%s: highest value drawn %q (%+v), want the spike %v", tc.name, f.YHi, f, spike)
		}
		if top, err := strconv.ParseFloat(f.YMax, 64); err != nil || top < spike {
			t.Errorf("%s: the y axis ends at %q (%+v), below the spike %v", tc.name, f.YMax, f, spike)
		}
	}

	steps := make([]float64, 100_000)
	for s := range steps {
		steps[s] = float64(s % 7)
	}
	eid = writeScalars(t, "a hundred thousand steps", "r", map[string][]float64{"acc": steps})
	f := openCard(t, eid, "acc", url.Values{"zoom": {"50000,50099"}}, "step:50000:50099")
	if f.InView != "100" {
		t.Errorf("zoomed into steps 50,000 to 50,099: %s points in view (%+v), want all 100", f.InView, f)
	}

	// The same by hand: a drag of 4 pixels across the middle of the
	// chart (a few hundred steps) shows every step in the range dragged.
	ctx := tab(t, true)
	chart := `document.querySelector('.scalar-card[data-tag="acc"] .chart')`
	var box []float64
	run(t, ctx,
		navigate(experimentURL(eid, nil)),
		waitFor(chart+`?.dataset.yhi !== undefined`),
		chromedp.Evaluate(`(() => { const r = `+chart+`.querySelector(".u-over").getBoundingClientRect(); return [r.left, r.top, r.width, r.height]; })()`, &box),
	)
	x, y := box[0]+box[2]/2, box[1]+box[3]/2
	var zoom string
	run(t, ctx,
		chromedp.MouseEvent(input.MouseMoved, x, y),
		chromedp.ActionFunc(func(ctx context.Context) error {
			if err := input.DispatchMouseEvent(input.MousePressed, x, y).WithButton(input.Left).WithButtons(1).WithClickCount(1).Do(ctx); err != nil {
				return err
			}
			for dx := 1.0; dx <= 4; dx++ {
				if err := input.DispatchMouseEvent(input.MouseMoved, x+dx, y).WithButton(input.Left).WithButtons(1).Do(ctx); err != nil {
					return err
				}
			}
			return input.DispatchMouseEvent(input.MouseReleased, x+4, y).WithButton(input.Left).WithButtons(0).WithClickCount(1).Do(ctx)
		}),
		waitFor(`new URLSearchParams(location.search).has("zoom") && `+chart+`?.dataset.zoomed`),
		chromedp.Evaluate(`new URLSearchParams(location.search).get("zoom")`, &zoom),
		chromedp.Evaluate(`({...`+chart+`.dataset})`, &f),
	)
	screenshot(t, ctx, "scalars-zoom-drag")
	var a, b float64
	if _, err := fmt.Sscanf(zoom, "%g,%g", &a, &b); err != nil {
		t.Fatalf("zoom=%q after the drag: %v", zoom, err)
	}
	want := int(math.Floor(b) - math.Ceil(a) + 1)
	if got, _ := strconv.Atoi(f.InView); want < 10 || got != want {
		t.Errorf("dragged to steps %g to %g: %s points in view (%+v), want every one of the %d steps", a, b, f.InView, f, want)
	}
}
