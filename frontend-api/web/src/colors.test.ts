import { describe, expect, it } from "vitest";
import { assignColors, naturalCompare, PALETTE } from "./colors";
import { formatState, parseState } from "./state";

describe("assignColors", () => {
  it("gives up to a palette's worth of runs different colours", () => {
    const names = Array.from({ length: PALETTE.length }, (_, i) => `trial_${i}/train`);
    expect(new Set(assignColors(names).values()).size).toBe(PALETTE.length);
  });
  it("keeps a run's colour from its name, whatever else the experiment holds", () => {
    const alone = assignColors(["train"]).get("train");
    expect(assignColors(["eval", "zzz", "train"]).get("train")).toBe(alone);
    expect(assignColors(["train", "eval"]).get("train")).not.toBe(assignColors(["train", "eval"]).get("eval"));
  });
  it("keeps the colours runs already have when new ones arrive", () => {
    const first = assignColors(["a", "b"]);
    const more = assignColors(["c", "d"], first);
    expect(more.get("a")).toBe(first.get("a"));
    expect(more.get("b")).toBe(first.get("b"));
  });
});

describe("naturalCompare", () => {
  it("sorts numbers by value and a run before its children", () => {
    expect(["run-10", "run-0/validation", "run-2", "run-0", "run-0/train"].sort(naturalCompare)).toEqual(["run-0", "run-0/train", "run-0/validation", "run-2", "run-10"]);
  });
});

describe("color in the URL", () => {
  it("round-trips a picked colour, run names with ~ included", () => {
    const s = parseState("?color=a~b~FF00ff&color=bad~zz");
    expect(s.colors).toEqual({ "a~b": "#ff00ff" });
    expect(parseState(formatState(s)).colors).toEqual({ "a~b": "#ff00ff" });
  });
});
