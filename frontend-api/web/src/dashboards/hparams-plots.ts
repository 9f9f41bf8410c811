// The HParams dashboard's plots, as SVG: parallel coordinates (an axis per
// hyperparameter and metric, a line per session group, coloured by one
// column) and a scatter plot of one column against another. Pure layout
// helpers (axes, ticks, colours) are exported for unit tests.

import { fmtNum } from "../dom";

/** A value of a table cell: a number, a string (or bool as string), or missing. */
export type Cell = number | string | undefined;

export interface Column {
  label: string;
  kind: "name" | "hparam" | "metric";
}

export interface Row {
  name: string;
  cells: Cell[];
  /** The runs (sessions) of the group. */
  runs?: string[];
}

/** Maps a column's values to [0, 1] (bottom to top, left to right). */
export interface Axis {
  numeric: boolean;
  /** numeric: the domain. */
  min: number;
  max: number;
  /** categorical: the categories in order. */
  categories: string[];
  pos(v: Cell): number | undefined;
  /** Where to draw labels: [position in 0..1, text]. */
  ticks(): [number, string][];
}

/** "Nice" tick values covering [min, max], about n of them. */
export function niceTicks(min: number, max: number, n = 5): number[] {
  if (!(max > min) || !Number.isFinite(min) || !Number.isFinite(max)) return Number.isFinite(min) ? [min] : [];
  const raw = (max - min) / n;
  let step = 10 ** Math.floor(Math.log10(raw));
  const r = raw / step;
  // Round to the nearest of 1, 2, 5, 10 on a log scale (boundaries at their geometric means).
  step *= r >= Math.sqrt(50) ? 10 : r >= Math.sqrt(10) ? 5 : r >= Math.sqrt(2) ? 2 : 1;
  const out: number[] = [];
  for (let v = Math.ceil(min / step) * step; v <= max + step * 1e-9; v += step) out.push(Math.abs(v) < step * 1e-9 ? 0 : Number(v.toPrecision(12)));
  return out;
}

/**
 * The axis of a column: numeric when every present value is a number,
 * else categorical (values as strings, sorted). A single number gets a
 * domain around it.
 */
export function makeAxis(values: Cell[]): Axis {
  const present = values.filter((v): v is number | string => v !== undefined && !(typeof v === "number" && !Number.isFinite(v)));
  const numeric = present.length > 0 && present.every((v) => typeof v === "number");
  if (numeric) {
    const nums = present as number[];
    let min = Math.min(...nums);
    let max = Math.max(...nums);
    if (min === max) {
      const pad = Math.abs(min) / 2 || 1;
      min -= pad;
      max += pad;
    }
    return {
      numeric,
      min,
      max,
      categories: [],
      pos: (v) => (typeof v === "number" && Number.isFinite(v) ? (v - min) / (max - min) : undefined),
      ticks: () => niceTicks(min, max, 4).map((t) => [(t - min) / (max - min), fmtNum(t)]),
    };
  }
  const categories = [...new Set(present.map(String))].sort((a, b) => a.localeCompare(b, undefined, { numeric: true }));
  const at = (i: number) => (categories.length === 1 ? 0.5 : i / (categories.length - 1));
  return {
    numeric,
    min: 0,
    max: 1,
    categories,
    pos: (v) => {
      const i = v === undefined ? -1 : categories.indexOf(String(v));
      return i < 0 ? undefined : at(i);
    },
    ticks: () => categories.map((c, i) => [at(i), c]),
  };
}

/** A colour from blue (t = 0) to orange (t = 1); solid grey when t is missing (a kept line without the colouring value must stand out from the faint brushed-out ones). */
export function rampColor(t: number | undefined): string {
  if (t === undefined || !Number.isFinite(t)) return "#888";
  const hue = 220 - 195 * Math.min(Math.max(t, 0), 1);
  return `hsl(${hue.toFixed(0)}, 75%, 50%)`;
}

const NS = "http://www.w3.org/2000/svg";

function svg(tag: string, attrs: Record<string, string | number>, ...children: (Node | string)[]): SVGElement {
  const el = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  for (const c of children) el.append(c);
  return el;
}

function label(text: string, max = 18): string {
  return text.length > max ? text.slice(0, max - 1) + "…" : text;
}

function show(v: Cell): string {
  return v === undefined ? "–" : typeof v === "number" ? fmtNum(v) : v;
}

/**
 * The position of a missing value on a parallel-coordinates axis: a band
 * below the axis's values (which sit in 0..1), labelled "missing".
 */
