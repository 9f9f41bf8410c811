package browsertest

import (
	"fmt"
	"math"
	"net/url"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
	"google.golang.org/protobuf/types/known/timestamppb"

	tbpb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard"
	servicepb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/service"
)

// sixtyRuns is an experiment of 60 runs (run00 … run59), each with five
// tags without a "/": loss (positive), reward (five-digit values), latency
// (four-digit values), signed (crossing zero) and count (millions);
// written once for the tests here.
var sixtyRuns struct {
	once sync.Once
	eid  string
	err  error
}

func sixtyRunsExperiment(t *testing.T) string {
	t.Helper()
	requireEnv(t)
	sixtyRuns.once.Do(func() {
		w, ctx, done, err := writerClient()
		if err != nil {
			sixtyRuns.err = err
			return
		}
		defer done()
		exp, err := w.CreateExperiment(ctx, &servicepb.CreateExperimentRequest{Name: "sixty runs"})
		if err != nil {
			sixtyRuns.err = err
			return
		}
		meta := &tbpb.SummaryMetadata{PluginData: &tbpb.SummaryMetadata_PluginData{PluginName: "scalars"}, DataClass: tbpb.DataClass_DATA_CLASS_SCALAR}
		values := map[string]func(r, s int) float64{
			"loss":    func(r, s int) float64 { return 1/(1+float64(s)) + 0.01*float64(r) },
			"reward":  func(r, s int) float64 { return 20000 + 500*math.Sin(float64(s)/5) + float64(r) },
			"signed":  func(r, s int) float64 { return math.Sin(float64(s)/3 + float64(r)) },
			"latency": func(r, s int) float64 { return 1000 + 200*float64(s) + float64(r) },
			"count":   func(r, s int) float64 { return 1e6 * (1 + float64(s)/10 + float64(r)/100) },
		}
		req := &servicepb.WriteScalarRequest{ExperimentId: exp.GetExperimentId()}
		for r := range 60 {
			rr := &servicepb.WriteScalarRequest_Run{Name: fmt.Sprintf("run%02d", r)}
			for name, f := range values {
				tag := &servicepb.WriteScalarRequest_Tag{Name: name, Metadata: meta}
				for s := range 40 {
					tag.Points = append(tag.Points, &servicepb.ScalarPoint{Step: int64(s), Value: f(r, s), WallTime: timestamppb.New(time.Unix(1_700_000_000+int64(s), 0))})
				}
				rr.Tags = append(rr.Tags, tag)
			}
			req.Runs = append(req.Runs, rr)
		}
		if _, err := w.WriteScalar(ctx, req); err != nil {
			sixtyRuns.err = err
			return
		}
		sixtyRuns.eid = exp.GetExperimentId()
	})
	if sixtyRuns.err != nil {
		t.Fatal(sixtyRuns.err)
	}
	return sixtyRuns.eid
}

// rect is an element's box in the window.
type rect struct{ Left, Top, Right, Bottom, VW, VH float64 }

func boxOf(selector string) string {
	return fmt.Sprintf(`(() => { const r = document.querySelector(%q).getBoundingClientRect();
		return {Left: r.left, Top: r.top, Right: r.right, Bottom: r.bottom, VW: document.documentElement.clientWidth, VH: innerHeight}; })()`, selector)
}

// insideWindow is a page expression: the element selector finds lies
// inside the window (rect.inside).
func insideWindow(selector string) string {
	return fmt.Sprintf(`(() => { const r = document.querySelector(%q).getBoundingClientRect();
		return r.left >= 0 && r.top >= 0 && r.right <= document.documentElement.clientWidth && r.bottom <= innerHeight && r.right > r.left && r.bottom > r.top; })()`, selector)
}

func (r rect) inside() bool {
	return r.Left >= 0 && r.Top >= 0 && r.Right <= r.VW && r.Bottom <= r.VH && r.Right > r.Left && r.Bottom > r.Top
}

