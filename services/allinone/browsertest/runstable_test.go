package browsertest

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"google.golang.org/protobuf/types/known/timestamppb"

	tbpb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard"
	servicepb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/service"
)

// runsTableExperiment writes a sweep whose run names state their hparams,
// and a baseline, each with a "loss" series of known last, min and max.
func runsTableExperiment(t *testing.T) string {
	t.Helper()
	w, ctx, done, err := writerClient()
	if err != nil {
		t.Fatal(err)
	}
	defer done()
	exp, err := w.CreateExperiment(ctx, &servicepb.CreateExperimentRequest{Name: "runs table sweep"})
	if err != nil {
		t.Fatal(err)
	}
	meta := &tbpb.SummaryMetadata{PluginData: &tbpb.SummaryMetadata_PluginData{PluginName: "scalars"}, DataClass: tbpb.DataClass_DATA_CLASS_SCALAR}
	// loss by run: its points at steps 0, 1, 2, ...
	for run, values := range map[string][]float64{
		"lr=0.1,bs=32":   {2, 0.3, 0.4},     // last 0.4, min 0.3
		"lr=0.01,bs=32":  {2.5, 0.9, 0.7},   // last 0.7, min 0.7
		"lr=0.001,bs=64": {3, 1.5, 1.2},     // last 1.2, min 1.2
		"baseline":       {1, 0.45, 0.6, 5}, // last 5, min 0.45
	} {
		tag := &servicepb.WriteScalarRequest_Tag{Name: "loss", Metadata: meta}
		for s, v := range values {
			tag.Points = append(tag.Points, &servicepb.ScalarPoint{Step: int64(s), Value: v, WallTime: timestamppb.New(time.Unix(1_700_000_000+int64(s), 0))})
		}
		if _, err := w.WriteScalar(ctx, &servicepb.WriteScalarRequest{ExperimentId: exp.GetExperimentId(),
			Runs: []*servicepb.WriteScalarRequest_Run{{Name: run, Tags: []*servicepb.WriteScalarRequest_Tag{tag}}}}); err != nil {
			t.Fatal(err)
		}
	}
	return exp.GetExperimentId()
}

// shownRows is an expression for the run names of the runs table's rows, in order.
const shownRows = `[...document.querySelectorAll("table.runs-table tbody tr[data-run]")].map(tr => tr.dataset.run).join("|")`

