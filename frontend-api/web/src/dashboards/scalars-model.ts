// The Scalars dashboard's model: what the URL holds for it, what to ask
// scalars_multirun for (a card's runs and tag at about one point per pixel
// column, a zoom's step range, a live page's tail), how the answers become
// each run's points and the chart's lines (smoothing, x axis, groups), and
// the y range drawn. Pure functions, no DOM; scalars.ts draws them.

import { num, type RunTagIndex, type ScalarDatum } from "../api";
import { fmtSI, TOOLTIP_SORTS, type TooltipSort } from "../charts/format";
import type { Line } from "../charts/linechart";
import { compileFilter, fmtDuration } from "../dom";
import { emaDebiased, groupStats, quantileRange, sortedFinite } from "../smoothing";
import type { UrlSlice, ViewState } from "../state";

/** A series' points as columns. */
export interface Points {
  step: number[];
  wall: number[];
  value: number[];
}

/**
 * A series as scalars_multirun answers it with format=columns: wall times
 * as offsets from wall_time_base.
 */
export interface ScalarColumns {
  wall_time_base?: number;
  /** The series' largest wall time, as the server listed it (live reads). */
  max_wall_time?: number | string;
  /** Present on a tail: the points are those past this step only. */
  after?: number;
  wall_time: (number | string)[];
  step: number[];
  value: (number | string)[];
}

/**
 * What a live card knows of a run's series beyond its points: the
 * series' max_wall_time from the answer it came from, and how many points
 * were appended from tails since its last full (downsampled) read.
 */
export interface Held {
  maxWall: number;
  appended: number;
}

/**
 * The y range of a card ignoring outliers (judged on the lines drawn
 * bold: smoothed, or group means); undefined: the chart fits it.
 */
export function yRangeOf(lines: Line[], s: ViewState): [number, number] | undefined {
  return (s.ignoreOutliers && !s.logy ? quantileRange(lines.filter((l) => !l.faint).map((l) => sortedY(l.y))) : null) ?? undefined;
}

// Each line's values sorted, kept while the line is (a line's values never
// change once made), so that a toggle's y range is a search (quantileRange).
const sortedYs = new WeakMap<number[], Float64Array>();
function sortedY(y: number[]): Float64Array {
  let v = sortedYs.get(y);
  if (!v) sortedYs.set(y, (v = sortedFinite(y)));
  return v;
}

/**
 * What a card's chart depends on besides its data and which runs it shows:
 * a chart built for another view is built anew.
 */
export function chartView(tag: string, s: ViewState, fullScreen: boolean): string {
  return JSON.stringify([s.smoothing, s.x, s.logx, s.logy, s.group, s.band, s.ignoreOutliers, s.ttsort, s.tttime, s.zoom, s.colors, s.expand.includes(tag), fullScreen]);
}

/** Numbers as they are; any "NaN"/"Infinity" string turned into a number. */
function numbers(vs: (number | string)[]): number[] {
  return vs.every((v) => typeof v === "number") ? (vs as number[]) : vs.map(num);
}

function fromColumns(c: ScalarColumns): Points {
  const base = c.wall_time_base ?? 0;
  const wall = numbers(c.wall_time);
  return { step: c.step, wall: base ? wall.map((w) => base + w) : wall, value: numbers(c.value) };
}

function toPoints(data: ScalarDatum[] | Points): Points {
  if (!Array.isArray(data)) return data;
  const p: Points = { step: [], wall: [], value: [] };
  for (const [wall, step, value] of data) {
    p.wall.push(wall);
    p.step.push(step);
    p.value.push(num(value));
  }
  return p;
}

/** The x values of a series under the chosen x-axis, in seconds for times. */
export function xValues(p: Points, x: ViewState["x"]): number[] {
  if (x === "step") return p.step;
  if (x === "wall") return p.wall;
  let t0 = Infinity;
  for (const w of p.wall) if (w < t0) t0 = w;
  return p.wall.map((w) => w - t0);
}

/** Sorts a series' points by x (wall time need not grow with step). */
function sortedBy(xs: number[], ...cols: number[][]): [number[], ...number[][]] {
  let sorted = true;
  for (let i = 1; i < xs.length && sorted; i++) sorted = xs[i - 1] <= xs[i];
  if (sorted) return [xs, ...cols];
  const order = xs.map((_, i) => i).sort((a, b) => xs[a] - xs[b]);
  return [order.map((i) => xs[i]), ...cols.map((c) => order.map((i) => c[i]))];
}

