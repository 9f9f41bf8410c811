import { describe, expect, it } from "vitest";
import { hitAtClient, hitHistogram, histogramLayout, niceTicks, type Histogram, type HistogramLayout } from "./histograms";

describe("niceTicks", () => {
  it("rounds the ticks of an odd range", () => {
    expect(niceTicks(0.019142, 8.7742).labels).toEqual(["2", "4", "6", "8"]);
  });
  it("keeps as many decimals as the step needs", () => {
    expect(niceTicks(-0.013, 0.0871).labels).toEqual(["0.00", "0.02", "0.04", "0.06", "0.08"]);
    expect(niceTicks(0, 1).labels).toEqual(["0.0", "0.2", "0.4", "0.6", "0.8", "1.0"]);
  });
  it("never repeats a label", () => {
    for (const [lo, hi] of [[10000, 10001], [0.1, 0.1000001], [-5, 5], [1e6, 3e6]]) {
      const { labels } = niceTicks(lo, hi);
      expect(new Set(labels).size).toBe(labels.length);
    }
  });
});

describe("hitHistogram", () => {
  // Three steps over the buckets [0, 1), [1, 2), [2, 3); step 20's middle
  // bucket is the tallest.
  const hists: Histogram[] = [10, 20, 30].map((step, k) => ({
    step,
    buckets: [0, 1, 2].map((left) => ({ left, right: left + 1, count: left === 1 ? 2 + 4 * (k === 1 ? 1 : 0) : 1 + k })),
  }));
  const mid = (l: HistogramLayout, v: number) => l.x(v);

  it("picks, in offset mode, the ridge the pointer is over and the bucket under it", () => {
    const l = histogramLayout(hists, "offset", 320, 220);
    // Just above each baseline, in the middle of the second bucket.
    for (let i = 0; i < 3; i++) {
      const hit = hitHistogram(l, mid(l, 1.5), l.base(i) - 1)!;
      expect(hit.step).toBe(hists[i].step);
      expect(hit.bucket).toEqual(hists[i].buckets[1]);
      expect(hit.y).toBeCloseTo(l.y(i, hists[i].buckets[1].count));
    }
    expect(hitHistogram(l, mid(l, 0.5), 0)!.step).toBe(10); // above every ridge: the first
    const below = hitHistogram(l, mid(l, 2.9), l.base(2) + 5)!; // below the last baseline (the axis): the last
    expect(below.step).toBe(30);
    expect(below.bucket.left).toBe(2);
  });

  it("picks, in overlay mode, the histogram whose line passes nearest the pointer", () => {
    const l = histogramLayout(hists, "overlay", 320, 220);
    for (let i = 0; i < 3; i++) {
      const b = hists[i].buckets[0];
      expect(hitHistogram(l, mid(l, 0.5), l.y(i, b.count) + 0.5)!.step).toBe(hists[i].step);
    }
    // Step 20's tall middle bucket stands alone at the top.
    expect(hitHistogram(l, mid(l, 1.5), 8)!.step).toBe(20);
    // Steps 10 and 30 have the same middle bucket: the later, drawn on top.
    expect(hitHistogram(l, mid(l, 1.5), l.y(0, 2))!.step).toBe(30);
  });

  it("takes, in overlay mode, only histograms drawn at the pointer's x", () => {
    // Step 1 lies in [0, 1); step 2 spans [0, 10). At x = 8 only step 2 is
    // drawn, even with the pointer up where step 1's peak is.
    const l = histogramLayout(
      [
        { step: 1, buckets: [{ left: 0, right: 1, count: 10 }] },
        { step: 2, buckets: [{ left: 0, right: 5, count: 1 }, { left: 5, right: 10, count: 1 }] },
      ],
      "overlay",
      320,
      220,
    );
    expect(hitHistogram(l, l.x(8), l.y(0, 10))!.step).toBe(2);
    expect(hitHistogram(l, l.x(0.5), l.y(0, 10))!.step).toBe(1);
  });

  it("is nothing outside the plot", () => {
    const l = histogramLayout(hists, "offset", 320, 220);
    expect(hitHistogram(l, 2, 100)).toBeNull(); // in the left padding
    expect(hitHistogram(l, 300, 100)).toBeNull(); // over the step labels
    expect(hitHistogram(l, 100, 230)).toBeNull();
    expect(hitHistogram(histogramLayout([], "offset", 320, 220), 100, 100)).toBeNull();
  });

  it("finds the spike of a bucket of no width, and the nearest bucket between buckets", () => {
    const constant: Histogram[] = [{ step: 5, buckets: [{ left: 0.5, right: 0.5, count: 100 }] }];
    const l = histogramLayout(constant, "offset", 320, 220);
    const x = l.x(0.5);
    expect(hitHistogram(l, x + 1, l.base(0) - 1)!.bucket.count).toBe(100);
    expect(hitHistogram(l, l.pad.l + 1, l.base(0) - 1)!.bucket.count).toBe(100);
    const gappy: Histogram[] = [{ step: 1, buckets: [{ left: 0, right: 1, count: 3 }, { left: 9, right: 10, count: 7 }] }];
    const g = histogramLayout(gappy, "overlay", 320, 220);
    expect(hitHistogram(g, g.x(2), 100)!.bucket.count).toBe(3);
    expect(hitHistogram(g, g.x(8), 100)!.bucket.count).toBe(7);
  });

  it("reports the step drawn when steps are thinned out", () => {
    const many: Histogram[] = Array.from({ length: 101 }, (_, k) => ({ step: k * 10, buckets: [{ left: 0, right: 1, count: k + 1 }] }));
    const l = histogramLayout(many, "offset", 320, 220);
    expect(l.pick.length).toBeLessThan(many.length);
    expect(hitHistogram(l, l.x(0.5), 220 - 21)!.step).toBe(1000);
    expect(hitHistogram(l, l.x(0.5), 0)!.step).toBe(0);
    const steps = new Set(l.pick.map((h) => h.step));
    for (let y = 0; y < 220; y += 3) expect(steps.has(hitHistogram(l, l.x(0.5), y)!.step)).toBe(true);
  });

  it("maps a pointer through the canvas's bounding box, whatever its scale", () => {
    const l = histogramLayout(hists, "offset", 320, 220);
    const target = { x: l.x(1.5), y: l.base(1) - 1 };
    // The canvas at (100, 50) on the page, drawn at its size, then shown
    // at twice and at half its size (CSS transform or zoom).
    for (const scale of [1, 2, 0.5]) {
      const box = { left: 100, top: 50, width: 320 * scale, height: 220 * scale };
      const hit = hitAtClient(l, box, box.left + target.x * scale, box.top + target.y * scale)!;
      expect(hit.step).toBe(20);
      expect(hit.bucket.left).toBe(1);
    }
    expect(hitAtClient(l, { left: 0, top: 0, width: 0, height: 0 }, 10, 10)).toBeNull();
  });
});
