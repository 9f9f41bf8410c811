import { describe, expect, it } from "vitest";
import {
  cardsChanged,
  chartsChanged,
  chartView,
  indexKey,
  pointsInZoom,
  scalarCards,
  scalarLines,
  scalarsForm,
  scalarsSlice,
  tagRuns,
  tailAfter,
  xValues,
  yRangeOf,
  type Points,
} from "./scalars-model";
import { parseState } from "../state";

const q = (s: string) => new URLSearchParams(s);

describe("the scalars URL slice", () => {
  it("holds the chart options, and only those", () => {
    const s = scalarsSlice.parse(q("tab=images&smoothing=0&x=relative&zoom=1%2C2&pin=a&tttime=1&hmode=overlay"));
    expect(Object.keys(s).sort()).toEqual(["band", "expand", "group", "ignoreOutliers", "logx", "logy", "pin", "smoothing", "ttsort", "tttime", "x", "zoom"]);
    expect([s.smoothing, s.x, s.zoom, s.pin, s.tttime]).toEqual([0, "relative", [1, 2], ["a"], true]);
    const out = q("");
    scalarsSlice.format(s, out);
    expect(out.toString()).toBe("smoothing=0&x=relative&zoom=1%2C2&pin=a&tttime=1");
  });
  it("writes nothing for the defaults", () => {
    const out = q("");
    scalarsSlice.format(scalarsSlice.parse(q("")), out);
    expect(out.toString()).toBe("");
  });
});

describe("scalars_multirun requests", () => {
  it("ask for every run of the tag at one bucket per sample, in columns", () => {
    const f = scalarsForm("a/loss", ["r1", "r 2"], 640);
    expect([...f]).toEqual([["tag", "a/loss"], ["samples", "640"], ["buckets", "640"], ["format", "columns"], ["runs", "r1"], ["runs", "r 2"]]);
  });
  it("carry a zoom's step window, open ends left out", () => {
    expect(scalarsForm("t", ["r"], 200, { minStep: 0, maxStep: 50 }).toString()).toBe("tag=t&samples=200&buckets=200&format=columns&min_step=0&max_step=50&runs=r");
    expect(scalarsForm("t", ["r"], 200, { minStep: 10, maxStep: null }).has("max_step")).toBe(false);
  });
  it("carry a live tail only when some run has one", () => {
    const after = { r: { step: 9, wall_time: 109, value: null, max_wall_time: 109 } };
    expect(JSON.parse(scalarsForm("t", ["r"], 200, { after }).get("after")!)).toEqual(after);
    expect(scalarsForm("t", ["r"], 200, { after: {} }).has("after")).toBe(false);
  });
});

describe("tailAfter", () => {
  const had: Record<string, Points> = {
    a: { step: [0, 9], wall: [100, 109], value: [1, NaN] },
    full: { step: [0, 9], wall: [100, 109], value: [1, 2] },
    unknown: { step: [3], wall: [103], value: [4] },
    empty: { step: [], wall: [], value: [] },
  };
  const live = { a: { maxWall: 109, appended: 3 }, full: { maxWall: 109, appended: 200 }, unknown: { maxWall: NaN, appended: 0 }, empty: { maxWall: 1, appended: 0 } };
  it("asks each run for what follows its last point; NaN goes as null", () => {
    expect(tailAfter(had, live, ["a", "full", "unknown", "empty", "new"], 200)).toEqual({ a: { step: 9, wall_time: 109, value: null, max_wall_time: 109 } });
  });
  it("reads a run in full once its appended points reach samples", () => {
    expect(tailAfter(had, live, ["full"], 201)).toEqual({ full: { step: 9, wall_time: 109, value: 2, max_wall_time: 109 } });
    expect(tailAfter(had, live, ["full"], 200)).toEqual({});
  });
});

