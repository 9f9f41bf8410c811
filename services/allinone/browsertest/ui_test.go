package browsertest

import (
	"fmt"
	"math"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
)

func TestScalarsDrawAndViewStateSurvivesReload(t *testing.T) {
	ctx := tab(t, true)
	run(t, ctx,
		navigate(experimentURL(env.eid, nil)),
		waitFor(`document.querySelector('nav.tabs .tab[aria-selected="true"]')?.dataset.tab === "scalars"`),
		waitFor(paintedCanvases(".scalar-card canvas", 200)+" >= 2"),
	)
	screenshot(t, ctx, "scalars")

	// Smoothing and the run filter go into the URL.
	run(t, ctx,
		chromedp.SetValue(".smoothing-num", "0.9", chromedp.ByQuery),
		chromedp.Evaluate(`document.querySelector(".smoothing-num").dispatchEvent(new Event("change"))`, nil),
		chromedp.SendKeys(".run-filter", "generated/scalars", chromedp.ByQuery),
		waitFor(`new URLSearchParams(location.search).get("smoothing") === "0.9"`),
		waitFor(`new URLSearchParams(location.search).get("runFilter") === "generated/scalars"`),
	)
	// Toggle one run off.
	run(t, ctx,
		chromedp.Click(`li[data-run="generated/scalars/eval"] input[type=checkbox]`, chromedp.ByQuery),
		waitFor(`new URLSearchParams(location.search).getAll("off").includes("generated/scalars/eval")`),
	)
	var loc string
	run(t, ctx, chromedp.Location(&loc))

	// Reloading that URL restores the view: controls, shown runs, cards.
	var smoothing, runFilter string
	var offChecked bool
	var cardTags []string
	run(t, ctx,
		navigate(loc),
		waitFor(paintedCanvases(".scalar-card canvas", 200)+" >= 3"),
		chromedp.Value(".smoothing-num", &smoothing, chromedp.ByQuery),
		chromedp.Value(".run-filter", &runFilter, chromedp.ByQuery),
		chromedp.Evaluate(`document.querySelector('li[data-run="generated/scalars/eval"] input[type=checkbox]').checked`, &offChecked),
		chromedp.Evaluate(`[...document.querySelectorAll(".scalar-card")].map(c => c.dataset.tag).sort()`, &cardTags),
	)
	if smoothing != "0.9" || runFilter != "generated/scalars" || offChecked {
		t.Errorf("after reload: smoothing %q, run filter %q, eval run checked %v; want 0.9, generated/scalars, false", smoothing, runFilter, offChecked)
	}
	// generated/scalars/train's tags (EXPECTED.json): accuracy, a learning
	// rate with spaces and non-ASCII, loss.
	want := []string{"accuracy", "learning_rate/with spaces & ünïcode", "loss"}
	if strings.Join(cardTags, "|") != strings.Join(want, "|") {
		t.Errorf("scalar cards after reload = %q, want %q", cardTags, want)
	}
	// Every tooltip row is one shown run: only train is left.
	var tooltipRuns []string
	run(t, ctx,
		moveOver(`.scalar-card[data-tag="loss"] .u-over`, 0.5),
		waitFor(`!document.querySelector('.scalar-card[data-tag="loss"] .tooltip').hidden`),
		chromedp.Evaluate(`[...document.querySelectorAll('.scalar-card[data-tag="loss"] .tooltip .tt-run')].map(e => e.textContent)`, &tooltipRuns),
	)
	if strings.Join(tooltipRuns, "|") != "generated/scalars/train" {
		t.Errorf("tooltip runs = %q, want [generated/scalars/train]", tooltipRuns)
	}
	screenshot(t, ctx, "scalars-filtered-smoothed")
}

