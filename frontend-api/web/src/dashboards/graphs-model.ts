// The Graphs dashboard's model: what the URL holds for it, which runs and
// graphs can be shown and which one is (a run's GraphDef, an op graph, a
// Keras model), what to ask the graphs plugin for, which scopes a search or
// a click opens and closes, and how nodes are coloured (op, device, compute
// time, memory). Pure functions, no DOM; graphs.ts lays out and draws them.

import type { Box } from "../graph/layout";
import { ancestors, type Graph } from "../graph/model";
import type { NodeStats } from "../graph/stats";
import type { UrlSlice } from "../state";

export interface GraphsState {
  grun: string;
  ggraph: string;
  gopen: string[];
  gnode: string;
  gstats: string;
  gcolor: string;
}

export const graphsSlice: UrlSlice<GraphsState> = {
  parse: (q) => ({
    grun: q.get("grun") ?? "",
    ggraph: q.get("ggraph") ?? "",
    gopen: [...q.getAll("gopen"), ...scopePrefixes(q.get("gscope") ?? "")],
    gnode: q.get("gnode") ?? "",
    gstats: q.get("gstats") ?? "",
    gcolor: q.get("gcolor") ?? "",
  }),
  format(s, q) {
    if (s.grun) q.set("grun", s.grun);
    if (s.ggraph) q.set("ggraph", s.ggraph);
    for (const o of s.gopen) q.append("gopen", o);
    if (s.gnode) q.set("gnode", s.gnode);
    if (s.gstats) q.set("gstats", s.gstats);
    if (s.gcolor) q.set("gcolor", s.gcolor);
  },
};


/** "a/b/" -> ["a/", "a/b/"]. */
function scopePrefixes(scope: string): string[] {
  const parts = scope.split("/").filter(Boolean);
  return parts.map((_, i) => parts.slice(0, i + 1).join("/") + "/");
}

/** A tag's entry in the graphs plugin's info. */
export interface GraphTagInfo {
  tag: string;
  conceptual_graph: boolean;
  op_graph: boolean;
  profile: boolean;
}

/** A run's entry in the graphs plugin's info. */
export interface GraphInfo {
  run: string;
  run_graph: boolean;
  tags: Record<string, GraphTagInfo>;
}

/** The graphs of a run: "" (its run graph), "op:TAG", "keras:TAG". */
export function graphsOf(info: GraphInfo): { value: string; label: string }[] {
  const out: { value: string; label: string }[] = [];
  if (info.run_graph) out.push({ value: "", label: "Run graph" });
  for (const t of Object.values(info.tags ?? {}).sort((a, b) => a.tag.localeCompare(b.tag))) {
    if (t.op_graph) out.push({ value: `op:${t.tag}`, label: `Op graph: ${t.tag}` });
    if (t.conceptual_graph) out.push({ value: `keras:${t.tag}`, label: `Keras model: ${t.tag}` });
  }
  return out;
}

/** What the toolbar offers and the page shows: the runs with graphs, the run, its graphs, the graph, its run metadata tags, the one chosen. */
export interface GraphChoice {
  runs: string[];
  run: string;
  graphs: { value: string; label: string }[];
  which: string;
  profiles: string[];
  statsTag: string;
}

/**
 * The graph to show: among the shown runs that have a graph (in the runs
 * list's order), the URL's run or else the first; of its graphs, the URL's
 * or else the first; the URL's run metadata tag if the run recorded it.
 * null when no shown run has a graph.
 */
export function chooseGraph(info: Record<string, GraphInfo>, shown: ReadonlySet<string>, runOrder: string[], s: GraphsState): GraphChoice | null {
  const order = new Map(runOrder.map((r, i) => [r, i]));
  const runs = Object.values(info)
    .filter((g) => shown.has(g.run) && graphsOf(g).length)
    .map((g) => g.run)
    .sort((a, b) => (order.get(a) ?? 0) - (order.get(b) ?? 0));
  if (!runs.length) return null;
  const run = runs.includes(s.grun) ? s.grun : runs[0];
  const graphs = graphsOf(info[run]);
  const which = graphs.some((g) => g.value === s.ggraph) ? s.ggraph : graphs[0].value;
  const profiles = Object.values(info[run].tags ?? {})
    .filter((t) => t.profile)
    .map((t) => t.tag)
    .sort();
  return { runs, run, graphs, which, profiles, statsTag: profiles.includes(s.gstats) ? s.gstats : "" };
}

/**
 * The graphs plugin's graph request for a run's graph ("" | "op:TAG" |
 * "keras:TAG"). keras2_inputs: tbhub links a Keras 2 model's layers, which
 * TensorBoard leaves unconnected.
 */
