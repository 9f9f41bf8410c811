package browsertest

import (
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// The runs list of the corpus experiment: natural order, the count of
// the filtered list, only the runs with data for the dashboard, names cut
// in the middle (whole on hover), a resizable sidebar, and a run's colour
// chosen with its picker kept in the URL and drawn in the charts.
func TestRunsListOrderCountColours(t *testing.T) {
	ctx := tab(t, true)
	var names []string
	run(t, ctx,
		navigate(experimentURL(env.eid, nil)),
		waitFor(`document.querySelectorAll(".sidebar ul.runs li").length > 50`),
		chromedp.Evaluate(`[...document.querySelectorAll(".sidebar ul.runs li")].map(li => li.dataset.run)`, &names),
	)
	var natural bool
	run(t, ctx, chromedp.Evaluate(`(() => { const n = [...document.querySelectorAll(".sidebar ul.runs li")].map(li => li.dataset.run);
		const c = new Intl.Collator(undefined, {numeric: true, sensitivity: "base"});
		return n.every((x, i) => i === 0 || c.compare(n[i - 1], x) <= 0); })()`, &natural))
	if !natural {
		t.Errorf("runs are not in natural order: %q", names)
	}

	// train and test of one job: told apart by colour.
	const train, test = "real/tensorboard/log_tayo/train", "real/tensorboard/log_tayo/test"
	var trainColor, testColor string
	run(t, ctx,
		chromedp.Evaluate(`document.querySelector('.sidebar li[data-run="`+train+`"] input[type=color]').value`, &trainColor),
		chromedp.Evaluate(`document.querySelector('.sidebar li[data-run="`+test+`"] input[type=color]').value`, &testColor),
	)
	if trainColor == "" || trainColor == testColor {
		t.Errorf("%s and %s have colours %q and %q; want two different ones", train, test, trainColor, testColor)
	}

	// A long name: its end is always shown, the whole name on hover.
	long := ""
	for _, n := range names {
		if len(n) > len(long) {
			long = n
		}
	}
	var tail, title, resize string
	run(t, ctx,
		chromedp.Evaluate(`document.querySelector('.sidebar li[data-run="`+long+`"] .run-tail').textContent`, &tail),
		chromedp.Evaluate(`document.querySelector('.sidebar li[data-run="`+long+`"]').title`, &title),
		chromedp.Evaluate(`getComputedStyle(document.querySelector(".sidebar")).resize`, &resize),
	)
	if tail == "" || !strings.HasSuffix(long, tail) || title != long {
		t.Errorf("run %q: tail %q, title %q; want its end shown and its whole name on hover", long, tail, title)
	}
	if resize != "horizontal" {
		t.Errorf("sidebar resize = %q, want horizontal", resize)
	}

	// The count follows the filter; the Mesh tab lists only its run.
	run(t, ctx,
		navigate(experimentURL(env.eid, url.Values{"runFilter": {"log_tayo"}})),
		// Scalars (the first tab) lists the runs holding scalars.
		waitFor(`/^Runs \(2 of \d+\)$/.test(document.querySelector(".sidebar h2")?.textContent)`),
	)
	run(t, ctx,
		navigate(experimentURL(env.eid, url.Values{"tab": {"mesh"}})),
		waitFor(`document.querySelector(".sidebar h2")?.textContent === "Runs (1)"`),
		waitFor(`[...document.querySelectorAll(".sidebar ul.runs li")].filter(li => !li.hidden).map(li => li.dataset.run).join() === "generated/mesh"`),
	)

	// A colour picked for train goes into the URL and into its chart.
	run(t, ctx,
		navigate(experimentURL(env.eid, url.Values{"runFilter": {"^" + train + "$"}})),
		waitFor(`(`+paintedCanvases(".scalar-card canvas", 200)+`) > 0`),
		chromedp.Evaluate(`(() => { const p = document.querySelector('.sidebar li[data-run="`+train+`"] input[type=color]'); p.value = "#ff00ff"; p.dispatchEvent(new Event("change")); return 0; })()`, nil),
		waitFor(`new URLSearchParams(location.search).get("color") === "`+train+`~ff00ff"`),
		waitFor(`[...document.querySelectorAll(".scalar-card canvas")].some(c => { const d = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
			for (let i = 0; i < d.length; i += 4) if (d[i] > 200 && d[i + 1] < 60 && d[i + 2] > 200 && d[i + 3] > 200) return true; return false; })`),
	)
	screenshot(t, ctx, "runs-colour-picked")
	var picked string
	run(t, ctx,
		navigate(experimentURL(env.eid, url.Values{"color": {train + "~ff00ff"}})),
		waitFor(`document.querySelector('.sidebar li[data-run="`+train+`"] input[type=color]')?.value === "#ff00ff"`),
		chromedp.Evaluate(`document.querySelector('.sidebar li[data-run="`+train+`"] input[type=color]').value`, &picked),
	)
	if picked != "#ff00ff" {
		t.Errorf("picked colour after reload = %q", picked)
	}
}

// Custom scalars draws runs' scalars: its runs list holds the runs with
// scalars (as Scalars' does), not the mesh or audio runs.
func TestCustomScalarsListsRunsWithScalars(t *testing.T) {
	ctx := tab(t, true)
	var scalars, custom []string
	const listed = `[...document.querySelectorAll(".sidebar ul.runs li")].filter(li => !li.hidden).map(li => li.dataset.run)`
	run(t, ctx,
		navigate(experimentURL(env.eid, url.Values{"tab": {"scalars"}})),
		waitFor(`/^Runs \(\d+\)$/.test(document.querySelector(".sidebar h2")?.textContent) && !`+listed+`.includes("generated/mesh")`),
		chromedp.Evaluate(listed, &scalars),
	)
	run(t, ctx,
		navigate(experimentURL(env.eid, url.Values{"tab": {"custom_scalars"}})),
		waitFor(`document.querySelector('nav.tabs button[data-tab="custom_scalars"]')?.getAttribute("aria-selected") === "true"`),
	)
	run(t, ctx,
		waitFor(`document.querySelector(".sidebar h2")?.textContent === "Runs (`+strconv.Itoa(len(scalars))+`)"`),
		chromedp.Evaluate(listed, &custom),
	)
	if !slices.Equal(custom, scalars) {
		t.Errorf("Custom scalars lists %d runs %q, want Scalars' %d", len(custom), custom, len(scalars))
	}
}

// HParams does not use the runs list (its groups come from the session
// data, its filters are its own): the list is hidden there, and back on
// the tabs that use it.
func TestHParamsHidesRunsList(t *testing.T) {
	ctx := tab(t, true)
	const shown = `(document.querySelector(".sidebar")?.getBoundingClientRect().width ?? 0) > 0`
	run(t, ctx,
		navigate(experimentURL(env.eid, url.Values{"tab": {"hparams"}})),
		waitFor(`document.querySelector('nav.tabs button[data-tab="hparams"]')?.getAttribute("aria-selected") === "true"`),
		waitFor(`!(`+shown+`)`),
		chromedp.Evaluate(`document.querySelector('nav.tabs button[data-tab="scalars"]').click(); 0`, nil),
		waitFor(shown),
	)
}
