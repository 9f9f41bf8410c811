package browsertest

import (
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// expectedPoints is the point count of run/tag in EXPECTED.json.
func expectedPoints(t *testing.T, run, tag string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(mustCorpus(t), "EXPECTED.json"))
	if err != nil {
		t.Fatal(err)
	}
	var e struct {
		Runs map[string]map[string]struct{ Points int }
	}
	if err := json.Unmarshal(b, &e); err != nil {
		t.Fatal(err)
	}
	n := e.Runs[run][tag].Points
	if n == 0 {
		t.Fatalf("EXPECTED.json has no points for %s/%s", run, tag)
	}
	return n
}

// The chart reads a few hundred points per run; the card's download menu
// (built when first opened) saves every point, as CSV and as JSON.
func TestScalarsDownloadIsFullResolution(t *testing.T) {
	const runName, tag = "generated/long_run", "x"
	want := expectedPoints(t, runName, tag)
	ctx := tab(t, true)
	card := `.scalar-card[data-tag="x"]`
	var rows []string
	run(t, ctx,
		navigate(experimentURL(env.eid, url.Values{"runFilter": {"^generated/long_run$"}, "tagFilter": {"^x$"}})),
		waitFor(paintedCanvases(card+" canvas", 200)+" === 1"),
		// Keep what download() hands to the browser.
		chromedp.Evaluate(`window.__saved = []; URL.createObjectURL = (b) => { window.__saved.push(b); return "blob:kept"; }; true`, nil),
		chromedp.Click(card+" details.download summary", chromedp.ByQuery),
		waitFor(`document.querySelectorAll('`+card+` .menu-row').length > 0`),
		chromedp.Evaluate(`[...document.querySelectorAll('`+card+` .menu-run')].map(e => e.textContent)`, &rows),
	)
	if strings.Join(rows, "|") != runName {
		t.Fatalf("download menu rows = %q, want [%s]", rows, runName)
	}
	var csvLines, jsonSteps int
	run(t, ctx,
		chromedp.Click(card+" .menu-row button:nth-of-type(1)", chromedp.ByQuery),
		waitFor(`window.__saved.length === 1`),
		chromedp.Evaluate(`window.__saved[0].text().then(s => s.trim().split("\n").length)`, &csvLines, awaitPromise),
		chromedp.Click(card+" .menu-row button:nth-of-type(2)", chromedp.ByQuery),
		waitFor(`window.__saved.length === 2`),
		chromedp.Evaluate(`window.__saved[1].text().then(s => JSON.parse(s).points.steps.length)`, &jsonSteps, awaitPromise),
	)
	if csvLines != want+1 || jsonSteps != want {
		t.Errorf("downloads of %s/%s: CSV %d lines, JSON %d steps; want %d points (and a CSV header)", runName, tag, csvLines, jsonSteps, want)
	}
}

// Grouped runs can be drawn with a ±1 standard deviation band instead of
// min–max: the choice is in the URL, survives a reload, and the band is
// drawn (for two runs the sample deviation, |a − b| / √2 around the mean,
// reaches past their min and max, so the values drawn span more).
func TestScalarsGroupBandStd(t *testing.T) {
	ctx := tab(t, true)
	q := url.Values{"runFilter": {"^generated/scalars/"}, "tagFilter": {"^loss$"}, "group": {"^generated/scalars"}, "outliers": {"0"}}
	chart := `.scalar-card[data-tag="loss"] .chart`
	var minmax, std [2]float64
	yRange := func(dst *[2]float64) chromedp.Action {
		return chromedp.Evaluate(`(() => { const d = document.querySelector('`+chart+`').dataset; return [Number(d.ylo), Number(d.yhi)]; })()`, dst)
	}
	run(t, ctx,
		navigate(experimentURL(env.eid, q)),
		waitFor(paintedCanvases(".scalar-card canvas", 200)+" === 1"),
		yRange(&minmax),
		chromedp.SetValue(".band-select", "std", chromedp.ByQuery),
		chromedp.Evaluate(`document.querySelector(".band-select").dispatchEvent(new Event("change"))`, nil),
		urlParam("band", "std"),
		waitFor(paintedCanvases(".scalar-card canvas", 200)+" === 1"),
		yRange(&std),
	)
	screenshot(t, ctx, "scalars-grouped-std")
	if !(std[0] < minmax[0] && std[1] > minmax[1]) {
		t.Errorf("values drawn with the ±std band span %v, with min–max %v: want the std band's wider on both sides", std, minmax)
	}
	var loc, selected string
	var again [2]float64
	run(t, ctx, chromedp.Location(&loc))
	run(t, ctx,
		navigate(loc),
		waitFor(paintedCanvases(".scalar-card canvas", 200)+" === 1"),
		chromedp.Value(".band-select", &selected, chromedp.ByQuery),
		yRange(&again),
	)
	if selected != "std" || again != std {
		t.Errorf("after reload: band %q, values drawn span %v; want std, %v", selected, again, std)
	}
}
