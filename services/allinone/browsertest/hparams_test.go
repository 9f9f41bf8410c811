package browsertest

import (
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
)

// choose picks value in a select and tells the page, as a user's choice does.
func choose(selector, value string) chromedp.Action {
	return chromedp.Evaluate(fmt.Sprintf(`(() => { const s = document.querySelector(%q); s.value = %q; s.dispatchEvent(new Event("change")); return true; })()`, selector, value), nil)
}

// dragDown drags the mouse at x from y0 to y1, through their middle (a
// brush along a parallel-coordinates axis).
func dragDown(x, y0, y1 float64) chromedp.Action {
	return chromedp.Tasks{
		chromedp.MouseEvent(input.MouseMoved, x, y0),
		chromedp.MouseEvent(input.MousePressed, x, y0, chromedp.ButtonLeft),
		chromedp.MouseEvent(input.MouseMoved, x, (y0+y1)/2, chromedp.ButtonLeft),
		chromedp.MouseEvent(input.MouseMoved, x, y1, chromedp.ButtonLeft),
		chromedp.MouseEvent(input.MouseReleased, x, y1, chromedp.ButtonLeft),
	}
}

// settled scrolls the element the page expression el finds into view and
// waits until the plots are drawn for the content's width (a scroll bar
// coming or going redraws them, moving the axes) and el is the same
// element at the same place at two polls in a row, inside the window.
func settled(el string) chromedp.Action {
	return chromedp.Tasks{
		chromedp.Evaluate(el+`.scrollIntoView({block: "center"})`, nil),
		waitFor(`(() => { const c = document.querySelector(".cards.hparams"); const e = ` + el + `; const r = e.getBoundingClientRect(); const k = [r.left, r.top, r.bottom].join(); const same = window.settledEl === e && window.settledAt === k; window.settledEl = e; window.settledAt = k; return same && String(c.clientWidth) === c.dataset.drawnWidth && r.top >= 0 && r.bottom <= innerHeight; })()`),
	}
}

func urlParam(name, want string) chromedp.Action {
	return waitFor(fmt.Sprintf(`new URLSearchParams(location.search).get(%q) === %q`, name, want))
}

// expectedLast is the last value of run/tag in EXPECTED.json.
func expectedLast(t *testing.T, run, tag string) float64 {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(mustCorpus(t), "EXPECTED.json"))
	if err != nil {
		t.Fatal(err)
	}
	var e struct {
		Runs map[string]map[string]struct{ Last any }
	}
	if err := json.Unmarshal(b, &e); err != nil {
		t.Fatal(err)
	}
	v, ok := e.Runs[run][tag].Last.(float64)
	if !ok {
		t.Fatalf("EXPECTED.json has no number for %s/%s", run, tag)
	}
	return v
}

