import { describe, expect, it } from "vitest";
import { CompareAPI, comparisonIds, comparisonPath, hiddenNote, MAX_MEMBERS, Selection, splitRun, withMember, withoutMember, type Member } from "./compare";

const members: Member[] = [
  { experimentId: "E1", name: "rl", label: "rl" },
  { experimentId: "E2", name: "rl", label: "rl/sweep" },
  { experimentId: "E3", name: "base", label: "base [E3xxxx]" },
];

describe("comparison ids", () => {
  it("parses the members of an id, once each, in order", () => {
    expect(comparisonIds("a+b++a+c")).toEqual(["a", "b", "c"]);
  });
  it("makes the page path and adds or removes a member", () => {
    expect(comparisonPath(["a", "b"])).toBe("/compare/a+b/");
    expect(withMember(["a", "b"], "c")).toEqual(["a", "b", "c"]);
    expect(withMember(["a", "b"], "a")).toEqual(["a", "b"]);
    expect(withoutMember(["a", "b", "c"], "b")).toEqual(["a", "c"]);
  });
});

describe("hiddenNote", () => {
  it("says how many are hidden, or nothing", () => {
    expect(hiddenNote(0, 3)).toBe("");
    expect(hiddenNote(1, 3)).toBe("1 experiment of 3 is not visible to you");
    expect(hiddenNote(2, 3)).toBe("2 experiments of 3 are not visible to you");
  });
});

describe("splitRun", () => {
  it("finds the member by its label", () => {
    expect(splitRun(members, "base [E3xxxx]/train/1")).toEqual({ experimentId: "E3", run: "train/1" });
    expect(splitRun(members, "rl/seed")).toEqual({ experimentId: "E1", run: "seed" });
    expect(splitRun(members, "nobody/run")).toBeNull();
  });
});

describe("CompareAPI", () => {
  it("reads the comparison's routes and downloads from the run's experiment", () => {
    const api = new CompareAPI("E1+E3");
    api.members = members;
    expect(api.plugin("scalars", "tags")).toBe("/compare/E1%2BE3/data/plugin/scalars/tags");
    expect(api.metadataPath()).toBe("/compare/E1%2BE3/data/comparison");
    expect(api.scalarDownload("base [E3xxxx]/train", "loss", "csv")).toBe("/api/experiments/E3/scalars?run=train&tag=loss&format=csv");
  });
});

describe("Selection", () => {
  it("compares two or more, in the order checked, up to the cap", () => {
    let changes = 0;
    const s = new Selection(() => changes++);
    expect(s.canCompare()).toBe(false);
    s.set("b", true);
    s.set("a", true);
    expect(s.canCompare()).toBe(true);
    expect(s.label()).toBe("Compare 2 selected");
    expect(s.href()).toBe("/compare/b+a/");
    s.set("b", false);
    expect(s.ids).toEqual(["a"]);
    expect(changes).toBe(3);
    for (let i = 0; i < MAX_MEMBERS + 2; i++) s.set(`x${i}`, true);
    expect(s.ids.length).toBe(MAX_MEMBERS);
    expect(s.set("y", true)).toBe(false);
  });
});
