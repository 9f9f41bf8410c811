import { describe, expect, it } from "vitest";
import { parsePbtxt } from "../graph/pbtxt";
import { Graph } from "../graph/model";
import type { Box } from "../graph/layout";
import type { NodeStats } from "../graph/stats";
import { parseState } from "../state";
import {
  choiceChanged,
  chooseGraph,
  deviceOf,
  drawingChanged,
  fillFor,
  graphParams,
  graphsOf,
  graphsSlice,
  keyColor,
  openScopes,
  revealed,
  statsOf,
  toggledScope,
  type GraphInfo,
} from "./graphs-model";

const info: Record<string, GraphInfo> = {
  train: {
    run: "train",
    run_graph: true,
    tags: {
      step1: { tag: "step1", conceptual_graph: false, op_graph: true, profile: true },
      model: { tag: "model", conceptual_graph: true, op_graph: false, profile: false },
      step0: { tag: "step0", conceptual_graph: false, op_graph: false, profile: true },
    },
  },
  eval: { run: "eval", run_graph: true, tags: {} },
  empty: { run: "empty", run_graph: false, tags: { x: { tag: "x", conceptual_graph: false, op_graph: false, profile: true } } },
};
const graphs = (s: string) => ({ ...parseState(""), ...graphsSlice.parse(new URLSearchParams(s)) });

describe("the graphs URL slice", () => {
  it("holds the run, graph, open scopes, node, run metadata and colours, and only those", () => {
    const s = graphsSlice.parse(new URLSearchParams("grun=a&ggraph=op%3At&gopen=x%2F&gnode=x%2Fy&gstats=s&gcolor=time&smoothing=0"));
    expect(s).toEqual({ grun: "a", ggraph: "op:t", gopen: ["x/"], gnode: "x/y", gstats: "s", gcolor: "time" });
    const q = new URLSearchParams();
    graphsSlice.format(s, q);
    expect(q.toString()).toBe("grun=a&ggraph=op%3At&gopen=x%2F&gnode=x%2Fy&gstats=s&gcolor=time");
  });
});

describe("choosing the graph", () => {
  it("lists a run's graph, then op graphs and Keras models by tag", () => {
    expect(graphsOf(info.train).map((g) => g.value)).toEqual(["", "keras:model", "op:step1"]);
    expect(graphsOf(info.empty)).toEqual([]);
  });
  it("takes the URL's run, graph and run metadata when the run is shown and has them", () => {
    const c = chooseGraph(info, new Set(["train", "eval", "empty"]), ["eval", "train", "empty"], graphs("grun=train&ggraph=op%3Astep1&gstats=step0"));
    expect(c).toMatchObject({ runs: ["eval", "train"], run: "train", which: "op:step1", profiles: ["step0", "step1"], statsTag: "step0" });
  });
  it("falls back to the first shown run with a graph, its first graph, no run metadata", () => {
    const c = chooseGraph(info, new Set(["train"]), ["eval", "train"], graphs("grun=eval&ggraph=op%3Anope&gstats=nope"));
    expect(c).toMatchObject({ runs: ["train"], run: "train", which: "", statsTag: "" });
    expect(chooseGraph(info, new Set(["empty"]), [], graphs(""))).toBeNull();
  });
  it("asks the plugin for the run's graph, an op graph by tag, or a Keras model with its inputs linked", () => {
    expect(graphParams("r", "")).toEqual({ run: "r" });
    expect(graphParams("r", "op:a:b")).toEqual({ run: "r", tag: "a:b" });
    expect(graphParams("r", "keras:m")).toEqual({ run: "r", tag: "m", conceptual: "true", keras2_inputs: "true" });
  });
});

const graph = new Graph(
  parsePbtxt(`
node { name: "x" op: "Placeholder" }
node { name: "a/b/m" op: "MatMul" input: "x" device: "/gpu:0" }
node { name: "a/b/r" op: "Relu" input: "a/b/m" device: "/gpu:0" }
node { name: "a/c" op: "Add" input: "a/b/r" device: "/cpu:0" }
node { name: "loss" op: "Mean" input: "a/c" }
`),
);

describe("scopes opened and closed", () => {
  it("reveals a node by opening every scope above it, keeping those open", () => {
    expect(revealed(["z/"], "a/b/m")).toEqual(["z/", "a/", "a/b/"]);
    expect(revealed(["a/"], "a/b/m")).toEqual(["a/", "a/b/"]);
  });
  it("opens a scope with those above it, and closes it with all inside it", () => {
    expect(toggledScope([], "a/b/")).toEqual(["a/", "a/b/"]);
    expect(toggledScope(["a/", "a/b/", "z/"], "a/")).toEqual(["z/"]);
  });
  it("keeps only the URL's scopes this graph has", () => {
    expect([...openScopes(graph, ["a/", "nope/", "a/b/"])]).toEqual(["a/", "a/b/"]);
  });
});

describe("node colours", () => {
  const stats = new Map<string, NodeStats>([
    ["a/b/m", { micros: 30, bytes: 100, device: "/gpu:0" }],
    ["a/c", { micros: 10, bytes: 0, device: "/cpu:0" }],
    ["x", { micros: 0, bytes: 0, device: "/cpu:1" }],
  ]);
  it("sums a scope's compute time and memory, and remembers it", () => {
    const totals = new Map<string, NodeStats>();
    expect(statsOf(graph, stats, "a/", totals)).toEqual({ micros: 40, bytes: 100, device: "" });
    expect(totals.has("a/")).toBe(true);
    expect(statsOf(graph, stats, "a/c", totals)).toEqual(stats.get("a/c"));
  });
  it("gives an op its device (from run metadata if the graph has none), a scope its most common one", () => {
    expect(deviceOf(graph, stats, "a/")).toBe("/gpu:0");
    expect(deviceOf(graph, stats, "x")).toBe("/cpu:1");
    expect(deviceOf(graph, null, "x")).toBe("");
  });
  it("fills closed boxes by op, device, or share of the largest time", () => {
    const box = (b: Partial<Box>) => ({ id: "a/b/m", kind: "op", op: "MatMul", open: false, ...b }) as Box;
    const dev = (id: string) => deviceOf(graph, stats, id);
    const st = (id: string) => statsOf(graph, stats, id, new Map());
    expect(fillFor(box({}), "op", 0, dev, st)).toBe(keyColor("MatMul"));
    expect(fillFor(box({}), "device", 0, dev, st)).toBe(keyColor("/gpu:0"));
    expect(fillFor(box({}), "time", 30, dev, st)).toBe("hsla(12, 85%, 55%, 0.950)");
    expect(fillFor(box({ id: "a/c" }), "memory", 100, dev, st)).toBe("");
    expect(fillFor(box({ open: true }), "op", 0, dev, st)).toBe("");
    expect(fillFor(box({}), "", 0, dev, st)).toBe("");
  });
});

describe("what a URL change redoes", () => {
  const base = parseState("");
  it("fills the toolbar again for the run, graph, run metadata or colours; draws again for scopes, node or colours", () => {
    expect(choiceChanged({ ...base, grun: "x" }, base)).toBe(true);
    expect(choiceChanged({ ...base, gopen: ["a/"] }, base)).toBe(false);
    expect(drawingChanged({ ...base, gopen: ["a/"] }, base)).toBe(true);
    expect(drawingChanged({ ...base, gcolor: "op" }, base)).toBe(true);
    expect(drawingChanged({ ...base, gstats: "s" }, base)).toBe(false);
  });
});
