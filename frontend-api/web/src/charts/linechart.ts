// Line charts on uPlot: one chart per scalar card, distribution bands, PR
// curves. uPlot was chosen because it draws hundreds of thousands of
// points per frame on a plain 2D canvas with a ~50 kB bundle (see
// docs/benchmarks.md, "Web UI"). Drag to zoom on x, double-click to reset
// (uPlot's own cursor behaviour); a tooltip lists every line at the
// cursor.

import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";
import { h, fmtNum, fmtDuration } from "../dom";
import { themeColor, withAlpha } from "../colors";

export type XKind = "step" | "relative" | "wall" | "value";

export interface Line {
  label: string;
  color: string;
  x: number[];
  y: number[];
  /** Drawn faint and thin (the raw line under a smoothed one). */
  faint?: boolean;
  /** Hidden from the tooltip. */
  noTooltip?: boolean;
  /** Extra tooltip text per point (e.g. the raw value and step). */
  detail?: (i: number) => string;
  /** Another line's label: fill the band between this line and that. */
  bandTo?: string;
  width?: number;
}

export interface ChartOptions {
  lines: Line[];
  xKind: XKind;
  logx?: boolean;
  logy?: boolean;
  height?: number;
  xLabel?: string;
  yRange?: [number, number];
  xRange?: [number, number];
  /** Called with the x range the user dragged out, or null on double-click. */
  onZoom?: (range: [number, number] | null) => void;
}

function xFormatter(kind: XKind): (v: number) => string {
  switch (kind) {
    case "relative":
      return fmtDuration;
    case "wall":
      return (v) => new Date(v * 1000).toLocaleString();
    default:
      return fmtNum;
  }
}

/** Above this many points in a chart, x values are snapped to a grid (see align). */
const SNAP_ABOVE = 100_000;
/** Grid columns across the shown x range when snapping. */
const SNAP_COLUMNS = 2048;

/** Whether xs ascends (equal neighbours allowed). */
function ascending(xs: ArrayLike<number>): boolean {
  for (let i = 1; i < xs.length; i++) if (!(xs[i - 1] <= xs[i])) return false;
  return true;
}