func TestHParamsParallelCoordinatesAndScatterInURL(t *testing.T) {
	ctx := tab(t, true)
	// The filter comes from the URL: generated/hparams's four trials.
	var filter string
	run(t, ctx,
		navigate(experimentURL(env.eid, url.Values{"tab": {"hparams"}, "hfilter": {"^trial-"}})),
		waitFor(`document.querySelectorAll("table.hparams-table tbody tr").length === 4`),
		chromedp.Value(".row-filter", &filter, chromedp.ByQuery),
	)
	if filter != "^trial-" {
		t.Errorf("row filter after loading hfilter=^trial-: %q", filter)
	}

	// Parallel coordinates: a line per trial across every column with a value.
	var axes []string
	run(t, ctx,
		choose(".hparams-view", "parallel"),
		urlParam("hview", "parallel"),
		waitFor(`document.querySelectorAll("svg.hparams-parallel path.pc-line").length === 4`),
		chromedp.Evaluate(`[...document.querySelectorAll("svg.hparams-parallel .pc-axis")].map(a => a.dataset.col)`, &axes),
	)
	// generated/hparams declares four hyperparameters and one metric.
	if want := []string{"learning_rate", "optimizer", "units", "use_bn", "accuracy"}; !slices.Equal(axes, want) {
		t.Errorf("parallel coordinates axes = %q, want %q", axes, want)
	}
	var colors int
	run(t, ctx,
		choose(".hparams-color", "accuracy"),
		urlParam("hcolor", "accuracy"),
		chromedp.Evaluate(`new Set([...document.querySelectorAll("svg.hparams-parallel path.pc-line")].map(p => p.getAttribute("stroke"))).size`, &colors),
	)
	if colors != 4 {
		t.Errorf("coloured by accuracy, the 4 trials' lines have %d colours", colors)
	}
	screenshot(t, ctx, "hparams-parallel")

	// Brushing the top quarter of the accuracy axis keeps the best trial
	// (0.9356; the next is 0.8999 of a 0.8636–0.9356 axis).
	var line []float64
	run(t, ctx, settled(`document.querySelector('.pc-axis[data-col="accuracy"] line')`))
	run(t, ctx, chromedp.Evaluate(`(() => { const r = document.querySelector('.pc-axis[data-col="accuracy"] line').getBoundingClientRect(); return [r.left, r.top, r.height]; })()`, &line))
	x, top, h := line[0], line[1], line[2]
	run(t, ctx,
		dragDown(x, top-2, top+h*0.25),
		waitFor(`new URLSearchParams(location.search).get("hbrush") !== null`),
		waitFor(`document.querySelectorAll("svg.hparams-parallel path.pc-line:not(.out)").length === 1`),
	)
	var brushed []string
	var brush string
	run(t, ctx,
		chromedp.Evaluate(`[...document.querySelectorAll("svg.hparams-parallel path.pc-line:not(.out)")].map(p => p.dataset.group)`, &brushed),
		chromedp.Evaluate(`new URLSearchParams(location.search).get("hbrush")`, &brush),
	)
	var b []any
	if err := json.Unmarshal([]byte(brush), &b); err != nil || len(b) != 3 || b[0] != "accuracy" || !(b[1].(float64) > 0.9 && b[2].(float64) >= 0.9356) {
		t.Errorf("hbrush=%s, want [accuracy, >0.9, >=0.9356]", brush)
	}
	screenshot(t, ctx, "hparams-brushed")
	// The table keeps the brushed group too.
	var tableRows []string
	run(t, ctx,
		choose(".hparams-view", "table"),
		waitFor(`document.querySelectorAll("table.hparams-table tbody tr").length === 1`),
		chromedp.Evaluate(`[...document.querySelectorAll("table.hparams-table tbody td.name")].map(td => td.textContent)`, &tableRows),
		choose(".hparams-view", "parallel"),
		waitFor(`document.querySelector("svg.hparams-parallel") !== null`),
	)
	if len(brushed) != 1 || len(tableRows) != 1 || brushed[0] != tableRows[0] {
		t.Errorf("brushed lines %q, table rows %q: want the same one group", brushed, tableRows)
	}
	// Clicking the axis lets go.
	run(t, ctx,
		chromedp.MouseEvent(input.MouseMoved, x, top+h/2),
		chromedp.MouseEvent(input.MousePressed, x, top+h/2, chromedp.ButtonLeft),
		chromedp.MouseEvent(input.MouseReleased, x, top+h/2, chromedp.ButtonLeft),
		waitFor(`new URLSearchParams(location.search).get("hbrush") === null`),
		waitFor(`document.querySelectorAll("svg.hparams-parallel path.pc-line:not(.out)").length === 4`),
	)

	// Scatter: accuracy against the first hyperparameter.
	var xCol string
	var ys []string
	run(t, ctx,
		choose(".hparams-view", "scatter"),
		urlParam("hview", "scatter"),
		choose(".hparams-y", "accuracy"),
		urlParam("hy", "accuracy"),
		chromedp.Value(".hparams-x", &xCol, chromedp.ByQuery),
		waitFor(`document.querySelectorAll("svg.hparams-scatter circle.sc-point").length === 4`),
		chromedp.Evaluate(`[...document.querySelectorAll("svg.hparams-scatter circle.sc-point")].map(c => c.dataset.y)`, &ys),
	)
	screenshot(t, ctx, "hparams-scatter")
	var got, want []float32
	for i, y := range ys {
		v, err := strconv.ParseFloat(y, 64)
		if err != nil {
			t.Fatalf("point %d: y %q", i, y)
		}
		got = append(got, float32(v))
		want = append(want, float32(expectedLast(t, fmt.Sprintf("generated/hparams/trial-%d", i), "accuracy")))
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("scatter y values %v, want the trials' last accuracies %v", got, want)
	}

	// Reloading the URL gives the same plot.
	var loc, xAfter, yAfter string
	run(t, ctx, chromedp.Location(&loc))
	run(t, ctx,
		navigate(loc),
		waitFor(`document.querySelectorAll("svg.hparams-scatter circle.sc-point").length === 4`),
		chromedp.Value(".hparams-x", &xAfter, chromedp.ByQuery),
		chromedp.Value(".hparams-y", &yAfter, chromedp.ByQuery),
	)
	if xAfter != xCol || yAfter != "accuracy" {
		t.Errorf("after reload the scatter plots %q against %q, want accuracy against %q", yAfter, xAfter, xCol)
	}
}