/**
 * A point's tooltip text after its (smoothed) value: the raw value when
 * smoothed, its step, and with tttime its wall time and its time since
 * its run's first point (wall0), as TensorBoard's tooltip has them.
 */
export function pointDetail(value: number, step: number, wall: number, wall0: number, s: Pick<ViewState, "smoothing" | "tttime">): string {
  const parts = s.smoothing > 0 ? [`raw ${fmtSI(value)}`] : [];
  parts.push(`step ${step}`);
  if (s.tttime) parts.push(new Date(wall * 1000).toLocaleString(), fmtDuration(wall - wall0));
  return parts.join(" · ");
}

/** The lines of one card for the view state. */
export function scalarLines(data: Record<string, ScalarDatum[] | Points>, runs: string[], colorOf: (r: string) => string, s: ViewState): Line[] {
  const lines: Line[] = [];
  const per = runs
    .map((run) => ({ run, p: toPoints(data[run] ?? []) }))
    .filter(({ p }) => p.step.length)
    .map(({ run, p }) => {
      const [x, value, step, wall] = sortedBy(xValues(p, s.x), p.value, p.step, p.wall);
      return { run, x, value, step, wall, wall0: Math.min(...p.wall), smooth: emaDebiased(value, s.smoothing) };
    });
  if (s.group) {
    const re = compileFilter(s.group).error ? null : new RegExp(s.group);
    const groups = new Map<string, typeof per>();
    for (const r of per) {
      const m = re ? re.exec(r.run) : null;
      const key = m ? (m[1] ?? m[0]) : r.run;
      if (!groups.has(key)) groups.set(key, []);
      groups.get(key)!.push(r);
    }
    for (const [key, members] of groups) {
      const color = colorOf(members[0].run);
      const g = groupStats(members.map((m) => ({ x: m.x, y: m.smooth })));
      const label = `${key} (${members.length} run${members.length > 1 ? "s" : ""})`;
      lines.push({ label, color, x: g.x, y: g.mean, width: 2 });
      if (members.length > 1) {
        const [top, bottom] = s.band === "std" ? [g.mean.map((m, i) => m + g.std[i]), g.mean.map((m, i) => m - g.std[i])] : [g.max, g.min];
        const [hi, lo] = s.band === "std" ? ["+std", "−std"] : ["max", "min"];
        lines.push({ label: `${label} ${hi}`, color, x: g.x, y: top, faint: true, width: 0.5, bandTo: `${label} ${lo}` });
        lines.push({ label: `${label} ${lo}`, color, x: g.x, y: bottom, faint: true, width: 0.5 });
      }
    }
    return lines;
  }
  for (const r of per) {
    const color = colorOf(r.run);
    if (s.smoothing > 0) lines.push({ label: `${r.run} raw`, run: r.run, color, x: r.x, y: r.value, faint: true });
    lines.push({
      label: r.run,
      run: r.run,
      color,
      x: r.x,
      y: r.smooth,
      detail: (i) => pointDetail(r.value[i], r.step[i], r.wall[i], r.wall0, s),
    });
  }
  return lines;
}

/**
 * A card's series after a scalars_multirun answer in columns: a run
 * answered as a tail ("after" = the last step held) has its new points
 * appended; any other is taken as the answer has it (a full read, or a
 * series the server says was rewritten); runs missing from the answer
 * (their series gone) are dropped. A tail past another step than the last
 * one held (the card's data changed while it was asked for) is not
 * merged: broken is then true, and the card reads in full.
 */
export function mergeColumns(
  had: Record<string, Points>,
  hadLive: Record<string, Held>,
  answer: Record<string, ScalarColumns>,
): { byRun: Record<string, Points>; live: Record<string, Held>; broken: boolean } {
  const byRun: Record<string, Points> = {};
  const live: Record<string, Held> = {};
  let broken = false;
  for (const [run, c] of Object.entries(answer)) {
    const got = fromColumns(c);
    const p = had[run];
    const maxWall = num(c.max_wall_time ?? NaN);
    if (c.after !== undefined && !(p?.step.length && p.step[p.step.length - 1] === c.after)) {
      broken = true;
    } else if (c.after !== undefined) {
      byRun[run] = got.step.length ? { step: p.step.concat(got.step), wall: p.wall.concat(got.wall), value: p.value.concat(got.value) } : p;
      live[run] = { maxWall, appended: (hadLive[run]?.appended ?? 0) + got.step.length };
    } else {
      byRun[run] = got;
      live[run] = { maxWall, appended: 0 };
    }
  }
  return { byRun, live, broken };
}