func TestScalarsPinAndTagFilter(t *testing.T) {
	ctx := tab(t, true)
	q := url.Values{"runFilter": {"^generated/scalars/"}, "tagFilter": {"^(loss|accuracy)$"}}
	var tags []string
	run(t, ctx,
		navigate(experimentURL(env.eid, q)),
		waitFor(`document.querySelectorAll(".scalar-card").length === 2`),
		chromedp.Click(`.scalar-card[data-tag="loss"] button.pin`, chromedp.ByQuery),
		waitFor(`new URLSearchParams(location.search).getAll("pin").includes("loss")`),
		waitFor(`document.querySelector(".group.pinned .scalar-card")?.dataset.tag === "loss"`),
		waitFor(paintedCanvases(".scalar-card canvas", 200)+" === 2"),
		chromedp.Evaluate(`[...document.querySelectorAll(".scalar-card")].map(c => c.dataset.tag)`, &tags),
	)
	if strings.Join(tags, "|") != "loss|accuracy" {
		t.Errorf("cards in order = %q, want the pinned loss first, then accuracy", tags)
	}
}

func TestImagesDecode(t *testing.T) {
	ctx := tab(t, true)
	q := url.Values{"tab": {"images"}, "runFilter": {"^generated/images$"}}
	var sizes [][2]int
	run(t, ctx,
		navigate(experimentURL(env.eid, q)),
		waitFor(`(() => { const imgs = [...document.querySelectorAll(".image-card img.sample")];
			return imgs.length >= 3 && imgs.every(i => i.complete && i.naturalWidth > 0); })()`),
		chromedp.Evaluate(`[...document.querySelectorAll(".image-card img.sample")].map(i => [i.naturalWidth, i.naturalHeight])`, &sizes),
	)
	for _, s := range sizes {
		if s[0] <= 0 || s[1] <= 0 {
			t.Errorf("an image did not decode: %v", sizes)
		}
	}
	screenshot(t, ctx, "images")

	// Click for full size: larger than the thumbnail, centred, crisp.
	var full []float64
	var thumb float64
	run(t, ctx,
		chromedp.Evaluate(`document.querySelector(".image-card img.sample").getBoundingClientRect().width`, &thumb),
		chromedp.Evaluate(`document.querySelector(".image-card img.sample").click()`, nil),
		waitFor(`(() => { const i = document.querySelector(".overlay img"); return i && i.complete && i.getBoundingClientRect().width > 0; })()`),
		chromedp.Evaluate(`(() => { const i = document.querySelector(".overlay img"); const r = i.getBoundingClientRect(); const o = document.querySelector(".overlay").getBoundingClientRect();
			return [r.width, (r.left + r.width / 2) - (o.left + o.width / 2), (r.top + r.height / 2) - (o.top + o.height / 2), i.naturalWidth, getComputedStyle(i).imageRendering === "pixelated" ? 1 : 0]; })()`, &full),
	)
	if full[0] < thumb || full[0] < full[3] {
		t.Errorf("full size is %.0f px wide (thumbnail %.0f px, image %.0f px); want larger than both", full[0], thumb, full[3])
	}
	if full[1] < -2 || full[1] > 2 || full[2] < -2 || full[2] > 2 {
		t.Errorf("full-size image is off centre by (%.0f, %.0f) px", full[1], full[2])
	}
	if full[0] > full[3] && full[4] != 1 {
		t.Error("a small image scaled up is not drawn crisp (image-rendering: pixelated)")
	}
	screenshot(t, ctx, "image-full-size")
	run(t, ctx, chromedp.Evaluate(`document.querySelector(".overlay").click()`, nil), waitFor(`document.querySelector(".overlay") === null`))

	// The step slider shows another step's image (a different blob).
	const card = `.image-card[data-tag="gradient/image_summary"]`
	var before string
	run(t, ctx,
		chromedp.AttributeValue(card+` img`, "src", &before, nil, chromedp.ByQuery),
		chromedp.SetValue(card+` input[type=range]`, "0", chromedp.ByQuery),
		chromedp.Evaluate(`document.querySelector('`+card+` input[type=range]').dispatchEvent(new Event("input"))`, nil),
		waitFor(`document.querySelector('`+card+` .step-label').textContent === "step 0"`),
		waitFor(fmt.Sprintf(`(() => { const i = document.querySelector('%s img'); return i.src !== %q && i.complete && i.naturalWidth > 0; })()`, card, before)),
	)

	// The tag has two images per step: the sample slider shows the second one of
	// the same step (another blob), and the step slider stays on that step.
	var first string
	run(t, ctx,
		chromedp.AttributeValue(card+` img`, "src", &first, nil, chromedp.ByQuery),
		waitFor(`document.querySelector('`+card+` .sample-label').textContent === "sample 1 of 2"`),
		chromedp.SetValue(card+` input[aria-label=sample]`, "1", chromedp.ByQuery),
		chromedp.Evaluate(`document.querySelector('`+card+` input[aria-label=sample]').dispatchEvent(new Event("input"))`, nil),
		waitFor(`document.querySelector('`+card+` .sample-label').textContent === "sample 2 of 2"`),
		waitFor(fmt.Sprintf(`(() => { const i = document.querySelector('%s img'); return i.src !== %q && i.complete && i.naturalWidth > 0; })()`, card, first)),
		waitFor(`document.querySelector('`+card+` .step-label').textContent === "step 0"`),
	)
}

