package browsertest

import (
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

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
		chromedp.Navigate(experimentURL(env.eid, url.Values{"tab": {"hparams"}, "hfilter": {"^trial-"}})),
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

	// Scatter: accuracy against the first hyperparameter.
	var x string
	var ys []string
	run(t, ctx,
		choose(".hparams-view", "scatter"),
		urlParam("hview", "scatter"),
		choose(".hparams-y", "accuracy"),
		urlParam("hy", "accuracy"),
		chromedp.Value(".hparams-x", &x, chromedp.ByQuery),
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
		chromedp.Navigate(loc),
		waitFor(`document.querySelectorAll("svg.hparams-scatter circle.sc-point").length === 4`),
		chromedp.Value(".hparams-x", &xAfter, chromedp.ByQuery),
		chromedp.Value(".hparams-y", &yAfter, chromedp.ByQuery),
	)
	if xAfter != x || yAfter != "accuracy" {
		t.Errorf("after reload the scatter plots %q against %q, want accuracy against %q", yAfter, xAfter, x)
	}
}
