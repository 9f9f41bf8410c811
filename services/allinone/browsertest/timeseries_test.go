package browsertest

import (
	"net/url"
	"strconv"
	"testing"

	"github.com/chromedp/chromedp"
)

// The Time Series view lists scalar, histogram and image cards of the
// corpus on one page; a pinned card is shown at the top and stays pinned
// across a reload (tspin in the URL); the global step moves the image
// cards to an earlier step.
func TestTimeSeriesView(t *testing.T) {
	ctx := tab(t, true)
	q := url.Values{"tab": {"timeseries"}, "runFilter": {"^generated/(scalars/train|histograms|images)$"}}
	count := func(kind string) string {
		return `document.querySelectorAll('.ts-card[data-kind="` + kind + `"]').length`
	}
	run(t, ctx,
		chromedp.EmulateViewport(1400, 900),
		navigate(experimentURL(env.eid, q)),
		waitFor(`document.querySelector('nav.tabs .tab[aria-selected="true"]')?.dataset.tab === "timeseries"`),
		waitFor(count("scalars")+` >= 3 && `+count("histograms")+` >= 1 && `+count("images")+` >= 1`),
		waitFor(paintedCanvases(`.ts-card[data-kind="scalars"] canvas`, 200)+` >= 1`),
	)
	screenshot(t, ctx, "timeseries")

	// Pin the first image card: it moves to the pinned group at the top.
	const first = `document.querySelector('.ts-card[data-kind="images"]')`
	var key string
	run(t, ctx,
		chromedp.Evaluate(first+`.dataset.key`, &key),
		chromedp.Evaluate(first+`.querySelector("button.pin").click()`, nil),
		waitFor(`new URLSearchParams(location.search).getAll("tspin").length === 1`),
	)
	run(t, ctx, waitFor(`document.querySelector(".group.pinned .ts-card")?.dataset.key === `+strconv.Quote(key)))
	run(t, ctx, chromedp.Reload())
	run(t, ctx, waitFor(`document.querySelector(".group.pinned .ts-card")?.dataset.key === `+strconv.Quote(key)))
	run(t, ctx, waitFor(`document.querySelector(".cards > .group.pinned") === document.querySelector(".cards").firstElementChild`))
	// The pinned image loads, and the global step slider has steps to offer.
	run(t, ctx, waitFor(`(() => { const i = document.querySelector(".group.pinned .ts-card img.sample"); return i && i.complete && i.naturalWidth > 0; })()`))
	run(t, ctx, waitFor(`document.querySelector("input[aria-label=global-step]") && !document.querySelector("input[aria-label=global-step]").disabled`))
	var pinned string
	run(t, ctx, chromedp.Evaluate(`new URLSearchParams(location.search).get("tspin")`, &pinned))
	if pinned != key {
		t.Errorf("tspin = %q after reload, want %q", pinned, key)
	}

	// The global step at its first step: the image cards go back to an
	// earlier step (their first one at or before it).
	const pinnedBody = `document.querySelector(".group.pinned .ts-card .card-body")`
	var latest, firstStep string
	run(t, ctx,
		waitFor(pinnedBody+`.dataset.step !== undefined`),
		chromedp.Evaluate(pinnedBody+`.dataset.step`, &latest),
	)
	run(t, ctx,
		chromedp.SetValue(`input[aria-label=global-step]`, "0", chromedp.ByQuery),
		chromedp.Evaluate(`document.querySelector("input[aria-label=global-step]").dispatchEvent(new Event("input"))`, nil),
		waitFor(`new URLSearchParams(location.search).has("tsstep")`),
		chromedp.Evaluate(`new URLSearchParams(location.search).get("tsstep")`, &firstStep),
	)
	run(t, ctx,
		waitFor(pinnedBody+`.dataset.step !== undefined && Number(`+pinnedBody+`.dataset.step) < `+latest),
		waitFor(`(() => { const i = document.querySelector(".group.pinned .ts-card img.sample"); return i && i.complete && i.naturalWidth > 0; })()`),
	)
	screenshot(t, ctx, "timeseries-pinned-step-"+firstStep)
}
