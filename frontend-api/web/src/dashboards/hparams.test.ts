import { describe, expect, it } from "vitest";
import { brushOf, inBrush, parseBrush, runsFilter } from "./hparams";
import { makeAxis } from "./hparams-plots";

describe("brushes", () => {
  it("round-trip through the URL form on numeric axes", () => {
    const axis = makeAxis([0.5, 1, 1.5, 2.5]);
    const b = parseBrush(brushOf("accuracy", axis, 0.25, 0.75));
    expect(b).toEqual({ col: "accuracy", lo: 1, hi: 2 });
    expect(inBrush(b!, 1.5)).toBe(true);
    expect(inBrush(b!, 2.5)).toBe(false);
    expect(inBrush(b!, undefined)).toBe(false);
  });
  it("keep the categories inside the range on categorical axes", () => {
    const axis = makeAxis(["adam", "rmsprop", "sgd"]);
    const b = parseBrush(brushOf("optimizer", axis, 0.4, 1));
    expect(b).toEqual({ col: "optimizer", values: ["rmsprop", "sgd"] });
    expect(inBrush(b!, "sgd")).toBe(true);
    expect(inBrush(b!, "adam")).toBe(false);
  });
  it("ignore malformed URL values", () => {
    for (const v of ["", "nope", "[]", '["a", 1]', '[1, 2, 3]', '{"col": "a"}']) expect(parseBrush(v)).toBeNull();
    expect(parseBrush('["a", 3, 1]')).toEqual({ col: "a", lo: 1, hi: 3 });
  });
});

describe("runsFilter", () => {
  it("matches a group's runs and the runs under them, names taken literally", () => {
    const re = new RegExp(runsFilter(["exp_1/1771.32", "a+b"]));
    for (const r of ["exp_1/1771.32", "exp_1/1771.32/train", "a+b"]) expect(re.test(r)).toBe(true);
    for (const r of ["exp_1/1771x32", "exp_1/1771.321", "aab", "x/a+b"]) expect(re.test(r)).toBe(false);
  });
});
