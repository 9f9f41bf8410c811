package browsertest

import (
	"os/exec"
	"strconv"
	"testing"

	"github.com/chromedp/chromedp"
)

// tbgen writes into logdir with tbgen's flags args (a job still training
// when --first-step is above 0).
func tbgen(t testing.TB, logdir string, args ...string) {
	t.Helper()
	if out, err := exec.Command(env.tbgen, append([]string{"--out", logdir}, args...)...).CombinedOutput(); err != nil {
		t.Fatalf("tbgen: %v\n%s", err, out)
	}
}

// serverHas is a JavaScript expression: true once the experiment's API
// (read past the server's cache) lists run, a scalar tag of it, and the
// images dashboard. The page's own reads are not involved.
func serverHas(eid, run, tag string) string {
	return `(() => {
		if (window.serverHas) return true;
		if (!window.serverAsking) {
			window.serverAsking = true;
			const get = (p) => fetch("/experiment/` + eid + `/data/" + p, {headers: {"Cache-Control": "no-cache"}}).then((r) => r.json());
			Promise.all([get("runs?format=list"), get("plugin/scalars/tags"), get("plugins_listing")])
				.then(([runs, tags, listing]) => { window.serverHas = runs.includes(` + strconv.Quote(run) + `) && !!tags[` + strconv.Quote(run) + `]?.[` + strconv.Quote(tag) + `] && !!listing.images?.enabled; })
				.catch(() => {})
				.finally(() => { window.serverAsking = false; });
		}
		return false;
	})()`
}

// "↻ Reload" reads everything again: on a page that does not follow the
// upload (its tab hidden, so it stops polling), a new run, a new tag and a
// new dashboard the server has appear only when Reload is clicked, and the
// page keeps where it was scrolled to and the zoom in the URL.
func TestReloadAddsRunsTagsAndDashboards(t *testing.T) {
	ctx := tab(t, true)
	run(t, ctx, chromedp.EmulateViewport(1000, 500))
	l := startLiveUpload(t, "200ms")
	const chart = `document.querySelector('.scalar-card[data-tag="metrics/tag_00"] .chart')`
	run(t, ctx,
		navigate(experimentURL(l.eid, map[string][]string{"zoom": {"0,100"}})),
		waitFor(chart+`?.dataset.lastStep === "2"`),
		// The page stops following, as it does in a hidden tab.
		chromedp.Evaluate(`Object.defineProperty(document, "visibilityState", {configurable: true, get: () => "hidden"}); 0`, nil),
	)
	// A second run, a second tag and the first image.
	tbgen(t, l.logdir, "--first-step", "3", "--steps", "3", "--runs", "2", "--tags", "2", "--images", "1", "--image-bytes", "100")
	run(t, ctx, waitFor(serverHas(l.eid, "run_001", "metrics/tag_01")))
	var early bool
	run(t, ctx, chromedp.Evaluate(`document.querySelector('.sidebar li[data-run="run_001"]') !== null`, &early))
	if early {
		t.Fatal("the page added run_001 on its own while not following; the test cannot tell Reload's part")
	}

	var before float64
	run(t, ctx,
		chromedp.Evaluate(`scrollTo({top: document.documentElement.scrollHeight}); scrollY`, &before),
	)
	if before <= 0 {
		t.Fatalf("the page does not scroll (scrollY %v); want a position to keep", before)
	}
	run(t, ctx,
		// Clicked where it is (chromedp.Click would scroll it into view first).
		chromedp.Evaluate(`document.querySelector("button.reload").click(); 0`, nil),
		waitFor(`document.querySelector('.sidebar li[data-run="run_001"]') !== null`),
		waitFor(`document.querySelector('.scalar-card[data-tag="metrics/tag_01"]') !== null`),
		waitFor(`document.querySelector('nav.tabs button[data-tab="images"]') !== null`),
		waitFor(chart+`?.dataset.lastStep === "5" && `+chart+`.dataset.runs === "2"`),
	)
	var after float64
	var search string
	run(t, ctx, chromedp.Evaluate(`scrollY`, &after), chromedp.Evaluate(`location.search`, &search))
	if after != before {
		t.Errorf("scrollY = %v after Reload, want %v (where the reader was)", after, before)
	}
	if want := "?zoom=0%2C100"; search != want {
		t.Errorf("location.search = %q after Reload, want %q", search, want)
	}
	screenshot(t, ctx, "reload")
}

// While the page follows an upload, new points keep the reader's place:
// where the page is scrolled to, a run toggled off (it stays off) and the
// URL.
func TestLiveUpdateKeepsScrollAndSelection(t *testing.T) {
	ctx := tab(t, true)
	run(t, ctx, chromedp.EmulateViewport(1000, 500))
	l := startLiveUpload(t, "200ms")
	const chart = `document.querySelector('.scalar-card[data-tag="metrics/tag_00"] .chart')`
	const box = `document.querySelector('.sidebar li[data-run="run_001"] input[type=checkbox]')`
	run(t, ctx,
		navigate(experimentURL(l.eid, nil)),
		waitFor(chart+`?.dataset.lastStep === "2"`),
	)
	tbgen(t, l.logdir, "--first-step", "3", "--steps", "3", "--runs", "2", "--tags", "2", "--images", "0")
	var before float64
	var search string
	run(t, ctx,
		waitFor(box+` !== null && document.querySelector('.scalar-card[data-tag="metrics/tag_01"]') !== null`),
		chromedp.Evaluate(box+`.click(); 0`, nil),
		waitFor(`new URLSearchParams(location.search).get("off") === "run_001"`),
		waitFor(chart+`?.dataset.runs === "1"`),
		chromedp.Evaluate(`scrollTo({top: document.documentElement.scrollHeight}); scrollY`, &before),
		chromedp.Evaluate(`location.search`, &search),
	)
	if before <= 0 {
		t.Fatalf("the page does not scroll (scrollY %v); want a position to keep", before)
	}
	tbgen(t, l.logdir, "--first-step", "6", "--steps", "3", "--runs", "2", "--tags", "2", "--images", "0")
	var after float64
	var searchAfter string
	var checked bool
	run(t, ctx,
		waitFor(chart+`?.dataset.lastStep === "8"`),
		chromedp.Evaluate(`scrollY`, &after),
		chromedp.Evaluate(`location.search`, &searchAfter),
		chromedp.Evaluate(box+`.checked`, &checked),
	)
	if after != before {
		t.Errorf("scrollY = %v after new points, want %v", after, before)
	}
	if searchAfter != search || checked {
		t.Errorf("after new points: location.search %q (was %q), run_001 shown %v; want the run kept off", searchAfter, search, checked)
	}
}