// Each session group lists its runs, linked to Scalars showing them.
func TestHParamsGroupsLinkToTheirRuns(t *testing.T) {
	ctx := tab(t, true)
	var runs string
	run(t, ctx,
		navigate(experimentURL(env.eid, url.Values{"tab": {"hparams"}, "hfilter": {"^trial-0$"}})),
		waitFor(`document.querySelectorAll("table.hparams-table tbody tr").length === 1`),
		chromedp.Text(`table.hparams-table tbody td.runs a.group-runs`, &runs, chromedp.ByQuery),
		chromedp.Click(`table.hparams-table tbody td.runs a.group-runs`, chromedp.ByQuery),
		waitFor(`new URLSearchParams(location.search).get("tab") === "scalars"`),
		waitFor(`document.querySelectorAll(".scalar-card").length > 0`),
	)
	var shown []string
	run(t, ctx, chromedp.Evaluate(`[...document.querySelectorAll(".sidebar ul.runs li")].filter(li => !li.hidden).map(li => li.dataset.run)`, &shown))
	if len(shown) == 0 || runs == "" {
		t.Fatalf("group runs %q; runs shown in Scalars %q", runs, shown)
	}
	for _, r := range shown {
		if !strings.HasPrefix(r, strings.Split(runs, ", ")[0]) {
			t.Errorf("Scalars of the group's runs (%q) shows run %q", runs, r)
		}
	}
}

