import { describe, expect, it } from "vitest";
import { logRange, logSplits, MAX_LOG_DECADES } from "./logaxis";

describe("logRange", () => {
  it("spans at most 30 decades below the largest value (a smoothed line decaying towards 0 reaches 1e-220)", () => {
    expect(logRange(1e-220, 1)).toEqual([1e-30, 1]);
    expect(logRange(5e-324, 0.7)).toEqual([1e-30, 0.7]);
    expect(MAX_LOG_DECADES).toBe(30);
  });
  it("rounds its ends outwards to one significant digit", () => {
    expect(logRange(0.0037, 37)).toEqual([0.003, 40]);
    expect(logRange(0.3, 0.9)).toEqual([0.3, 0.9]);
  });
  it("puts a decade either side of a single value; a default when nothing is drawn", () => {
    expect(logRange(5, 5)).toEqual([0.5, 50]);
    expect(logRange(Infinity, -Infinity)).toEqual([1, 10]);
    expect(logRange(null, null)).toEqual([1, 10]);
  });
  it("works at any magnitude", () => {
    expect(logRange(1e-40, 1e-37)).toEqual([1e-40, 1e-37]);
    expect(logRange(2e300, 3e300)).toEqual([2e300, 3e300]);
  });
});

describe("logSplits", () => {
  it("ticks at 1× … 9× each decade over a few decades", () => {
    expect(logSplits(0.003, 0.02)).toEqual([0.003, 0.004, 0.005, 0.006, 0.007, 0.008, 0.009, 0.01, 0.02]);
  });
  it("ticks every power of ten over many decades, as few as they are", () => {
    const s = logSplits(1e-30, 1);
    expect(s.length).toBe(31);
    expect(s[0]).toBe(1e-30);
    expect(s[30]).toBe(1);
  });
  it("ticks values far below 1e-25 (where uPlot's own splits never end)", () => {
    expect(logSplits(1e-40, 1e-37)).toEqual([1e-40, 2e-40, 3e-40, 4e-40, 5e-40, 6e-40, 7e-40, 8e-40, 9e-40, 1e-39, 2e-39, 3e-39, 4e-39, 5e-39, 6e-39, 7e-39, 8e-39, 9e-39, 1e-38, 2e-38, 3e-38, 4e-38, 5e-38, 6e-38, 7e-38, 8e-38, 9e-38, 1e-37]);
  });
  it("is empty for a range it cannot tick", () => {
    expect(logSplits(0, 1)).toEqual([]);
    expect(logSplits(NaN, 1)).toEqual([]);
  });
});