/** What a zoom's read is keyed by: the x axis and the range; null unzoomed. */
export function zoomKey(s: Pick<ViewState, "x" | "zoom">): string | null {
  return s.zoom ? `${s.x}:${s.zoom[0]}:${s.zoom[1]}` : null;
}

/**
 * The step range to read for a zoom [a, b] on x axis x, mapped back to
 * steps through the points held (the whole read): of each run, from the
 * step of its last point at or before a (its first point, if none) to
 * that of its first point at or after b, so the lines run on past the
 * chart's edges; the union over the runs that have points. With no point
 * at or after b the window is open above (null: to the series' last step,
 * which points written since the whole read may have moved); with no run
 * holding points, open at both ends. For wall and relative time it relies on time growing
 * with step, as it does in a run that was not restarted.
 */
export function zoomWindow(byRun: Record<string, Points>, runs: string[], x: ViewState["x"], [a, b]: [number, number]): [number | null, number | null] {
  let lo = Infinity;
  let hi: number | null = -Infinity;
  for (const run of runs) {
    const p = byRun[run];
    if (!p?.step.length) continue;
    const xs = xValues(p, x);
    let from = -1;
    let to = -1;
    for (let i = 0; i < xs.length; i++) if (xs[i] <= a) from = i;
    for (let i = xs.length - 1; i >= 0; i--) if (xs[i] >= b) to = i;
    lo = Math.min(lo, p.step[Math.max(from, 0)]);
    hi = to < 0 || hi === null ? null : Math.max(hi, p.step[to]);
  }
  return [lo === Infinity ? null : lo, hi === -Infinity ? null : hi];
}

/**
 * Points per run for a chart width CSS pixels wide: one per column (200 at
 * least, for narrow charts zoomed in later).
 */
export function samplesFor(width: number): number {
  return Math.round(Math.min(Math.max(width, 200), 2000));
}

/** A run's last point as scalars_multirun's "after" takes it (a value JSON cannot hold goes as null). */
export interface TailFrom {
  step: number;
  wall_time: number;
  value: number | null;
  max_wall_time: number;
}

/**
 * A scalars_multirun request for a card: every run of the tag at samples
 * points each (bucketed as many), in columns; with a step window (a zoom's
 * read: null ends are open) and with after (a live page's tail).
 */
export function scalarsForm(
  tag: string,
  runs: string[],
  samples: number,
  opts: { minStep?: number | null; maxStep?: number | null; after?: Record<string, TailFrom> | null } = {},
): URLSearchParams {
  const form = new URLSearchParams({ tag, samples: String(samples), buckets: String(samples), format: "columns" });
  if (opts.minStep != null) form.set("min_step", String(opts.minStep));
  if (opts.maxStep != null) form.set("max_step", String(opts.maxStep));
  for (const r of runs) form.append("runs", r);
  if (opts.after && Object.keys(opts.after).length) form.set("after", JSON.stringify(opts.after));
  return form;
}

/**
 * What a live read asks each run for: the points past the last one held,
 * for runs that hold points, whose series' max wall time is known, and
 * whose appended points have not reached samples (those are read in full
 * again, so a card holds at most twice the points it draws).
 */
export function tailAfter(had: Record<string, Points>, hadLive: Record<string, Held>, runs: string[], samples: number): Record<string, TailFrom> {
  const after: Record<string, TailFrom> = {};
  for (const r of runs) {
    const p = had[r];
    const h = hadLive[r];
    const n = p?.step.length ?? 0;
    if (n && h && h.appended < samples && Number.isFinite(h.maxWall)) {
      const v = p.value[n - 1];
      after[r] = { step: p.step[n - 1], wall_time: p.wall[n - 1], value: Number.isFinite(v) ? v : null, max_wall_time: h.maxWall };
    }
  }
  return after;
}

/** The scalars plugin's run → tags index turned into tag → runs (runs in the index's order). */
export function tagRuns(idx: RunTagIndex): Map<string, string[]> {
  const m = new Map<string, string[]>();
  for (const [run, tags] of Object.entries(idx)) {
    for (const tag of Object.keys(tags)) {
      if (!m.has(tag)) m.set(tag, []);
      m.get(tag)!.push(run);
    }
  }
  return m;
}

/** The cards the view asks for: each tag the filter passes, sorted, with its shown runs; tags with none left out. */
export function scalarCards(index: Map<string, string[]>, shown: Set<string>, tagFilter: string): { tag: string; runs: string[] }[] {
  const filter = compileFilter(tagFilter);
  const tags = [...index.keys()].filter((t) => filter.test(t)).sort();
  return tags.map((t) => ({ tag: t, runs: index.get(t)!.filter((r) => shown.has(r)) })).filter((t) => t.runs.length);
}