// Session groups that miss a value (the corpus's study_tb groups and g0
// record no accuracy, the trials no lr) keep their lines: each reaches every axis,
// a missing value on the axis's "missing" band, which brushing selects.
func TestHParamsParallelCoordinatesMissingValues(t *testing.T) {
	ctx := tab(t, true)
	run(t, ctx,
		navigate(experimentURL(env.eid, url.Values{"tab": {"hparams"}, "hview": {"parallel"}})),
		waitFor(`document.querySelectorAll("svg.hparams-parallel path.pc-line").length >= 8`),
	)
	// Every line has one point per axis, at the axis's x; a group without
	// accuracy ends in the middle of the accuracy axis's missing band.
	var lines []struct {
		Group    string
		Points   [][2]float64
		Accuracy bool
	}
	var axes []struct {
		Col  string
		X    float64
		Band []float64 // the missing band's top and bottom, if drawn
		Text string    // its label
	}
	run(t, ctx,
		chromedp.Evaluate(`[...document.querySelectorAll("svg.hparams-parallel .pc-axis")].map(a => {
			const line = a.querySelector("line");
			const band = a.ownerSVGElement.querySelector('.pc-missing[data-col="' + CSS.escape(a.dataset.col) + '"]');
			return {col: a.dataset.col, x: +line.getAttribute("x1"),
				band: band ? [+band.getAttribute("y"), +band.getAttribute("y") + +band.getAttribute("height")] : null,
				text: a.querySelector(".pc-missing-label")?.textContent ?? ""};
		})`, &axes),
		chromedp.Evaluate(`[...document.querySelectorAll("svg.hparams-parallel path.pc-line")].map(p => ({
			group: p.dataset.group,
			points: [...p.getAttribute("d").matchAll(/[ML]([-\d.]+),([-\d.]+)/g)].map(m => [+m[1], +m[2]]),
			accuracy: !/\naccuracy: –/.test(p.querySelector("title").textContent),
		}))`, &lines),
	)
	var accuracy = -1
	for k, a := range axes {
		if a.Col == "accuracy" {
			accuracy = k
		}
	}
	if accuracy < 0 || len(axes[accuracy].Band) != 2 || axes[accuracy].Text != "missing" {
		t.Fatalf("axes %+v: want an accuracy axis with a band labelled missing", axes)
	}
	band := axes[accuracy].Band
	missing := 0
	for _, l := range lines {
		if len(l.Points) != len(axes) {
			t.Errorf("group %s: %d points on %d axes", l.Group, len(l.Points), len(axes))
			continue
		}
		for k, p := range l.Points {
			if math.Abs(p[0]-axes[k].X) > 0.1 {
				t.Errorf("group %s: point %d at x %v, axis %s at %v", l.Group, k, p[0], axes[k].Col, axes[k].X)
			}
		}
		y := l.Points[accuracy][1]
		if inBand := y > band[0] && y < band[1]; inBand == l.Accuracy {
			t.Errorf("group %s (has accuracy: %v) meets the accuracy axis at y %v; its missing band is %v", l.Group, l.Accuracy, y, band)
		}
		if !l.Accuracy {
			missing++
		}
	}
	if missing == 0 {
		t.Fatal("no group misses accuracy: the corpus no longer tests missing values")
	}
	screenshot(t, ctx, "hparams-missing")

	// Dragging along the band alone keeps the groups without accuracy.
	var rect []float64
	// In view first: the page above the plot (the damaged-records note of
	// the corpus) may put the band below the window, where the mouse
	// cannot reach it.
	bandEl := `document.querySelector('.pc-missing[data-col="accuracy"]')`
	measure := `(() => { const r = ` + bandEl + `.getBoundingClientRect(); return [r.left + r.width / 2, r.top, r.bottom, document.querySelector('.pc-axis[data-col="accuracy"] line').getBoundingClientRect().top]; })()`
	run(t, ctx, settled(bandEl))
	run(t, ctx, chromedp.Evaluate(measure, &rect))
	x, top, bottom := rect[0], rect[1], rect[2]
	run(t, ctx,
		dragDown(x, top+1, bottom-1),
		urlParam("hbrush", `["accuracy","missing"]`),
		waitFor(fmt.Sprintf(`document.querySelectorAll("svg.hparams-parallel path.pc-line:not(.out)").length === %d`, missing)),
	)
	var kept []string
	run(t, ctx, chromedp.Evaluate(`[...document.querySelectorAll("svg.hparams-parallel path.pc-line:not(.out)")].map(p => p.dataset.group)`, &kept))
	for _, l := range lines {
		if slices.Contains(kept, l.Group) == l.Accuracy {
			t.Errorf("brushing the missing band: group %s (has accuracy: %v) kept: %v", l.Group, l.Accuracy, !l.Accuracy)
		}
	}
	screenshot(t, ctx, "hparams-missing-brushed")
	run(t, ctx,
		choose(".hparams-view", "table"),
		waitFor(fmt.Sprintf(`document.querySelectorAll("table.hparams-table tbody tr").length === %d`, missing)),
		choose(".hparams-view", "parallel"),
		waitFor(`document.querySelector("svg.hparams-parallel") !== null`),
	)

	// From the top of the axis down into the band: every group (measured
	// again: the table in between may have scrolled the page).
	run(t, ctx, settled(bandEl))
	run(t, ctx, chromedp.Evaluate(measure, &rect))
	x, bottom, axisTop := rect[0], rect[2], rect[3]
	var brush string
	run(t, ctx,
		dragDown(x, axisTop-2, bottom-1),
		waitFor(fmt.Sprintf(`document.querySelectorAll("svg.hparams-parallel path.pc-line:not(.out)").length === %d`, len(lines))),
		chromedp.Evaluate(`new URLSearchParams(location.search).get("hbrush")`, &brush),
	)
	var b []any
	if err := json.Unmarshal([]byte(brush), &b); err != nil || len(b) != 4 || b[0] != "accuracy" || b[3] != "missing" {
		t.Errorf("hbrush=%s, want [accuracy, LO, HI, missing]", brush)
	}
}

