// A GraphDef as nodes in a hierarchy of name scopes ("a/b/c" is op c in
// scope a/b), and the layered layout of one scope's children: each child
// is an op or a collapsed scope, edges are the inputs between them.

import { formatValue, type Message, type Value } from "./pbtxt";

export interface OpNode {
  name: string;
  op: string;
  device: string;
  /** Input node names, without ^ (control) and :N (output index). */
  inputs: string[];
  control: boolean[];
  attrs: [string, string][];
}

export interface Item {
  /** An op's name, or a scope's path with a trailing "/". */
  id: string;
  label: string;
  kind: "op" | "scope";
  op?: string;
  /** Ops inside a scope (all depths). */
  size: number;
}

export interface Edge {
  from: string;
  to: string;
  count: number;
}

export interface Placed extends Item {
  layer: number;
  x: number;
  y: number;
}

const str = (v: Value | undefined) => (typeof v === "string" ? v : v === undefined ? "" : String(v));

export class Graph {
  readonly nodes = new Map<string, OpNode>();
  readonly outputs = new Map<string, string[]>();

  constructor(def: Message) {
    for (const v of def.node ?? []) {
      if (typeof v !== "object") continue;
      const raw = (v.input ?? []).map(str);
      const attrs: [string, string][] = [];
      for (const a of v.attr ?? []) if (typeof a === "object") attrs.push([str(a.key?.[0]), a.value?.[0] !== undefined ? formatValue(a.value[0]) : ""]);
      const node: OpNode = {
        name: str(v.name?.[0]),
        op: str(v.op?.[0]),
        device: str(v.device?.[0]),
        inputs: raw.map((s) => s.replace(/^\^/, "").replace(/:\d+$/, "")),
        control: raw.map((s) => s.startsWith("^")),
        attrs,
      };
      this.nodes.set(node.name, node);
    }
    for (const n of this.nodes.values())
      for (const i of n.inputs) {
        if (!this.outputs.has(i)) this.outputs.set(i, []);
        this.outputs.get(i)!.push(n.name);
      }
  }

  /** The child of scope (a path with a trailing "/", or "" for the root) that holds name. */
  childOf(scope: string, name: string): string | null {
    if (!name.startsWith(scope)) return null;
    const rest = name.slice(scope.length);
    const i = rest.indexOf("/");
    return i < 0 ? name : scope + rest.slice(0, i + 1);
  }

  /** The children of a scope and the edges between them. */
  level(scope: string): { items: Item[]; edges: Edge[] } {
    const items = new Map<string, Item>();
    const edges = new Map<string, Edge>();
    for (const n of this.nodes.values()) {
      const id = this.childOf(scope, n.name);
      if (id === null) continue;
      let it = items.get(id);
      if (!it) {
        const scoped = id.endsWith("/");
        const label = (scoped ? id.slice(0, -1) : id).slice(scope.length);
        it = { id, label, kind: scoped ? "scope" : "op", op: scoped ? undefined : n.op, size: 0 };
        items.set(id, it);
      }
      it.size++;
      for (const input of n.inputs) {
        const from = this.childOf(scope, input);
        if (from === null || from === id || !this.nodes.has(input)) continue;
        const key = from + "\n" + id;
        const e = edges.get(key);
        if (e) e.count++;
        else edges.set(key, { from, to: id, count: 1 });
      }
    }
    return { items: [...items.values()], edges: [...edges.values()] };
  }

  /** Names containing q (case-insensitive), at most limit. */
  search(q: string, limit = 50): string[] {
    const needle = q.toLowerCase();
    const out: string[] = [];
    for (const name of this.nodes.keys()) {
      if (name.toLowerCase().includes(needle)) out.push(name);
      if (out.length >= limit) break;
    }
    return out;
  }
}

export const BOX_W = 150;
export const BOX_H = 30;
const GAP_X = 24;
const GAP_Y = 56;

/**
 * Places items in layers: an item's layer is one more than the deepest of
 * its inputs (longest path; edges closing a cycle are ignored), and within
 * a layer items are ordered by the mean position of their inputs.
 */
export function layout(items: Item[], edges: Edge[]): Placed[] {
  const preds = new Map<string, string[]>(items.map((i) => [i.id, []]));
  const succs = new Map<string, string[]>(items.map((i) => [i.id, []]));
  for (const e of edges) {
    preds.get(e.to)?.push(e.from);
    succs.get(e.from)?.push(e.to);
  }
  const indeg = new Map(items.map((i) => [i.id, preds.get(i.id)!.length]));
  const layer = new Map<string, number>();
  let queue = items.filter((i) => indeg.get(i.id) === 0).map((i) => i.id);
  while (queue.length || layer.size < items.length) {
    if (!queue.length) {
      // A cycle: start from the unplaced item with the fewest pending inputs.
      const rest = items.filter((i) => !layer.has(i.id)).sort((a, b) => indeg.get(a.id)! - indeg.get(b.id)!);
      queue = [rest[0].id];
      indeg.set(rest[0].id, 0);
    }
    const next: string[] = [];
    for (const id of queue) {
      if (layer.has(id)) continue;
      const l = Math.max(-1, ...preds.get(id)!.map((p) => layer.get(p) ?? -1)) + 1;
      layer.set(id, l);
      for (const s of succs.get(id)!) {
        const d = indeg.get(s)! - 1;
        indeg.set(s, d);
        if (d === 0 && !layer.has(s)) next.push(s);
      }
    }
    queue = next;
  }
  const byLayer: Item[][] = [];
  for (const it of items) (byLayer[layer.get(it.id)!] ??= []).push(it);
  const pos = new Map<string, number>();
  const placed: Placed[] = [];
  const widest = Math.max(...byLayer.map((l) => l?.length ?? 0));
  byLayer.forEach((row, li) => {
    if (!row) return;
    const key = (it: Item) => {
      const ps = preds.get(it.id)!.filter((p) => pos.has(p));
      return ps.length ? ps.reduce((a, p) => a + pos.get(p)!, 0) / ps.length : Infinity;
    };
    row.sort((a, b) => key(a) - key(b) || a.label.localeCompare(b.label));
    const offset = ((widest - row.length) * (BOX_W + GAP_X)) / 2;
    row.forEach((it, k) => {
      pos.set(it.id, k + (widest - row.length) / 2);
      placed.push({ ...it, layer: li, x: offset + k * (BOX_W + GAP_X), y: li * (BOX_H + GAP_Y) });
    });
  });
  return placed;
}