// With 60 runs the tooltip stays in the window (the 10 rows nearest the
// cursor, "+50 more"; after the A key, the rows that fit), its order is chosen and kept in the URL; a click pins it (all
// rows, scrolling, still in the window) and "only" shows just that run,
// as does "only" in the runs list.
func TestScalarsTooltipManyRuns(t *testing.T) {
	eid := sixtyRunsExperiment(t)
	ctx := tab(t, true)
	card := `.scalar-card[data-tag="loss"]`
	tooltip := card + ` .tooltip`
	run(t, ctx,
		chromedp.EmulateViewport(1200, 640),
		navigate(experimentURL(eid, url.Values{"tagFilter": {"^loss$"}})),
		waitFor(paintedCanvases(card+" canvas", 200)+" === 1"),
		waitFor(`document.querySelector('`+card+` .chart').dataset.runs === "60"`),
	)
	var over rect
	run(t, ctx, chromedp.Evaluate(boxOf(card+" .u-over"), &over))
	// The cursor at the plot's lower right: the tooltip must turn left and up.
	x, y := over.Right-5, over.Bottom-5
	hover := func() chromedp.Action {
		return chromedp.Tasks{
			chromedp.MouseEvent(input.MouseMoved, x-20, y-20),
			chromedp.MouseEvent(input.MouseMoved, x, y),
			waitFor(`!document.querySelector('` + tooltip + `').hidden`),
		}
	}
	var box rect
	var rows []string
	var more string
	run(t, ctx,
		hover(),
		chromedp.Evaluate(boxOf(tooltip), &box),
		chromedp.Evaluate(`[...document.querySelectorAll('`+tooltip+` .tt-run')].map(e => e.textContent)`, &rows),
		chromedp.Evaluate(`document.querySelector('`+tooltip+` .tt-more')?.textContent ?? ""`, &more),
	)
	screenshot(t, ctx, "scalars-tooltip-60-runs")
	if !box.inside() {
		t.Errorf("tooltip at %+v: not inside the window", box)
	}
	if len(rows) != 10 || more != "+50 more (press A for all)" {
		t.Errorf("tooltip shows %d rows and %q; want the 10 nearest the cursor and +50 more (press A for all)", len(rows), more)
	}

	// A shows every row that fits the window, and +N more for the rest.
	run(t, ctx,
		// The key as the page gets it (a headless tab is not focused, so
		// Input.dispatchKeyEvent reaches no document).
		chromedp.Evaluate(`document.body.dispatchEvent(new KeyboardEvent("keydown", {key: "a", bubbles: true}))`, nil),
		// The tooltip is placed in the frame after its rows change: wait
		// for both.
		waitFor(`document.querySelectorAll('`+tooltip+` .tt-run').length > 10 && `+insideWindow(tooltip)),
		chromedp.Evaluate(boxOf(tooltip), &box),
		chromedp.Evaluate(`[...document.querySelectorAll('`+tooltip+` .tt-run')].map(e => e.textContent)`, &rows),
		chromedp.Evaluate(`document.querySelector('`+tooltip+` .tt-more')?.textContent ?? ""`, &more),
	)
	if !box.inside() {
		t.Errorf("tooltip with all rows at %+v: not inside the window", box)
	}
	if len(rows) >= 60 || more != fmt.Sprintf("+%d more (click to pin and scroll)", 60-len(rows)) {
		t.Errorf("after A the tooltip shows %d rows and %q; want the rows that fit and +N more for the rest of 60", len(rows), more)
	}

	// Ordered by name: kept in the URL.
	run(t, ctx,
		choose(".ttsort-select", "alphabetical"),
		urlParam("ttsort", "alphabetical"),
		waitFor(paintedCanvases(card+" canvas", 200)+" === 1"),
		hover(),
		chromedp.Evaluate(`[...document.querySelectorAll('`+tooltip+` .tt-run')].map(e => e.textContent)`, &rows),
	)
	if !sort.StringsAreSorted(rows) || len(rows) == 0 || rows[0] != "run00" {
		t.Errorf("tooltip ordered by name: %q", rows)
	}

	// A click pins it: every row, in the window, scrolling.
	var pinned struct {
		Rows       int
		Scrollable bool
	}
	run(t, ctx,
		chromedp.MouseClickXY(x, y),
		waitFor(`document.querySelector('`+tooltip+`').classList.contains("pinned")`),
		chromedp.Evaluate(boxOf(tooltip), &box),
		chromedp.Evaluate(`(() => { const t = document.querySelector('`+tooltip+`');
			return {Rows: t.querySelectorAll(".tt-run").length, Scrollable: t.scrollHeight > t.clientHeight && getComputedStyle(t).overflowY === "auto"}; })()`, &pinned),
	)
	screenshot(t, ctx, "scalars-tooltip-pinned")
	if !box.inside() || pinned.Rows != 60 || !pinned.Scrollable {
		t.Errorf("pinned tooltip at %+v with %d rows (scrollable %v); want all 60 rows, scrolling, inside the window", box, pinned.Rows, pinned.Scrollable)
	}

	// "only" on run07's row: the run filter shows just it.
	run(t, ctx,
		chromedp.Evaluate(`[...document.querySelectorAll('`+tooltip+` tr')].find(tr => tr.querySelector(".tt-run")?.textContent === "run07").querySelector("button.tt-only").scrollIntoView({block: "nearest"})`, nil),
		chromedp.Click(`//div[contains(@class,"tooltip")]//tr[td[@class="tt-run" and text()="run07"]]//button`, chromedp.BySearch),
		urlParam("runFilter", "^run07$"),
		waitFor(`document.querySelector('`+card+` .chart')?.dataset.runs === "1"`),
	)

	// The same from the runs list: its row's "only", shown on hover.
	run(t, ctx,
		navigate(experimentURL(eid, url.Values{"tagFilter": {"^loss$"}})),
		waitFor(`document.querySelector('`+card+` .chart')?.dataset.runs === "60"`),
		chromedp.Click(`.sidebar li[data-run="run12"] .run-only`, chromedp.ByQuery),
		urlParam("runFilter", "^run12$"),
		waitFor(`document.querySelector('`+card+` .chart')?.dataset.runs === "1"`),
	)
}