// The Runs tab: hparams read from the run names and loss's last/min/max as
// columns; sorting by an hparam and by a metric, filtering by an hparam's
// value and by a metric range, all kept in the URL; a run deselected in
// the table is deselected in the scalars dashboard; grouping by an hparam
// the names state groups the charts too.
func TestRunsTableSortFilterSelect(t *testing.T) {
	eid := runsTableExperiment(t)
	ctx := tab(t, true)
	run(t, ctx,
		navigate(experimentURL(eid, url.Values{"tab": {"runs"}})),
		waitFor(`document.querySelectorAll("table.runs-table tbody tr[data-run]").length === 4`),
		// Columns: the hparams the names state, then loss's last, min and max.
		waitFor(`[...document.querySelectorAll("table.runs-table thead th")].map(th => th.dataset.col || "").join() === ",run,bs,lr,loss,loss.min,loss.max"`),
		waitFor(`document.querySelector('table.runs-table tr[data-run="baseline"] td:nth-child(6)').textContent === "0.45"`),

		// Sort by lr, then descending by a second click; by loss.min.
		chromedp.Click(`table.runs-table th[data-col="lr"] button`, chromedp.ByQuery),
		waitFor(shownRows+` === "lr=0.001,bs=64|lr=0.01,bs=32|lr=0.1,bs=32|baseline"`),
		chromedp.Click(`table.runs-table th[data-col="lr"] button`, chromedp.ByQuery),
		waitFor(shownRows+` === "lr=0.1,bs=32|lr=0.01,bs=32|lr=0.001,bs=64|baseline"`),
		waitFor(`new URLSearchParams(location.search).get("rsort") === "-lr"`),
		chromedp.Click(`table.runs-table th[data-col="loss.min"] button`, chromedp.ByQuery),
		waitFor(shownRows+` === "lr=0.1,bs=32|baseline|lr=0.01,bs=32|lr=0.001,bs=64"`),

		// Filter by an hparam's value, then by a metric range as well.
		chromedp.SendKeys(`input.runs-table-filter`, "bs=32", chromedp.ByQuery),
		waitFor(shownRows+` === "lr=0.1,bs=32|lr=0.01,bs=32"`),
		waitFor(`new URLSearchParams(location.search).get("rfilter") === "bs=32"`),
		chromedp.SendKeys(`input.runs-table-filter`, ", loss < 0.5", chromedp.ByQuery),
		waitFor(shownRows+` === "lr=0.1,bs=32"`),
		waitFor(`document.querySelector(".runs-table-count").textContent === "1 of 4 runs"`),
	)

	// The view survives a reload: its state is in the URL.
	var before string
	run(t, ctx, chromedp.Evaluate(`location.href`, &before))
	run(t, ctx,
		navigate(before),
		waitFor(shownRows+` === "lr=0.1,bs=32"`),
		waitFor(`document.querySelector("input.runs-table-filter").value === "bs=32, loss < 0.5"`),
	)

	// Deselecting a run in the table deselects it in the scalars dashboard.
	run(t, ctx,
		navigate(experimentURL(eid, url.Values{"tab": {"runs"}})),
		waitFor(`document.querySelectorAll("table.runs-table tbody tr[data-run]").length === 4`),
		chromedp.Click(`table.runs-table tr[data-run="baseline"] input[type=checkbox]`, chromedp.ByQuery),
		waitFor(`new URLSearchParams(location.search).getAll("off").join() === "baseline"`),
		chromedp.Click(`nav.tabs button[data-tab="scalars"]`, chromedp.ByQuery),
		waitFor(`document.querySelector('.sidebar li[data-run="baseline"] input[type=checkbox]')?.checked === false`),
		waitFor(`document.querySelector('.sidebar li[data-run="lr=0.1,bs=32"] input[type=checkbox]')?.checked === true`),
	)

	// A run the runs list's regex hides from the dashboards is dimmed and
	// said so, with a way to clear the regex.
	run(t, ctx,
		navigate(experimentURL(eid, url.Values{"tab": {"runs"}, "runFilter": {"lr="}})),
		waitFor(`document.querySelector('table.runs-table tr[data-run="baseline"]')?.classList.contains("not-listed") === true`),
		waitFor(`document.querySelectorAll("table.runs-table tr.not-listed").length === 1`),
		chromedp.Click(`.runs-table-note button`, chromedp.ByQuery),
		waitFor(`!new URLSearchParams(location.search).has("runFilter") && document.querySelectorAll("table.runs-table tr.not-listed").length === 0`),
	)

	// Grouping by bs, which the names state, groups the table's rows and
	// sets the charts' run grouping.
	var group string
	run(t, ctx,
		navigate(experimentURL(eid, url.Values{"tab": {"runs"}})),
		waitFor(`document.querySelectorAll("table.runs-table tbody tr[data-run]").length === 4`),
		chromedp.SetValue(`select.runs-table-group`, "bs", chromedp.ByQuery),
		chromedp.Evaluate(`document.querySelector("select.runs-table-group").dispatchEvent(new Event("change"))`, nil),
		waitFor(`[...document.querySelectorAll("table.runs-table tbody tr.group")].map(tr => tr.textContent).join("|") === "bs = 32 · 2 runs|bs = 64 · 1 run|bs = (none) · 1 run"`),
		chromedp.Evaluate(`new URLSearchParams(location.search).get("group")`, &group),
	)
	if group == "" || !strings.Contains(group, "bs") {
		t.Errorf("group regex in the URL: %q; want one grouping by bs", group)
	}
	screenshot(t, ctx, "runs-table")

	// The corpus's hparams trials: their hparams are the plugin's (a cell
	// read from a name says so on hover; these do not).
	run(t, ctx,
		navigate(experimentURL(env.eid, url.Values{"tab": {"runs"}, "rfilter": {"generated/hparams/trial"}})),
		waitFor(`document.querySelectorAll("table.runs-table tbody tr[data-run]").length === 4`),
		waitFor(`[...document.querySelectorAll('table.runs-table tr[data-run="generated/hparams/trial-0"] td.hparam')].some(td => td.textContent !== "" && td.title === "")`),
	)
	screenshot(t, ctx, "runs-table-hparams-plugin")
}

