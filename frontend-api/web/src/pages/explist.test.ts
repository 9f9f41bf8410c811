import { describe, expect, it } from "vitest";
import type { Experiment } from "../api";
import { matchesSearch, parseListState, searchAndSort, sortExperiments, withListState } from "./explist";

const exps: Experiment[] = [
  { experimentId: "e1", name: "ppo_sweep", description: "PPO on **CartPole**", createTime: "2026-01-02T00:00:00Z", updateTime: "2026-03-01T00:00:00Z" },
  { experimentId: "e2", name: "baseline 10", createTime: "2026-01-03T00:00:00Z", updateTime: "2026-02-01T00:00:00Z", ownerDisplayName: "ada" },
  { experimentId: "e3", name: "baseline 9", createTime: "2026-01-01T00:00:00Z", updateTime: "2026-04-01T00:00:00Z" },
  { experimentId: "e4", createTime: "2026-01-04T00:00:00Z" },
];
const ids = (l: Experiment[]) => l.map((e) => e.experimentId);

describe("experiment lists", () => {
  it("search name, description, ID and owner, ignoring case, every word", () => {
    expect(ids(exps.filter((e) => matchesSearch(e, "cartpole")))).toEqual(["e1"]);
    expect(ids(exps.filter((e) => matchesSearch(e, "BASELINE")))).toEqual(["e2", "e3"]);
    expect(ids(exps.filter((e) => matchesSearch(e, "baseline ada")))).toEqual(["e2"]);
    expect(ids(exps.filter((e) => matchesSearch(e, "e4")))).toEqual(["e4"]);
    expect(ids(exps.filter((e) => matchesSearch(e, "  ")))).toEqual(["e1", "e2", "e3", "e4"]);
  });
  it("sort by name (natural order, the ID standing for a missing name), created and last update (newest first)", () => {
    expect(ids(sortExperiments(exps, "name"))).toEqual(["e3", "e2", "e4", "e1"]);
    expect(ids(sortExperiments(exps, "created"))).toEqual(["e4", "e2", "e1", "e3"]);
    expect(ids(sortExperiments(exps, "updated"))).toEqual(["e3", "e1", "e2", "e4"]);
    expect(ids(searchAndSort(exps, { q: "baseline", sort: "name" }))).toEqual(["e3", "e2"]);
  });
  it("keep their search and sort in the URL, defaults left out", () => {
    expect(parseListState("?q=ppo&sort=name")).toEqual({ q: "ppo", sort: "name" });
    expect(parseListState("?sort=sideways")).toEqual({ q: "", sort: "updated" });
    const u = withListState(new URL("http://x/gallery?other=1"), { q: " ppo ", sort: "created" });
    expect(u.search).toBe("?other=1&q=ppo&sort=created");
    expect(withListState(u, { q: "", sort: "updated" }).search).toBe("?other=1");
  });
});
