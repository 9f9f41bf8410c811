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
  it("gives neighbours in natural order different colours when runs outnumber the palette", () => {
    const names: string[] = [];
    for (let i = 0; i < 20; i++) names.push(`job-${i}/train`, `job-${i}/eval`, `ray_trial_${(i * 7919).toString(16)}`);
    names.push("catboost_info/learn", "catboost_info/test");
    const colors = assignColors(names);
    const sorted = [...names].sort(naturalCompare);
    const same = sorted.filter((n, i) => i > 0 && colors.get(n) === colors.get(sorted[i - 1]));
    expect(same).toEqual([]);
    // Runs arriving later keep that too, next to the ones already shown.
    const more = assignColors(["job-3/test", "job-30/train", "job-30/eval"], colors);
    const all = [...more.keys()].sort(naturalCompare);
    expect(all.filter((n, i) => i > 0 && more.get(n) === more.get(all[i - 1]))).toEqual([]);
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
