// Graphs: a run's GraphDef, one name scope at a time. Scopes are boxes
// that open on click (a breadcrumb leads back up), ops are boxes whose
// details (op, device, inputs, outputs, attributes) show in the side
// panel. Wheel zooms, dragging pans, double-click fits. Search finds
// nodes by name and opens their scope. Only one scope level is drawn at
// a time, which keeps graphs of many thousand nodes usable. The run, the
// open scope and the selected node are in the URL (grun, gscope, gnode):
// every change goes through the store, and update() draws it.

import { getJSON, getText } from "../api";
import { h, setChildren } from "../dom";
import { parsePbtxt } from "../graph/pbtxt";
import { BOX_H, BOX_W, Graph, layout, type Placed } from "../graph/model";
import { notice, runsChanged, shownRuns, type Dashboard, type DashboardContext } from "./dashboard";

const SVG = "http://www.w3.org/2000/svg";

function svg<K extends keyof SVGElementTagNameMap>(tag: K, attrs: Record<string, string | number>, ...children: (SVGElement | string)[]): SVGElementTagNameMap[K] {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  for (const c of children) el.append(c);
  return el;
}

interface GraphInfo {
  run: string;
  run_graph: boolean;
}

export function graphsDashboard(el: HTMLElement, ctx: DashboardContext): Dashboard {
  const runSelect = h("select", { "aria-label": "graph run", className: "graph-run" });
  const search = h("input", { type: "search", placeholder: "Search nodes", "aria-label": "search nodes", className: "graph-search" });
  const results = h("ul.graph-results");
  const crumbs = h("nav.crumbs", { "aria-label": "scope" });
  const canvas = h("div.graph-canvas", { tabIndex: 0 });
  const panel = h("aside.graph-panel", null, h("p.hint", null, "Click a node for its details; click a scope to open it."));
  setChildren(
    el,
    h("div.toolbar", null, h("label", null, "Run ", runSelect), h("label", null, search), crumbs),
    h("div.graph-body", null, h("div.graph-main", null, results, canvas), panel),
  );

  let graph: Graph | null = null;
  let scope = "";
  let selected = "";
  let view = { x: 0, y: 0, k: 1 };
  let root: SVGGElement | null = null;
  let svgEl: SVGSVGElement | null = null;
  let extent = { w: 1, h: 1 };

  const apply = () => root?.setAttribute("transform", `translate(${view.x},${view.y}) scale(${view.k})`);
  function fit() {
    const w = canvas.clientWidth || 800;
    const hgt = canvas.clientHeight || 500;
    const k = Math.min(1.5, Math.min(w / (extent.w + 40), hgt / (extent.h + 40)));
    view = { k, x: (w - extent.w * k) / 2, y: 20 };
    apply();
  }

  function showDetails(name: string) {
    const n = graph?.nodes.get(name);
    if (!graph || !n) return;
    const link = (x: string) => h("a", { href: "#", onclick: (e: Event) => (e.preventDefault(), reveal(x)) }, x);
    setChildren(
      panel,
      h("h3", null, n.name),
      h("dl", null, h("dt", null, "Op"), h("dd.node-op", null, n.op), h("dt", null, "Device"), h("dd", null, n.device || "–")),
      h("h4", null, `Inputs (${n.inputs.length})`),
      h("ul", null, n.inputs.map((x, i) => h("li", null, link(x), n.control[i] ? " (control)" : ""))),
      h("h4", null, `Outputs (${graph.outputs.get(n.name)?.length ?? 0})`),
      h("ul", null, (graph.outputs.get(n.name) ?? []).map((x) => h("li", null, link(x)))),
      h("h4", null, `Attributes (${n.attrs.length})`),
      h("dl.attrs", null, n.attrs.map(([k, v]) => [h("dt", null, k), h("dd", null, v)])),
    );
  }

  /** Opens the scope holding name and selects it. */
  function reveal(name: string) {
    const i = name.lastIndexOf("/");
    results.replaceChildren();
    ctx.store.set({ gscope: i < 0 ? "" : name.slice(0, i + 1), gnode: name });
  }

  /** Shows the state's scope and selection. */
  function show(s: { gscope: string; gnode: string }) {
    if (!graph) return;
    scope = s.gscope && [...graph.nodes.keys()].some((n) => n.startsWith(s.gscope)) ? s.gscope : "";
    selected = s.gnode;
    draw();
    if (graph.nodes.has(selected)) showDetails(selected);
  }

  function draw() {
    if (!graph) return;
    const parts = scope.split("/").filter(Boolean);
    setChildren(
      crumbs,
      h("button.crumb", { onclick: () => ctx.store.set({ gscope: "" }) }, "root"),
      parts.map((p, i) => ["/", h("button.crumb", { onclick: () => ctx.store.set({ gscope: parts.slice(0, i + 1).join("/") + "/" }) }, p)]),
    );
    const { items, edges } = graph.level(scope);
    const placed = layout(items, edges);
    const at = new Map<string, Placed>(placed.map((p) => [p.id, p]));
    extent = { w: Math.max(...placed.map((p) => p.x + BOX_W), 1), h: Math.max(...placed.map((p) => p.y + BOX_H), 1) };
    root = svg("g", {});
    const edgeLayer = svg("g", { class: "edges" });
    for (const e of edges) {
      const a = at.get(e.from)!;
      const b = at.get(e.to)!;
      const x1 = a.x + BOX_W / 2;
      const y1 = a.y + BOX_H;
      const x2 = b.x + BOX_W / 2;
      const y2 = b.y;
      const my = (y1 + y2) / 2;
      edgeLayer.append(svg("path", { d: `M${x1},${y1} C${x1},${my} ${x2},${my} ${x2},${y2}`, "stroke-width": Math.min(1 + Math.log2(e.count), 5), "marker-end": "url(#arrow)" }));
    }
    root.append(edgeLayer);
    for (const p of placed) {
      const g = svg("g", { class: `node ${p.kind}${p.id === selected ? " selected" : ""}`, transform: `translate(${p.x},${p.y})`, "data-name": p.id });
      g.append(svg("rect", { width: BOX_W, height: BOX_H, rx: p.kind === "scope" ? 8 : 3 }));
      const label = p.label.length > 22 ? p.label.slice(0, 21) + "…" : p.label;
      g.append(svg("text", { x: 8, y: 13 }, label));
      g.append(svg("text", { x: 8, y: 25, class: "sub" }, p.kind === "scope" ? `${p.size} nodes` : (p.op ?? "")));
      g.append(svg("title", {}, p.kind === "scope" ? `${p.id} (${p.size} nodes): click to open` : `${p.id} (${p.op})`));
      g.addEventListener("click", (e) => {
        e.stopPropagation();
        if (p.kind === "scope") ctx.store.set({ gscope: p.id });
        else ctx.store.set({ gnode: p.id });
      });
      root.append(g);
    }
    svgEl = svg(
      "svg",
      { width: "100%", height: "100%", role: "img", "aria-label": `graph scope ${scope || "root"}` },
      svg(
        "defs",
        {},
        svg("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 8, markerHeight: 8, markerUnits: "userSpaceOnUse", orient: "auto-start-reverse" }, svg("path", { d: "M0,0 L10,5 L0,10 z" })),
      ),
      root,
    );
    setChildren(canvas, svgEl);
    fit();
  }

  // Zoom around the cursor, pan by dragging, fit on double-click.
  canvas.addEventListener(
    "wheel",
    (e) => {
      e.preventDefault();
      const r = canvas.getBoundingClientRect();
      const mx = e.clientX - r.left;
      const my = e.clientY - r.top;
      const f = Math.exp(-e.deltaY * 0.0015);
      view = { k: view.k * f, x: mx - (mx - view.x) * f, y: my - (my - view.y) * f };
      apply();
    },
    { passive: false },
  );
  let drag: { x: number; y: number } | null = null;
  canvas.addEventListener("pointerdown", (e) => {
    drag = { x: e.clientX - view.x, y: e.clientY - view.y };
  });
  window.addEventListener("pointermove", (e) => {
    if (!drag) return;
    view = { ...view, x: e.clientX - drag.x, y: e.clientY - drag.y };
    apply();
  });
  const endDrag = () => (drag = null);
  window.addEventListener("pointerup", endDrag);
  canvas.addEventListener("dblclick", fit);

  search.addEventListener("input", () => {
    const q = search.value.trim();
    setChildren(results, q && graph ? graph.search(q).map((name) => h("li", null, h("button", { onclick: () => reveal(name) }, name))) : []);
  });

  let loadedRun = "";
  async function load(run: string) {
    loadedRun = run;
    graph = null;
    setChildren(canvas, notice("Loading graph…"));
    try {
      const g = new Graph(parsePbtxt(await getText(ctx.api.plugin("graphs", "graph", { run }))));
      if (loadedRun !== run) return;
      graph = g;
      if (!graph.nodes.size) setChildren(canvas, notice("This graph has no nodes."));
      else show(ctx.store.get());
    } catch (e) {
      setChildren(canvas, notice((e as Error).message, "error"));
    }
  }
  runSelect.addEventListener("change", () => ctx.store.set({ grun: runSelect.value, gscope: "", gnode: "" }));

  let runs: string[] = [];
  function fillRuns() {
    const shown = shownRuns(ctx, ctx.store.get());
    const list = runs.filter((r) => shown.has(r));
    setChildren(runSelect, list.map((r) => h("option", { value: r }, r)));
    if (!list.length) {
      loadedRun = "";
      setChildren(canvas, notice("No graphs among the shown runs."));
      return;
    }
    const want = ctx.store.get().grun;
    const run = list.includes(want) ? want : list[0];
    runSelect.value = run;
    if (run !== loadedRun) load(run);
  }
  getJSON<Record<string, GraphInfo>>(ctx.api.plugin("graphs", "info"))
    .then((info) => {
      const order = new Map(ctx.runs.map((r, i) => [r.name, i]));
      runs = Object.values(info)
        .filter((g) => g.run_graph)
        .map((g) => g.run)
        .sort((a, b) => (order.get(a) ?? 0) - (order.get(b) ?? 0));
      fillRuns();
    })
    .catch((e) => setChildren(canvas, notice(e.message, "error")));

  return {
    update(s, prev) {
      if (runsChanged(s, prev) || s.grun !== prev.grun) fillRuns();
      else if (s.gscope !== prev.gscope || s.gnode !== prev.gnode) show(s);
    },
    destroy() {
      window.removeEventListener("pointerup", endDrag);
      svgEl = null;
    },
  };
}
