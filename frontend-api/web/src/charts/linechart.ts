// Line charts on uPlot: one chart per scalar card, distribution bands, PR
// curves. uPlot was chosen because it draws hundreds of thousands of
// points per frame on a plain 2D canvas with a ~50 kB bundle (see
// docs/benchmarks.md, "Web UI"). Drag to zoom on x, double-click to reset
// (uPlot's own cursor behaviour); a tooltip lists every line at the
// cursor, ordered as chosen, inside the window; a click pins it (its rows
// then scroll, and offer "show only this run").

import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";
import { h, fmtDuration } from "../dom";
import { themeColor, withAlpha } from "../colors";
import { fmtSI, fmtTicks, moreNote, nearestRows, placeBox, sortRows, TOOLTIP_ALL_KEY, TOOLTIP_ROWS, type TooltipSort } from "./format";
import { shortRunNames } from "../runnames";
import { logRange, logSplits } from "./logaxis";

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
  /** The run the line is of (the pinned tooltip offers to show only it). */
  run?: string;
  /** Draw a marker at every point (a line of one point, or all at one place, always has them). */
  markers?: boolean;
  /** Not drawn, nor in the tooltip (a run toggled off; see LineChart.setHidden). */
  hidden?: boolean;
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
  /** The order of the tooltip's rows (default: value, descending). */
  tooltipSort?: TooltipSort;
  /** "Show only this run", offered by the pinned tooltip for lines with a run. */
  onOnly?: (run: string) => void;
  /** A legend under the chart (a swatch and label per line drawn bold). */
  legend?: boolean;
}

const FONT = "11px system-ui, sans-serif";

/** Above this many bold lines a chart draws them thin (see build). */
const THIN_ABOVE = 20;

/** The longest line name a tooltip or legend shows (see runnames.ts). */
const NAME_CHARS = 40;

/**
 * Whether tooltips show every row (that fits) instead of the ones nearest
 * the cursor: one setting for the page, switched by TOOLTIP_ALL_KEY.
 */
let allRows = false;
let measurer: CanvasRenderingContext2D | null = null;

/** The width of text in the axes' font, in CSS pixels. */
function textWidth(text: string): number {
  measurer ??= document.createElement("canvas").getContext("2d");
  if (!measurer) return 7 * text.length;
  measurer.font = FONT;
  return measurer.measureText(text).width;
}

/** Whether a line's drawable points all lie at one place (nothing to stroke). */
function onePlace(l: Line): boolean {
  let x0 = NaN;
  let y0 = NaN;
  for (let i = 0; i < l.x.length; i++) {
    if (!Number.isFinite(l.x[i]) || !Number.isFinite(l.y[i])) continue;
    if (Number.isNaN(x0)) [x0, y0] = [l.x[i], l.y[i]];
    else if (l.x[i] !== x0 || l.y[i] !== y0) return false;
  }
  return true;
}