// At 1,000 runs the runs table keeps only the rows on screen in the DOM,
// scrolls to the last run, and sorts, toggles and filters in one
// synchronous redraw; the times are logged (docs/benchmarks.md), not
// asserted.
func TestRunsTableThousandRuns(t *testing.T) {
	eid, err := writeLargeExperiment(1000, 2, 50)
	if err != nil {
		t.Fatal(err)
	}
	ctx := tab(t, true)
	start := time.Now()
	run(t, ctx,
		navigate(experimentURL(eid, url.Values{"tab": {"runs"}})),
		waitFor(`document.querySelector(".runs-table-count")?.textContent === "1000 runs"`),
	)
	loaded := time.Since(start)
	var inDOM int
	var timings struct {
		Sort, Toggle, Filter, Scroll float64
		Last                         string
	}
	run(t, ctx,
		chromedp.Evaluate(`document.querySelectorAll("table.runs-table tbody tr[data-run]").length`, &inDOM),
		chromedp.Evaluate(`(async () => {
			const frame = () => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)));
			const ms = (fn) => { const t0 = performance.now(); fn(); return performance.now() - t0; };
			const out = {};
			out.Sort = ms(() => document.querySelector('table.runs-table th[data-col="group0/metric00.min"] button').click());
			out.Toggle = ms(() => document.querySelector("table.runs-table tbody tr[data-run] input[type=checkbox]").click());
			const f = document.querySelector("input.runs-table-filter");
			f.value = "group0/metric00 > 0.5";
			const t0 = performance.now();
			f.dispatchEvent(new Event("input"));
			await new Promise(r => { const i = setInterval(() => { if (new URLSearchParams(location.search).get("rfilter")) { clearInterval(i); r(); } }, 5); });
			out.Filter = performance.now() - t0 - 250; // less the typing debounce
			f.value = ""; f.dispatchEvent(new Event("input"));
			await new Promise(r => { const i = setInterval(() => { if (!new URLSearchParams(location.search).get("rfilter")) { clearInterval(i); r(); } }, 5); });
			const sc = document.querySelector(".runs-table-scroll");
			const t1 = performance.now();
			sc.scrollTop = sc.scrollHeight;
			await frame();
			out.Scroll = performance.now() - t1;
			const rows = [...document.querySelectorAll("table.runs-table tbody tr[data-run]")];
			out.Last = rows[rows.length - 1].dataset.run;
			return out;
		})()`, &timings, awaitPromise),
	)
	if inDOM == 0 || inDOM > 100 {
		t.Errorf("%d of 1000 rows in the DOM; want only those on screen and a margin", inDOM)
	}
	var last string
	run(t, ctx, chromedp.Evaluate(`(() => { const r = [...document.querySelectorAll("table.runs-table tbody tr[data-run]")]; return r[r.length - 1].dataset.run; })()`, &last))
	if timings.Last == "" || timings.Last != last {
		t.Errorf("after scrolling to the end the last row drawn is %q (then %q); want the table's last run", timings.Last, last)
	}
	t.Logf("1,000 runs × 2 tags: table shown %v after navigation; %d rows in the DOM; sort %.1f ms, toggle %.1f ms, filter %.1f ms (after the 250 ms debounce), scroll to the end %.1f ms (two frames)",
		loaded.Round(time.Millisecond), inDOM, timings.Sort, timings.Toggle, timings.Filter, timings.Scroll)
}
