package browsertest

import (
	"math"
	"net/url"
	"strconv"
	"testing"

	"github.com/chromedp/chromedp"
)

// chartFacts are what a scalar card's chart says of itself in its
// dataset (scalars.ts, linechart.ts): the zoom its points were read for,
// how many it holds and how many lie in the zoom's x range, and the
// highest value drawn.
type chartFacts struct {
	Zoomed string `json:"zoomed"`
	Points string `json:"points"`
	InView string `json:"inview"`
	YHi    string `json:"yhi"`
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
		q := url.Values{"smoothing": {"0"}}
		key := ""
		if tc.zoom != "" {
			q.Set("zoom", tc.zoom)
			key = "step:654000:655000"
		}
		f := openCard(t, eid, "loss", q, key)
		if y, err := strconv.ParseFloat(f.YHi, 64); err != nil || y != spike {
			t.Errorf("%s: highest value drawn %q (%+v), want the spike %v", tc.name, f.YHi, f, spike)
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
}
