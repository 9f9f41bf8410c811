package browsertest

import (
	"fmt"
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

// A group of one card takes the group's whole width (issue 23: "a group
// with one card does not leave half the screen empty"); the cards of a
// group of several share the grid's columns as before.
func TestLoneCardOfAGroupTakesTheWidth(t *testing.T) {
	ramp := make([]float64, 30)
	for i := range ramp {
		ramp[i] = float64(i)
	}
	eid := writeScalars(t, "lone cards", "run", map[string][]float64{"train/loss": ramp, "eval/a": ramp, "eval/b": ramp})
	ctx := tab(t, true)
	run(t, ctx,
		chromedp.EmulateViewport(1400, 900),
		navigate(experimentURL(eid, nil)),
		waitFor(paintedCanvases(".scalar-card canvas", 50)+" === 3"),
	)
	width := func(sel string) (card, grid, canvas float64) {
		var w struct{ Card, Grid, Canvas float64 }
		run(t, ctx, chromedp.Evaluate(fmt.Sprintf(`(() => { const c = document.querySelector(%q);
			return {Card: c.getBoundingClientRect().width, Grid: c.parentElement.getBoundingClientRect().width, Canvas: c.querySelector("canvas").getBoundingClientRect().width}; })()`, sel), &w))
		return w.Card, w.Grid, w.Canvas
	}
	if card, grid, canvas := width(`.scalar-card[data-tag="train/loss"]`); card < 0.95*grid || canvas < 0.9*grid {
		t.Errorf("the lone card of group train: card %.0f px, chart %.0f px, in a grid %.0f px wide; want the grid's width", card, canvas, grid)
	}
	if card, grid, _ := width(`.scalar-card[data-tag="eval/a"]`); card > 0.6*grid {
		t.Errorf("a card of group eval (two cards): %.0f px of the grid's %.0f; want a column", card, grid)
	}
}

// A scalar card's □ button shows it full screen with a chart as tall as
// the screen (issue 23: "cards can be expanded to full width and full
// screen"); leaving full screen puts the chart back at its size.
func TestScalarsCardFullScreen(t *testing.T) {
	eid := sixtyRunsExperiment(t)
	ctx := tab(t, true)
	card := `.scalar-card[data-tag="loss"]`
	height := func() float64 {
		var r rect
		run(t, ctx, chromedp.Evaluate(boxOf(card+" canvas"), &r))
		return r.Bottom - r.Top
	}
	run(t, ctx,
		chromedp.EmulateViewport(1400, 900),
		navigate(experimentURL(eid, url.Values{"runFilter": {"^run0[0-2]$"}})),
		waitFor(paintedCanvases(card+" canvas", 200)+" === 1"),
	)
	h0 := height()
	run(t, ctx,
		chromedp.Click(card+" button.fullscreen", chromedp.ByQuery),
		waitFor(`document.fullscreenElement === document.querySelector('`+card+`')`),
		waitFor(`document.querySelector('`+card+` canvas').getBoundingClientRect().height > innerHeight * 0.7`),
		waitFor(paintedCanvases(card+" canvas", 200)+" === 1"),
	)
	screenshot(t, ctx, "scalars-card-fullscreen")
	run(t, ctx,
		chromedp.Evaluate(`document.exitFullscreen()`, nil),
		waitFor(`document.fullscreenElement === null`),
		waitFor(`document.querySelector('`+card+` canvas').getBoundingClientRect().height < innerHeight * 0.5`),
	)
	if h := height(); h > 1.2*h0 {
		t.Errorf("after full screen the chart is %.0f px tall, was %.0f", h, h0)
	}
}
