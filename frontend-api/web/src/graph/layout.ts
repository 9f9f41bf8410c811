// Where every shown item of a graph goes when some scopes are open. Each
// scope's children are laid out in layers (an item one layer below the
// deepest of its inputs); an open scope is a box holding its own children's
// layout, so its size comes from inside out. Layers wider than MAX_ROW
// items wrap into several rows, so a scope of a thousand ops stays a block
// instead of one line a hundred thousand pixels long.

import type { Edge, Graph, Item } from "./model";

export const BOX_W = 150;
export const BOX_H = 30;
const GAP_X = 20;
const GAP_Y = 44;
const ROW_GAP = 12;
const PAD = 12;
export const HEADER = 26;
const MAX_ROW = 24;

export interface Box extends Item {
  /** Position of the top-left corner, in the graph's coordinates. */
  x: number;
  y: number;
  w: number;
  h: number;
  open: boolean;
  /** The open scope this box is drawn in ("" for the root). */
  parent: string;
  layer: number;
}

/** The layer of each item: longest path from the inputs; cycles are cut. */
export function layers(items: Item[], edges: Edge[]): Map<string, number> {
  const preds = new Map<string, string[]>(items.map((i) => [i.id, []]));
  const succs = new Map<string, string[]>(items.map((i) => [i.id, []]));
  for (const e of edges) {
    preds.get(e.to)?.push(e.from);
    succs.get(e.from)?.push(e.to);
  }
  const indeg = new Map(items.map((i) => [i.id, preds.get(i.id)!.length]));
  const layer = new Map<string, number>();
  let queue = items.filter((i) => indeg.get(i.id) === 0).map((i) => i.id);
  let rest = items;
  while (layer.size < items.length) {
    if (!queue.length) {
      // A cycle: start from the unplaced item with the fewest pending inputs.
      rest = rest.filter((i) => !layer.has(i.id));
      let best = rest[0];
      for (const i of rest) if (indeg.get(i.id)! < indeg.get(best.id)!) best = i;
      queue = [best.id];
      indeg.set(best.id, 0);
    }
    const next: string[] = [];
    for (const id of queue) {
      if (layer.has(id)) continue;
      let l = 0;
      for (const p of preds.get(id)!) if (layer.has(p)) l = Math.max(l, layer.get(p)! + 1);
      layer.set(id, l);
      for (const s of succs.get(id)!) {
        const d = indeg.get(s)! - 1;
        indeg.set(s, d);
        if (d === 0 && !layer.has(s)) next.push(s);
      }
    }
    queue = next;
  }
  return layer;
}

interface Local {
  item: Item;
  x: number;
  y: number;
  w: number;
  h: number;
  layer: number;
  inner: Local[] | null;
}

/**
 * Lays out the children of scope. Positions are relative to the scope's
 * content area; the returned size is that area's.
 */
function layoutScope(graph: Graph, scope: string, open: ReadonlySet<string>): { boxes: Local[]; w: number; h: number } {
  const { items, edges } = graph.level(scope);
  const sized = new Map<string, Local>();
  for (const it of items) {
    if (it.kind === "scope" && open.has(it.id)) {
      const inner = layoutScope(graph, it.id, open);
      sized.set(it.id, { item: it, x: 0, y: 0, w: Math.max(inner.w + 2 * PAD, BOX_W), h: inner.h + HEADER + PAD, layer: 0, inner: inner.boxes });
    } else sized.set(it.id, { item: it, x: 0, y: 0, w: BOX_W, h: BOX_H, layer: 0, inner: null });
  }
  const layer = layers(items, edges);
  const preds = new Map<string, string[]>();
  for (const e of edges) {
    let p = preds.get(e.to);
    if (!p) preds.set(e.to, (p = []));
    p.push(e.from);
  }
  const byLayer: Local[][] = [];
  for (const it of items) {
    const b = sized.get(it.id)!;
    b.layer = layer.get(it.id)!;
    (byLayer[b.layer] ??= []).push(b);
  }
  // Rows are centred on x = 0 while placing, so an item can be ordered by
  // where its inputs are; everything shifts right at the end.
  const centre = new Map<string, number>();
  let y = 0;
  let minX = 0;
  let maxX = 0;
  for (const row of byLayer) {
    if (!row) continue;
    const key = (b: Local) => {
      const ps = preds.get(b.item.id);
      if (!ps) return Infinity;
      let sum = 0;
      let n = 0;
      for (const p of ps) {
        const c = centre.get(p);
        if (c !== undefined) (sum += c), n++;
      }
      return n ? sum / n : Infinity;
    };
    const keys = new Map(row.map((b) => [b, key(b)]));
    row.sort((a, b) => keys.get(a)! - keys.get(b)! || (a.item.label < b.item.label ? -1 : a.item.label > b.item.label ? 1 : 0));
    for (let start = 0; start < row.length; start += MAX_ROW) {
      const part = row.slice(start, start + MAX_ROW);
      const width = part.reduce((s, b) => s + b.w, 0) + GAP_X * (part.length - 1);
      let x = -width / 2;
      let height = 0;
      for (const b of part) {
        b.x = x;
        b.y = y;
        centre.set(b.item.id, x + b.w / 2);
        x += b.w + GAP_X;
        height = Math.max(height, b.h);
      }
      minX = Math.min(minX, -width / 2);
      maxX = Math.max(maxX, width / 2);
      y += height + (start + MAX_ROW < row.length ? ROW_GAP : GAP_Y);
    }
  }
  const boxes = [...sized.values()];
  for (const b of boxes) b.x -= minX;
  return { boxes, w: maxX - minX, h: Math.max(y - GAP_Y, BOX_H) };
}

/**
 * Every box shown when the scopes in open are open, in drawing order
 * (an open scope before what it holds), and the size of the whole.
 */
export function layoutGraph(graph: Graph, open: ReadonlySet<string>): { boxes: Box[]; w: number; h: number } {
  const root = layoutScope(graph, "", open);
  const out: Box[] = [];
  const walk = (locals: Local[], ox: number, oy: number, parent: string) => {
    for (const l of locals) {
      const x = ox + l.x;
      const y = oy + l.y;
      const it = l.item;
      out.push({ id: it.id, label: it.label, kind: it.kind, op: it.op, size: it.size, x, y, w: l.w, h: l.h, open: l.inner !== null, parent, layer: l.layer });
      if (l.inner) walk(l.inner, x + PAD, y + HEADER, l.item.id);
    }
  };
  walk(root.boxes, 0, 0, "");
  return { boxes: out, w: root.w, h: root.h };
}
