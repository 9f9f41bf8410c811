import { describe, expect, it } from "vitest";
import { parsePbtxt } from "./pbtxt";
import { Graph, layout } from "./model";

const PBTXT = `node {
  name: "x"
  op: "Placeholder"
  attr { key: "dtype" value { type: DT_FLOAT } }
}
node { name: "w" op: "VariableV2" }
node { name: "layer/matmul" op: "MatMul" input: "x" input: "w:0" }
node { name: "layer/relu" op: "Relu" input: "layer/matmul" device: "/device:CPU:0" }
node { name: "loss" op: "Mean" input: "layer/relu" input: "^w" }
versions { producer: 27 }
`;

describe("parsePbtxt", () => {
  it("reads repeated messages, strings, enums and numbers", () => {
    const m = parsePbtxt(PBTXT);
    expect(m.node).toHaveLength(5);
    expect((m.versions[0] as { producer: number[] }).producer[0]).toBe(27);
  });
  it("unescapes strings", () => {
    const m = parsePbtxt(`s: "a\\"b\\n\\101\\x42"`);
    expect(m.s[0]).toBe('a"b\nAB');
  });
  it("reads lists and angle-bracket messages", () => {
    const m = parsePbtxt(`v: [1, 2.5, -3] sub < k: "x" >`);
    expect(m.v).toEqual([1, 2.5, -3]);
    expect(m.sub[0]).toEqual({ k: ["x"] });
  });
});

describe("Graph", () => {
  const g = new Graph(parsePbtxt(PBTXT));
  it("strips control and output markers from inputs and indexes outputs", () => {
    expect(g.nodes.get("loss")!.inputs).toEqual(["layer/relu", "w"]);
    expect(g.nodes.get("loss")!.control).toEqual([false, true]);
    expect(g.outputs.get("w")).toEqual(["layer/matmul", "loss"]);
    expect(g.nodes.get("x")!.attrs).toEqual([["dtype", "type: DT_FLOAT"]]);
  });
  it("collapses scopes at the root and links through them", () => {
    const { items, edges } = g.level("");
    expect(items.map((i) => i.id).sort()).toEqual(["layer/", "loss", "w", "x"]);
    expect(items.find((i) => i.id === "layer/")!.size).toBe(2);
    const e = edges.map((e) => `${e.from}>${e.to}`).sort();
    expect(e).toEqual(["layer/>loss", "w>layer/", "w>loss", "x>layer/"]);
  });
  it("lays out inputs above their consumers", () => {
    const { items, edges } = g.level("");
    const placed = new Map(layout(items, edges).map((p) => [p.id, p.layer]));
    expect(placed.get("x")).toBe(0);
    expect(placed.get("layer/")).toBe(1);
    expect(placed.get("loss")).toBe(2);
  });
  it("survives cycles", () => {
    const placed = layout(
      [{ id: "a", label: "a", kind: "op", size: 1 }, { id: "b", label: "b", kind: "op", size: 1 }],
      [{ from: "a", to: "b", count: 1 }, { from: "b", to: "a", count: 1 }],
    );
    expect(placed).toHaveLength(2);
  });
});