func TestAudioLoads(t *testing.T) {
	ctx := tab(t, true)
	run(t, ctx,
		navigate(experimentURL(env.eid, url.Values{"tab": {"audio"}})),
		// HAVE_METADATA: the browser parsed the WAV the server sent.
		waitFor(`(() => { const a = [...document.querySelectorAll(".audio-card audio")];
			return a.length >= 3 && a.every(x => x.readyState >= 1 && x.duration > 0); })()`),
	)
	screenshot(t, ctx, "audio")
}

func TestHistogramsAndDistributionsDraw(t *testing.T) {
	ctx := tab(t, true)
	q := url.Values{"tab": {"histograms"}, "runFilter": {"^generated/histograms$"}}
	run(t, ctx,
		navigate(experimentURL(env.eid, q)),
		waitFor(`document.querySelectorAll(".histogram-card").length === 4`),
		waitFor(paintedCanvases(".histogram-card canvas", 200)+" >= 3"),
	)
	screenshot(t, ctx, "histograms")
	run(t, ctx,
		chromedp.SetValue(".hist-mode", "overlay", chromedp.ByQuery),
		chromedp.Evaluate(`document.querySelector(".hist-mode").dispatchEvent(new Event("change"))`, nil),
		waitFor(`new URLSearchParams(location.search).get("hmode") === "overlay"`),
		waitFor(paintedCanvases(".histogram-card canvas", 200)+" >= 3"),
	)
	screenshot(t, ctx, "histograms-overlay")

	q.Set("tab", "distributions")
	run(t, ctx,
		navigate(experimentURL(env.eid, q)),
		waitFor(paintedCanvases(".distribution-card canvas", 200)+" >= 3"),
	)
	screenshot(t, ctx, "distributions")
}

func TestTextRendersMarkdownTables(t *testing.T) {
	ctx := tab(t, true)
	q := url.Values{"tab": {"text"}, "runFilter": {"^generated/text$"}}
	var cells int
	run(t, ctx,
		navigate(experimentURL(env.eid, q)),
		waitFor(`document.querySelector('.text-card[data-tag="table"] .markdown table') !== null`),
		chromedp.Evaluate(`document.querySelector('.text-card[data-tag="table"] .markdown table').querySelectorAll("td").length`, &cells),
	)
	if cells == 0 {
		t.Error("the table text has no cells")
	}
	screenshot(t, ctx, "text")
}

