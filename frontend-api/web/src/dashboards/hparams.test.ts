import { describe, expect, it } from "vitest";
import { brushOf, brushRange, inBrush, parseBrush, runsFilter } from "./hparams";
import { makeAxis, MISSING } from "./hparams-plots";

describe("brushes", () => {
  it("round-trip through the URL form on numeric axes", () => {
    const axis = makeAxis([0.5, 1, 1.5, 2.5]);
    const b = parseBrush(brushOf("accuracy", axis, 0.25, 0.75));
    expect(b).toEqual({ col: "accuracy", range: [1, 2], missing: false });
    expect(inBrush(b!, 1.5)).toBe(true);
    expect(inBrush(b!, 2.5)).toBe(false);
    expect(inBrush(b!, undefined)).toBe(false);
  });
  it("keep the categories inside the range on categorical axes", () => {
    const axis = makeAxis(["adam", "rmsprop", "sgd"]);
    const b = parseBrush(brushOf("optimizer", axis, 0.4, 1));
    expect(b).toEqual({ col: "optimizer", values: ["rmsprop", "sgd"], missing: false });
    expect(inBrush(b!, "sgd")).toBe(true);
    expect(inBrush(b!, "adam")).toBe(false);
  });
  it("ignore malformed URL values", () => {
    for (const v of ["", "nope", "[]", '["a", 1]', '[1, 2, 3]', '{"col": "a"}']) expect(parseBrush(v)).toBeNull();
    expect(parseBrush('["a", 3, 1]')).toEqual({ col: "a", range: [1, 3], missing: false });
    for (const v of ['["a"]', '["a", "missing", 1]', '["a", 1, "missing"]', '["missing"]']) expect(parseBrush(v)).toBeNull();
  });
});

describe("brushes over the missing band", () => {
  const numeric = makeAxis([0.5, 1, undefined, 2.5]);
  const categorical = makeAxis(["adam", undefined, "sgd"]);
  it("keep missing values with a range when dragged from the band", () => {
    const v = brushOf("accuracy", numeric, MISSING, 0.25);
    expect(JSON.parse(v)).toEqual(["accuracy", 0.5, 1, "missing"]);
    const b = parseBrush(v)!;
    expect(b).toEqual({ col: "accuracy", range: [0.5, 1], missing: true });
    expect(inBrush(b, undefined)).toBe(true);
    expect(inBrush(b, 0.75)).toBe(true);
    expect(inBrush(b, 2.5)).toBe(false);
    expect(brushRange(b, numeric)).toEqual([MISSING, 0.25]);
  });
  it("keep only missing values when only the band is brushed", () => {
    for (const axis of [numeric, categorical]) {
      const v = brushOf("col", axis, MISSING, MISSING);
      expect(JSON.parse(v)).toEqual(["col", "missing"]);
      const b = parseBrush(v)!;
      expect(inBrush(b, undefined)).toBe(true);
      expect(inBrush(b, 1)).toBe(false);
      expect(inBrush(b, "adam")).toBe(false);
      expect(brushRange(b, axis)).toEqual([MISSING, MISSING]);
    }
  });
  it("keep categories and missing values on categorical axes", () => {
    const b = parseBrush(brushOf("optimizer", categorical, MISSING, 0.2))!;
    expect(b).toEqual({ col: "optimizer", values: ["adam"], missing: true });
    expect(inBrush(b, "adam")).toBe(true);
    expect(inBrush(b, undefined)).toBe(true);
    expect(inBrush(b, "sgd")).toBe(false);
  });
});

describe("runsFilter", () => {
  it("matches a group's runs and the runs under them, names taken literally", () => {
    const re = new RegExp(runsFilter(["exp_1/1771.32", "a+b"]));
    for (const r of ["exp_1/1771.32", "exp_1/1771.32/train", "a+b"]) expect(re.test(r)).toBe(true);
    for (const r of ["exp_1/1771x32", "exp_1/1771.321", "aab", "x/a+b"]) expect(re.test(r)).toBe(false);
  });
});