/** An index as a string, to tell whether a new one differs (new tags, or new runs of a tag). */
export function indexKey(m: Map<string, string[]> | null): string {
  return m ? [...m].map(([t, rs]) => `${t}\n${rs.join("\n")}`).join("\n\n") : "";
}

/** The view changed so that the cards are laid out anew: the tag filter, pins or expanded cards. */
export function cardsChanged(s: ScalarsState & Pick<ViewState, "tagFilter">, prev: ScalarsState & Pick<ViewState, "tagFilter">): boolean {
  return s.tagFilter !== prev.tagFilter || s.pin.join("\n") !== prev.pin.join("\n") || s.expand.join("\n") !== prev.expand.join("\n");
}

/** The view changed so that every chart is built anew (smoothing, axes, groups, tooltip, zoom). */
export function chartsChanged(s: ScalarsState, prev: ScalarsState): boolean {
  return (
    s.ttsort !== prev.ttsort ||
    s.tttime !== prev.tttime ||
    s.smoothing !== prev.smoothing ||
    s.x !== prev.x ||
    s.logy !== prev.logy ||
    s.logx !== prev.logx ||
    s.group !== prev.group ||
    s.band !== prev.band ||
    s.ignoreOutliers !== prev.ignoreOutliers ||
    String(s.zoom) !== String(prev.zoom)
  );
}

/** How many of the runs' points lie in the zoom's x range (what a zoomed card says it shows). */
export function pointsInZoom(d: Record<string, Points>, runs: string[], x: ViewState["x"], zoom: [number, number]): number {
  return runs.reduce((n, r) => n + (d[r] ? xValues(d[r], x).filter((v) => v >= zoom[0] && v <= zoom[1]).length : 0), 0);
}

export type XAxis = "step" | "relative" | "wall";

export const DEFAULT_SMOOTHING = 0.6;

/** The scalar charts' options. */
export interface ScalarsState {
  smoothing: number;
  x: XAxis;
  logy: boolean;
  logx: boolean;
  ignoreOutliers: boolean;
  zoom: [number, number] | null;
  pin: string[];
  expand: string[];
  group: string;
  band: "minmax" | "std";
  ttsort: TooltipSort;
  /** The scalar tooltip shows wall and relative time. */
  tttime: boolean;
}

export const scalarsSlice: UrlSlice<ScalarsState> = {
  parse(q) {
    const sm = q.has("smoothing") ? Number(q.get("smoothing")) : DEFAULT_SMOOTHING;
    const x = q.get("x");
    return {
      smoothing: Number.isFinite(sm) ? Math.min(Math.max(sm, 0), 0.999) : DEFAULT_SMOOTHING,
      x: x === "relative" || x === "wall" ? x : "step",
      logy: q.get("logy") === "1",
      logx: q.get("logx") === "1",
      ignoreOutliers: q.get("outliers") !== "0",
      zoom: parseZoom(q.get("zoom")),
      pin: q.getAll("pin"),
      expand: q.getAll("expand"),
      group: q.get("group") ?? "",
      band: q.get("band") === "std" ? "std" : "minmax",
      ttsort: TOOLTIP_SORTS.find((o) => o.value === q.get("ttsort"))?.value ?? "descending",
      tttime: q.get("tttime") === "1",
    };
  },
  format(s, q) {
    if (s.smoothing !== DEFAULT_SMOOTHING) q.set("smoothing", String(s.smoothing));
    if (s.x !== "step") q.set("x", s.x);
    if (s.logy) q.set("logy", "1");
    if (s.logx) q.set("logx", "1");
    if (!s.ignoreOutliers) q.set("outliers", "0");
    if (s.zoom) q.set("zoom", `${s.zoom[0]},${s.zoom[1]}`);
    for (const p of s.pin) q.append("pin", p);
    for (const e of s.expand) q.append("expand", e);
    if (s.group) q.set("group", s.group);
    if (s.band !== "minmax") q.set("band", s.band);
    if (s.ttsort !== "descending") q.set("ttsort", s.ttsort);
    if (s.tttime) q.set("tttime", "1");
  },
};

function parseZoom(v: string | null): [number, number] | null {
  const [a, b] = (v ?? "").split(",").map(Number);
  return v && Number.isFinite(a) && Number.isFinite(b) && a < b ? [a, b] : null;
}
