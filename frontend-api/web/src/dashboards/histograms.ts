// Histograms (offset and overlay modes, drawn on a canvas) and
// distributions (percentile bands over steps, on uPlot), one card per
// (tag, run).

import { getJSON, num, type RunTagIndex } from "../api";
import { LineChart, type Line } from "../charts/linechart";
import { fmtNum, h } from "../dom";
import { themeColor, withAlpha } from "../colors";
import type { ViewState } from "../state";
import { runTagDashboard, type Dashboard, type DashboardContext } from "./dashboard";

/** [wall_time, step, [[left, right, count], ...]] */
type HistogramDatum = [number, number, [number | string, number | string, number | string][]];
/** [wall_time, step, [[basis_point, value] x 9]] */
type DistributionDatum = [number, number, [number, number | string][]];

interface Histogram {
  step: number;
  buckets: { left: number; right: number; count: number }[];
}

const MAX_RIDGES = 40;

/**
 * About n round ticks over [lo, hi] (steps of 1, 2 or 5 × 10^k), and their
 * labels with no more decimals than the step needs.
 */
export function niceTicks(lo: number, hi: number, n = 5): { values: number[]; labels: string[] } {
  if (!(hi > lo) || !Number.isFinite(lo) || !Number.isFinite(hi)) return { values: [lo], labels: [fmtNum(lo)] };
  const raw = (hi - lo) / Math.max(n - 1, 1);
  const mag = 10 ** Math.floor(Math.log10(raw));
  // The round step nearest to an even split (by ratio).
  const step = [1, 2, 5, 10].map((m) => m * mag).reduce((a, b) => (Math.abs(Math.log(b / raw)) < Math.abs(Math.log(a / raw)) ? b : a));
  const decimals = Math.max(0, -Math.floor(Math.log10(step) + 1e-9));
  const values: number[] = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) values.push(Number(v.toFixed(decimals)));
  const big = Math.max(Math.abs(lo), Math.abs(hi)) >= 1e6 || (step < 1e-3 && Math.max(Math.abs(lo), Math.abs(hi)) < 1e-3);
  return { values, labels: values.map((v) => (big ? fmtNum(v) : v.toFixed(decimals))) };
}

/** Draws histograms over steps: ridges offset by step, or overlaid. */
export function drawHistograms(canvas: HTMLCanvasElement, hists: Histogram[], color: string, mode: ViewState["hmode"]) {
  const dpr = window.devicePixelRatio || 1;
  const width = canvas.clientWidth || 320;
  const height = canvas.clientHeight || 220;
  canvas.width = Math.round(width * dpr);
  canvas.height = Math.round(height * dpr);
  const g = canvas.getContext("2d")!;
  g.scale(dpr, dpr);
  const pad = { l: 8, r: 56, t: 8, b: 20 };
  const W = width - pad.l - pad.r;
  const H = height - pad.t - pad.b;
  // An even selection of steps, always keeping the last.
  const pick = hists.length <= MAX_RIDGES ? hists : Array.from({ length: MAX_RIDGES }, (_, i) => hists[Math.round((i * (hists.length - 1)) / (MAX_RIDGES - 1))]);
  let lo = Infinity;
  let hi = -Infinity;
  let maxCount = 0;
  for (const hg of pick)
    for (const b of hg.buckets) {
      if (Number.isFinite(b.left)) lo = Math.min(lo, b.left);
      if (Number.isFinite(b.right)) hi = Math.max(hi, b.right);
      maxCount = Math.max(maxCount, b.count);
    }
  if (!(hi > lo)) {
    hi = lo + 1;
    lo -= 1;
  }
  if (maxCount <= 0) maxCount = 1;
  const fg = themeColor("--fg-muted", "#666");
  const xs = (v: number) => pad.l + ((v - lo) / (hi - lo)) * W;
  const ridge = mode === "offset" ? H * 0.4 : H;
  const n = pick.length;
  let lastLabel = { y: -Infinity, text: "" };
  pick.forEach((hg, i) => {
    const base = mode === "offset" ? pad.t + ridge + (n > 1 ? (i / (n - 1)) * (H - ridge) : H - ridge) : pad.t + H;
    const t = n > 1 ? i / (n - 1) : 1;
    g.beginPath();
    g.moveTo(xs(hg.buckets[0]?.left ?? lo), base);
    for (const b of hg.buckets) {
      const y = base - (b.count / maxCount) * ridge;
      const mid = (Math.max(b.left, lo) + Math.min(b.right, hi)) / 2;
      const x = xs(Number.isFinite(mid) ? mid : lo);
      if (xs(b.right) - xs(b.left) < 2) {
        // A bucket of (nearly) no width, e.g. a constant tensor: a spike
        // wide enough to see.
        g.lineTo(x - 1.5, base);
        g.lineTo(x - 1.5, y);
        g.lineTo(x + 1.5, y);
        g.lineTo(x + 1.5, base);
      } else g.lineTo(x, y);
    }
    g.lineTo(xs(hg.buckets[hg.buckets.length - 1]?.right ?? hi), base);
    if (mode === "offset") {
      g.fillStyle = withAlpha(color, 0.15 + 0.5 * t);
      g.fill();
      g.strokeStyle = themeColor("--bg", "#fff");
      g.lineWidth = 0.5;
    } else {
      g.strokeStyle = withAlpha(color, 0.15 + 0.85 * t);
      g.lineWidth = 1;
    }
    g.stroke();
    // Step labels: a few, never one on top of another or twice the same.
    const text = String(hg.step);
    if (mode === "offset" && (i === 0 || i === n - 1 || i % Math.ceil(n / 5) === 0) && base - lastLabel.y >= 11 && text !== lastLabel.text) {
      g.fillStyle = fg;
      g.font = "10px system-ui, sans-serif";
      g.fillText(text, pad.l + W + 4, base);
      lastLabel = { y: base, text };
    }
  });
  g.fillStyle = fg;
  g.font = "10px system-ui, sans-serif";
  const ticks = niceTicks(lo, hi);
  ticks.values.forEach((v, k) => {
    const label = ticks.labels[k];
    const x = Math.min(Math.max(xs(v) - g.measureText(label).width / 2, 0), width - g.measureText(label).width);
    g.fillText(label, x, height - 6);
  });
}

