// Histograms (offset and overlay modes, drawn on a canvas) and
// distributions (percentile bands over steps, on uPlot), one card per
// (tag, run).

import { getJSON, num, type RunTagIndex } from "../api";
import { beside } from "../charts/format";
import { LineChart, type Line } from "../charts/linechart";
import { fmtNum, h, setChildren } from "../dom";
import { themeColor, withAlpha } from "../colors";
import type { ViewState } from "../state";
import { runTagDashboard, type Dashboard, type DashboardContext } from "./dashboard";

/** [wall_time, step, [[left, right, count], ...]] */
type HistogramDatum = [number, number, [number | string, number | string, number | string][]];
/** [wall_time, step, [[basis_point, value] x 9]] */
type DistributionDatum = [number, number, [number, number | string][]];

export interface Histogram {
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

/** Where a canvas of histograms puts things, in CSS pixels of the canvas. */
export interface HistogramLayout {
  width: number;
  height: number;
  pad: { l: number; r: number; t: number; b: number };
  mode: ViewState["hmode"];
  /** The histograms drawn, first step first (at most MAX_RIDGES of them). */
  pick: Histogram[];
  /** The value range of the x axis. */
  lo: number;
  hi: number;
  /** The x of a value. */
  x(v: number): number;
  /** The baseline of histogram i of pick. */
  base(i: number): number;
  /** The y of a count on histogram i's ridge. */
  y(i: number, count: number): number;
  /** A bucket's drawn span [x0, x1]; at least 3 px wide (a bucket of no width is drawn as a spike). */
  span(b: Bucket): [number, number];
}

type Bucket = Histogram["buckets"][number];

/** Lays out histograms over steps in a width × height canvas: ridges offset by step, or overlaid. */
export function histogramLayout(hists: Histogram[], mode: ViewState["hmode"], width: number, height: number): HistogramLayout {
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
  const ridge = mode === "offset" ? H * 0.4 : H;
  const n = pick.length;
  const x = (v: number) => pad.l + ((v - lo) / (hi - lo)) * W;
  const base = (i: number) => (mode === "offset" ? pad.t + ridge + (n > 1 ? (i / (n - 1)) * (H - ridge) : H - ridge) : pad.t + H);
  return {
    width,
    height,
    pad,
    mode,
    pick,
    lo,
    hi,
    x,
    base,
    y: (i, count) => base(i) - (count / maxCount) * ridge,
    span(b) {
      const x0 = x(Math.max(b.left, lo));
      const x1 = x(Math.min(b.right, hi));
      if (x1 - x0 >= 3) return [x0, x1];
      const mid = (x0 + x1) / 2;
      return [mid - 1.5, mid + 1.5];
    },
  };
}

/** What the pointer is over: a bucket of one step's histogram, and where its point is drawn. */
export interface HistogramHit {
  step: number;
  bucket: Bucket;
  /** The bucket's point on the ridge, in CSS pixels of the canvas. */
  x: number;
  y: number;
}

/** The bucket of hg under x (the nearest one when x falls between buckets) and its distance from x, or undefined. */
function bucketAt(l: HistogramLayout, hg: Histogram, x: number): { bucket: Bucket; dist: number } | undefined {
  let best: { bucket: Bucket; dist: number } | undefined;
  for (const bucket of hg.buckets) {
    const [x0, x1] = l.span(bucket);
    const dist = x < x0 ? x0 - x : x > x1 ? x - x1 : 0;
    if (!best || dist < best.dist) best = { bucket, dist };
  }
  return best;
}

/**
 * The step and bucket under the point (px, py) of a canvas laid out by l
 * (CSS pixels from its top left corner), null outside the plot. Offset
 * mode: the ridge whose baseline is the first at or below the pointer (the
 * pointer is over its area). Overlay mode: of the histograms drawn at the
 * pointer's x (all of them when none is), the one whose line passes
 * nearest the pointer (the later step on a tie, drawn on top).
 */
export function hitHistogram(l: HistogramLayout, px: number, py: number): HistogramHit | null {
  const n = l.pick.length;
  if (!n || px < l.pad.l || px > l.width - l.pad.r || py < 0 || py > l.height) return null;
  /** Histogram i's bucket at px, and how far from px it is drawn. */
  const at = (i: number): { hit: HistogramHit; dist: number } | null => {
    const found = bucketAt(l, l.pick[i], px);
    if (!found) return null;
    const [x0, x1] = l.span(found.bucket);
    return { hit: { step: l.pick[i].step, bucket: found.bucket, x: (x0 + x1) / 2, y: l.y(i, found.bucket.count) }, dist: found.dist };
  };
  if (l.mode === "offset") {
    let i = 0;
    while (i < n - 1 && l.base(i) < py) i++;
    // A step with no buckets: the nearest one that has some.
    for (let d = 0; d < n; d++) for (const j of [i + d, i - d]) if (j >= 0 && j < n && l.pick[j].buckets.length) return at(j)!.hit;
    return null;
  }
  const all = l.pick.map((_, i) => at(i)).filter((a) => a !== null);
  const drawn = all.filter((a) => a.dist <= 1);
  let best: HistogramHit | null = null;
  for (const { hit } of drawn.length ? drawn : all) if (!best || Math.abs(hit.y - py) <= Math.abs(best.y - py)) best = hit;
  return best;
}

/** Draws histograms over steps: ridges offset by step, or overlaid. Returns the layout, for hit-testing. */
export function drawHistograms(canvas: HTMLCanvasElement, hists: Histogram[], color: string, mode: ViewState["hmode"]): HistogramLayout {
  const dpr = window.devicePixelRatio || 1;
  const width = canvas.clientWidth || 320;
  const height = canvas.clientHeight || 220;
  canvas.width = Math.round(width * dpr);
  canvas.height = Math.round(height * dpr);
  const g = canvas.getContext("2d")!;
  g.scale(dpr, dpr);
  const l = histogramLayout(hists, mode, width, height);
  const { pick, lo, hi, pad } = l;
  const fg = themeColor("--fg-muted", "#666");
  const n = pick.length;
  let lastLabel = { y: -Infinity, text: "" };
  pick.forEach((hg, i) => {
    const base = l.base(i);
    const t = n > 1 ? i / (n - 1) : 1;
    g.beginPath();
    g.moveTo(l.x(hg.buckets[0]?.left ?? lo), base);
    for (const b of hg.buckets) {
      const y = l.y(i, b.count);
      const mid = (Math.max(b.left, lo) + Math.min(b.right, hi)) / 2;
      const x = l.x(Number.isFinite(mid) ? mid : lo);
      if (l.x(b.right) - l.x(b.left) < 2) {
        // A bucket of (nearly) no width, e.g. a constant tensor: a spike
        // wide enough to see.
        g.lineTo(x - 1.5, base);
        g.lineTo(x - 1.5, y);
        g.lineTo(x + 1.5, y);
        g.lineTo(x + 1.5, base);
      } else g.lineTo(x, y);
    }
    g.lineTo(l.x(hg.buckets[hg.buckets.length - 1]?.right ?? hi), base);
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
      g.fillText(text, width - pad.r + 4, base);
      lastLabel = { y: base, text };
    }
  });
  g.fillStyle = fg;
  g.font = "10px system-ui, sans-serif";
  const ticks = niceTicks(lo, hi);
  ticks.values.forEach((v, k) => {
    const label = ticks.labels[k];
    const x = Math.min(Math.max(l.x(v) - g.measureText(label).width / 2, 0), width - g.measureText(label).width);
    g.fillText(label, x, height - 6);
  });
  return l;
}