func TestTabsFollowPluginsWithData(t *testing.T) {
	ctx := tab(t, true)
	var tabs []string
	run(t, ctx,
		navigate(experimentURL(env.publicEID, nil)),
		waitFor(`document.querySelectorAll("nav.tabs .tab").length > 0`),
		chromedp.Evaluate(`[...document.querySelectorAll("nav.tabs .tab")].map(t => t.dataset.tab)`, &tabs),
	)
	// generated/scalars holds scalars only: Scalars, the Time Series view,
	// which shows scalars too, and the runs table (their last/min/max).
	if strings.Join(tabs, ",") != "scalars,timeseries,runs" {
		t.Errorf("tabs of a scalars-only experiment = %q, want [scalars timeseries runs]", tabs)
	}
}

func TestPrivateExperimentSignedOutShowsSignIn(t *testing.T) {
	ctx := tab(t, false)
	run(t, ctx,
		navigate(experimentURL(env.eid, nil)),
		waitFor(`document.querySelector("form.signin") !== null`),
	)
	screenshot(t, ctx, "private-signed-out")
	// Signing in there opens the experiment.
	run(t, ctx,
		chromedp.SendKeys(`form.signin input[name=token]`, env.token, chromedp.ByQuery),
		chromedp.Click(`form.signin button[type=submit]`, chromedp.ByQuery),
		waitFor(paintedCanvases(".scalar-card canvas", 200)+" >= 1"),
	)
}

func TestSignInRejectsBadToken(t *testing.T) {
	ctx := tab(t, false)
	var signedIn bool
	run(t, ctx,
		navigate(env.origin+"/signin"),
		chromedp.SendKeys(`form.signin input[name=token]`, "tbh_not-a-real-token", chromedp.ByQuery),
		chromedp.Click(`form.signin button[type=submit]`, chromedp.ByQuery),
		waitFor(`document.querySelector("form.signin .error").textContent !== ""`),
		chromedp.Evaluate(`fetch("/api/session").then(r => r.json()).then(s => s.signedIn)`, &signedIn, awaitPromise),
	)
	if signedIn {
		t.Error("a rejected token started a session")
	}
}

func TestPublicExperimentOpensSignedOut(t *testing.T) {
	ctx := tab(t, false)
	run(t, ctx,
		navigate(experimentURL(env.publicEID, nil)),
		waitFor(paintedCanvases(".scalar-card canvas", 200)+" >= 3"),
	)
	screenshot(t, ctx, "public-signed-out")
}

func TestMissingExperimentShowsNotFound(t *testing.T) {
	ctx := tab(t, true)
	var heading string
	run(t, ctx,
		navigate(experimentURL("no-such-experiment", nil)),
		waitFor(`document.querySelector(".not-found h1") !== null`),
		chromedp.Text(".not-found h1", &heading, chromedp.ByQuery),
	)
	if heading != "Experiment not found" {
		t.Errorf("heading = %q", heading)
	}
	screenshot(t, ctx, "not-found")
}

func TestMyExperimentsListsUploads(t *testing.T) {
	ctx := tab(t, true)
	var names []string
	run(t, ctx,
		navigate(env.origin+"/"),
		waitFor(`document.querySelectorAll("table.experiments tbody tr").length >= 2`),
		chromedp.Evaluate(`[...document.querySelectorAll("table.experiments tbody td:first-child a")].map(a => a.textContent).sort()`, &names),
	)
	// Other tests upload experiments of their own; the two of setup are there.
	if !slices.Contains(names, "corpus") || !slices.Contains(names, "public scalars") {
		t.Errorf("experiments listed = %q, want corpus and public scalars among them", names)
	}
	screenshot(t, ctx, "my-experiments")
}

