// PR curves: one card per tag, a line per shown run (precision against
// recall) at the step chosen by the card's slider (each run at its latest
// step not after it).

import { getJSON, num, type RunTagIndex } from "../api";
import { LineChart, type Line } from "../charts/linechart";
import { fmtNum, h } from "../dom";
import { notice, runTagDashboard, saveSlide, showOnly, shownRuns, stepIndex, stepSlider, type Dashboard, type DashboardContext } from "./dashboard";
import { slideKey } from "../state";

interface PRPoint {
  wall_time: number;
  step: number;
  precision: (number | string)[];
  recall: (number | string)[];
  thresholds: (number | string)[];
}

/** The entry of a run at the latest step not after step. */
function at(entries: PRPoint[], step: number): PRPoint | undefined {
  let best: PRPoint | undefined;
  for (const e of entries) if (e.step <= step && (!best || e.step > best.step)) best = e;
  return best ?? entries[0];
}

export function prCurveLines(byRun: Record<string, PRPoint[]>, step: number, colorOf: (r: string) => string): Line[] {
  const lines: Line[] = [];
  for (const [run, entries] of Object.entries(byRun)) {
    const e = at(entries, step);
    if (!e) continue;
    // Recall falls as the threshold rises; uPlot wants x ascending.
    const idx = e.recall.map((_, i) => i).sort((a, b) => num(e.recall[a]) - num(e.recall[b]) || num(e.precision[b]) - num(e.precision[a]));
    const x = idx.map((i) => num(e.recall[i]));
    const y = idx.map((i) => num(e.precision[i]));
    lines.push({
      label: run,
      run,
      color: colorOf(run),
      // A curve of a few distinct points (or one) is hard to see as a line.
      markers: new Set(x.map((r, i) => `${r},${y[i]}`)).size < 3,
      x,
      y,
      detail: (k) => `recall ${fmtNum(num(e.recall[idx[k]]))} · threshold ${fmtNum(num(e.thresholds[idx[k]]))} · step ${e.step}`,
    });
  }
  return lines;
}

export function prCurvesDashboard(el: HTMLElement, ctx: DashboardContext): Dashboard {
  const charts: LineChart[] = [];
  // Cards are per tag: the index is turned into tag → {all its runs}.
  const dash = runTagDashboard(el, ctx, {
    cardClass: "pr-card",
    empty: "No PR curves for the shown runs and tags.",
    async tags() {
      const idx = await getJSON<RunTagIndex>(ctx.api.plugin("pr_curves", "tags"));
      const byTag: Record<string, Record<string, object>> = {};
      for (const [run, tags] of Object.entries(idx)) for (const tag of Object.keys(tags)) (byTag[tag] ??= {})[run] = {};
      // One card per tag, under the pseudo-run "" (all runs).
      return { "": Object.fromEntries(Object.keys(byTag).map((t) => [t, { runs: Object.keys(byTag[t]) }])) };
    },
    async fill(body, _run, tag, info) {
      const shown = shownRuns(ctx, ctx.store.get());
      const runs = (info.runs ?? []).filter((r) => shown.has(r));
      if (!runs.length) {
        body.appendChild(notice("None of the shown runs has this tag."));
        return;
      }
      const q = new URLSearchParams({ tag });
      for (const r of runs) q.append("run", r);
      const byRun = await getJSON<Record<string, PRPoint[]>>(ctx.api.plugin("pr_curves", "pr_curves") + "?" + q);
      const steps = [...new Set(Object.values(byRun).flatMap((es) => es.map((e) => e.step)))].sort((a, b) => a - b);
      const chartEl = h("div.chart");
      body.appendChild(chartEl);
      let chart: LineChart | undefined;
      const draw = (i: number) => {
        chart?.destroy();
        // A little room around [0, 1], so that markers at 0 and 1 show whole.
        chart = new LineChart(chartEl, {
          lines: prCurveLines(byRun, steps[i], ctx.colorOf),
          xKind: "value",
          xRange: [-0.02, 1.02],
          yRange: [-0.02, 1.04],
          tooltipSort: ctx.store.get().ttsort,
          onOnly: (run) => showOnly(ctx.store, run),
        });
        charts.push(chart);
      };
      // The step is in the URL (slide), the latest left out.
      const key = slideKey("pr_curves", tag, "");
      const saved = ctx.store.get().slides[key];
      const first = saved ? stepIndex(steps, saved.step) : steps.length - 1;
      body.appendChild(
        stepSlider(steps, (i) => {
          saveSlide(ctx.store, key, i === steps.length - 1 ? null : { step: steps[i], sample: 0 });
          draw(i);
        }, first),
      );
      draw(first);
    },
  });
  return {
    update: dash.update,
    destroy() {
      dash.destroy();
      for (const c of charts) c.destroy();
    },
  };
}