// Tags without a "/" share one grid; five-digit y labels are whole (the
// axis is as wide as its labels), millions read 1M, not 1e+6; on a log y
// axis values ≤ 0 are gaps, and the card says so.
func TestScalarsAxesAndGrid(t *testing.T) {
	eid := sixtyRunsExperiment(t)
	ctx := tab(t, true)
	run(t, ctx,
		navigate(experimentURL(eid, url.Values{"runFilter": {"^run0[0-2]$"}})),
		waitFor(paintedCanvases(".scalar-card canvas", 200)+" === 5"),
	)
	screenshot(t, ctx, "scalars-no-prefix-grid")
	var layout struct {
		Sections int
		Rows     int
	}
	run(t, ctx, chromedp.Evaluate(`({Sections: document.querySelectorAll(".cards .group").length,
		Rows: new Set([...document.querySelectorAll(".scalar-card")].map(c => Math.round(c.getBoundingClientRect().top))).size})`, &layout))
	if layout.Sections != 1 || layout.Rows > 3 {
		t.Errorf("5 tags without a prefix: %d sections, %d rows of cards; want one section, cards side by side", layout.Sections, layout.Rows)
	}

	ticks := func(tag string) string {
		var s string
		run(t, ctx, chromedp.Evaluate(`document.querySelector('.scalar-card[data-tag="`+tag+`"] .chart').dataset.yticks`, &s))
		return s
	}
	if r, c := ticks("reward"), ticks("count"); strings.Contains(r+c, "e+") || !strings.Contains(c, "M") {
		t.Errorf("y labels: reward %q, count %q; want SI suffixes (20k, 1.5M), no exponents", r, c)
	}
	// A clipped label paints the canvas's first pixel column; a whole one
	// leaves it empty.
	for _, tag := range []string{"reward", "latency", "count", "signed", "loss"} {
		var leftmost int
		run(t, ctx, chromedp.Evaluate(`(() => {
			const c = document.querySelector('.scalar-card[data-tag="`+tag+`"] canvas');
			const d = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
			for (let x = 0; x < c.width; x++)
				for (let y = 0; y < c.height; y++) if (d[(y * c.width + x) * 4 + 3] > 40) return x;
			return -1; })()`, &leftmost))
		if leftmost < 1 {
			t.Errorf("the %s card's leftmost painted pixel column is %d: its y labels (%s) are cut", tag, leftmost, ticks(tag))
		}
	}

	// signed is sin(step/3 + run): runs 0 to 2 are all below zero at steps
	// 10 to 12 only. On a log y axis nothing is drawn between those steps
	// (a line joining steps 9 and 13 across them would be).
	var note string
	var coloured int
	run(t, ctx,
		navigate(experimentURL(eid, url.Values{"runFilter": {"^run0[0-2]$"}, "logy": {"1"}, "tagFilter": {"^signed$"}, "smoothing": {"0"}})),
		waitFor(paintedCanvases(".scalar-card canvas", 200)+" === 1"),
		waitFor(`document.querySelector('.scalar-card[data-tag="signed"] .log-gaps') !== null`),
		chromedp.Evaluate(`document.querySelector('.scalar-card[data-tag="signed"] .log-gaps').textContent`, &note),
		chromedp.Evaluate(`(() => {
			const card = document.querySelector('.scalar-card[data-tag="signed"]');
			const chart = card.querySelector(".chart"), c = card.querySelector("canvas");
			const over = card.querySelector(".u-over").getBoundingClientRect(), cr = c.getBoundingClientRect();
			const k = c.width / cr.width, lo = Number(chart.dataset.xmin), hi = Number(chart.dataset.xmax);
			const px = (step) => Math.round((over.left - cr.left + (step - lo) / (hi - lo) * over.width) * k);
			const top = Math.round((over.top - cr.top) * k), h = Math.round(over.height * k);
			const d = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
			let n = 0;
			for (let x = px(10.2); x <= px(11.8); x++)
				for (let y = top; y < top + h; y++) {
					const i = (y * c.width + x) * 4;
					if (d[i + 3] > 100 && Math.max(d[i], d[i + 1], d[i + 2]) - Math.min(d[i], d[i + 1], d[i + 2]) > 60) n++;
				}
			return n; })()`, &coloured),
	)
	screenshot(t, ctx, "scalars-logy-gaps")
	if !strings.Contains(note, "≤ 0 not drawn") {
		t.Errorf("log y note = %q", note)
	}
	if coloured > 0 {
		t.Errorf("log y: %d coloured pixels between steps 10 and 12, where every run is below zero; want a gap", coloured)
	}
}