export const MISSING = -1; // below every value, so a range [MISSING, t] holds the band

/** What parallelCoordinates draws besides the rows. */
export interface ParallelOptions {
  /** Index of the column colouring the lines, or -1. */
  colorBy: number;
  width: number;
  /** Rows to draw in full; the others are drawn faint (they are brushed out). */
  selected: (r: Row) => boolean;
  /**
   * Brushed ranges by column index, in axis positions (0 bottom, 1 top;
   * MISSING for the missing band).
   */
  brushes: Map<number, [number, number]>;
  /**
   * A range was brushed on column col (positions t0 < t1, t0 MISSING when
   * it holds the missing band, both when it is only that), or cleared
   * (null) by a click on its axis.
   */
  onBrush: (col: number, range: [number, number] | null) => void;
}

/** Geometry of the parallel coordinates' vertical scale. */
export interface ParallelScale {
  /** The y of an axis position (MISSING: the missing band's middle). */
  y(t: number): number;
  /**
   * The axis position under y: 0..1 along the axis (clamped), MISSING
   * within or below the missing band (when there is one); the gap between
   * the axis and the band counts as the axis's end.
   */
  t(y: number): number;
  /** The missing band's top and bottom, or null when no value is missing. */
  band: [number, number] | null;
}

/** The vertical scale of an axis drawn from top to top + plotH, with or without a missing band. */
export function parallelScale(top: number, plotH: number, withBand: boolean): ParallelScale {
  const gap = 10;
  const bandH = 20;
  const band: [number, number] | null = withBand ? [top + plotH + gap, top + plotH + gap + bandH] : null;
  return {
    band,
    y: (t) => (t === MISSING && band ? (band[0] + band[1]) / 2 : top + (1 - t) * plotH),
    t: (y) => (band && y >= band[0] ? MISSING : Math.min(Math.max(1 - (y - top) / plotH, 0), 1)),
  };
}

/**
 * A row's line: its position on each axis (columns cols, scales axes), a
 * missing value at MISSING, so that the line reaches every axis.
 */
export function linePoints(r: Row, cols: number[], axes: Axis[]): number[] {
  return cols.map((i, k) => axes[k].pos(r.cells[i]) ?? MISSING);
}

/**
 * Parallel coordinates of rows over columns (the name column excluded):
 * an axis per column holding a value, a line per row reaching every axis
 * (a missing value on the axis's "missing" band, drawn when some row
 * misses it). Dragging along an axis brushes a range of it, which may
 * take in the missing band.
 */
