// The range and ticks of a log axis, in place of uPlot's own: uPlot's
// log splits loop forever (then throw "Invalid array length") once the
// axis reaches below about 1e-25, which a smoothed line decaying towards
// zero does (0.6^1000 ≈ 1e-222), and its range turns to NaN at
// subnormal values. Kept apart from linechart.ts so that it is unit-tested.

/** How many decades a log axis spans at most, down from its top. */
export const MAX_LOG_DECADES = 30;

/** Above this many decades a log axis has a tick per decade only (not at 2×, 3×, … 9×). */
const FINE_DECADES = 12;

/** m × 10^e, exactly as written in decimal (1e-5, not 0.000009999999999999999). */
function dec(m: number, e: number): number {
  return Number(`${m}e${e}`);
}

function decade(v: number): number {
  return Math.floor(Math.log10(v));
}

/** v rounded down (dir -1) or up (dir 1) to one significant digit: 0.0037 → 0.003 or 0.004. */
function roundTo1(v: number, dir: 1 | -1): number {
  const e = decade(v);
  // The mantissa to 12 digits: 0.3 / 0.1 is 2.9999999999999996.
  const m = Number((v / 10 ** e).toPrecision(12));
  return dec(dir < 0 ? Math.floor(m) : Math.ceil(m), e);
}

/**
 * The range of a log axis over drawn values from min to max (both above
 * zero, or not finite when nothing is drawn): each end rounded outwards to
 * one significant digit, a decade either side of a single value, and at
 * most MAX_LOG_DECADES decades below the top (smaller values run off the
 * bottom of the chart; the tooltip still says them).
 */
export function logRange(min: number | null, max: number | null): [number, number] {
  if (max === null || !(max > 0) || !Number.isFinite(max)) return [1, 10];
  if (min === null || !(min > 0) || min > max) min = max;
  if (min === max) [min, max] = [min / 10, max * 10];
  const hi = Math.min(roundTo1(max, 1), Number.MAX_VALUE);
  const floor = dec(1, Math.ceil(Math.log10(hi)) - MAX_LOG_DECADES);
  const lo = min < floor ? floor : roundTo1(min, -1);
  return [lo, hi];
}

/**
 * The ticks of a log axis from lo to hi: at 1×, 2×, … 9× every decade,
 * or at every power of ten when the axis spans more than FINE_DECADES
 * decades. (uPlot picks which of them are labelled, by the room there is.)
 */
export function logSplits(lo: number, hi: number): number[] {
  if (!(lo > 0) || !(hi >= lo) || !Number.isFinite(hi)) return [];
  const e0 = decade(lo);
  const e1 = decade(hi);
  const mantissas = e1 - e0 > FINE_DECADES ? [1] : [1, 2, 3, 4, 5, 6, 7, 8, 9];
  const out: number[] = [];
  // A little slack: the range's ends are decimal too, but may have been computed.
  const [a, b] = [lo * (1 - 1e-9), hi * (1 + 1e-9)];
  for (let e = e0; e <= e1; e++)
    for (const m of mantissas) {
      const v = dec(m, e);
      if (v >= a && v <= b) out.push(v);
    }
  return out;
}
