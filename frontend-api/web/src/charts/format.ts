// Number formatting and tooltip ordering of the line charts, apart from
// linechart.ts (which needs a DOM and uPlot) so that it is unit-tested.

const SI = ["", "k", "M", "G", "T", "P", "E"];

/**
 * v with p significant digits: 1M, 20.01k, 0.25, 2.5e-4. Thousands and
 * more (from 10,000) take an SI suffix, as TensorBoard's axes do, instead
 * of 1e+6; below 0.001 an exponent.
 */
export function fmtSI(v: number, p = 5): string {
  if (!Number.isFinite(v)) return Number.isNaN(v) ? "NaN" : v > 0 ? "∞" : "−∞";
  if (v === 0) return "0";
  const a = Math.abs(v);
  if (a >= 1e4) {
    let k = Math.min(Math.floor(Math.log10(a) / 3), SI.length - 1);
    let m = Number((v / 1000 ** k).toPrecision(p));
    // 999,999 at 3 digits is 1000k: say 1M.
    if (Math.abs(m) >= 1000 && k < SI.length - 1) {
      k++;
      m = Number((v / 1000 ** k).toPrecision(p));
    }
    return `${m}${SI[k]}`;
  }
  if (a < 1e-3) return v.toExponential(Math.max(p - 1, 0)).replace(/\.?0+e/, "e");
  return String(Number(v.toPrecision(p)));
}

/**
 * Labels for an axis's ticks: each with the fewest significant digits
 * (the same for all) that still says its value, so neighbours differ
 * (20k, 20.01k) and float noise goes (0.30000000000000004 is 0.3).
 */
export function fmtTicks(splits: (number | null)[]): string[] {
  const vals = splits.filter((v): v is number => v !== null && Number.isFinite(v));
  const sorted = [...new Set(vals)].sort((a, b) => a - b);
  let step = Infinity;
  for (let i = 1; i < sorted.length; i++) step = Math.min(step, sorted[i] - sorted[i - 1]);
  if (!Number.isFinite(step)) step = Math.abs(sorted[0] ?? 1) || 1;
  const tol = step * 1e-6;
  let p = 1;
  for (; p < 12; p++) if (vals.every((v) => Math.abs(Number(v.toPrecision(p)) - v) <= tol)) break;
  return splits.map((v) => (v === null ? "" : fmtSI(v, p)));
}

/** How tooltip rows are ordered (TensorBoard's choices). */
export type TooltipSort = "descending" | "ascending" | "alphabetical" | "nearest" | "default";

export const TOOLTIP_SORTS: { value: TooltipSort; label: string }[] = [
  { value: "descending", label: "value ↓" },
  { value: "ascending", label: "value ↑" },
  { value: "alphabetical", label: "name" },
  { value: "nearest", label: "nearest" },
  { value: "default", label: "run order" },
];

export interface TooltipRow {
  label: string;
  y: number;
  /** Distance in pixels from the cursor to the line's point (for "nearest"). */
  dist: number;
}

const collator = new Intl.Collator(undefined, { numeric: true, sensitivity: "base" });

/** rows ordered by sort (stable; NaN values last when ordering by value). */
export function sortRows<T extends TooltipRow>(rows: T[], sort: TooltipSort): T[] {
  const key = (y: number) => (Number.isNaN(y) ? null : y);
  const byValue = (dir: 1 | -1) => (a: T, b: T) => {
    const ka = key(a.y);
    const kb = key(b.y);
    if (ka === null || kb === null) return ka === kb ? 0 : ka === null ? 1 : -1;
    return ka === kb ? 0 : (ka < kb ? -1 : 1) * dir;
  };
  switch (sort) {
    case "descending":
      return [...rows].sort(byValue(-1));
    case "ascending":
      return [...rows].sort(byValue(1));
    case "alphabetical":
      return [...rows].sort((a, b) => collator.compare(a.label, b.label));
    case "nearest":
      return [...rows].sort((a, b) => a.dist - b.dist);
    default:
      return rows;
  }
}

/** Rows the tooltip shows until asked for all of them (the rest are said as "+K more"). */
export const TOOLTIP_ROWS = 10;

/**
 * The n rows of sorted nearest the cursor's value (smallest dist), in the
 * order of sorted: a 100-run tooltip shows the runs around the point
 * looked at instead of covering the screen.
 */
export function nearestRows<T extends TooltipRow>(sorted: T[], n: number): T[] {
  if (sorted.length <= n) return sorted;
  const keep = new Set([...sorted].sort((a, b) => a.dist - b.dist).slice(0, n));
  return sorted.filter((r) => keep.has(r));
}

/** The key that shows a tooltip's every row, or the nearest ones again. */
export const TOOLTIP_ALL_KEY = "a";

/**
 * The note under a tooltip's rows for the hidden ones: how many, and how
 * to see them (the key while the nearest are shown; when all are asked
 * for, the rows that do not fit the window scroll once pinned).
 */
export function moreNote(hidden: number, all: boolean): string {
  if (hidden <= 0) return "";
  return all ? `+${hidden} more (click to pin and scroll)` : `+${hidden} more (press ${TOOLTIP_ALL_KEY.toUpperCase()} for all)`;
}

/** The margin boxes placed by beside and placeBox keep from the viewport's edges. */
const MARGIN = 4;

/**
 * Where a box of size `size` starts along one axis of a viewport `view`
 * long, beside a cursor at p: gap after it when it fits, else gap before
 * it, moved back inside (a margin of 4 px; a box longer than the viewport
 * starts at its start).
 */
export function beside(p: number, size: number, gap: number, view: number): number {
  const at = p + gap + size <= view - MARGIN ? p + gap : p - gap - size;
  return Math.max(MARGIN, Math.min(at, view - MARGIN - size));
}

/**
 * Where a box w × h goes beside a cursor at (x, y) in a viewport vw × vh:
 * to its right, else to its left, moved back inside (a margin of 4 px);
 * a box taller than the viewport starts at its top.
 */
export function placeBox(x: number, y: number, w: number, h: number, vw: number, vh: number): { left: number; top: number } {
  return { left: beside(x, w, 12, vw), top: Math.max(MARGIN, Math.min(y - 10, vh - MARGIN - h)) };
}