/** Whether a and b hold the same numbers. */
function sameValues(a: ArrayLike<number>, b: ArrayLike<number>): boolean {
  if (a === b) return true;
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** Index of the first element of xs (ascending) that is >= x. */
function lowerBound(xs: ArrayLike<number>, x: number): number {
  let lo = 0;
  let hi = xs.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (xs[mid] < x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Index of the point of xs nearest to x (xs sorted ascending, non-empty). */
function nearest(xs: ArrayLike<number>, x: number): number {
  const i = Math.min(lowerBound(xs, x), xs.length - 1);
  return i > 0 && Math.abs(xs[i - 1] - x) <= Math.abs(xs[i] - x) ? i - 1 : i;
}

/**
 * Merges the lines onto one shared x array, as uPlot wants. When every
 * line has the same x values (a run's raw and smoothed lines; runs the
 * read service downsampled at the same steps, which its rule makes the
 * common case) that array is used as it is. Otherwise the shared array is
 * the union of all x values, and every line as long as it, with nulls
 * where a line has no point; so a chart with many points snaps x to
 * SNAP_COLUMNS columns across the shown range (xRange, or all the data),
 * a few per pixel, keeping each line's last point per column. Tooltips
 * still read the lines' own points.
 */
export function align(lines: Line[], logx: boolean, logy: boolean, xRange?: [number, number]): uPlot.AlignedData {
  const okX = (x: number) => Number.isFinite(x) && (!logx || x > 0);
  const okY = (y: number) => Number.isFinite(y) && (!logy || y > 0);
  const yOf = (l: Line) => (l.y.every(okY) ? l.y : l.y.map((y) => (okY(y) ? y : null)));
  const first = lines.length ? lines[0].x : [];
  if (lines.every((l) => sameValues(l.x, first)) && ascending(first) && first.every(okX)) {
    return [first, ...lines.map(yOf)] as uPlot.AlignedData;
  }
  let total = 0;
  let lo = Infinity;
  let hi = -Infinity;
  for (const l of lines)
    for (let i = 0; i < l.x.length; i++)
      if (okX(l.x[i]) && okY(l.y[i])) {
        total++;
        if (l.x[i] < lo) lo = l.x[i];
        if (l.x[i] > hi) hi = l.x[i];
      }
  let snap = (x: number) => x;
  if (total > SNAP_ABOVE && !logx && hi > lo) {
    const [a, b] = xRange ?? [lo, hi];
    const step = (b - a) / SNAP_COLUMNS;
    if (step > 0) snap = (x: number) => a + Math.round((x - a) / step) * step;
  }
  // A typed array sorts numerically without a comparator: much faster.
  const all = new Float64Array(total);
  let n = 0;
  for (const l of lines) for (let i = 0; i < l.x.length; i++) if (okX(l.x[i]) && okY(l.y[i])) all[n++] = snap(l.x[i]);
  all.sort();
  let m = 0;
  for (let i = 0; i < n; i++) if (m === 0 || all[m - 1] !== all[i]) all[m++] = all[i];
  const xs = all.subarray(0, m);
  const data: ArrayLike<number | null>[] = [xs];
  for (const l of lines) {
    const y = new Array<number | null>(m).fill(null);
    // Ascending lines (the usual) are merged in one walk; others by search.
    const walk = ascending(l.x);
    let j = 0;
    for (let i = 0; i < l.x.length; i++) {
      if (!okX(l.x[i]) || !okY(l.y[i])) continue;
      const sx = snap(l.x[i]);
      if (walk) while (xs[j] < sx) j++;
      else j = lowerBound(xs, sx);
      y[j] = l.y[i];
    }
    data.push(y);
  }
  return data as uPlot.AlignedData;
}

export class LineChart {
  private plot: uPlot;
  private tooltip: HTMLDivElement;
  private resize: ResizeObserver;
  private opts: ChartOptions;

  constructor(
    readonly el: HTMLElement,
    opts: ChartOptions,
  ) {
    this.opts = opts;
    this.tooltip = h("div.tooltip", { hidden: true });
    this.plot = this.build();
    this.resize = new ResizeObserver(() => {
      const w = this.el.clientWidth;
      if (w > 0 && Math.abs(w - this.plot.width) > 1) this.plot.setSize({ width: w, height: this.plot.height });
    });
    this.resize.observe(el);
  }

  private build(): uPlot {
    const { lines, xKind } = this.opts;
    const fg = themeColor("--fg-muted", "#666");
    const grid = themeColor("--grid", "#8883");
    const fmtX = xFormatter(xKind);
    const series: uPlot.Series[] = [{}];
    const bands: uPlot.Band[] = [];
    lines.forEach((l, i) => {
      series.push({
        label: l.label,
        stroke: l.faint ? withAlpha(l.color, 0.28) : l.color,
        width: l.width ?? (l.faint ? 1 : 1.5),
        spanGaps: true,
        // A line of one point has nothing to stroke: show the point, as TensorBoard does.
        points: l.x.length === 1 ? { show: true, size: 7, fill: l.color, stroke: l.color } : { show: false },
      });
      if (l.bandTo) {
        const j = lines.findIndex((o) => o.label === l.bandTo);
        if (j >= 0) bands.push({ series: [i + 1, j + 1], fill: withAlpha(l.color, 0.18) });
      }
    });
    const axis = (values?: uPlot.Axis["values"], vertical = false): uPlot.Axis => ({
      stroke: fg,
      // A y axis as wide as its longest label (uPlot's default otherwise).
      ...(vertical ? { size: (_u: uPlot, vals: string[]) => 14 + 6.5 * Math.max(3, ...(vals ?? []).map((v) => String(v).length)) } : {}),
      grid: { stroke: grid, width: 1 },
      ticks: { stroke: grid, width: 1 },
      values,
      font: "11px system-ui, sans-serif",
    });
    const opts: uPlot.Options = {
      width: Math.max(this.el.clientWidth, 200),
      height: this.opts.height ?? 220,
      legend: { show: false },
      cursor: {
        points: { size: 5 },
        drag: { x: true, y: false, setScale: true },
      },
      bands,
      scales: {
        x: {
          time: xKind === "wall",
          distr: this.opts.logx ? 3 : 1,
          ...(this.opts.xRange ? { auto: false, range: this.opts.xRange } : {}),
        },
        y: { distr: this.opts.logy ? 3 : 1, ...(this.opts.yRange ? { auto: false, range: this.opts.yRange } : {}) },
      },
      axes: [
        axis(xKind === "wall" ? undefined : (_u, splits) => splits.map((v) => (v === null ? "" : fmtX(v)))),
        axis((_u, splits) => splits.map((v) => (v === null ? "" : fmtNum(v))), true),
      ],
      series,
      hooks: {
        setCursor: [(u) => this.showTooltip(u, fmtX)],
        // The x and y ranges shown, for tests and for reading the view from the page.
        setScale: [
          (u, key) => {
            if (key !== "x" && key !== "y") return;
            this.el.dataset[`${key}min`] = String(u.scales[key].min);
            this.el.dataset[`${key}max`] = String(u.scales[key].max);
          },
        ],
        setSelect: [
          (u) => {
            if (!this.opts.onZoom || u.select.width < 2) return;
            const a = u.posToVal(u.select.left, "x");
            const b = u.posToVal(u.select.left + u.select.width, "x");
            // Six significant digits are plenty for a URL.
            if (a < b) this.opts.onZoom([Number(a.toPrecision(6)), Number(b.toPrecision(6))]);
          },
        ],
      },
    };
    const data = align(lines, !!this.opts.logx, !!this.opts.logy, this.opts.xRange);
    // The extent of the values drawn (the axis rounds its range outwards),
    // for tests and for reading the view from the page.
    let lo = Infinity;
    let hi = -Infinity;
    for (const ys of data.slice(1))
      for (let i = 0; i < ys.length; i++) {
        const y = ys[i];
        if (y === null || y === undefined) continue;
        if (y < lo) lo = y;
        if (y > hi) hi = y;
      }
    this.el.dataset.ylo = String(lo);
    this.el.dataset.yhi = String(hi);
    const plot = new uPlot(opts, data, this.el);
    plot.over.appendChild(this.tooltip);
    plot.over.addEventListener("mouseleave", () => (this.tooltip.hidden = true));
    plot.over.addEventListener("dblclick", () => this.opts.onZoom?.(null));
    return plot;
  }

  private showTooltip(u: uPlot, fmtX: (v: number) => string) {
    const left = u.cursor.left ?? -1;
    if (left < 0) {
      this.tooltip.hidden = true;
      return;
    }
    const x = u.posToVal(left, "x");
    const rows: { color: string; label: string; y: number; extra: string }[] = [];
    for (const l of this.opts.lines) {
      if (l.noTooltip || l.faint || l.x.length === 0) continue;
      const i = nearest(l.x, x);
      rows.push({ color: l.color, label: l.label, y: l.y[i], extra: l.detail ? l.detail(i) : `x ${fmtX(l.x[i])}` });
    }
    if (rows.length === 0) {
      this.tooltip.hidden = true;
      return;
    }
    rows.sort((a, b) => (b.y || 0) - (a.y || 0));
    this.tooltip.replaceChildren(
      h("div.tt-head", null, fmtX(x)),
      h(
        "table",
        null,
        rows.slice(0, 40).map((r) =>
          h("tr", null, h("td", null, h("span.swatch", { style: { background: r.color } })), h("td.tt-run", null, r.label), h("td.num", null, fmtNum(r.y)), h("td.tt-extra", null, r.extra)),
        ),
        rows.length > 40 ? h("tr", null, h("td", { colSpan: 4 }, `… ${rows.length - 40} more`)) : null,
      ),
    );
    this.tooltip.hidden = false;
    const w = u.over.clientWidth;
    const tw = this.tooltip.offsetWidth;
    this.tooltip.style.left = `${left + 12 + tw > w ? Math.max(0, left - tw - 12) : left + 12}px`;
    this.tooltip.style.top = `${Math.max(0, (u.cursor.top ?? 0) - 10)}px`;
  }

  /** The canvas uPlot draws on (for tests and benchmarks). */
  get canvas(): HTMLCanvasElement {
    return this.plot.ctx.canvas;
  }

  destroy() {
    this.resize.disconnect();
    this.plot.destroy();
  }
}
