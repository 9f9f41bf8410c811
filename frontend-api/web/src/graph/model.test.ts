import { describe, expect, it } from "vitest";
import { parsePbtxt } from "./pbtxt";
import { ancestors, attrText, Graph } from "./model";
import { layers, layoutGraph } from "./layout";
import { nodeStats, fmtBytes, fmtMicros } from "./stats";

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
    expect(g.nodes.get("x")!.attrs.map(([k, v]) => [k, attrText(v)])).toEqual([["dtype", "type: DT_FLOAT"]]);
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
    const layer = layers(items, edges);
    expect(layer.get("x")).toBe(0);
    expect(layer.get("layer/")).toBe(1);
    expect(layer.get("loss")).toBe(2);
  });
  it("survives cycles", () => {
    const layer = layers(
      [{ id: "a", label: "a", kind: "op", size: 1 }, { id: "b", label: "b", kind: "op", size: 1 }],
      [{ from: "a", to: "b", count: 1 }, { from: "b", to: "a", count: 1 }],
    );
    expect([...layer.keys()].sort()).toEqual(["a", "b"]);
  });
  it("names the scopes holding a node", () => {
    expect(ancestors("a/b/c")).toEqual(["a/", "a/b/"]);
    expect(ancestors("a/b/")).toEqual(["a/"]);
    expect(ancestors("x")).toEqual([]);
  });
  it("shows a node as its outermost closed scope, and links the shown items", () => {
    expect(g.visibleOf("layer/relu", new Set())).toBe("layer/");
    expect(g.visibleOf("layer/relu", new Set(["layer/"]))).toBe("layer/relu");
    const e = g.visibleEdges(new Set(["layer/"])).map((e) => `${e.from}>${e.to}`).sort();
    expect(e).toEqual(["layer/matmul>layer/relu", "layer/relu>loss", "w>layer/matmul", "w>loss", "x>layer/matmul"]);
  });
});

describe("layoutGraph", () => {
  const deep = new Graph(
    parsePbtxt(`node { name: "in" op: "Placeholder" }
node { name: "a/b/c" op: "MatMul" input: "in" }
node { name: "a/b/d" op: "Relu" input: "a/b/c" }
node { name: "a/e" op: "Add" input: "a/b/d" }
node { name: "f/g" op: "Identity" input: "a/e" }`),
  );
  it("draws open scopes around their contents, several at once", () => {
    const { boxes } = layoutGraph(deep, new Set(["a/", "a/b/", "f/"]));
    const at = new Map(boxes.map((b) => [b.id, b]));
    expect([...at.keys()].sort()).toEqual(["a/", "a/b/", "a/b/c", "a/b/d", "a/e", "f/", "f/g", "in"]);
    const inside = (inner: string, outer: string) => {
      const i = at.get(inner)!;
      const o = at.get(outer)!;
      return i.x >= o.x && i.y >= o.y && i.x + i.w <= o.x + o.w && i.y + i.h <= o.y + o.h;
    };
    expect(inside("a/b/c", "a/b/")).toBe(true);
    expect(inside("a/b/", "a/")).toBe(true);
    expect(inside("a/e", "a/")).toBe(true);
    expect(inside("f/g", "f/")).toBe(true);
    expect(at.get("a/")!.open).toBe(true);
    expect(at.get("a/b/c")!.parent).toBe("a/b/");
    // Boxes of one scope do not overlap.
    const top = boxes.filter((b) => b.parent === "");
    for (const p of top) for (const q of top) if (p !== q) expect(p.x + p.w <= q.x || q.x + q.w <= p.x || p.y + p.h <= q.y || q.y + q.h <= p.y).toBe(true);
    // A scope whose parent is closed stays hidden.
    expect(layoutGraph(deep, new Set(["a/b/"])).boxes.map((b) => b.id).sort()).toEqual(["a/", "f/", "in"]);
  });
  it("wraps a wide layer into rows", () => {
    const wide = new Graph(parsePbtxt(Array.from({ length: 100 }, (_, i) => `node { name: "s/n${i}" op: "Const" }`).join("\n")));
    const { boxes, w } = layoutGraph(wide, new Set(["s/"]));
    const rows = new Set(boxes.filter((b) => b.parent === "s/").map((b) => b.y));
    expect(rows.size).toBe(5);
    expect(w).toBeLessThan(24 * 200);
  });
});

describe("Keras layers", () => {
  it("shows a layer's class as its op", () => {
    const k = new Graph(parsePbtxt(`node { name: "m/dense" input: "m/in" attr { key: "keras_class" value { s: "Dense" } } }`));
    expect(k.nodes.get("m/dense")!.op).toBe("Dense");
  });
});

describe("nodeStats", () => {
  it("sums time and memory per node from step stats", () => {
    const md = parsePbtxt(`step_stats { dev_stats { device: "/job:localhost/device:CPU:0"
      node_stats { node_name: "a" all_end_rel_micros: 10 memory { total_bytes: 256 } memory { total_bytes: 768 } }
      node_stats { node_name: "a" all_end_rel_micros: 5 }
      node_stats { node_name: "c" all_start_micros: 1 op_end_rel_micros: 5 }
      node_stats { node_name: "b" all_end_rel_micros: 2500 output { tensor_description { allocation_description { requested_bytes: 2048 } } } } } }`);
    const st = nodeStats(md);
    expect(st.get("a")).toEqual({ micros: 15, bytes: 1024, device: "/job:localhost/device:CPU:0" });
    expect(st.get("b")!.bytes).toBe(2048);
    expect(st.get("c")!.micros).toBe(5);
    expect(fmtMicros(2500)).toBe("2.50 ms");
    expect(fmtBytes(2048)).toBe("2.0 KiB");
  });
});
