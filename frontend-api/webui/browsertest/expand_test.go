package browsertest

import (
	"net/url"
	"testing"

	"github.com/chromedp/chromedp"
)

// A scalar card's expand button (TensorBoard's) widens it to the grid's
// whole width with a taller chart, is kept in the URL across a reload,
// and a second press puts it back in the grid.
func TestScalarsCardExpandsToFullWidth(t *testing.T) {
	eid := sixtyRunsExperiment(t)
	ctx := tab(t, true)
	card := `.scalar-card[data-tag="loss"]`
	other := `.scalar-card[data-tag="count"]` // first in the grid, above the expanded card
	size := func(sel string) (w, h float64) {
		var r rect
		run(t, ctx, chromedp.Evaluate(boxOf(sel+" canvas"), &r))
		return r.Right - r.Left, r.Bottom - r.Top
	}
	run(t, ctx,
		chromedp.EmulateViewport(1400, 900),
		navigate(experimentURL(eid, url.Values{"runFilter": {"^run0[0-2]$"}})),
		waitFor(paintedCanvases(".scalar-card canvas", 200)+" === 5"),
	)
	w0, h0 := size(card)
	run(t, ctx,
		chromedp.Click(card+" button.expand", chromedp.ByQuery),
		urlParam("expand", "loss"),
		waitFor(`document.querySelector('`+card+`').classList.contains("expanded")`),
		waitFor(paintedCanvases(card+" canvas", 200)+" === 1"),
		waitFor(paintedCanvases(other+" canvas", 200)+" === 1"),
	)
	w1, h1 := size(card)
	wo, _ := size(other)
	if w1 < 2*wo || h1 < 1.5*h0 {
		t.Errorf("expanded card's chart %.0f × %.0f (was %.0f × %.0f; another card's %.0f wide): want the full width and taller", w1, h1, w0, h0, wo)
	}

	run(t, ctx,
		chromedp.Reload(),
		waitFor(`document.querySelector('`+card+`')?.classList.contains("expanded")`),
		waitFor(paintedCanvases(card+" canvas", 200)+" === 1"),
		chromedp.Click(card+" button.expand", chromedp.ByQuery),
		waitFor(`!location.search.includes("expand")`),
		waitFor(`!document.querySelector('`+card+`').classList.contains("expanded")`),
		waitFor(paintedCanvases(card+" canvas", 200)+" === 1"),
	)
	if w2, h2 := size(card); w2 > 1.2*wo || h2 > 1.2*h0 {
		t.Errorf("card back in the grid: %.0f × %.0f, want about %.0f × %.0f", w2, h2, wo, h0)
	}
}
