package browsertest

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
)

// tabDraws is, per dashboard, an expression true once the tab drew its data.
var tabDraws = map[string]string{
	"scalars":        paintedCanvases(".scalar-card canvas", 200) + " >= 1",
	"images":         `[...document.querySelectorAll(".image-card img")].some(i => i.complete && i.naturalWidth > 0)`,
	"audio":          `[...document.querySelectorAll(".audio-card audio")].some(a => a.readyState >= 1 && a.duration > 0)`,
	"histograms":     paintedCanvases(".histogram-card canvas", 200) + " >= 1",
	"distributions":  paintedCanvases(".distribution-card canvas", 200) + " >= 1",
	"text":           `document.querySelector(".text-card .markdown") !== null`,
	"pr_curves":      paintedCanvases(".pr-card canvas", 200) + " >= 1",
	"custom_scalars": `document.querySelector(".custom-card canvas") !== null`,
	"hparams":        `document.querySelectorAll("table.hparams-table tbody tr").length > 0`,
	"graphs":         `document.querySelectorAll(".graph-canvas .node").length > 0`,
	"mesh":           paintedCanvases(".mesh-card canvas", 500) + " >= 1",
	"runs":           `document.querySelectorAll("table.runs-table tbody tr[data-run]").length > 0`,
	"timeseries":     paintedCanvases(`.ts-card[data-kind="scalars"] canvas`, 200) + " >= 1",
}

// openEveryTab opens each tab the page at base offers, waits until it drew
// its data (tabDraws), calls each (if not nil) and saves a screenshot
// named prefix+tab. It returns the tabs.
func openEveryTab(t *testing.T, ctx context.Context, base, prefix string, each func(tab string)) []string {
	t.Helper()
	var tabs []string
	run(t, ctx,
		navigate(base),
		waitFor(`document.querySelectorAll("nav.tabs .tab").length > 0`),
		chromedp.Evaluate(`[...document.querySelectorAll("nav.tabs .tab")].map(t => t.dataset.tab)`, &tabs),
	)
	for _, id := range tabs {
		want, ok := tabDraws[id]
		if !ok {
			t.Errorf("tab %q: no check", id)
			continue
		}
		run(t, ctx, navigate(base+"?tab="+id), waitFor(want))
		if each != nil {
			each(id)
		}
		screenshot(t, ctx, prefix+id)
	}
	return tabs
}

// noPageErrors fails the test for each page error and console error
// collected (pageErrors, consoleErrors).
func noPageErrors(t *testing.T, thrown, logged func() []string) {
	t.Helper()
	for _, e := range thrown() {
		t.Errorf("page error: %s", e)
	}
	for _, e := range logged() {
		t.Errorf("console error: %s", e)
	}
}

// Every dashboard of the corpus experiment (every plugin) draws with no
// page error and no console error, as do the parallel coordinates and the
// scatter plot matrix of its hparams.
func TestEveryDashboardOfTheCorpus(t *testing.T) {
	ctx := tab(t, true)
	thrown, logged := pageErrors(ctx), consoleErrors(ctx)
	base := experimentURL(env.eid, nil)
	tabs := openEveryTab(t, ctx, base, "corpus-tab-", nil)
	if len(tabs) < len(tabDraws)-1 {
		t.Errorf("tabs of the corpus = %q, want every dashboard", tabs)
	}
	run(t, ctx,
		navigate(base+"?tab=hparams&hview=parallel"),
		waitFor(`document.querySelectorAll("svg.hparams-parallel path.pc-line").length > 0`),
		navigate(base+"?tab=hparams&hview=scatter"),
		waitFor(`document.querySelectorAll("svg.hparams-scatter circle.sc-point").length > 0`),
	)
	noPageErrors(t, thrown, logged)
}

// The large synthetic experiment: largeRuns runs × largeTags tags ×
// largeSteps steps (the 100 × 20 × 5,000 is 10M points; 500
// steps already took 16 s to write and upload on the two shared cores, 200
// take about 6 s). Every tab
// draws with no page error and no console error, and the Scalars tab
// survives log y, All/None and a hover.
const largeRuns, largeTags, largeSteps = 100, 20, 200

func TestEveryDashboardOfALargeExperiment(t *testing.T) {
	dir := t.TempDir()
	start := time.Now()
	logdir := filepath.Join(dir, "large")
	tbgen(t, logdir, "--runs", fmt.Sprint(largeRuns), "--tags", fmt.Sprint(largeTags), "--steps", fmt.Sprint(largeSteps), "--images", "0")
	eid, err := upload(env.tbup, env.dir, logdir, "large synthetic")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d runs × %d tags × %d steps written and uploaded in %v", largeRuns, largeTags, largeSteps, time.Since(start).Round(time.Millisecond))
	ctx := tab(t, true)
	thrown, logged := pageErrors(ctx), consoleErrors(ctx)
	base := experimentURL(eid, nil)
	tabs := openEveryTab(t, ctx, base, "large-tab-", nil)
	if !strings.Contains(strings.Join(tabs, " "), "scalars") {
		t.Errorf("tabs of the large experiment = %q, want scalars", tabs)
	}
	const card = `.scalar-card`
	run(t, ctx,
		navigate(base+"?tab=scalars&logy=1"),
		waitFor(tabDraws["scalars"]),
		chromedp.Evaluate(`[...document.querySelectorAll(".sidebar button")].find(b => b.textContent === "None").click()`, nil),
		waitFor(`[...document.querySelectorAll(".sidebar ul.runs li input[type=checkbox]")].every(i => !i.checked)`),
		chromedp.Evaluate(`[...document.querySelectorAll(".sidebar button")].find(b => b.textContent === "All").click()`, nil),
		waitFor(`[...document.querySelectorAll(".sidebar ul.runs li input[type=checkbox]")].every(i => i.checked)`),
		waitFor(tabDraws["scalars"]),
	)
	var over rect
	run(t, ctx, chromedp.Evaluate(boxOf(card+" .u-over"), &over))
	x, y := (over.Left+over.Right)/2, (over.Top+over.Bottom)/2
	run(t, ctx,
		chromedp.MouseEvent(input.MouseMoved, x-20, y-20),
		chromedp.MouseEvent(input.MouseMoved, x, y),
		waitFor(`!document.querySelector('`+card+` .tooltip').hidden`),
	)
	noPageErrors(t, thrown, logged)
}
