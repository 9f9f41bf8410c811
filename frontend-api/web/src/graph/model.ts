// A GraphDef as nodes in a hierarchy of name scopes ("a/b/c" is op c in
// scope a/b; the scope's id is "a/b/"), with what the viewer asks of it:
// the children of a scope and the edges between them, which item stands
// for a node when some scopes are open, and the edges between those items.

import { formatValue, type Message, type Value } from "./pbtxt";

export interface OpNode {
  name: string;
  /** The op, or for a Keras layer (whose op is empty) its class. */
  op: string;
  device: string;
  /** Input node names, without ^ (control) and :N (output index). */
  inputs: string[];
  control: boolean[];
  /** Attribute names and values, formatted when shown (see attrText). */
  attrs: [string, Value | undefined][];
  /** The scopes holding the node, outermost first. */
  scopes: string[];
  /** The inputs that are nodes of the graph. */
  from: OpNode[];
}

export interface Item {
  /** An op's name, or a scope's path with a trailing "/". */
  id: string;
  label: string;
  kind: "op" | "scope";
  op?: string;
  /** Ops inside a scope (all depths); 1 for an op. */
  size: number;
}

export interface Edge {
  from: string;
  to: string;
  count: number;
}

/** An attribute value as one line of text. */
export const attrText = (v: Value | undefined): string => (v === undefined ? "" : formatValue(v));

const str = (v: Value | undefined) => (typeof v === "string" ? v : v === undefined ? "" : String(v));

/** The scopes holding name, outermost first: "a/b/c" -> ["a/", "a/b/"]. */
export function ancestors(name: string): string[] {
  const out: string[] = [];
  for (let i = name.indexOf("/"); i >= 0 && i < name.length - 1; i = name.indexOf("/", i + 1)) out.push(name.slice(0, i + 1));
  return out;
}

export class Graph {
  readonly nodes = new Map<string, OpNode>();
  readonly outputs = new Map<string, string[]>();
  /** Every scope and the ops inside it at any depth ("" is the root). */
  private readonly members = new Map<string, OpNode[]>();
  private readonly levels = new Map<string, { items: Item[]; edges: Edge[] }>();

  constructor(def: Message) {
    for (const v of def.node ?? []) {
      if (typeof v !== "object") continue;
      const raw = (v.input ?? []).map(str);
      const attrs: [string, Value | undefined][] = [];
      let kerasClass = "";
      for (const a of v.attr ?? []) {
        if (typeof a !== "object") continue;
        const key = str(a.key?.[0]);
        const value = a.value?.[0];
        attrs.push([key, value]);
        if (key === "keras_class" && typeof value === "object") kerasClass = str(value.s?.[0]);
      }
      const name = str(v.name?.[0]);
      const node: OpNode = {
        name,
        op: str(v.op?.[0]) || kerasClass,
        device: str(v.device?.[0]),
        inputs: raw.map((s) => s.replace(/^\^/, "").replace(/:\d+$/, "")),
        control: raw.map((s) => s.startsWith("^")),
        attrs,
        scopes: ancestors(name),
        from: [],
      };
      this.nodes.set(node.name, node);
    }
    this.members.set("", [...this.nodes.values()]);
    for (const n of this.nodes.values()) {
      for (const i of n.inputs) {
        const m = this.nodes.get(i);
        if (m) n.from.push(m);
      }
      for (const s of n.scopes) {
        let m = this.members.get(s);
        if (!m) this.members.set(s, (m = []));
        m.push(n);
      }
      for (const i of n.inputs) {
        let o = this.outputs.get(i);
        if (!o) this.outputs.set(i, (o = []));
        o.push(n.name);
      }
    }
  }

  /** Whether id is a scope of this graph. */
  isScope(id: string): boolean {
    return id !== "" && this.members.has(id);
  }

  /** The ops inside a scope, at any depth. */
  opsIn(scope: string): OpNode[] {
    return this.members.get(scope) ?? [];
  }

  /** The child of scope (a path with a trailing "/", or "" for the root) that holds name. */
  childOf(scope: string, name: string): string | null {
    if (!name.startsWith(scope)) return null;
    const i = name.indexOf("/", scope.length);
    return i < 0 || i === name.length - 1 ? name : name.slice(0, i + 1);
  }

  /** The children of a scope and the edges between them (cached). */
  level(scope: string): { items: Item[]; edges: Edge[] } {
    const cached = this.levels.get(scope);
    if (cached) return cached;
    const items = new Map<string, Item>();
    const edges = new Map<string, Edge>();
    for (const n of this.opsIn(scope)) {
      const id = this.childOf(scope, n.name)!;
      let it = items.get(id);
      if (!it) {
        const scoped = id.endsWith("/") && id !== n.name;
        const label = (scoped ? id.slice(0, -1) : id).slice(scope.length);
        it = { id, label, kind: scoped ? "scope" : "op", op: scoped ? undefined : n.op, size: 0 };
        items.set(id, it);
      }
      it.size++;
      for (const m of n.from) {
        const from = this.childOf(scope, m.name);
        if (from === null || from === id) continue;
        const key = from + "\n" + id;
        const e = edges.get(key);
        if (e) e.count++;
        else edges.set(key, { from, to: id, count: 1 });
      }
    }
    const out = { items: [...items.values()], edges: [...edges.values()] };
    this.levels.set(scope, out);
    return out;
  }

  /**
   * The item that stands for a node when the scopes in open are open:
   * the node itself, or its outermost closed scope.
   */
  visibleOf(name: string, open: ReadonlySet<string>): string {
    for (const s of this.nodes.get(name)?.scopes ?? ancestors(name)) if (!open.has(s)) return s;
    return name;
  }

  /** The edges between the items shown when the scopes in open are open. */
  visibleEdges(open: ReadonlySet<string>): Edge[] {
    const vis = new Map<OpNode, string>();
    for (const n of this.nodes.values()) {
      let v = n.name;
      for (const s of n.scopes)
        if (!open.has(s)) {
          v = s;
          break;
        }
      vis.set(n, v);
    }
    const edges = new Map<string, Edge>();
    for (const n of this.nodes.values()) {
      const to = vis.get(n)!;
      for (const m of n.from) {
        const from = vis.get(m)!;
        if (from === to) continue;
        const key = from + "\n" + to;
        const e = edges.get(key);
        if (e) e.count++;
        else edges.set(key, { from, to, count: 1 });
      }
    }
    return [...edges.values()];
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
