import { describe, expect, it } from "vitest";
import { niceTicks } from "./histograms";

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
