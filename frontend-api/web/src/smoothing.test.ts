import { describe, expect, it } from "vitest";
import { alignSeries, emaDebiased, groupStats, quantileRange, robustRange, sortedFinite } from "./smoothing";

describe("emaDebiased", () => {
  it("keeps the first point and follows the debiased average", () => {
    const out = emaDebiased([1, 2, 3], 0.5);
    expect(out[0]).toBeCloseTo(1);
    // acc after 2 points: (0.5*0.5 + 1) = 1.25; /(1-0.25) = 5/3
    expect(out[1]).toBeCloseTo(5 / 3);
    // acc: 1.25*0.5 + 1.5 = 2.125; /(1-0.125) = 2.4286
    expect(out[2]).toBeCloseTo(2.125 / 0.875);
  });
  it("is the identity at weight 0 and on constant series", () => {
    expect(emaDebiased([3, 1, 2], 0)).toEqual([3, 1, 2]);
    expect(emaDebiased([0.1, 0.1, 0.1], 0.9)).toEqual([0.1, 0.1, 0.1]);
  });
  it("passes non-finite values through without poisoning the average", () => {
    const out = emaDebiased([1, NaN, 3, Infinity], 0.5);
    expect(out[1]).toBeNaN();
    expect(out[3]).toBe(Infinity);
    expect(out[2]).toBeCloseTo((0.5 * 0.5 + 1.5) / 0.75);
  });
});

describe("alignSeries", () => {
  it("unions x values and fills gaps with null", () => {
    const { x, ys } = alignSeries([
      { x: [0, 2], y: [1, 3] },
      { x: [1, 2], y: [5, NaN] },
    ]);
    expect(x).toEqual([0, 1, 2]);
    expect(ys).toEqual([
      [1, null, 3],
      [null, 5, null],
    ]);
  });
});

describe("groupStats", () => {
  it("carries each series forward within its own range", () => {
    const g = groupStats([
      { x: [0, 2], y: [0, 2] },
      { x: [1], y: [10] },
    ]);
    expect(g.x).toEqual([0, 1, 2]);
    expect(g.mean).toEqual([0, 5, 2]);
    expect(g.min).toEqual([0, 0, 2]);
    expect(g.max).toEqual([0, 10, 2]);
    // Sample standard deviation: none with one series.
    expect(g.std[0]).toBeNaN();
    expect(g.std[1]).toBeCloseTo(Math.SQRT2 * 5);
  });
  it("gives the sample standard deviation across series", () => {
    const g = groupStats([
      { x: [0, 1], y: [1, 4] },
      { x: [0, 1], y: [2, 4] },
      { x: [0, 1], y: [6, 4] },
    ]);
    expect(g.mean).toEqual([3, 4]);
    expect(g.std[0]).toBeCloseTo(Math.sqrt(7));
    expect(g.std[1]).toBe(0);
  });
});

describe("robustRange", () => {
  it("leaves a spike out of the range", () => {
    const v = Array.from({ length: 100 }, (_, i) => i / 100);
    v[50] = 1e6;
    const [a, b] = robustRange([v])!;
    expect(a).toBeLessThan(0.05);
    expect(b).toBeLessThan(2);
  });
  it("keeps the whole of a curve without outliers", () => {
    expect(robustRange([Array.from({ length: 100 }, (_, i) => 1 - Math.exp(-i / 20))])).toBeNull();
  });
  it("picks the quantiles a sort would, across series", () => {
    let seed = 7;
    const rnd = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648) ** 3;
    for (let trial = 0; trial < 20; trial++) {
      const series = Array.from({ length: 1 + (trial % 5) }, () => Array.from({ length: 50 + trial * 37 }, () => rnd() * 100 - 5));
      series[0][3] = 1e9;
      series[0][4] = NaN;
      const sorted = series.flat().filter(Number.isFinite).sort((x, y) => x - y);
      const a = sorted[Math.floor(0.02 * (sorted.length - 1))];
      const b = sorted[Math.ceil(0.98 * (sorted.length - 1))];
      const cut = sorted[sorted.length - 1] - sorted[0] >= 2 * (b - a);
      expect(robustRange(series)).toEqual(cut ? [a - (b - a) * 0.05, b + (b - a) * 0.05] : null);
      if (trial >= 10) expect(cut).toBe(true);
    }
  });
  it("finds the quantiles across signs, magnitudes and repeated values", () => {
    const odd = [-1e300, -3, -0, 0, 0, 0, 1e-300, 5e-324, 2, 2, 2, 7.5, 1e12, 1e300, -Infinity, NaN];
    let seed = 11;
    const rnd = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
    for (let trial = 0; trial < 30; trial++) {
      const series = Array.from({ length: 1 + (trial % 4) }, () => Array.from({ length: 10 + trial * 5 }, () => odd[Math.floor(rnd() * odd.length)] * (rnd() < 0.3 ? rnd() : 1)));
      const sorted = series.flat().filter(Number.isFinite).sort((x, y) => x - y);
      if (sorted.length < 20) continue;
      const a = sorted[Math.floor(0.1 * (sorted.length - 1))];
      const b = sorted[Math.ceil(0.9 * (sorted.length - 1))];
      const cut = b > a && sorted[sorted.length - 1] - sorted[0] >= 2 * (b - a);
      expect(quantileRange(series.map(sortedFinite), 0.1, 0.9)).toEqual(cut ? [a - (b - a) * 0.05, b + (b - a) * 0.05] : null);
    }
  });
  it("gives up on short or flat series", () => {
    expect(robustRange([[1, 2, 3]])).toBeNull();
    expect(robustRange([new Array(50).fill(2)])).toBeNull();
  });
});