export function graphParams(run: string, which: string): Record<string, string> {
  const i = which.indexOf(":");
  const params: Record<string, string> = { run };
  if (i > 0) params.tag = which.slice(i + 1);
  if (which.startsWith("keras:")) Object.assign(params, { conceptual: "true", keras2_inputs: "true" });
  return params;
}

/** The open scopes once name is revealed: every scope holding it opened (the others kept, in order). */
export function revealed(open: string[], name: string): string[] {
  const out = [...open];
  for (const a of ancestors(name)) if (!out.includes(a)) out.push(a);
  return out;
}

/** The open scopes after a click on scope id: closed with all inside it if open, else opened with any closed scope above it. */
export function toggledScope(open: string[], id: string): string[] {
  if (open.includes(id)) return open.filter((o) => !o.startsWith(id));
  return [...open, ...[...ancestors(id), id].filter((a) => !open.includes(a))];
}

/** The URL's open scopes that are scopes of this graph (a link may name others). */
export function openScopes(graph: Graph, gopen: string[]): Set<string> {
  return new Set(gopen.filter((o) => graph.isScope(o)));
}

/** Compute time and memory of an op, or summed over a scope's ops (memoised in totals). */
export function statsOf(graph: Graph, stats: Map<string, NodeStats>, id: string, totals: Map<string, NodeStats>): NodeStats | undefined {
  if (!graph.isScope(id)) return stats.get(id);
  let t = totals.get(id);
  if (!t) {
    t = { micros: 0, bytes: 0, device: "" };
    for (const n of graph.opsIn(id)) {
      const s = stats.get(n.name);
      if (s) (t.micros += s.micros), (t.bytes += s.bytes);
    }
    totals.set(id, t);
  }
  return t;
}

/** The device of an op (from the graph, else its run metadata), or the most common one of a scope's ops. */
export function deviceOf(graph: Graph, stats: Map<string, NodeStats> | null, id: string): string {
  if (!graph.isScope(id)) return graph.nodes.get(id)?.device || stats?.get(id)?.device || "";
  const count = new Map<string, number>();
  for (const n of graph.opsIn(id)) if (n.device) count.set(n.device, (count.get(n.device) ?? 0) + 1);
  let best = "";
  for (const [d, c] of count) if (c > (count.get(best) ?? 0)) best = d;
  return best;
}

/** A hue for a key (an op or a device), stable across loads. */
export function hue(key: string): number {
  let x = 2166136261;
  for (let i = 0; i < key.length; i++) x = Math.imul(x ^ key.charCodeAt(i), 16777619);
  return (x >>> 0) % 360;
}
export const keyColor = (key: string, alpha = 0.4) => `hsla(${hue(key)}, 70%, 55%, ${alpha})`;

/** What can colour nodes: [gcolor value, label]. */
export const COLOR_MODES: [string, string][] = [
  ["", "Structure"],
  ["op", "Op type"],
  ["device", "Device"],
  ["time", "Compute time"],
  ["memory", "Memory"],
];

/**
 * A closed box's fill under a colour mode ("" for none): by op or device,
 * a hue of their name; by compute time or memory, red as strong as the
 * box's share of max. device and stat give a box's device and stats.
 */
export function fillFor(b: Box, mode: string, max: number, device: (id: string) => string, stat: (id: string) => NodeStats | undefined): string {
  if (b.open) return "";
  switch (mode) {
    case "op":
      return b.kind === "op" ? keyColor(b.op || "?") : "";
    case "device": {
      const d = device(b.id);
      return d ? keyColor(d) : "";
    }
    case "time":
    case "memory": {
      const st = stat(b.id);
      const v = st ? (mode === "time" ? st.micros : st.bytes) : 0;
      return v > 0 && max > 0 ? `hsla(12, 85%, 55%, ${(0.1 + (0.85 * v) / max).toFixed(3)})` : "";
    }
  }
  return "";
}

/** The URL changed the graph's choice (run, graph, run metadata, colours): the toolbar is filled again. */
export function choiceChanged(s: GraphsState, prev: GraphsState): boolean {
  return s.grun !== prev.grun || s.ggraph !== prev.ggraph || s.gstats !== prev.gstats || s.gcolor !== prev.gcolor;
}

/** The URL changed what the drawing shows (open scopes, the selection, colours). */
export function drawingChanged(s: GraphsState, prev: GraphsState): boolean {
  return s.gopen.join("\n") !== prev.gopen.join("\n") || s.gnode !== prev.gnode || s.gcolor !== prev.gcolor;
}