export function histogramsDashboard(el: HTMLElement, ctx: DashboardContext): Dashboard {
  const mode = h("select", { "aria-label": "histogram mode", className: "hist-mode" }, h("option", { value: "offset" }, "Offset"), h("option", { value: "overlay" }, "Overlay"));
  mode.value = ctx.store.get().hmode;
  mode.addEventListener("change", () => ctx.store.set({ hmode: mode.value as ViewState["hmode"] }));
  return runTagDashboard(el, ctx, {
    cardClass: "histogram-card",
    empty: "No histograms for the shown runs and tags.",
    controls: [h("label", null, "Mode ", mode)],
    redraw: (s, prev) => {
      mode.value = s.hmode;
      return s.hmode !== prev.hmode;
    },
    tags: () => getJSON<RunTagIndex>(ctx.api.plugin("histograms", "tags")),
    async fill(body, run, tag) {
      const data = await getJSON<HistogramDatum[]>(ctx.api.plugin("histograms", "histograms", { run, tag }));
      const hists: Histogram[] = data.map(([, step, b]) => ({ step, buckets: b.map(([l, r, c]) => ({ left: num(l), right: num(r), count: num(c) })) }));
      const canvas = h("canvas.histogram", { role: "img", "aria-label": `histogram of ${tag} (${run})` });
      body.appendChild(canvas);
      drawHistograms(canvas, hists, ctx.colorOf(run), ctx.store.get().hmode);
    },
  });
}

/** TensorBoard's basis points, outermost band first. */
const BANDS: [number, number][] = [
  [0, 10000],
  [668, 9332],
  [1587, 8413],
  [3085, 6915],
];

export function distributionsDashboard(el: HTMLElement, ctx: DashboardContext): Dashboard {
  const charts: LineChart[] = [];
  const dash = runTagDashboard(el, ctx, {
    cardClass: "distribution-card",
    empty: "No distributions for the shown runs and tags.",
    tags: () => getJSON<RunTagIndex>(ctx.api.plugin("distributions", "tags")),
    async fill(body, run, tag) {
      const data = await getJSON<DistributionDatum[]>(ctx.api.plugin("distributions", "distributions", { run, tag }));
      const steps = data.map((d) => d[1]);
      const byBP = new Map<number, number[]>();
      for (const [, , pts] of data) for (const [bp, v] of pts) (byBP.get(bp) ?? byBP.set(bp, []).get(bp)!).push(num(v));
      const color = ctx.colorOf(run);
      const lines: Line[] = [];
      for (const [lo, hi] of BANDS) {
        if (!byBP.has(lo) || !byBP.has(hi)) continue;
        lines.push({ label: `p${hi / 100}`, color, x: steps, y: byBP.get(hi)!, faint: true, width: 0.5, bandTo: `p${lo / 100}` });
        lines.push({ label: `p${lo / 100}`, color, x: steps, y: byBP.get(lo)!, faint: true, width: 0.5 });
      }
      const median = byBP.get(5000) ?? [];
      const min = byBP.get(0) ?? [];
      const max = byBP.get(10000) ?? [];
      lines.push({ label: "median", color, x: steps, y: median, detail: (i) => `min ${fmtNum(min[i])} · max ${fmtNum(max[i])} · step ${steps[i]}` });
      const chartEl = h("div.chart");
      body.appendChild(chartEl);
      charts.push(new LineChart(chartEl, { lines, xKind: "step" }));
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