// The scatter view is TensorBoard's scatter plot matrix: a plot per pair
// of a hyperparameter or metric (columns) against a metric (rows), one cell
// per pair; a pair no session group has both values of says so instead of
// drawing an empty plot. Hovering a point highlights its group in every
// plot, clicking keeps it, clicking a cell draws that pair large.
func TestHParamsScatterPlotMatrix(t *testing.T) {
	ctx := tab(t, true)
	thrown, logged := pageErrors(ctx), consoleErrors(ctx)
	run(t, ctx,
		navigate(experimentURL(env.eid, url.Values{"tab": {"hparams"}, "hview": {"scatter"}})),
		waitFor(`document.querySelectorAll(".hparams-matrix .mx-cell").length > 0`),
	)
	var m struct {
		Xs, Ys []string
		Diag   int
		Cells  []struct {
			X, Y   string
			Points int
			Note   string
		}
	}
	run(t, ctx, chromedp.Evaluate(`(() => {
		const g = document.querySelector(".hparams-matrix");
		return {
			xs: [...g.querySelectorAll(".mx-head")].map(e => e.title),
			ys: [...g.querySelectorAll(".mx-rowhead")].map(e => e.title),
			diag: g.querySelectorAll(".mx-diag").length,
			cells: [...g.querySelectorAll(".mx-cell")].map(c => ({x: c.dataset.x, y: c.dataset.y,
				points: c.querySelectorAll("circle.mx-point").length, note: c.querySelector(".mx-empty")?.textContent ?? ""})),
		};
	})()`, &m))
	t.Logf("matrix: columns %q, rows %q", m.Xs, m.Ys)
	screenshot(t, ctx, "hparams-matrix")
	// The corpus's hparams: generated/hparams's trials (learning_rate,
	// optimizer, units, use_bn; accuracy) and study_tb's groups, which record
	// no accuracy.
	if !slices.Contains(m.Xs, "learning_rate") || !slices.Contains(m.Ys, "accuracy") || !slices.Contains(m.Xs, "accuracy") {
		t.Fatalf("matrix columns %q, rows %q: want learning_rate and accuracy", m.Xs, m.Ys)
	}
	diag := 0
	for _, y := range m.Ys {
		if slices.Contains(m.Xs, y) {
			diag++
		}
	}
	if want := len(m.Xs)*len(m.Ys) - diag; len(m.Cells) != want || m.Diag != diag {
		t.Errorf("%d cells and %d diagonal labels for %d columns × %d rows, want %d and %d", len(m.Cells), m.Diag, len(m.Xs), len(m.Ys), want, diag)
	}
	seen := map[[2]string]bool{}
	empty := 0
	for _, c := range m.Cells {
		p := [2]string{c.X, c.Y}
		if seen[p] || c.X == c.Y || !slices.Contains(m.Xs, c.X) || !slices.Contains(m.Ys, c.Y) {
			t.Errorf("cell %q against %q: repeated, diagonal or off the matrix", c.Y, c.X)
		}
		seen[p] = true
		switch {
		case c.Note != "":
			empty++
			if c.Points != 0 || c.Note != fmt.Sprintf("No session group has both %s and %s.", c.X, c.Y) {
				t.Errorf("cell %q against %q: %d points and note %q", c.Y, c.X, c.Points, c.Note)
			}
		case c.Points == 0:
			t.Errorf("cell %q against %q: an empty plot without a note", c.Y, c.X)
		}
		if c.X == "learning_rate" && c.Y == "accuracy" && c.Points != 4 {
			t.Errorf("accuracy against learning_rate: %d points, want the 4 trials", c.Points)
		}
	}
	if empty == 0 {
		t.Error("no cell says its pair shares no session group: the corpus's study_tb groups (no accuracy) should give one")
	}

	// Hovering a point highlights its group in every plot holding it. (The
	// pointer's events are sent to the point: a resize may still redraw the
	// matrix, moving the point from under a real pointer.)
	const pt = `document.querySelector('.mx-cell[data-x="learning_rate"][data-y="accuracy"] circle.mx-point')`
	send := func(event string) chromedp.Action {
		return chromedp.Evaluate(pt+`.dispatchEvent(new (window.PointerEvent ?? MouseEvent)(`+strconv.Quote(event)+`, {bubbles: true}))`, nil)
	}
	var group string
	run(t, ctx, chromedp.Evaluate(pt+`.dataset.group`, &group), send("pointerover"))
	sel := fmt.Sprintf(`circle.mx-point[data-group=%q]`, group)
	const countHL = `document.querySelectorAll(".hparams-matrix circle.mx-point.hl").length`
	var holding int
	run(t, ctx, chromedp.Evaluate(`document.querySelectorAll('.hparams-matrix `+sel+`').length`, &holding))
	run(t, ctx,
		waitFor(fmt.Sprintf(`%s === %d && document.querySelectorAll('.hparams-matrix %s.hl').length === %d`, countHL, holding, sel, holding)),
	)
	if holding < 2 {
		t.Errorf("group %s has %d points in the matrix, want one in several plots", group, holding)
	}
	screenshot(t, ctx, "hparams-matrix-hover")
	// Leaving it lets go; clicking keeps it highlighted after the pointer leaves.
	run(t, ctx,
		send("pointerout"),
		waitFor(countHL+` === 0`),
		send("pointerover"), send("click"), send("pointerout"),
		waitFor(fmt.Sprintf(`%s === %d`, countHL, holding)),
	)

	// Clicking a cell draws its pair large, in the URL.
	run(t, ctx,
		chromedp.Evaluate(`document.querySelector('.mx-cell[data-x="units"][data-y="accuracy"] .sc-frame').dispatchEvent(new MouseEvent("click", {bubbles: true}))`, nil),
		urlParam("hx", "units"),
		urlParam("hy", "accuracy"),
		waitFor(`document.querySelectorAll("svg.hparams-scatter circle.sc-point").length === 4`),
		waitFor(`document.querySelector('.mx-cell.current')?.dataset.x === "units"`),
		// The pinned group stays highlighted in the redrawn plots, the large one too.
		waitFor(fmt.Sprintf(`%s === %d && document.querySelectorAll("svg.hparams-scatter circle.sc-point.hl").length === 1`, countHL, holding)),
	)
	noPageErrors(t, thrown, logged)
}