func TestPRCurvesDraw(t *testing.T) {
	ctx := tab(t, true)
	q := url.Values{"tab": {"pr_curves"}, "runFilter": {"^generated/pr_curves$"}}
	run(t, ctx,
		navigate(experimentURL(env.eid, q)),
		waitFor(`document.querySelectorAll(".pr-card").length === 2`),
		waitFor(paintedCanvases(".pr-card canvas", 200)+" === 2"),
	)
	screenshot(t, ctx, "pr_curves")
}

func TestCustomScalarsLayout(t *testing.T) {
	ctx := tab(t, true)
	var titles []string
	run(t, ctx,
		navigate(experimentURL(env.eid, url.Values{"tab": {"custom_scalars"}})),
		// generated/custom_scalars's layout: "all losses" (multiline) and "band" (margin).
		waitFor(`document.querySelectorAll(".custom-card").length === 2`),
		waitFor(paintedCanvases(".custom-card canvas", 200)+" === 2"),
		chromedp.Evaluate(`[...document.querySelectorAll(".custom-card")].map(c => c.dataset.title)`, &titles),
	)
	if strings.Join(titles, "|") != "all losses|band" {
		t.Errorf("custom scalar charts = %q", titles)
	}
	screenshot(t, ctx, "custom_scalars")
}

func TestHParamsTableSortsAndFilters(t *testing.T) {
	ctx := tab(t, true)
	var first, afterSort string
	var rows int
	run(t, ctx,
		navigate(experimentURL(env.eid, url.Values{"tab": {"hparams"}})),
		waitFor(`document.querySelectorAll("table.hparams-table tbody tr").length >= 4`),
		chromedp.Text(`table.hparams-table tbody tr:first-child td.name`, &first, chromedp.ByQuery),
		// Sort by the name column, descending.
		chromedp.Click(`table.hparams-table th:first-child button`, chromedp.ByQuery),
		waitFor(`document.querySelector("table.hparams-table th:first-child").getAttribute("aria-sort") === "descending"`),
		chromedp.Text(`table.hparams-table tbody tr:first-child td.name`, &afterSort, chromedp.ByQuery),
		chromedp.SendKeys(`.row-filter`, "^trial-", chromedp.ByQuery),
		waitFor(`[...document.querySelectorAll("table.hparams-table tbody td.name")].every(td => td.textContent.startsWith("trial-"))`),
		chromedp.Evaluate(`document.querySelectorAll("table.hparams-table tbody tr").length`, &rows),
	)
	if first == afterSort {
		t.Errorf("sorting descending kept %q first", first)
	}
	// generated/hparams has four trials.
	if rows != 4 {
		t.Errorf("rows matching ^trial- = %d, want 4", rows)
	}
	screenshot(t, ctx, "hparams")
}

func TestScalarsGroupRunsIntoMeanAndBand(t *testing.T) {
	ctx := tab(t, true)
	q := url.Values{"runFilter": {"^generated/scalars/"}, "tagFilter": {"^loss$"}}
	var rows []string
	run(t, ctx,
		navigate(experimentURL(env.eid, q)),
		waitFor(paintedCanvases(".scalar-card canvas", 200)+" === 1"),
		chromedp.SendKeys(`.group-filter`, "^generated/scalars", chromedp.ByQuery),
		waitFor(`new URLSearchParams(location.search).get("group") === "^generated/scalars"`),
		waitFor(paintedCanvases(".scalar-card canvas", 200)+" === 1"),
		moveOver(`.scalar-card[data-tag="loss"] .u-over`, 1.0/3),
		waitFor(`!document.querySelector('.scalar-card[data-tag="loss"] .tooltip').hidden`),
		chromedp.Evaluate(`[...document.querySelectorAll('.scalar-card[data-tag="loss"] .tooltip .tt-run')].map(e => e.textContent)`, &rows),
	)
	// train and eval become one mean line (its band lines stay out of the tooltip).
	if strings.Join(rows, "|") != "generated/scalars (2 runs)" {
		t.Errorf("tooltip rows with grouping = %q", rows)
	}
	screenshot(t, ctx, "scalars-grouped")
}