export function parallelCoordinates(columns: Column[], rows: Row[], o: ParallelOptions): SVGElement {
  const { colorBy, width } = o;
  const axes = columns.map((c, i) => ({ c, i })).filter(({ c, i }) => c.kind !== "name" && rows.some((r) => r.cells[i] !== undefined));
  // Which axes some row misses a value of (they get a missing band).
  const hasMissing = axes.map(({ i }) => rows.some((r) => r.cells[i] === undefined));
  const top = 46;
  const plotH = 310;
  const scale = parallelScale(top, plotH, hasMissing.includes(true));
  const height = (scale.band ? scale.band[1] : top + plotH) + 24;
  const left = 60;
  const right = 60;
  const step = axes.length > 1 ? (width - left - right) / (axes.length - 1) : 0;
  const xOf = (k: number) => (axes.length > 1 ? left + k * step : width / 2);
  const scales = axes.map(({ i }) => makeAxis(rows.map((r) => r.cells[i])));
  const cols = axes.map(({ i }) => i);
  const colorAxis = colorBy >= 0 ? makeAxis(rows.map((r) => r.cells[colorBy])) : null;

  const faint = svg("g", { class: "pc-lines faint" });
  const lines = svg("g", { class: "pc-lines" });
  for (const r of rows) {
    const d = linePoints(r, cols, scales)
      .map((t, k) => `${k ? "L" : "M"}${xOf(k).toFixed(1)},${scale.y(t).toFixed(1)}`)
      .join("");
    if (!d) continue;
    const tip = [r.name, ...axes.map(({ c, i }) => `${c.label}: ${show(r.cells[i])}`)].join("\n");
    if (o.selected(r)) lines.append(svg("path", { class: "pc-line", d, stroke: rampColor(colorAxis?.pos(r.cells[colorBy])), "data-group": r.name }, svg("title", {}, tip)));
    else faint.append(svg("path", { class: "pc-line out", d, "data-group": r.name }, svg("title", {}, tip)));
  }
  const root = svg("svg", { class: "hparams-parallel", width, height, viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": "parallel coordinates" });
  // The missing bands sit behind the lines.
  const bands = svg("g", { class: "pc-missing-bands" });
  root.append(bands, faint, lines);
  /** The pointer's y in the SVG's coordinates. */
  const yIn = (e: PointerEvent) => {
    const box = root.getBoundingClientRect();
    return ((e.clientY - box.top) * height) / (box.height || height);
  };
  axes.forEach(({ c, i }, k) => {
    const x = xOf(k);
    const g = svg("g", { class: `pc-axis ${c.kind}`, "data-col": c.label }, svg("line", { x1: x, x2: x, y1: top, y2: top + plotH }));
    g.append(svg("text", { x, y: top - 24, "text-anchor": "middle", class: "pc-label" }, label(c.label), svg("title", {}, c.label)));
    for (const [t, text] of scales[k].ticks().slice(0, 12)) {
      g.append(svg("text", { x: x - 4, y: scale.y(t) + 3, "text-anchor": "end", class: "pc-tick" }, label(text, 10)));
    }
    const band = hasMissing[k] ? scale.band : null;
    if (band) {
      bands.append(
        svg("rect", { class: "pc-missing", "data-col": c.label, x: x - 9, width: 18, y: band[0], height: band[1] - band[0], rx: 3 }),
      );
      g.append(svg("text", { x: x - 12, y: (band[0] + band[1]) / 2 + 3, "text-anchor": "end", class: "pc-tick pc-missing-label" }, "missing"));
    }
    const brush = svg("rect", { class: "pc-brush", x: x - 7, width: 14, y: 0, height: 0 });
    const place = (t0: number, t1: number) => {
      // A brush holding the missing band covers all of it (the axis's end
      // when no shown row misses a value here).
      const y0 = t0 === MISSING ? (band ? band[1] : scale.y(0)) : scale.y(t0);
      const y1 = t1 === MISSING ? (band ? band[0] : scale.y(0)) : scale.y(t1);
      brush.setAttribute("y", y1.toFixed(1));
      brush.setAttribute("height", Math.max(y0 - y1, 1).toFixed(1));
      brush.setAttribute("visibility", "visible");
    };
    const b = o.brushes.get(i);
    if (b) place(b[0], b[1]);
    else brush.setAttribute("visibility", "hidden");
    // A wide, invisible strip along the axis (and its missing band) takes the drag.
    const hitBottom = band ? band[1] + 4 : top + plotH + 6;
    const hit = svg("rect", { class: "pc-hit", x: x - 12, width: 24, y: top - 6, height: hitBottom - (top - 6) });
    const tOf = (y: number) => (band ? scale.t(y) : Math.max(scale.t(y), 0));
    let from: number | null = null;
    // data-dragging on the plot says a drag is in flight (the dashboard
    // holds a redraw until it ends).
    const end = () => {
      from = null;
      delete root.dataset.dragging;
    };
    hit.addEventListener("pointerdown", (e) => {
      const pe = e as PointerEvent;
      from = yIn(pe);
      root.dataset.dragging = "1";
      try {
        (hit as Element).setPointerCapture(pe.pointerId); // keep the drag when the pointer leaves the strip
      } catch {
        // A synthetic event has no pointer to capture.
      }
      pe.preventDefault();
    });
    hit.addEventListener("pointermove", (e) => {
      if (from === null) return;
      const [a, b] = [tOf(from), tOf(yIn(e as PointerEvent))];
      place(Math.min(a, b), Math.max(a, b));
    });
    hit.addEventListener("pointerup", (e) => {
      if (from === null) return;
      const y = yIn(e as PointerEvent);
      const [a, b] = [tOf(from), tOf(y)];
      const click = Math.abs(y - from) < 3;
      end();
      o.onBrush(i, click ? null : [Math.min(a, b), Math.max(a, b)]);
    });
    hit.addEventListener("pointercancel", end);
    g.append(brush, hit);
    root.append(g);
  });
  return root;
}

/**
 * A scatter plot of column y against column x, a point per row with both,
 * coloured by column colorBy (an index into columns, or -1).
 */
export function scatterPlot(columns: Column[], rows: Row[], x: number, y: number, colorBy: number, width: number): SVGElement {
  const height = 380;
  const left = 70;
  const right = 20;
  const top = 16;
  const bottom = 50;
  const plotW = width - left - right;
  const plotH = height - top - bottom;
  const xs = makeAxis(rows.map((r) => r.cells[x]));
  const ys = makeAxis(rows.map((r) => r.cells[y]));
  // Points are inset so that none sits on the frame.
  const px = (t: number) => left + (0.04 + 0.92 * t) * plotW;
  const py = (t: number) => top + (1 - (0.04 + 0.92 * t)) * plotH;
  const frame = svg("rect", { class: "sc-frame", x: left, y: top, width: plotW, height: plotH });
  const grid = svg("g", { class: "sc-axes" });
  for (const [t, text] of xs.ticks().slice(0, 15)) {
    grid.append(svg("line", { class: "sc-grid", x1: px(t), x2: px(t), y1: top, y2: top + plotH }));
    grid.append(svg("text", { x: px(t), y: top + plotH + 14, "text-anchor": "middle", class: "sc-tick" }, label(text, 12)));
  }
  for (const [t, text] of ys.ticks().slice(0, 15)) {
    grid.append(svg("line", { class: "sc-grid", x1: left, x2: left + plotW, y1: py(t), y2: py(t) }));
    grid.append(svg("text", { x: left - 6, y: py(t) + 3, "text-anchor": "end", class: "sc-tick" }, label(text, 10)));
  }
  grid.append(svg("text", { x: left + plotW / 2, y: height - 8, "text-anchor": "middle", class: "sc-label" }, columns[x].label));
  grid.append(svg("text", { x: 14, y: top + plotH / 2, "text-anchor": "middle", class: "sc-label", transform: `rotate(-90 14 ${top + plotH / 2})` }, columns[y].label));
  const colorAxis = colorBy >= 0 ? makeAxis(rows.map((r) => r.cells[colorBy])) : null;
  const points = svg("g", { class: "sc-points" });
  for (const r of rows) {
    const tx = xs.pos(r.cells[x]);
    const ty = ys.pos(r.cells[y]);
    if (tx === undefined || ty === undefined) continue;
    const tip = `${r.name}\n${columns[x].label}: ${show(r.cells[x])}\n${columns[y].label}: ${show(r.cells[y])}`;
    points.append(
      svg("circle", { class: "sc-point", cx: px(tx).toFixed(1), cy: py(ty).toFixed(1), r: 5, fill: rampColor(colorAxis?.pos(r.cells[colorBy])), "data-group": r.name, "data-x": String(r.cells[x]), "data-y": String(r.cells[y]) }, svg("title", {}, tip)),
    );
  }
  return svg("svg", { class: "hparams-scatter", width, height, viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": `${columns[y].label} against ${columns[x].label}` }, frame, grid, points);
}

/** A cell of the scatter plot matrix: column x against column y (indices into the columns), and how many rows have a value in both. */
export interface MatrixCell {
  x: number;
  y: number;
  shared: number;
}

/** How many rows a scatter plot of column y against column x draws: those with a plottable value in both. */
export function sharedRows(rows: Row[], x: number, y: number): number {
  const xa = makeAxis(rows.map((r) => r.cells[x]));
  const ya = makeAxis(rows.map((r) => r.cells[y]));
  return rows.filter((r) => xa.pos(r.cells[x]) !== undefined && ya.pos(r.cells[y]) !== undefined).length;
}

/** The scatter plot matrix's layout: its columns (x), its rows (y), and a cell per pair of different columns, row by row. */
export interface MatrixLayout {
  xs: number[];
  ys: number[];
  cells: MatrixCell[];
}

/**
 * The scatter plot matrix of TensorBoard's HParams dashboard over columns
 * cols (indices, no name column): a column per hyperparameter and metric,
 * a row per metric (per column when there is no metric), a cell per pair
 * of different columns. A cell whose pair no row has both values of
 * (shared 0) is drawn as a note, not an empty plot.
 */
export function matrixLayout(columns: Column[], rows: Row[], cols: number[]): MatrixLayout {
  const xs = [...cols.filter((i) => columns[i].kind === "hparam"), ...cols.filter((i) => columns[i].kind === "metric")];
  const metrics = cols.filter((i) => columns[i].kind === "metric");
  const ys = metrics.length ? metrics : xs;
  const cells: MatrixCell[] = [];
  for (const y of ys) {
    for (const x of xs) {
      if (x !== y) cells.push({ x, y, shared: sharedRows(rows, x, y) });
    }
  }
  return { xs, ys, cells };
}

/** The side of a matrix cell, in pixels: the xs columns fill width, each between 110 and 220. */
export function matrixCellSize(width: number, columns: number): number {
  return Math.round(Math.min(220, Math.max(110, width / Math.max(columns, 1) - 6)));
}

/** What parts of the scatter plot matrix say when hovered or clicked. */
export interface MatrixOptions {
  colorBy: number;
  /** The side of a cell, in pixels. */
  size: number;
  /** The cell shown enlarged below the matrix (marked), if any. */
  current?: { x: number; y: number };
  /** A cell (not a point) was clicked. */
  onCell: (x: number, y: number) => void;
}

/**
 * The scatter plot matrix as a grid: column labels above, row labels on
 * the left, a small scatter plot per cell (class mx-cell, data-x, data-y)
 * whose points carry their group (data-group, for highlighting), or a
 * note when the pair shares no session group.
 */
export function scatterMatrix(columns: Column[], rows: Row[], layout: MatrixLayout, o: MatrixOptions): HTMLElement {
  const { size } = o;
  const colorAxis = o.colorBy >= 0 ? makeAxis(rows.map((r) => r.cells[o.colorBy])) : null;
  const axes = new Map([...new Set([...layout.xs, ...layout.ys])].map((i) => [i, makeAxis(rows.map((r) => r.cells[i]))]));
  const grid = document.createElement("div");
  grid.className = "hparams-matrix";
  grid.setAttribute("role", "group");
  grid.setAttribute("aria-label", "scatter plot matrix");
  grid.style.gridTemplateColumns = `7em repeat(${layout.xs.length}, ${size}px)`;
  const div = (cls: string, text = "", title = text) => {
    const d = document.createElement("div");
    d.className = cls;
    d.textContent = text;
    if (title) d.title = title;
    return d;
  };
  grid.append(div("mx-corner"));
  for (const x of layout.xs) grid.append(div(`mx-head ${columns[x].kind}`, label(columns[x].label, 24), columns[x].label));
  const byPair = new Map(layout.cells.map((c) => [`${c.x},${c.y}`, c]));
  const inset = 8;
  const at = (t: number) => inset + t * (size - 2 * inset);
  for (const y of layout.ys) {
    grid.append(div(`mx-rowhead ${columns[y].kind}`, label(columns[y].label, 24), columns[y].label));
    for (const x of layout.xs) {
      const c = byPair.get(`${x},${y}`);
      if (!c) {
        grid.append(div("mx-diag", label(columns[x].label, 24), columns[x].label));
        continue;
      }
      const cell = div("mx-cell", "", `${columns[y].label} against ${columns[x].label}`);
      cell.dataset.x = columns[x].label;
      cell.dataset.y = columns[y].label;
      if (o.current && o.current.x === x && o.current.y === y) cell.classList.add("current");
      cell.style.height = `${size}px`;
      if (!c.shared) {
        cell.classList.add("empty");
        cell.append(div("mx-empty", `No session group has both ${columns[x].label} and ${columns[y].label}.`, ""));
      } else {
        const plot = svg("svg", { class: "mx-plot", width: size, height: size, viewBox: `0 0 ${size} ${size}` }, svg("rect", { class: "sc-frame", x: 0.5, y: 0.5, width: size - 1, height: size - 1 }));
        const xa = axes.get(x)!;
        const ya = axes.get(y)!;
        for (const r of rows) {
          const tx = xa.pos(r.cells[x]);
          const ty = ya.pos(r.cells[y]);
          if (tx === undefined || ty === undefined) continue;
          const tip = `${r.name}\n${columns[x].label}: ${show(r.cells[x])}\n${columns[y].label}: ${show(r.cells[y])}`;
          plot.append(svg("circle", { class: "mx-point", cx: at(tx).toFixed(1), cy: (size - at(ty)).toFixed(1), r: 3.5, fill: rampColor(colorAxis?.pos(r.cells[o.colorBy])), "data-group": r.name }, svg("title", {}, tip)));
        }
        cell.append(plot);
      }
      cell.addEventListener("click", (e) => {
        if (!(e.target as Element).closest?.(".mx-point")) o.onCell(x, y);
      });
      grid.append(cell);
    }
  }
  return grid;
}

/**
 * Highlights group's points in every plot under root (class hl; root gets
 * class highlighting, which fades the others), or none when group is null.
 */
export function highlightGroup(root: Element, group: string | null): void {
  root.classList.toggle("highlighting", group !== null);
  for (const p of root.querySelectorAll("[data-group].hl")) p.classList.remove("hl");
  if (group === null) return;
  for (const p of root.querySelectorAll(`[data-group="${CSS.escape(group)}"]`)) p.classList.add("hl");
}
