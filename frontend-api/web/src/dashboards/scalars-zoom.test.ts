import { describe, expect, it } from "vitest";
import { zoomKey, zoomWindow, type Points } from "./scalars-model";

// Two runs held as a whole bucketed read: a, steps 0..1000 every 100
// (wall = 1000 + step); b, steps 500..1500 every 250, started later.
const byRun: Record<string, Points> = {
  a: { step: [0, 100, 200, 300, 400, 500, 600, 700, 800, 900, 1000], wall: [1000, 1100, 1200, 1300, 1400, 1500, 1600, 1700, 1800, 1900, 2000], value: Array(11).fill(1) },
  b: { step: [500, 750, 1000, 1250, 1500], wall: [5000, 5250, 5500, 5750, 6000], value: Array(5).fill(2) },
};

describe("zoomWindow", () => {
  it("maps a step zoom to the held points around it, over every run", () => {
    expect(zoomWindow(byRun, ["a"], "step", [250, 260])).toEqual([200, 300]);
    expect(zoomWindow(byRun, ["a", "b"], "step", [250, 260])).toEqual([200, 500]);
    expect(zoomWindow(byRun, ["a", "b"], "step", [1100, 1200])).toEqual([1000, null]); // past a's last point
    // Past a run's last point: open-ended (points may have come since).
    expect(zoomWindow(byRun, ["a"], "step", [950, 1100])).toEqual([900, null]);
    expect(zoomWindow(byRun, ["b"], "step", [0, 600])).toEqual([500, 750]);
    expect(zoomWindow(byRun, ["a"], "step", [300, 300])).toEqual([300, 300]);
  });
  it("maps wall and relative zooms back to steps through the points", () => {
    expect(zoomWindow(byRun, ["a"], "wall", [1250, 1450])).toEqual([200, 500]);
    // Relative: each run from its own first wall time.
    expect(zoomWindow(byRun, ["a", "b"], "relative", [0, 100])).toEqual([0, 750]);
    expect(zoomWindow(byRun, ["a", "b"], "relative", [0.5, 100])).toEqual([0, 750]);
  });
  it("is open when no shown run has points", () => {
    expect(zoomWindow(byRun, ["c"], "step", [0, 10])).toEqual([null, null]);
  });
});

describe("zoomKey", () => {
  it("names the axis and the range, null unzoomed", () => {
    expect(zoomKey({ x: "step", zoom: null })).toBeNull();
    expect(zoomKey({ x: "wall", zoom: [1, 2] })).toBe("wall:1:2");
  });
});
