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
		chromedp.Navigate(experimentURL(env.eid, url.Values{"runFilter": {"^generated/long_run$"}, "tagFilter": {"^x$"}})),
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