// A plot drawn again in the middle of a drag (its width changed: a scroll
// bar came) lost the drag: the press went to the old plot, the release to
// the new one, and nothing was brushed. The redraw now waits for the
// release.
func TestHParamsResizeDuringDragKeepsTheBrush(t *testing.T) {
	ctx := tab(t, true)
	line := `document.querySelector('.pc-axis[data-col="accuracy"] line')`
	var r []float64
	run(t, ctx,
		navigate(experimentURL(env.eid, url.Values{"tab": {"hparams"}, "hview": {"parallel"}, "hfilter": {"^trial-"}})),
		waitFor(`document.querySelectorAll("svg.hparams-parallel path.pc-line").length === 4`),
		settled(line),
		chromedp.Evaluate(`(() => { const r = `+line+`.getBoundingClientRect(); window.plotBefore = document.querySelector("svg.hparams-parallel"); return [r.left, r.top, r.height]; })()`, &r),
	)
	x, top, h := r[0], r[1], r[2]
	run(t, ctx,
		chromedp.MouseEvent(input.MouseMoved, x, top-2),
		chromedp.MouseEvent(input.MousePressed, x, top-2, chromedp.ButtonLeft),
		waitFor(`document.querySelector("svg.hparams-parallel").dataset.dragging === "1"`),
		// The content narrows while the button is down.
		chromedp.Evaluate(`document.querySelector(".cards.hparams").style.width = "900px"`, nil),
		waitFor(`document.querySelector(".cards.hparams").dataset.redrawWaits === "drag"`),
	)
	var same bool
	run(t, ctx, chromedp.Evaluate(`document.querySelector("svg.hparams-parallel") === window.plotBefore`, &same))
	if !same {
		t.Fatal("the plot was drawn again while its brush was being dragged")
	}
	run(t, ctx,
		chromedp.MouseEvent(input.MouseMoved, x, top+h*0.25, chromedp.ButtonLeft),
		chromedp.MouseEvent(input.MouseReleased, x, top+h*0.25, chromedp.ButtonLeft),
		waitFor(`new URLSearchParams(location.search).get("hbrush") !== null`),
		// Once released, the plot is drawn for its new width.
		waitFor(`(() => { const c = document.querySelector(".cards.hparams"); return c.dataset.drawnWidth === String(c.clientWidth) && c.dataset.redrawWaits === undefined; })()`),
	)
}