func TestScalarsDragZoomGoesIntoURLAndDoubleClickResets(t *testing.T) {
	ctx := tab(t, true)
	q := url.Values{"runFilter": {"^generated/scalars/train$"}, "tagFilter": {"^loss$"}}
	var rect []float64
	run(t, ctx,
		navigate(experimentURL(env.eid, q)),
		waitFor(paintedCanvases(".scalar-card canvas", 200)+" === 1"),
		chromedp.Evaluate(`(() => { const r = document.querySelector(".scalar-card .u-over").getBoundingClientRect(); return [r.left, r.top, r.width, r.height]; })()`, &rect),
	)
	x0, y, w := rect[0]+rect[2]*0.25, rect[1]+rect[3]/2, rect[2]
	var zoom string
	run(t, ctx,
		chromedp.MouseEvent(input.MouseMoved, x0, y),
		chromedp.MouseEvent(input.MousePressed, x0, y, chromedp.ButtonLeft),
		chromedp.MouseEvent(input.MouseMoved, x0+w*0.2, y, chromedp.ButtonLeft),
		chromedp.MouseEvent(input.MouseMoved, x0+w*0.4, y, chromedp.ButtonLeft),
		chromedp.MouseEvent(input.MouseReleased, x0+w*0.4, y, chromedp.ButtonLeft),
		waitFor(`new URLSearchParams(location.search).get("zoom") !== null`),
		chromedp.Evaluate(`new URLSearchParams(location.search).get("zoom")`, &zoom),
	)
	var lo, hi float64
	if _, err := fmt.Sscanf(zoom, "%g,%g", &lo, &hi); err != nil || !(lo > 100 && hi > lo && hi < 900) {
		t.Fatalf("zoom=%q after dragging over the middle of steps 0..999", zoom)
	}
	// Reloading keeps the zoom.
	var shown []float64
	var loc string
	run(t, ctx, chromedp.Location(&loc))
	run(t, ctx,
		navigate(loc),
		waitFor(paintedCanvases(".scalar-card canvas", 200)+" === 1"),
		waitFor(`document.querySelector(".scalar-card .chart").dataset.xmin !== undefined`),
		chromedp.Evaluate(`(() => { const d = document.querySelector(".scalar-card .chart").dataset; return [Number(d.xmin), Number(d.xmax)]; })()`, &shown),
	)
	if len(shown) != 2 || math.Abs(shown[0]-lo) > 1e-6*(hi-lo) || math.Abs(shown[1]-hi) > 1e-6*(hi-lo) {
		t.Errorf("after reload the chart shows x %v, want the zoom [%g, %g]", shown, lo, hi)
	}
	screenshot(t, ctx, "scalars-zoomed")
	run(t, ctx,
		chromedp.Evaluate(`document.querySelector(".scalar-card .u-over").dispatchEvent(new MouseEvent("dblclick", {bubbles: true}))`, nil),
		waitFor(`new URLSearchParams(location.search).get("zoom") === null`),
	)
}

func TestDarkThemeFollowsTheSystem(t *testing.T) {
	ctx := tab(t, true)
	var bg string
	run(t, ctx,
		emulation.SetEmulatedMedia().WithFeatures([]*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "dark"}}),
		navigate(experimentURL(env.eid, url.Values{"runFilter": {"^generated/scalars/"}})),
		waitFor(paintedCanvases(".scalar-card canvas", 200)+" >= 3"),
		chromedp.Evaluate(`getComputedStyle(document.body).backgroundColor`, &bg),
	)
	var r, g, b int
	if _, err := fmt.Sscanf(bg, "rgb(%d, %d, %d)", &r, &g, &b); err != nil || r+g+b > 3*80 {
		t.Errorf("body background under prefers-color-scheme: dark = %q, want a dark color", bg)
	}
	screenshot(t, ctx, "scalars-dark")
}
