// Custom scalars: the charts of the experiment's layout (the
// custom_scalars plugin's Layout proto), by category. A multiline chart
// plots every (run, tag) whose tag matches one of its regexes, smoothed and
// on the x-axis chosen on the Scalars tab; a margin chart plots a value
// with its lower and upper series as a band.

import { getJSON, type RunTagIndex, type ScalarDatum } from "../api";
import { LineChart, type Line } from "../charts/linechart";
import { assignColors } from "../colors";
import { exactRegex, h, setChildren } from "../dom";
import type { ViewState } from "../state";
import { notice, showOnly, shownRuns, whenVisible, type Dashboard, type DashboardContext } from "./dashboard";
import { scalarLines } from "./scalars-model";

interface Layout {
  category?: {
    title?: string;
    chart?: {
      title?: string;
      multiline?: { tag?: string[] };
      margin?: { series?: { value: string; lower: string; upper: string }[] };
    }[];
  }[];
}

interface CustomScalarsAnswer {
  regex_valid: boolean;
  tag_to_events: Record<string, ScalarDatum[]>;
}

type Chart = NonNullable<NonNullable<Layout["category"]>[number]["chart"]>[number];

export function customScalarsDashboard(el: HTMLElement, ctx: DashboardContext): Dashboard {
  const { api, store } = ctx;
  const content = h("div.cards");
  setChildren(el, h("div.toolbar", null, h("span.hint", null, "Smoothing and the x-axis are those of the Scalars tab.")), content);
  let layout: Layout | null = null;
  let scalarIndex: RunTagIndex = {};
  let stops: (() => void)[] = [];
  let charts: LineChart[] = [];

  /** The shown runs having a scalar tag that matches one of res. */
  function runsFor(res: string[], s: ViewState): string[] {
    const shown = shownRuns(ctx, s);
    const compiled = res.flatMap((r) => {
      try {
        return [new RegExp(r)];
      } catch {
        return [];
      }
    });
    return ctx.runs.map((r) => r.name).filter((r) => shown.has(r) && Object.keys(scalarIndex[r] ?? {}).some((t) => compiled.some((re) => re.test(t))));
  }

  async function multiline(res: string[]) {
    const s = store.get();
    const data: Record<string, ScalarDatum[]> = {};
    const runOf = new Map<string, string>();
    await Promise.all(
      runsFor(res, s).flatMap((run) =>
        res.map(async (re) => {
          const ans = await getJSON<CustomScalarsAnswer>(api.plugin("custom_scalars", "scalars", { run, tag: re }));
          for (const [tag, events] of Object.entries(ans.tag_to_events ?? {})) {
            const key = `${run}: ${tag}`;
            data[key] = events;
            runOf.set(key, run);
          }
        }),
      ),
    );
    const keys = [...runOf.keys()].sort();
    const color = lineColors(keys, runOf);
    // A line's run is its key's run ("run: tag"), for "show only this run".
    return scalarLines(data, keys, color, { ...s, group: "" }).map((l) => (l.run ? { ...l, run: runOf.get(l.run) } : l));
  }

  /**
   * Colours of a chart's lines (keyed "run: tag"): the run's when each run
   * has one line, else one per line, so that a run's tags differ.
   */
  function lineColors(keys: string[], runOf: Map<string, string>): (key: string) => string {
    const runs = keys.map((k) => runOf.get(k) ?? k);
    if (new Set(runs).size === runs.length) return (k) => ctx.colorOf(runOf.get(k) ?? k);
    const byKey = assignColors(keys);
    return (k) => byKey.get(k) ?? ctx.colorOf(runOf.get(k) ?? k);
  }

  async function margin(series: { value: string; lower: string; upper: string }[]) {
    const s = store.get();
    const lines: Line[] = [];
    const tags = series.flatMap((m) => [m.value, m.lower, m.upper]);
    const runs = runsFor(tags.map(exactRegex), s);
    const runOf = new Map(runs.flatMap((run) => series.map((m) => [`${run}: ${m.value}`, run] as [string, string])));
    const colorOf = lineColors([...runOf.keys()], runOf);
    for (const run of runs) {
      for (const m of series) {
        const get = async (t: string) => (await getJSON<CustomScalarsAnswer>(api.plugin("custom_scalars", "scalars", { run, tag: exactRegex(t) }))).tag_to_events?.[t] ?? [];
        const [v, lo, hi] = await Promise.all([get(m.value), get(m.lower), get(m.upper)]);
        const label = `${run}: ${m.value}`;
        const color = colorOf(label);
        const xy = (d: ScalarDatum[]) => ({ x: d.map((p) => (s.x === "step" ? p[1] : s.x === "wall" ? p[0] : p[0] - (d[0]?.[0] ?? 0))), y: d.map((p) => Number(p[2])) });
        lines.push({ label, run, color, ...xy(v) });
        lines.push({ label: `${label} upper`, color, ...xy(hi), faint: true, width: 0.5, bandTo: `${label} lower` });
        lines.push({ label: `${label} lower`, color, ...xy(lo), faint: true, width: 0.5 });
      }
    }
    return lines;
  }

  function card(c: Chart): HTMLElement {
    const body = h("div.chart.loading", null, "Loading…");
    const el = h("div.card.custom-card", { "data-title": c.title ?? "" }, h("div.card-head", null, h("span.card-title", null, c.title ?? "")), body);
    stops.push(
      whenVisible(el, async () => {
        try {
          const lines = c.multiline ? await multiline(c.multiline.tag ?? []) : await margin(c.margin?.series ?? []);
          body.replaceChildren();
          body.classList.remove("loading");
          if (!lines.length) body.appendChild(notice("No data for the shown runs."));
          else charts.push(new LineChart(body, { lines, xKind: store.get().x, legend: true, tooltipSort: store.get().ttsort, onOnly: (run) => showOnly(store, run) }));
        } catch (e) {
          body.replaceChildren(notice((e as Error).message, "error"));
        }
      }),
    );
    return el;
  }

  function render() {
    for (const stop of stops) stop();
    for (const c of charts) c.destroy();
    stops = [];
    charts = [];
    const cats = layout?.category ?? [];
    if (!cats.length) {
      setChildren(content, notice("This experiment has no custom scalars layout."));
      return;
    }
    setChildren(
      content,
      cats.map((cat) => h("details.group", { open: true }, h("summary", null, cat.title ?? ""), h("div.grid", null, (cat.chart ?? []).map(card)))),
    );
  }

  Promise.all([getJSON<Layout>(api.plugin("custom_scalars", "layout")), getJSON<RunTagIndex>(api.plugin("scalars", "tags"))])
    .then(([l, idx]) => {
      layout = l;
      scalarIndex = idx;
      render();
    })
    .catch((e) => setChildren(content, notice(e.message, "error")));

  return {
    update(s, prev) {
      if (s.runFilter !== prev.runFilter || s.off.join("\n") !== prev.off.join("\n") || s.smoothing !== prev.smoothing || s.x !== prev.x) render();
    },
    destroy() {
      for (const stop of stops) stop();
      for (const c of charts) c.destroy();
    },
  };
}