// The card's download menu saves every run of the card in one file, CSV
// and JSON, at full resolution.
func TestScalarsCardDownloadAllRuns(t *testing.T) {
	const train, eval, tag = "generated/scalars/train", "generated/scalars/eval", "loss"
	want := expectedPoints(t, train, tag) + expectedPoints(t, eval, tag)
	ctx := tab(t, true)
	card := `.scalar-card[data-tag="loss"]`
	var csv struct {
		Lines int
		Head  string
		Runs  []string
	}
	var doc struct {
		Runs  []string
		Steps int
	}
	run(t, ctx,
		navigate(experimentURL(env.eid, url.Values{"runFilter": {"^generated/scalars/(train|eval)$"}, "tagFilter": {"^loss$"}})),
		waitFor(paintedCanvases(card+" canvas", 200)+" === 1"),
		chromedp.Evaluate(`window.__saved = []; URL.createObjectURL = (b) => { window.__saved.push(b); return "blob:kept"; }; true`, nil),
		chromedp.Click(card+" details.download summary", chromedp.ByQuery),
		waitFor(`document.querySelector('`+card+` .menu-all') !== null`),
		chromedp.Click(card+" .menu-all button:nth-of-type(1)", chromedp.ByQuery),
		waitFor(`window.__saved.length === 1`),
		chromedp.Evaluate(`window.__saved[0].text().then(s => { const l = s.trim().split("\r\n");
			return {Lines: l.length, Head: l[0], Runs: [...new Set(l.slice(1).map(r => r.split(",")[0]))].sort()}; })`, &csv, awaitPromise),
		chromedp.Click(card+" .menu-all button:nth-of-type(2)", chromedp.ByQuery),
		waitFor(`window.__saved.length === 2`),
		chromedp.Evaluate(`window.__saved[1].text().then(s => { const d = JSON.parse(s);
			return {Runs: d.runs.map(r => r.run).sort(), Steps: d.runs.reduce((n, r) => n + r.points.steps.length, 0)}; })`, &doc, awaitPromise),
	)
	runs := []string{eval, train}
	if csv.Lines != want+1 || csv.Head != "run,wall_time,step,value" || strings.Join(csv.Runs, "|") != strings.Join(runs, "|") {
		t.Errorf("CSV of the card: %d lines, head %q, runs %q; want %d points of %q and a header", csv.Lines, csv.Head, csv.Runs, want, runs)
	}
	if doc.Steps != want || strings.Join(doc.Runs, "|") != strings.Join(runs, "|") {
		t.Errorf("JSON of the card: %d points of runs %q; want %d of %q", doc.Steps, doc.Runs, want, runs)
	}
}

