package browsertest

import (
	"net/url"
	"testing"

	"github.com/chromedp/chromedp"
)

// A card of one (tag, run) names its run whole (issue 23: "show the
// distinguishing part everywhere a run is named"): the header cut the run
// at its start to half the card's width, so the corpus's
// real/study_tb/runs/histogram_experiment read as "…ns/histogram_experiment"
// and neighbours sharing an end could not be told apart. On the images,
// histograms, distributions, text and Time Series tabs, at a desktop and a
// phone width, every card's run name is its whole name, none of it clipped.
func TestCardHeadersNameTheirRunWhole(t *testing.T) {
	ctx := tab(t, true)
	// The card's run label against its card's run: whole, and not clipped.
	const clipped = `[...document.querySelectorAll(".card .card-run")].filter(r => {
		const run = r.closest(".card").dataset.run;
		return r.textContent !== run || r.scrollWidth > r.clientWidth + 1 || r.getClientRects().length === 0;
	}).map(r => r.closest(".card").dataset.run)`
	for _, vp := range []struct{ w, h int64 }{{1400, 900}, {390, 844}} {
		for _, tabName := range []string{"images", "histograms", "distributions", "text", "timeseries"} {
			q := url.Values{"tab": {tabName}}
			run(t, ctx,
				chromedp.EmulateViewport(vp.w, vp.h),
				navigate(experimentURL(env.eid, q)),
				waitFor(`document.querySelectorAll(".card .card-run").length > 0`),
			)
			var runs []string
			var longest int
			run(t, ctx,
				chromedp.Evaluate(clipped, &runs),
				chromedp.Evaluate(`Math.max(...[...document.querySelectorAll(".card .card-run")].map(r => r.textContent.length))`, &longest),
			)
			if len(runs) > 0 {
				t.Errorf("%s at %d px: %d card headers do not show their run whole: %q", tabName, vp.w, len(runs), runs)
			}
			// The corpus's long names must be among the cards, or the test shows nothing.
			if tabName != "text" && longest < 30 {
				t.Errorf("%s at %d px: the longest run named in a card header has %d characters; the corpus should give one of 30 or more", tabName, vp.w, longest)
			}
		}
	}
	screenshot(t, ctx, "card-headers-phone")
}