/**
 * The hit under a pointer at (clientX, clientY) of a canvas laid out by l
 * whose bounding box is box: the pointer's place relative to the box,
 * scaled to the layout's CSS pixels (the box may be scaled by CSS
 * transforms or zoom; the canvas's device pixels play no part).
 */
export function hitAtClient(l: HistogramLayout, box: { left: number; top: number; width: number; height: number }, clientX: number, clientY: number): HistogramHit | null {
  if (!box.width || !box.height) return null;
  return hitHistogram(l, ((clientX - box.left) * l.width) / box.width, ((clientY - box.top) * l.height) / box.height);
}

/**
 * Shows, while the pointer is over the canvas, the step, bucket and count
 * under it in a readout following the pointer (kept inside the window),
 * and a dot on the bucket's point. The hit is computed from the pointer's
 * place in the canvas's bounding box and the layout's own scales.
 */
function hoverReadout(wrap: HTMLElement, canvas: HTMLCanvasElement, l: HistogramLayout) {
  const dot = h("span.histogram-marker", { hidden: true });
  const readout = h("div.tooltip.histogram-readout", { hidden: true, role: "status" });
  wrap.append(dot, readout);
  const hide = () => {
    dot.hidden = readout.hidden = true;
  };
  canvas.addEventListener("pointerleave", hide);
  canvas.addEventListener("pointermove", (e) => {
    const box = canvas.getBoundingClientRect();
    const hit = hitAtClient(l, box, e.clientX, e.clientY);
    if (!hit) return hide();
    const { left, right, count } = hit.bucket;
    readout.dataset.step = String(hit.step);
    readout.dataset.left = String(left);
    readout.dataset.right = String(right);
    readout.dataset.count = String(count);
    setChildren(
      readout,
      h("div.tt-head", null, `step ${hit.step}`),
      h("div", null, `bucket [${fmtNum(left)}, ${fmtNum(right)})`),
      h("div", null, "count ", h("span.num", null, fmtNum(count))),
    );
    dot.hidden = readout.hidden = false;
    dot.style.left = `${canvas.offsetLeft + (hit.x * canvas.offsetWidth) / l.width}px`;
    dot.style.top = `${canvas.offsetTop + (hit.y * canvas.offsetHeight) / l.height}px`;
    // Beside the pointer, on the side with room, never beyond the window.
    readout.style.left = `${beside(e.clientX, readout.offsetWidth, 14, innerWidth)}px`;
    readout.style.top = `${beside(e.clientY, readout.offsetHeight, 14, innerHeight)}px`;
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
      await fillHistogram(ctx, body, run, tag);
    },
  });
}

/**
 * Draws one run's histograms of tag into body, in the view's mode, with
 * the hover readout; up to atStep only (null: every step), so that the
 * step is the front ridge. Returns the steps the series holds.
 */
export async function fillHistogram(ctx: DashboardContext, body: HTMLElement, run: string, tag: string, atStep: number | null = null): Promise<number[]> {
  const data = await getJSON<HistogramDatum[]>(ctx.api.plugin("histograms", "histograms", { run, tag }));
  const all: Histogram[] = data.map(([, step, b]) => ({ step, buckets: b.map(([l, r, c]) => ({ left: num(l), right: num(r), count: num(c) })) }));
  const hists = atStep === null ? all : all.filter((x) => x.step <= atStep);
  const canvas = h("canvas.histogram", { role: "img", "aria-label": `histogram of ${tag} (${run})` });
  const wrap = h("div.histogram-wrap", null, canvas);
  body.appendChild(wrap);
  hoverReadout(wrap, canvas, drawHistograms(canvas, hists.length ? hists : all.slice(0, 1), ctx.colorOf(run), ctx.store.get().hmode));
  return all.map((x) => x.step);
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