// The step and sample sliders of an image card, and the step slider of a
// PR curve card, go into the URL and are where they were after a reload.
func TestMediaSlidersInURL(t *testing.T) {
	ctx := tab(t, true)
	const imgCard = `.image-card[data-tag="gradient/image_summary"]`
	slide := func(sel string, v int) chromedp.Action {
		return chromedp.Evaluate(fmt.Sprintf(`(() => { const i = document.querySelector(%q); i.value = %d; i.dispatchEvent(new Event("input")); return true; })()`, sel, v), nil)
	}
	var stepLabel, sampleLabel string
	run(t, ctx,
		navigate(experimentURL(env.eid, url.Values{"tab": {"images"}, "runFilter": {"^generated/images$"}, "tagFilter": {"^gradient/image_summary$"}})),
		waitFor(`document.querySelector('`+imgCard+` .sample-slider input') !== null && !document.querySelector('`+imgCard+` .step-slider input').disabled`),
		slide(imgCard+" .step-slider input", 1),
		slide(imgCard+" .sample-slider input", 1),
		waitFor(`new URLSearchParams(location.search).getAll("slide").length === 1 && JSON.parse(new URLSearchParams(location.search).get("slide"))[4] === 1`),
		chromedp.Text(imgCard+" .step-label", &stepLabel, chromedp.ByQuery),
		chromedp.Text(imgCard+" .sample-label", &sampleLabel, chromedp.ByQuery),
	)
	var loc string
	run(t, ctx, chromedp.Location(&loc))
	if slides := urlParams(ctx, t, "slide"); len(slides) != 1 || !strings.HasPrefix(slides[0], `["images","gradient/image_summary","generated/images",`) {
		t.Errorf("slide params = %q", slides)
	}
	var step, sample, stepAgain, sampleAgain string
	run(t, ctx,
		navigate(loc),
		waitFor(`document.querySelector('`+imgCard+` .sample-slider input') !== null && document.querySelector('`+imgCard+` img.sample')?.src`),
		chromedp.Value(imgCard+" .step-slider input", &step, chromedp.ByQuery),
		chromedp.Value(imgCard+" .sample-slider input", &sample, chromedp.ByQuery),
		chromedp.Text(imgCard+" .step-label", &stepAgain, chromedp.ByQuery),
		chromedp.Text(imgCard+" .sample-label", &sampleAgain, chromedp.ByQuery),
	)
	if step != "1" || sample != "1" || stepAgain != stepLabel || sampleAgain != sampleLabel {
		t.Errorf("after reload: step slider %s (%q), sample slider %s (%q); want 1 (%q), 1 (%q)", step, stepAgain, sample, sampleAgain, stepLabel, sampleLabel)
	}

	const prCard = `.pr-card[data-tag="classifier/pr_curves"]`
	run(t, ctx,
		navigate(experimentURL(env.eid, url.Values{"tab": {"pr_curves"}, "runFilter": {"^generated/pr_curves$"}, "tagFilter": {"^classifier/pr_curves$"}})),
		waitFor(`document.querySelector('`+prCard+` .step-slider input') !== null && document.querySelector('`+prCard+` canvas') !== null`),
		slide(prCard+" .step-slider input", 2),
		waitFor(`JSON.parse(new URLSearchParams(location.search).get("slide") ?? "[]")[0] === "pr_curves"`),
		chromedp.Text(prCard+" .step-label", &stepLabel, chromedp.ByQuery),
		chromedp.Location(&loc),
	)
	run(t, ctx,
		navigate(loc),
		waitFor(`document.querySelector('`+prCard+` .step-slider input') !== null && document.querySelector('`+prCard+` canvas') !== null`),
		chromedp.Value(prCard+" .step-slider input", &step, chromedp.ByQuery),
		chromedp.Text(prCard+" .step-label", &stepAgain, chromedp.ByQuery),
	)
	if step != "2" || stepAgain != stepLabel {
		t.Errorf("PR curve after reload: step slider %s (%q); want 2 (%q)", step, stepAgain, stepLabel)
	}
}

// A custom scalars chart plotting two tags of one run draws them in two
// colours, named in a legend.
func TestCustomScalarsLegend(t *testing.T) {
	ctx := tab(t, true)
	card := `.custom-card[data-title="all losses"]`
	var legend []struct{ Label, Color string }
	run(t, ctx,
		navigate(experimentURL(env.eid, url.Values{"tab": {"custom_scalars"}, "runFilter": {"^generated/custom_scalars$"}})),
		waitFor(paintedCanvases(card+" canvas", 200)+" === 1"),
		chromedp.Evaluate(`[...document.querySelectorAll('`+card+` .legend-item')].map(e => ({Label: e.textContent, Color: e.querySelector(".swatch").style.background}))`, &legend),
	)
	screenshot(t, ctx, "custom-scalars-legend")
	if len(legend) != 2 || legend[0].Label != "generated/custom_scalars: loss/a" || legend[1].Label != "generated/custom_scalars: loss/b" || legend[0].Color == legend[1].Color {
		t.Errorf("legend of %s = %+v; want loss/a and loss/b of generated/custom_scalars in two colours", card, legend)
	}
}

