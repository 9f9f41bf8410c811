// Smoothing and grouping of scalar series.

/**
 * Exponential moving average debiased the way TensorBoard does it: the
 * accumulator starts at 0, so after n finite points it is divided by
 * 1 − weight^n, which makes the first points equal their raw values
 * instead of being dragged towards 0. Non-finite values pass through
 * unchanged and do not enter the average. A constant series is returned
 * as is (the division would add rounding noise to a flat line).
 */
export function emaDebiased(values: ArrayLike<number>, weight: number): number[] {
  const n = values.length;
  const out = new Array<number>(n);
  let first = NaN;
  let constant = true;
  for (let i = 0; i < n; i++) {
    const v = values[i];
    if (!Number.isFinite(v)) continue;
    if (Number.isNaN(first)) first = v;
    else if (v !== first) {
      constant = false;
      break;
    }
  }
  if (weight <= 0 || constant) {
    for (let i = 0; i < n; i++) out[i] = values[i];
    return out;
  }
  let acc = 0;
  let count = 0;
  for (let i = 0; i < n; i++) {
    const v = values[i];
    if (!Number.isFinite(v)) {
      out[i] = v;
      continue;
    }
    acc = acc * weight + (1 - weight) * v;
    count++;
    out[i] = acc / (1 - Math.pow(weight, count));
  }
  return out;
}

/** One series: sorted xs with their ys. */
export interface XY {
  x: number[];
  y: number[];
}

/**
 * Merges several series onto the union of their x values, as uPlot wants
 * its data: one shared x array, one y array per series with null where a
 * series has no point at that x.
 */
export function alignSeries(series: XY[]): { x: number[]; ys: (number | null)[][] } {
  const all: number[] = [];
  for (const s of series) for (const v of s.x) all.push(v);
  all.sort((a, b) => a - b);
  const x: number[] = [];
  for (const v of all) if (x.length === 0 || x[x.length - 1] !== v) x.push(v);
  const index = new Map<number, number>();
  x.forEach((v, i) => index.set(v, i));
  const ys = series.map((s) => {
    const y = new Array<number | null>(x.length).fill(null);
    for (let i = 0; i < s.x.length; i++) {
      const v = s.y[i];
      y[index.get(s.x[i])!] = Number.isFinite(v) ? v : null;
    }
    return y;
  });
  return { x, ys };
}

/**
 * The mean, min, max and sample standard deviation (n − 1 in the
 * denominator; NaN for one series) across series at every x of their
 * union, each series carried forward from its previous point (and absent
 * before its first point and after its last).
 */
export function groupStats(series: XY[]): { x: number[]; mean: number[]; min: number[]; max: number[]; std: number[] } {
  const { x, ys } = alignSeries(series);
  const mean: number[] = [];
  const min: number[] = [];
  const max: number[] = [];
  const std: number[] = [];
  const last = series.map(() => NaN);
  const ends = series.map((s) => (s.x.length ? s.x[s.x.length - 1] : -Infinity));
  for (let i = 0; i < x.length; i++) {
    let sum = 0;
    let sumSq = 0;
    let cnt = 0;
    let lo = Infinity;
    let hi = -Infinity;
    for (let k = 0; k < ys.length; k++) {
      const v = ys[k][i];
      if (v !== null) last[k] = v;
      if (x[i] > ends[k] || Number.isNaN(last[k])) continue;
      sum += last[k];
      sumSq += last[k] * last[k];
      cnt++;
      lo = Math.min(lo, last[k]);
      hi = Math.max(hi, last[k]);
    }
    const m = cnt ? sum / cnt : NaN;
    mean.push(m);
    min.push(cnt ? lo : NaN);
    max.push(cnt ? hi : NaN);
    // Clamped: rounding can take a zero variance a little below zero.
    std.push(cnt > 1 ? Math.sqrt(Math.max(0, (sumSq - cnt * m * m) / (cnt - 1))) : NaN);
  }
  return { x, mean, min, max, std };
}

/**
 * A y range holding the values (of all the series) between the lo and hi
 * quantiles, padded by 5% each side; null (scale to everything) when there
 * are too few finite values, or when the full range is less than twice
 * that span: then there are no outliers worth cutting, and a smooth curve
 * keeps its ends.
 */
export function robustRange(series: ArrayLike<number>[], lo = 0.02, hi = 0.98): [number, number] | null {
  return quantileRange(series.map(sortedFinite), lo, hi);
}

/** The finite values of ys, sorted ascending. */
export function sortedFinite(ys: ArrayLike<number>): Float64Array {
  const v = new Float64Array(ys.length);
  let n = 0;
  for (let i = 0; i < ys.length; i++) if (Number.isFinite(ys[i])) v[n++] = ys[i];
  // A typed array sorts numerically, without a comparator.
  return v.subarray(0, n).sort();
}

/**
 * robustRange of series given as their sortedFinite arrays. A chart keeps
 * those of its lines, so that the range of another subset of them (a run
 * toggled) costs a search, not a pass over every value: each quantile is
 * found by bisecting the doubles between the smallest and largest value
 * (at most 64 steps), counting the values at or below the middle with a
 * binary search in each series.
 */
export function quantileRange(sorted: Float64Array[], lo = 0.02, hi = 0.98): [number, number] | null {
  let n = 0;
  let min = Infinity;
  let max = -Infinity;
  for (const v of sorted) {
    if (!v.length) continue;
    n += v.length;
    if (v[0] < min) min = v[0];
    if (v[v.length - 1] > max) max = v[v.length - 1];
  }
  if (n < 20) return null;
  const a = kthSmallest(sorted, Math.floor(lo * (n - 1)), min, max);
  const b = kthSmallest(sorted, Math.ceil(hi * (n - 1)), min, max);
  if (!(b > a) || max - min < 2 * (b - a)) return null;
  const pad = (b - a) * 0.05;
  return [a - pad, b + pad];
}

/** How many values of the sorted series are at most x. */
function countAtMost(sorted: Float64Array[], x: number): number {
  let count = 0;
  for (const v of sorted) {
    let a = 0;
    let b = v.length;
    while (a < b) {
      const m = (a + b) >> 1;
      if (v[m] <= x) a = m + 1;
      else b = m;
    }
    count += a;
  }
  return count;
}

const bits = new DataView(new ArrayBuffer(8));
const SIGN = 1n << 63n;
const ALL = (1n << 64n) - 1n;

/** A key per double that orders as the doubles do (finite ones, -0 just below +0). */
function orderKey(x: number): bigint {
  bits.setFloat64(0, x);
  const b = bits.getBigUint64(0);
  return b & SIGN ? ~b & ALL : b | SIGN;
}

function fromOrderKey(k: bigint): number {
  bits.setBigUint64(0, k & SIGN ? k & ~SIGN & ALL : ~k & ALL);
  return bits.getFloat64(0);
}

/**
 * The k-th smallest (from 0) of the values of the sorted series, whose
 * smallest is min and largest max: the least double x with more than k
 * values at or below it, which is one of the values.
 */
function kthSmallest(sorted: Float64Array[], k: number, min: number, max: number): number {
  if (countAtMost(sorted, min) > k) return min;
  // Invariant: at most k values <= the double of lo, more at or below hi's.
  let lo = orderKey(min);
  let hi = orderKey(max);
  while (hi - lo > 1n) {
    const mid = (lo + hi) >> 1n;
    if (countAtMost(sorted, fromOrderKey(mid)) > k) hi = mid;
    else lo = mid;
  }
  return fromOrderKey(hi);
}
