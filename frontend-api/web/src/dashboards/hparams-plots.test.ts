import { describe, expect, it } from "vitest";
import { linePoints, makeAxis, matrixCellSize, matrixLayout, MISSING, niceTicks, parallelScale, rampColor, sharedRows, type Column, type Row } from "./hparams-plots";

describe("niceTicks", () => {
  it("steps by 1, 2 or 5 times a power of ten, inside the range", () => {
    expect(niceTicks(0, 1, 5)).toEqual([0, 0.2, 0.4, 0.6, 0.8, 1]);
    expect(niceTicks(0.0013, 0.0102, 4)).toEqual([0.002, 0.004, 0.006, 0.008, 0.01]);
    expect(niceTicks(-7, 23, 3)).toEqual([0, 10, 20]);
    expect(niceTicks(-0.35, -0.05, 3)).toEqual([-0.3, -0.2, -0.1]);
  });
  it("gives the one value of an empty range, none of a bad one", () => {
    expect(niceTicks(3, 3)).toEqual([3]);
    expect(niceTicks(NaN, 1)).toEqual([]);
  });
});

describe("makeAxis", () => {
  it("is numeric when every present value is a number", () => {
    const a = makeAxis([0.1, undefined, 0.3, 0.2]);
    expect(a.numeric).toBe(true);
    expect(a.pos(0.1)).toBe(0);
    expect(a.pos(0.3)).toBeCloseTo(1);
    expect(a.pos(0.2)).toBeCloseTo(0.5);
    expect(a.pos(undefined)).toBeUndefined();
  });
  it("puts a single number in the middle", () => {
    const a = makeAxis([4, 4]);
    expect(a.pos(4)).toBeCloseTo(0.5);
  });
  it("spreads categories evenly in natural order", () => {
    const a = makeAxis(["sgd", "adam", "true", "adam", "layer10", "layer2"]);
    expect(a.numeric).toBe(false);
    expect(a.categories).toEqual(["adam", "layer2", "layer10", "sgd", "true"]);
    expect(a.pos("adam")).toBe(0);
    expect(a.pos("true")).toBe(1);
    expect(a.pos("layer10")).toBe(0.5);
    expect(a.pos("missing")).toBeUndefined();
    expect(a.ticks().map(([, t]) => t)).toEqual(a.categories);
  });
  it("treats a column mixing numbers and strings as categories", () => {
    const a = makeAxis([1, "two", 3]);
    expect(a.numeric).toBe(false);
    expect(a.categories).toEqual(["1", "3", "two"]);
    expect(a.pos(3)).toBe(0.5);
  });
});

describe("rampColor", () => {
  it("runs from blue to orange and is grey when missing", () => {
    expect(rampColor(0)).toBe("hsl(220, 75%, 50%)");
    expect(rampColor(1)).toBe("hsl(25, 75%, 50%)");
    expect(rampColor(2)).toBe(rampColor(1));
    expect(rampColor(undefined)).toBe("#888");
  });
});

describe("missing values in parallel coordinates", () => {
  // Two hyperparameters and a metric; group b never reached the metric,
  // group c has no optimizer.
  const rows: Row[] = [
    { name: "a", cells: ["a", 1, "adam", 0.9] },
    { name: "b", cells: ["b", 3, "sgd", undefined] },
    { name: "c", cells: ["c", 2, undefined, 0.7] },
  ];
  const cols = [1, 2, 3];
  const axes = cols.map((i) => makeAxis(rows.map((r) => r.cells[i])));
  it("put a line on every axis, a missing value on the missing band", () => {
    expect(linePoints(rows[0], cols, axes)).toEqual([0, 0, 1]);
    expect(linePoints(rows[1], cols, axes)).toEqual([1, 1, MISSING]);
    expect(linePoints(rows[2], cols, axes)).toEqual([0.5, MISSING, 0]);
  });
  it("draw the band below the axis and map the pointer back to it", () => {
    const s = parallelScale(40, 300, true);
    const [bandTop, bandBottom] = s.band!;
    expect(bandTop).toBeGreaterThan(s.y(0));
    expect(s.y(MISSING)).toBeGreaterThan(bandTop);
    expect(s.y(MISSING)).toBeLessThan(bandBottom);
    expect(s.t(s.y(MISSING))).toBe(MISSING);
    expect(s.t(bandBottom + 30)).toBe(MISSING); // below the band still means it
    expect(s.t(s.y(0.25))).toBeCloseTo(0.25);
    expect(s.t((s.y(0) + bandTop) / 2)).toBe(0); // the gap is the axis's end
    expect(s.t(0)).toBe(1);
  });
  it("have no band when nothing is missing", () => {
    const s = parallelScale(40, 300, false);
    expect(s.band).toBeNull();
    expect(s.t(1000)).toBe(0);
  });
});

describe("the scatter plot matrix", () => {
  // Two hyperparameters and two metrics; the trials record accuracy, the
  // study groups loss and no units, so units never meets loss.
  const columns: Column[] = [
    { label: "Session group", kind: "name" },
    { label: "lr", kind: "hparam" },
    { label: "units", kind: "hparam" },
    { label: "accuracy", kind: "metric" },
    { label: "loss", kind: "metric" },
  ];
  const rows: Row[] = [
    { name: "trial-0", cells: ["trial-0", 0.1, 16, 0.8, undefined] },
    { name: "trial-1", cells: ["trial-1", 0.01, 32, 0.9, undefined] },
    { name: "study-0", cells: ["study-0", 0.5, undefined, undefined, 1.5] },
    { name: "study-1", cells: ["study-1", 0.2, undefined, NaN, 1.2] },
  ];
  it("has a row per metric and a column per hyperparameter and metric, a cell per pair of different columns", () => {
    const m = matrixLayout(columns, rows, [3, 4, 1, 2]);
    expect(m.xs).toEqual([1, 2, 3, 4]);
    expect(m.ys).toEqual([3, 4]);
    expect(m.cells.map((c) => [c.x, c.y])).toEqual([
      [1, 3], [2, 3], [4, 3],
      [1, 4], [2, 4], [3, 4],
    ]);
  });
  it("counts the groups each pair shares (a NaN is not drawn), none where no group has both", () => {
    const shared = Object.fromEntries(matrixLayout(columns, rows, [1, 2, 3, 4]).cells.map((c) => [`${columns[c.x].label}/${columns[c.y].label}`, c.shared]));
    expect(shared).toEqual({ "lr/accuracy": 2, "units/accuracy": 2, "loss/accuracy": 0, "lr/loss": 2, "units/loss": 0, "accuracy/loss": 0 });
    expect(sharedRows(rows, 2, 4)).toBe(0);
    expect(sharedRows(rows, 1, 2)).toBe(2);
  });
  it("pairs every column when there is no metric", () => {
    const m = matrixLayout(columns, rows, [1, 2]);
    expect(m.ys).toEqual([1, 2]);
    expect(m.cells.map((c) => [c.x, c.y])).toEqual([[2, 1], [1, 2]]);
  });
  it("sizes cells to fill the width within bounds", () => {
    expect(matrixCellSize(1200, 5)).toBe(220);
    expect(matrixCellSize(1200, 8)).toBe(144);
    expect(matrixCellSize(400, 10)).toBe(110);
  });
});