// Toggling a run in the runs list shows or hides its line in the charts
// there are (the same canvas, not a chart built anew); a run that was off
// when the page opened is read when it is turned on. The tooltip's time
// setting adds each point's wall and relative time.
func TestScalarsRunToggleKeepsChart(t *testing.T) {
	eid := sixtyRunsExperiment(t)
	ctx := tab(t, true)
	card := `.scalar-card[data-tag="loss"]`
	box := func(r string) string { return `.sidebar li[data-run="` + r + `"] input[type=checkbox]` }
	runs := func(n int) chromedp.Action {
		return waitFor(fmt.Sprintf(`document.querySelector('%s .chart')?.dataset.runs === "%d" && !!document.querySelector('%s canvas')`, card, n, card))
	}
	run(t, ctx,
		navigate(experimentURL(eid, url.Values{"tagFilter": {"^loss$"}, "off": {"run07"}})),
		runs(59),
		// run07 was not read with the page: turned on, it is.
		chromedp.Click(box("run07"), chromedp.ByQuery),
		runs(60),
		chromedp.Evaluate(`document.querySelector('`+card+` canvas').dataset.mark = "kept"`, nil),
		chromedp.Click(box("run03"), chromedp.ByQuery),
		urlParam("off", "run03"),
		runs(59),
	)
	var mark string
	run(t, ctx, chromedp.Evaluate(`document.querySelector('`+card+` canvas').dataset.mark ?? ""`, &mark))
	if mark != "kept" {
		t.Errorf("toggling run03 built the chart anew; want the same chart with its line hidden")
	}

	// None leaves no card; All after it takes up the chart None removed
	// (building 100-run charts again took All 400 ms to 1.5 s at 100 runs).
	allNone := func(b string) chromedp.Action {
		return chromedp.Evaluate(`[...document.querySelectorAll(".run-buttons button")].find(b => b.textContent === "`+b+`").click()`, nil)
	}
	run(t, ctx,
		allNone("None"),
		waitFor(`document.querySelector('`+card+`') === null`),
		allNone("All"),
		runs(60),
		chromedp.Evaluate(`document.querySelector('`+card+` canvas').dataset.mark ?? ""`, &mark),
	)
	if mark != "kept" {
		t.Errorf("All after None built the chart anew; want the chart None removed, with every line shown")
	}
	// A view changed while no card was shown builds it anew: the kept
	// chart was drawn with the old smoothing.
	run(t, ctx,
		allNone("None"),
		waitFor(`document.querySelector('`+card+`') === null`),
		chromedp.SetValue(`.smoothing-num`, "0.9", chromedp.ByQuery),
		chromedp.Evaluate(`document.querySelector(".smoothing-num").dispatchEvent(new Event("change"))`, nil),
		urlParam("smoothing", "0.9"),
		allNone("All"),
		// The kept chart shows until the card is drawn (a frame later):
		// then it is a new one (a minute's wait fails the test).
		waitFor(`document.querySelector('`+card+` canvas')?.dataset.mark === undefined`),
		runs(60),
	)

	var extra string
	run(t, ctx,
		chromedp.Click(`.tttime`, chromedp.ByQuery),
		urlParam("tttime", "1"),
		waitFor(paintedCanvases(card+" canvas", 200)+" === 1"),
		moveOver(card+" .u-over", 0.5),
		waitFor(`!document.querySelector('`+card+` .tooltip').hidden`),
		chromedp.Evaluate(`document.querySelector('`+card+` .tooltip .tt-extra').textContent`, &extra),
	)
	// Points one second apart from the run's first: step 19 or 20 is 19 or 20 s in.
	if !regexp.MustCompile(`^raw \S+ · step (\d+) · .+ · (19|20)s$`).MatchString(extra) {
		t.Errorf("tooltip detail with time = %q; want raw value, step, wall time and relative time", extra)
	}
}
