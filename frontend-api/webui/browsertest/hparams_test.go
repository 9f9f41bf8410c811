package browsertest

import (
	"encoding/json"
	"fmt"
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
	run(t, ctx, chromedp.Evaluate(`(() => { const r = document.querySelector('.pc-axis[data-col="accuracy"] line').getBoundingClientRect(); return [r.left, r.top, r.height]; })()`, &line))
	x, top, h := line[0], line[1], line[2]
	run(t, ctx,
		chromedp.MouseEvent(input.MouseMoved, x, top-2),
		chromedp.MouseEvent(input.MousePressed, x, top-2, chromedp.ButtonLeft),
		chromedp.MouseEvent(input.MouseMoved, x, top+h*0.1, chromedp.ButtonLeft),
		chromedp.MouseEvent(input.MouseMoved, x, top+h*0.25, chromedp.ButtonLeft),
		chromedp.MouseEvent(input.MouseReleased, x, top+h*0.25, chromedp.ButtonLeft),
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