function xFormatter(kind: XKind): (v: number) => string {
  switch (kind) {
    case "relative":
      return fmtDuration;
    case "wall":
      return (v) => new Date(v * 1000).toLocaleString();
    default:
      return (v) => fmtSI(v);
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
 *
 * A point a line has no value for is undefined (the line joins its
 * neighbours); a value that cannot be drawn (NaN, ±∞, or not above zero
 * on a log y axis) is null: a gap in the line, not a straight line drawn
 * across it.
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
  // Every point at a drawable x joins the shared x array (a bad y as a gap).
  for (const l of lines)
    for (let i = 0; i < l.x.length; i++)
      if (okX(l.x[i])) {
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
  for (const l of lines) for (let i = 0; i < l.x.length; i++) if (okX(l.x[i])) all[n++] = snap(l.x[i]);
  all.sort();
  let m = 0;
  for (let i = 0; i < n; i++) if (m === 0 || all[m - 1] !== all[i]) all[m++] = all[i];
  const xs = all.subarray(0, m);
  const data: ArrayLike<number | null | undefined>[] = [xs];
  for (const l of lines) {
    const y = new Array<number | null | undefined>(m).fill(undefined);
    // Ascending lines (the usual) are merged in one walk; others by search.
    const walk = ascending(l.x);
    let j = 0;
    for (let i = 0; i < l.x.length; i++) {
      if (!okX(l.x[i])) continue;
      const sx = snap(l.x[i]);
      if (walk) while (xs[j] < sx) j++;
      else j = lowerBound(xs, sx);
      y[j] = okY(l.y[i]) ? l.y[i] : null;
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
  private extras: HTMLElement[] = [];
  /** A pinned tooltip stays where it is, interactive, until unpinned. */
  private pinned = false;
  private last: { x: number; left: number; top: number } | null = null;
  /** The x axis's formatter (of opts.xKind), for the axis and the tooltip. */
  private readonly fmtX: (v: number) => string;
  private onDocKey = (e: KeyboardEvent) => e.key === "Escape" && this.unpin(true);
  private onDocDown = (e: MouseEvent) => {
    if (!this.plot.over.contains(e.target as Node)) this.unpin(true);
  };
  // A pinned tooltip is fixed in the window: the page scrolling leaves it.
  private onScroll = () => this.unpin(true);
  /** The shown tooltip's key: every row, or the nearest again. */
  private onAllKey = (e: KeyboardEvent) => {
    if (this.tooltip.hidden || this.pinned || e.key.toLowerCase() !== TOOLTIP_ALL_KEY || e.ctrlKey || e.metaKey || e.altKey) return;
    const t = e.target as HTMLElement | null;
    if (t && (t.isContentEditable || ["INPUT", "TEXTAREA", "SELECT"].includes(t.tagName))) return;
    allRows = !allRows;
    if (this.last) this.render(this.plot, this.last);
  };
  /** The y range asked for (ChartOptions.yRange, then setHidden's). */
  private yRange?: [number, number];
  /** Each line's label as shown (long run names cut where runs differ least). */
  private names: Map<string, string>;

  constructor(
    readonly el: HTMLElement,
    opts: ChartOptions,
  ) {
    this.opts = opts;
    this.yRange = opts.yRange;
    this.fmtX = xFormatter(opts.xKind);
    this.names = shortRunNames(opts.lines.map((l) => l.label), NAME_CHARS);
    document.addEventListener("keydown", this.onAllKey);
    this.tooltip = h("div.tooltip", { hidden: true });
    // Clicks and drags on the tooltip are not the chart's (zoom, pin).
    this.tooltip.addEventListener("mousedown", (e) => e.stopPropagation());
    this.tooltip.addEventListener("click", (e) => e.stopPropagation());
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
    const fmtX = this.fmtX;
    const series: uPlot.Series[] = [{}];
    const bands: uPlot.Band[] = [];
    // Many bold lines are drawn 1 px wide: the canvas strokes those as
    // hairlines, several times faster than 1.5 px lines (which are filled
    // as outlines), and 100 runs read better thin.
    const boldWidth = lines.filter((l) => !l.faint).length > THIN_ABOVE ? 1 : 1.5;
    lines.forEach((l, i) => {
      series.push({
        label: l.label,
        show: !l.hidden,
        stroke: l.faint ? withAlpha(l.color, 0.28) : l.color,
        width: l.width ?? (l.faint ? 1 : boldWidth),
        // Missing points (another line's x) are joined over; values that
        // cannot be drawn leave a gap (see align).
        spanGaps: false,
        // A line of one point, or of points all at one place, has nothing
        // to stroke: show its points, as TensorBoard does.
        points: l.markers || (!l.faint && onePlace(l)) ? { show: true, size: 7, fill: l.color, stroke: l.color } : { show: false },
      });
      if (l.bandTo) {
        const j = lines.findIndex((o) => o.label === l.bandTo);
        if (j >= 0) bands.push({ series: [i + 1, j + 1], fill: withAlpha(l.color, 0.18) });
      }
    });
    const axis = (values?: uPlot.Axis["values"], vertical = false, log = false): uPlot.Axis => ({
      stroke: fg,
      // uPlot's own log ticks never end below about 1e-25 (see logaxis.ts).
      ...(log ? { splits: (_u: uPlot, _i: number, lo: number, hi: number) => logSplits(lo, hi) } : {}),
      // A y axis as wide as its widest label, measured in its font (a
      // width per character cut the first digit of 20000 in wide fonts),
      // plus its ticks (10 px) and the gap to them (5 px).
      ...(vertical ? { size: (_u: uPlot, vals: string[]) => Math.ceil(18 + Math.max(textWidth("0.0"), ...(vals ?? []).map((v) => textWidth(String(v))))) } : {}),
      grid: { stroke: grid, width: 1 },
      ticks: { stroke: grid, width: 1 },
      values,
      font: FONT,
    });
    const opts: uPlot.Options = {
      width: Math.max(this.el.clientWidth, 200),
      height: this.opts.height ?? 220,
      legend: { show: false },
      cursor: {
        // A point on the bold lines only: a faint raw line's point says
        // nothing its smoothed line's does not, and 100 runs' raw points
        // doubled the work of every mouse move.
        points: { size: 5, show: ((_u: uPlot, si: number) => (lines[si - 1]?.faint ? undefined : document.createElement("div"))) as unknown as uPlot.Cursor.Points.Show },
        drag: { x: true, y: false, setScale: true },
      },
      bands,
      scales: {
        x: {
          time: xKind === "wall",
          distr: this.opts.logx ? 3 : 1,
          ...(this.opts.xRange ? { auto: false, range: this.opts.xRange } : {}),
        },
        y: {
          distr: this.opts.logy ? 3 : 1,
          // The range asked for (setHidden changes it), else a fit of the
          // lines shown: uPlot's own padding, or the log axis's.
          range: (_u: uPlot, lo: number | null, hi: number | null): uPlot.Range.MinMax =>
            this.yRange ?? (this.opts.logy ? logRange(lo, hi) : lo === null || hi === null ? [lo, hi] : uPlot.rangeNum(lo, hi, 0.1, true)),
        },
      },
      axes: [
        axis(
          xKind === "wall" ? undefined : xKind === "relative" ? (_u, splits) => splits.map((v) => (v === null ? "" : fmtX(v))) : (_u, splits) => fmtTicks(splits),
          false,
          !!this.opts.logx,
        ),
        axis(
          (_u, splits) => {
            const labels = fmtTicks(splits);
            // The y labels, for tests and for reading the view from the page.
            this.el.dataset.yticks = labels.join("|");
            return labels;
          },
          true,
          !!this.opts.logy,
        ),
      ],
      series,
      hooks: {
        setCursor: [(u) => this.showTooltip(u)],
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
    plot.over.addEventListener("mouseleave", () => {
      if (this.pinned) return;
      cancelAnimationFrame(this.placing);
      this.tooltip.hidden = true;
    });
    plot.over.addEventListener("dblclick", () => {
      this.unpin(true);
      this.opts.onZoom?.(null);
    });
    // A click (not a drag) pins the tooltip, or unpins it.
    let down: [number, number] | null = null;
    plot.over.addEventListener("mousedown", (e) => (down = [e.clientX, e.clientY]));
    plot.over.addEventListener("click", (e) => {
      if (!down || Math.hypot(e.clientX - down[0], e.clientY - down[1]) > 3) return;
      if (this.pinned) this.unpin(false);
      else if (!this.tooltip.hidden) this.pin();
    });
    this.notes(plot);
    return plot;
  }

  /** What the chart cannot show says so under it; a legend, when asked for. */
  private notes(plot: uPlot) {
    const { lines } = this.opts;
    if (this.opts.logy) {
      let n = 0;
      for (const l of lines) if (!l.faint) for (const y of l.y) if (y <= 0) n++;
      if (n) {
        const note = h("div.chart-note", { className: "chart-note log-gaps" }, `${n} value${n > 1 ? "s" : ""} ≤ 0 not drawn on the log y axis (gaps in the lines)`);
        this.extras.push(note);
      }
    }
    if (this.opts.legend) {
      const shown = lines.filter((l) => !l.faint && !l.hidden);
      this.extras.push(
        h(
          "div.legend",
          null,
          shown.map((l) => h("span.legend-item", { title: l.label }, h("span.swatch", { style: { background: l.color } }), this.names.get(l.label) ?? l.label)),
        ),
      );
    }
    plot.root.after(...this.extras);
  }

  private pin() {
    this.pinned = true;
    this.tooltip.classList.add("pinned");
    if (this.last) this.render(this.plot, this.last);
    document.addEventListener("keydown", this.onDocKey);
    document.addEventListener("mousedown", this.onDocDown);
    addEventListener("scroll", this.onScroll, { passive: true });
  }

  private unpin(hide: boolean) {
    if (!this.pinned) return;
    this.pinned = false;
    this.tooltip.classList.remove("pinned");
    document.removeEventListener("keydown", this.onDocKey);
    document.removeEventListener("mousedown", this.onDocDown);
    removeEventListener("scroll", this.onScroll);
    if (hide) {
      cancelAnimationFrame(this.placing);
      this.tooltip.hidden = true;
    }
    else this.showTooltip(this.plot);
  }

  private showTooltip(u: uPlot) {
    if (this.pinned) return;
    const left = u.cursor.left ?? -1;
    if (left < 0) {
      cancelAnimationFrame(this.placing);
      this.tooltip.hidden = true;
      return;
    }
    this.render(u, { x: u.posToVal(left, "x"), left, top: u.cursor.top ?? 0 });
  }

  /**
   * The tooltip for the cursor at x: a row per line, ordered as chosen.
   * Unpinned it shows the rows that fit in the window and "+N more";
   * pinned, all of them, scrolling, each line of a run with a button
   * showing only that run. It never leaves the window.
   */
  private render(u: uPlot, at: { x: number; left: number; top: number }) {
    this.last = at;
    const fmtX = this.fmtX;
    const logy = !!this.opts.logy;
    const rows: { color: string; label: string; y: number; extra: string; dist: number; run?: string }[] = [];
    for (const l of this.opts.lines) {
      if (l.noTooltip || l.faint || l.hidden || l.x.length === 0) continue;
      const i = nearest(l.x, at.x);
      const y = l.y[i];
      const drawn = Number.isFinite(y) && (!logy || y > 0);
      const dist = drawn ? Math.abs(u.valToPos(y, "y") - at.top) : Infinity;
      rows.push({ color: l.color, label: l.label, y, extra: l.detail ? l.detail(i) : `x ${fmtX(l.x[i])}`, dist, run: l.run });
    }
    if (rows.length === 0) {
      cancelAnimationFrame(this.placing);
      this.tooltip.hidden = true;
      return;
    }
    const sorted = sortRows(rows, this.opts.tooltipSort ?? "descending");
    // Rows of about 17 px, below a head and above a "more" row.
    const fit = Math.max(3, Math.floor((innerHeight - 60) / 17));
    const shown = this.pinned ? sorted : allRows ? sorted.slice(0, fit) : nearestRows(sorted, TOOLTIP_ROWS);
    const only = this.pinned ? this.opts.onOnly : undefined;
    this.tooltip.replaceChildren(
      h("div.tt-head", null, fmtX(at.x), this.pinned ? null : h("span.tt-hint", null, " · click to pin")),
      h(
        "table",
        null,
        shown.map((r) =>
          h(
            "tr",
            null,
            h("td", null, h("span.swatch", { style: { background: r.color } })),
            h("td.tt-run", { title: r.label }, this.names.get(r.label) ?? r.label),
            h("td.num", null, fmtSI(r.y) + (logy && r.y <= 0 ? " (not drawn)" : "")),
            h("td.tt-extra", null, r.extra),
            only && r.run ? h("td", null, h("button.tt-only", { title: `Show only ${r.run}`, onclick: () => only(r.run!) }, "only")) : null,
          ),
        ),
        sorted.length > shown.length ? h("tr.tt-more", null, h("td", { colSpan: 4 }, moreNote(sorted.length - shown.length, allRows))) : null,
      ),
    );
    const t = this.tooltip.style;
    t.position = "fixed";
    t.maxHeight = `${innerHeight - 8}px`;
    t.overflowY = this.pinned ? "auto" : "hidden";
    this.placeSoon(u, at);
  }

  private placing = 0;

  /**
   * Shows the tooltip beside the cursor in the next animation frame: its
   * size is read there, with the layout the frame does anyway, not in the
   * mouse move (reading it there laid the whole page out once more on
   * every move). Several moves in a frame place it once.
   */
  private placeSoon(u: uPlot, at: { left: number; top: number }) {
    cancelAnimationFrame(this.placing);
    this.placing = requestAnimationFrame(() => {
      if (this.last !== at) return; // a later move placed it
      this.tooltip.hidden = false;
      const over = u.over.getBoundingClientRect();
      const t = this.tooltip.style;
      const { left, top } = placeBox(over.left + at.left, over.top + at.top, this.tooltip.offsetWidth, this.tooltip.offsetHeight, document.documentElement.clientWidth, innerHeight);
      t.left = `${left}px`;
      t.top = `${top}px`;
    });
  }

  /** The lines as drawn (hidden ones included). */
  get lines(): readonly Line[] {
    return this.opts.lines;
  }

  /**
   * Shows and hides lines in place (a run toggled in the runs list): a
   * redraw, not a new chart. yRange: the y range now (the chart's own fit
   * of the lines shown when undefined).
   */
  setHidden(hidden: (l: Line) => boolean, yRange?: [number, number]) {
    const lines = this.opts.lines;
    this.yRange = yRange;
    this.plot.batch(() => {
      lines.forEach((l, i) => {
        const hide = hidden(l);
        if (!!l.hidden === hide) return;
        l.hidden = hide;
        this.plot.setSeries(i + 1, { show: !hide });
      });
    });
    if (this.pinned && this.last) this.render(this.plot, this.last);
  }

  /** The canvas uPlot draws on (for tests and benchmarks). */
  get canvas(): HTMLCanvasElement {
    return this.plot.ctx.canvas;
  }

  destroy() {
    this.unpin(true);
    document.removeEventListener("keydown", this.onAllKey);
    cancelAnimationFrame(this.placing);
    this.resize.disconnect();
    this.plot.destroy();
    for (const e of this.extras) e.remove();
  }
}