describe("cards from the tag index", () => {
  const index = tagRuns({ r1: { loss: {}, "eval/acc": {} }, r2: { loss: {} }, r3: { "eval/acc": {}, lr: {} } } as never);
  it("turns run → tags into tag → runs", () => {
    expect([...index]).toEqual([["loss", ["r1", "r2"]], ["eval/acc", ["r1", "r3"]], ["lr", ["r3"]]]);
  });
  it("keeps the tags the filter passes, sorted, with their shown runs, and none without", () => {
    expect(scalarCards(index, new Set(["r1", "r2"]), "")).toEqual([{ tag: "eval/acc", runs: ["r1"] }, { tag: "loss", runs: ["r1", "r2"] }]);
    expect(scalarCards(index, new Set(["r1", "r3"]), "^L")).toEqual([{ tag: "loss", runs: ["r1"] }, { tag: "lr", runs: ["r3"] }]);
    // A broken filter shows everything (the toolbar says why).
    expect(scalarCards(index, new Set(["r3"]), "(").map((c) => c.tag)).toEqual(["eval/acc", "lr"]);
  });
  it("tells a changed index from the same one", () => {
    expect(indexKey(index)).toBe(indexKey(tagRuns({ r1: { loss: {}, "eval/acc": {} }, r2: { loss: {} }, r3: { "eval/acc": {}, lr: {} } } as never)));
    expect(indexKey(index)).not.toBe(indexKey(tagRuns({ r1: { loss: {} } } as never)));
    expect(indexKey(null)).toBe("");
  });
});

describe("what a view change redoes", () => {
  const base = parseState("");
  it("lays cards out anew for the tag filter, pins and expanded cards", () => {
    expect(cardsChanged({ ...base, pin: ["a"] }, base)).toBe(true);
    expect(cardsChanged({ ...base, tagFilter: "x" }, base)).toBe(true);
    expect(cardsChanged({ ...base, smoothing: 0 }, base)).toBe(false);
  });
  it("builds charts anew for chart options, not for runs or cards", () => {
    expect(chartsChanged({ ...base, zoom: [1, 2] }, base)).toBe(true);
    expect(chartsChanged({ ...base, band: "std" }, base)).toBe(true);
    expect(chartsChanged({ ...base, zoom: [1, 2] }, { ...base, zoom: [1, 2] })).toBe(false);
    const runsAndPins = { ...base, pin: ["a"], off: ["r"] };
    expect(chartsChanged(runsAndPins, base)).toBe(false);
    expect(chartView("t", base, false)).not.toBe(chartView("t", { ...base, expand: ["t"] }, false));
    expect(chartView("t", base, false)).toBe(chartView("t", { ...base, off: ["r"] }, false));
  });
});

describe("series on the chart", () => {
  const p: Points = { step: [0, 1, 2, 3], wall: [110, 100, 120, 130], value: [1, 2, 3, 4] };
  it("puts points on the chosen x axis", () => {
    expect(xValues(p, "step")).toEqual([0, 1, 2, 3]);
    expect(xValues(p, "wall")).toEqual([110, 100, 120, 130]);
    expect(xValues(p, "relative")).toEqual([10, 0, 20, 30]);
  });
  it("counts the points inside a zoom", () => {
    expect(pointsInZoom({ a: p, b: p }, ["a", "b", "c"], "step", [1, 2])).toBe(4);
  });
  it("fits y to the bold lines' 2nd–98th percentiles unless outliers are kept or y is log", () => {
    const s = { ...parseState(""), smoothing: 0 };
    const values = Array.from({ length: 100 }, (_, i) => (i === 50 ? 1e6 : i % 10));
    const lines = scalarLines({ r: { step: values.map((_, i) => i), wall: values.map((_, i) => i), value: values } }, ["r"], () => "#000", s);
    const range = yRangeOf(lines, s)!;
    expect(range[1]).toBeLessThan(1e6);
    expect(yRangeOf(lines, { ...s, ignoreOutliers: false })).toBeUndefined();
    expect(yRangeOf(lines, { ...s, logy: true })).toBeUndefined();
  });
});
