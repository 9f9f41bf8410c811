// Graphs: a run's GraphDef, an op graph recorded in run metadata, or a
// Keras model (which the server turns into a GraphDef of layers). Name
// scopes start collapsed; clicking one opens it in place, and any number
// can be open at once (its header closes it again). Ops are boxes whose
// details (op, device, inputs, outputs, attributes, and compute time and
// memory when run metadata is chosen) show in the side panel. A graph opens
// fitted to its card (and fits again when the card resizes, until moved). Wheel zooms,
// dragging pans, double-click fits. Search finds nodes by name, opens the
// scopes holding them and centres them. Nodes can be coloured by op,
// device, compute time or memory.
//
// Only what is in view (and half a view around it) is drawn, as one SVG
// string set at once, without text when zoomed out too far to read it; a
// pan or zoom that leaves that window draws again. Clicks are handled on
// the canvas by looking up the node group under the pointer. Everything that
// shapes the view is in the URL (grun, ggraph, gopen, gnode, gstats,
// gcolor): every change goes through the store, and update() draws it.

import { getJSON, getText } from "../api";
import { h, setChildren } from "../dom";
import { parsePbtxt } from "../graph/pbtxt";
import { attrText, Graph } from "../graph/model";
import { BOX_H, HEADER, layoutGraph, type Box } from "../graph/layout";
import { fmtBytes, fmtMicros, nodeStats, type NodeStats } from "../graph/stats";
import type { ViewState } from "../state";
import { notice, runsChanged, shownRuns, type Dashboard, type DashboardContext } from "./dashboard";
import {
  choiceChanged,
  chooseGraph,
  COLOR_MODES,
  deviceOf as deviceIn,
  drawingChanged,
  fillFor as fillOf,
  graphParams,
  keyColor,
  openScopes,
  revealed,
  statsOf as statsIn,
  toggledScope,
  type GraphInfo,
} from "./graphs-model";

const esc = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

export function graphsDashboard(el: HTMLElement, ctx: DashboardContext): Dashboard {
  const { store } = ctx;
  const runSelect = h("select", { "aria-label": "graph run", className: "graph-run" });
  const graphSelect = h("select", { "aria-label": "graph", className: "graph-kind" });
  const statsSelect = h("select", { "aria-label": "run metadata", className: "graph-stats" });
  const colorSelect = h("select", { "aria-label": "colour nodes by", className: "graph-color" }, COLOR_MODES.map(([v, l]) => h("option", { value: v }, l)));
  const search = h("input", { type: "search", placeholder: "Search nodes", "aria-label": "search nodes", className: "graph-search" });
  const results = h("ul.graph-results");
  const canvas = h("div.graph-canvas", { tabIndex: 0, "aria-label": "graph: drag to pan, wheel to zoom, Enter opens the focused scope", style: { position: "relative" } });
  const legend = h("div.graph-legend");
  const panel = h("aside.graph-panel", null, h("p.hint", null, "Click a node for its details; click a scope to open it, its header to close it."));
  const statsLabel = h("label.graph-stats-label", null, "Run metadata ", statsSelect);
  setChildren(
    el,
    h(
      "div.toolbar",
      null,
      h("label", null, "Run ", runSelect),
      h("label", null, "Graph ", graphSelect),
      statsLabel,
      h("label", null, "Colour ", colorSelect),
      h("label", null, search),
      h("button.graph-fit", { onclick: () => fit() }, "Fit"),
      h("button", { onclick: () => store.set({ gopen: [] }) }, "Collapse all"),
    ),
    h("div.graph-body", null, h("div.graph-main", null, results, canvas, legend), panel),
  );

  let info: Record<string, GraphInfo> = {};
  let graph: Graph | null = null;
  let stats: Map<string, NodeStats> | null = null;
  let boxes = new Map<string, Box>();
  let drawnKey = "";
  let shownDetails = "";
  /** The run and tag of the run metadata loaded or loading ("" for none). */
  let statsKey = "";
  let selected = "";
  let view = { x: 0, y: 0, k: 1 };
  let extent = { w: 1, h: 1 };
  let root: SVGGElement | null = null;
  let fitPending = true;
  /** A node to centre once drawn (search, a link in the panel). */
  let centrePending = "";
  /** A scope whose screen position should stay put across a redraw. */
  let anchor: { id: string; sx: number; sy: number } | null = null;
  const scopeTotals = new Map<string, NodeStats>();
  // What draw() laid out, for render() to draw the part in view.
  interface Segment {
    x1: number;
    y1: number;
    x2: number;
    y2: number;
    width: number;
  }
  let laidBoxes: Box[] = [];
  let segments: Segment[] = [];
  let colourMode = "";
  let colourMax = 0;
  /**
   * The window last rendered: its top-left (x0, y0) and bottom-right in
   * graph coordinates, the zoom it was rendered at, and whether with text.
   */
  let rendered: { x0: number; y0: number; x1: number; y1: number; k: number; detail: boolean } | null = null;
  let renderQueued = false;

  /**
   * Moves the drawing to the view. The SVG holds the rendered window at
   * the zoom it was rendered at; panning and zooming move and scale that
   * element with a CSS transform (no repaint of its contents), and what
   * comes into view is rendered before the next frame.
   */
  function apply() {
    const svgEl = root?.ownerSVGElement;
    if (svgEl && rendered) {
      const r = rendered;
      svgEl.style.transform = `translate(${view.x + r.x0 * view.k}px, ${view.y + r.y0 * view.k}px) scale(${view.k / r.k})`;
    }
    if (!rendered) renderIfNeeded();
    else if (!renderQueued) {
      renderQueued = true;
      requestAnimationFrame(() => {
        renderQueued = false;
        renderIfNeeded();
      });
    }
  }
  /**
   * Whether the view is the fit (the graph opened, Fit, double-click) and
   * not a place the reader moved to: a card that changes size then fits
   * again, and one not laid out yet when the graph arrived is fitted once
   * it has a size.
   */
  let fitted = false;
  /** Shows the whole graph, centred in its card (at most 1.5 × its size). */
  function fit() {
    const w = canvas.clientWidth;
    const hgt = canvas.clientHeight;
    fitted = true;
    if (!w || !hgt) return; // not laid out: the resize observer fits it
    const k = Math.min(1.5, Math.min(w / (extent.w + 40), hgt / (extent.h + 40)));
    view = { k, x: (w - extent.w * k) / 2, y: (hgt - extent.h * k) / 2 };
    rendered = null; // a jump: render now
    apply();
  }
  const resized = new ResizeObserver(() => {
    if (fitted && root) fit();
  });
  resized.observe(canvas);
  function centreOn(id: string) {
    const b = boxes.get(id);
    if (!b) return;
    fitted = false;
    const k = view.k < 0.6 ? 1 : view.k;
    view = { k, x: (canvas.clientWidth || 800) / 2 - (b.x + b.w / 2) * k, y: (canvas.clientHeight || 500) / 2 - (b.y + b.h / 2) * k };
    rendered = null; // a jump: render now
    apply();
  }

  /** Compute time and memory of an op, or summed over a scope's ops. */
  function statsOf(id: string): NodeStats | undefined {
    return stats && graph ? statsIn(graph, stats, id, scopeTotals) : undefined;
  }

  /** The device of an op, or the most common one of a scope's ops. */
  function deviceOf(id: string): string {
    return graph ? deviceIn(graph, stats, id) : "";
  }

  function showDetails(name: string) {
    const n = graph?.nodes.get(name);
    if (!graph || !n) return;
    const link = (x: string) => h("a", { href: "#", onclick: (e: Event) => (e.preventDefault(), reveal(x)) }, x);
    const st = stats?.get(name);
    const outs = graph.outputs.get(n.name) ?? [];
    setChildren(
      panel,
      h("h3", null, n.name),
      h(
        "dl",
        null,
        h("dt", null, "Op"),
        h("dd.node-op", null, n.op || "–"),
        h("dt", null, "Device"),
        h("dd.node-device", null, n.device || st?.device || "–"),
        stats ? [h("dt", null, "Compute time"), h("dd.node-time", null, st ? fmtMicros(st.micros) : "not run"), h("dt", null, "Memory"), h("dd.node-memory", null, st ? fmtBytes(st.bytes) : "–")] : null,
      ),
      h("h4", null, `Inputs (${n.inputs.length})`),
      h("ul.node-inputs", null, n.inputs.map((x, i) => h("li", null, link(x), n.control[i] ? " (control)" : ""))),
      h("h4", null, `Outputs (${outs.length})`),
      h("ul.node-outputs", null, outs.map((x) => h("li", null, link(x)))),
      h("h4", null, `Attributes (${n.attrs.length})`),
      h("dl.attrs", null, n.attrs.map(([k, v]) => [h("dt", null, k), h("dd", null, attrText(v))])),
    );
  }

  /** Opens the scopes holding name, selects it and centres it. */
  function reveal(name: string) {
    results.replaceChildren();
    const s = store.get();
    const open = revealed(s.gopen, name);
    centrePending = name;
    store.set({ gopen: open, gnode: name });
    if (s.gnode === name && open.length === s.gopen.length) centreOn(name);
  }

  /** Opens a closed scope (and any closed scope above it), or closes an open one and all inside it. */
  function toggle(id: string, b: Box) {
    anchor = { id, sx: b.x * view.k + view.x, sy: b.y * view.k + view.y };
    store.set({ gopen: toggledScope(store.get().gopen, id) });
  }

  /** Shows the state's open scopes, colours and selection. */
  function show(s: ViewState) {
    if (!graph) return;
    const open = openScopes(graph, s.gopen);
    const key = [...open].sort().join("\n") + "\t" + s.gcolor + "\t" + (stats ? "stats" : "");
    if (key !== drawnKey) {
      drawnKey = key;
      draw(open, s.gcolor);
    }
    if (selected !== s.gnode) {
      root?.querySelector(".node.selected")?.classList.remove("selected");
      selected = s.gnode;
      root?.querySelector(`.node[data-name="${CSS.escape(selected)}"]`)?.classList.add("selected");
    }
    // The panel is built again only when what it shows changed (a node
    // can have a thousand outputs).
    const details = selected + "\t" + (stats ? statsKey : "");
    if (graph.nodes.has(selected) && details !== shownDetails) {
      shownDetails = details;
      showDetails(selected);
    }
    if (centrePending && boxes.has(centrePending)) {
      centreOn(centrePending);
      centrePending = "";
    }
  }

  function fillFor(b: Box, mode: string, max: number): string {
    return fillOf(b, mode, max, deviceOf, statsOf);
  }

  /** Lays out the graph with the open scopes, then renders what is in view. */
  function draw(open: ReadonlySet<string>, mode: string) {
    if (!graph) return;
    const laid = layoutGraph(graph, open);
    extent = { w: Math.max(laid.w, 1), h: Math.max(laid.h, 1) };
    laidBoxes = laid.boxes;
    boxes = new Map(laid.boxes.map((b) => [b.id, b]));
    const shown = laid.boxes.filter((b) => !b.open);
    colourMode = mode;
    colourMax = 0;
    if (mode === "time" || mode === "memory")
      for (const b of shown) {
        const st = statsOf(b.id);
        if (st) colourMax = Math.max(colourMax, mode === "time" ? st.micros : st.bytes);
      }
    segments = [];
    for (const e of graph.visibleEdges(open)) {
      const a = boxes.get(e.from);
      const b = boxes.get(e.to);
      if (a && b) segments.push({ x1: a.x + a.w / 2, y1: a.y + a.h, x2: b.x + b.w / 2, y2: b.y, width: Math.min(1 + Math.log2(e.count), 5) });
    }
    if (!root) {
      canvas.innerHTML =
        `<svg class="graph-svg" role="img" aria-label="graph" style="position:absolute;left:0;top:0;transform-origin:0 0;will-change:transform"><defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="8" markerHeight="8" markerUnits="userSpaceOnUse" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z"/></marker></defs>` +
        `<g class="root"></g></svg>`;
      root = canvas.querySelector("g.root");
    }
    rendered = null;
    if (fitPending) {
      fitPending = false;
      if (boxes.has(store.get().gnode)) centreOn(store.get().gnode);
      else fit();
    } else {
      if (anchor && boxes.has(anchor.id)) {
        const b = boxes.get(anchor.id)!;
        view = { ...view, x: anchor.sx - b.x * view.k, y: anchor.sy - b.y * view.k };
      }
      apply();
    }
    anchor = null;
    drawLegend(shown, mode, colourMax);
  }

  /**
   * Draws the boxes and edges within the view and half a view around it
   * (a pan re-renders once it leaves that); below 35% zoom, where text is
   * unreadable, boxes are drawn without it. The SVG is one string set at
   * once: far faster than building thousands of elements one by one.
   */
  function render() {
    if (!root || !graph) return;
    const k = view.k;
    const w = canvas.clientWidth || 800;
    const hgt = canvas.clientHeight || 500;
    const x0 = (-view.x - w / 2) / k;
    const y0 = (-view.y - hgt / 2) / k;
    const x1 = x0 + (2 * w) / k;
    const y1 = y0 + (2 * hgt) / k;
    const detail = k >= 0.35;
    rendered = { x0, y0, x1, y1, k, detail };
    const svgEl = root.ownerSVGElement!;
    svgEl.setAttribute("width", String(2 * w));
    svgEl.setAttribute("height", String(2 * hgt));
    root.setAttribute("transform", `scale(${k}) translate(${-x0},${-y0})`);
    svgEl.style.transform = `translate(${view.x + x0 * k}px, ${view.y + y0 * k}px)`;
    const parts: string[] = ['<g class="edges">'];
    for (const s of segments) {
      if (Math.max(s.x1, s.x2) < x0 || Math.min(s.x1, s.x2) > x1 || Math.max(s.y1, s.y2) < y0 || Math.min(s.y1, s.y2) > y1) continue;
      const my = (s.y1 + s.y2) / 2;
      parts.push(`<path d="M${s.x1},${s.y1} C${s.x1},${my} ${s.x2},${my} ${s.x2},${s.y2}" stroke-width="${s.width}"${detail ? ' marker-end="url(#arrow)"' : ""}/>`);
    }
    parts.push("</g>");
    for (const b of laidBoxes) {
      if (b.x > x1 || b.x + b.w < x0 || b.y > y1 || b.y + b.h < y0) continue;
      const name = esc(b.id);
      if (b.open) {
        const chars = Math.max(8, Math.floor((b.w - 30) / 6.5));
        const label = b.label.length > chars ? b.label.slice(0, chars - 1) + "…" : b.label;
        parts.push(
          `<g class="node scope open" data-name="${name}" transform="translate(${b.x},${b.y})">` +
            `<rect class="frame" width="${b.w}" height="${b.h}" rx="8"/>` +
            `<rect class="head" width="${b.w}" height="${HEADER - 4}" rx="8" tabindex="0" role="button" aria-label="close ${name}"/>` +
            (detail ? `<text x="8" y="16">− ${esc(label)} <tspan class="sub">(${b.size} nodes)</tspan></text><title>${name}: click the header to close</title>` : "") +
            `</g>`,
        );
        continue;
      }
      const fill = fillFor(b, colourMode, colourMax);
      const cls = `node ${b.kind}${b.id === selected ? " selected" : ""}`;
      const rect = `<rect width="${b.w}" height="${BOX_H}" rx="${b.kind === "scope" ? 8 : 3}"${fill ? ` style="fill:${fill}"` : ""}/>`;
      if (!detail) {
        parts.push(`<g class="${cls}" data-name="${name}" transform="translate(${b.x},${b.y})">${rect}</g>`);
        continue;
      }
      const label = b.label.length > 22 ? b.label.slice(0, 21) + "…" : b.label;
      const sub = b.kind === "scope" ? `+ ${b.size} nodes` : (b.op ?? "");
      const st = stats ? statsOf(b.id) : undefined;
      const statText = st && colourMode === "time" ? ` · ${fmtMicros(st.micros)}` : st && colourMode === "memory" ? ` · ${fmtBytes(st.bytes)}` : "";
      parts.push(
        `<g class="${cls}" data-name="${name}" transform="translate(${b.x},${b.y})" tabindex="0" role="button" aria-label="${b.kind === "scope" ? "open " : ""}${name}">` +
          rect +
          `<text x="8" y="13">${esc(label)}</text><text x="8" y="25" class="sub">${esc(sub + statText)}</text>` +
          `<title>${name}${b.kind === "scope" ? ` (${b.size} nodes): click to open` : ` (${esc(b.op ?? "")})`}</title></g>`,
      );
    }
    root.innerHTML = parts.join("");
  }

  /** Renders again when the view left the rendered window or crossed the text threshold. */
  function renderIfNeeded() {
    const k = view.k;
    const w = canvas.clientWidth || 800;
    const hgt = canvas.clientHeight || 500;
    const x0 = -view.x / k;
    const y0 = -view.y / k;
    const r = rendered;
    // Scaled more than this from the rendered zoom, text would blur: render again.
    const crisp = r && k / r.k > 0.8 && k / r.k < 1.25;
    if (r && crisp && r.detail === k >= 0.35 && x0 >= r.x0 && y0 >= r.y0 && x0 + w / k <= r.x1 && y0 + hgt / k <= r.y1) return;
    render();
  }

  function drawLegend(shown: Box[], mode: string, max: number) {
    if (mode === "op" || mode === "device") {
      const count = new Map<string, number>();
      for (const b of shown) {
        if (mode === "op" && b.kind !== "op") continue;
        const k = mode === "op" ? b.op || "?" : deviceOf(b.id);
        if (k) count.set(k, (count.get(k) ?? 0) + 1);
      }
      const top = [...count].sort((a, b) => b[1] - a[1]);
      setChildren(
        legend,
        top.slice(0, 12).map(([k, n]) => h("span.legend-item", { title: `${n} shown` }, h("span.swatch", { style: { background: keyColor(k, 0.6) } }), k)),
        top.length > 12 ? h("span.legend-item", null, `+${top.length - 12} more`) : null,
        top.length ? null : h("span.legend-item", null, mode === "device" ? "no devices recorded" : ""),
      );
    } else if (mode === "time" || mode === "memory") {
      setChildren(
        legend,
        stats
          ? h("span.legend-item", null, h("span.swatch.ramp"), `0 – ${mode === "time" ? fmtMicros(max) : fmtBytes(max)}`)
          : h("span.legend-item", null, "choose run metadata to colour by " + (mode === "time" ? "compute time" : "memory")),
      );
    } else legend.replaceChildren();
  }

  // Zoom around the cursor, pan by dragging, fit on double-click; a click
  // (not a drag) on a node selects it or opens/closes its scope.
  canvas.addEventListener(
    "wheel",
    (e) => {
      e.preventDefault();
      const r = canvas.getBoundingClientRect();
      const mx = e.clientX - r.left;
      const my = e.clientY - r.top;
      const f = Math.exp(-e.deltaY * 0.0015);
      fitted = false;
      view = { k: view.k * f, x: mx - (mx - view.x) * f, y: my - (my - view.y) * f };
      apply();
    },
    { passive: false },
  );
  let drag: { x: number; y: number; moved: boolean; sx: number; sy: number } | null = null;
  let dragged = false;
  canvas.addEventListener("pointerdown", (e) => {
    drag = { x: e.clientX - view.x, y: e.clientY - view.y, sx: e.clientX, sy: e.clientY, moved: false };
    dragged = false;
  });
  const onMove = (e: PointerEvent) => {
    if (!drag) return;
    if (!drag.moved && Math.hypot(e.clientX - drag.sx, e.clientY - drag.sy) < 4) return;
    drag.moved = true;
    fitted = false;
    view = { ...view, x: e.clientX - drag.x, y: e.clientY - drag.y };
    apply();
  };
  const endDrag = () => {
    dragged = drag?.moved ?? false;
    drag = null;
  };
  window.addEventListener("pointermove", onMove);
  window.addEventListener("pointerup", endDrag);
  canvas.addEventListener("dblclick", (e) => {
    if (!(e.target as Element).closest(".node")) fit();
  });
  function activate(target: Element) {
    const g = target.closest<SVGGElement>(".node");
    const id = g?.dataset.name;
    const b = id !== undefined ? boxes.get(id) : undefined;
    if (!b || !id) return;
    if (b.kind === "scope") {
      if (!b.open || target.classList.contains("head")) toggle(id, b);
    } else store.set({ gnode: id });
  }
  canvas.addEventListener("click", (e) => {
    if (dragged) return;
    activate(e.target as Element);
  });
  canvas.addEventListener("keydown", (e) => {
    if ((e.key === "Enter" || e.key === " ") && e.target !== canvas) {
      e.preventDefault();
      activate(e.target as Element);
    }
  });

  search.addEventListener("input", () => {
    const q = search.value.trim();
    setChildren(results, q && graph ? graph.search(q).map((name) => h("li", null, h("button", { onclick: () => reveal(name) }, name))) : []);
  });
  search.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && graph) {
      const first = graph.search(search.value.trim(), 1)[0];
      if (first) reveal(first);
    }
  });

  let loadedKey = "";
  async function load(run: string, which: string) {
    const key = run + "\n" + which;
    loadedKey = key;
    graph = null;
    boxes = new Map();
    drawnKey = "";
    shownDetails = "";
    fitPending = true;
    scopeTotals.clear();
    legend.replaceChildren();
    setChildren(canvas, notice("Loading graph…"));
    root = null;
    try {
      const g = new Graph(parsePbtxt(await getText(ctx.api.plugin("graphs", "graph", graphParams(run, which)))));
      if (loadedKey !== key) return;
      graph = g;
      if (!graph.nodes.size) setChildren(canvas, notice("This graph has no nodes."));
      else show(store.get());
    } catch (e) {
      if (loadedKey === key) setChildren(canvas, notice((e as Error).message, "error"));
    }
  }

  async function loadStats(run: string, tag: string) {
    const key = tag ? run + "\n" + tag : "";
    if (key === statsKey) return;
    statsKey = key;
    stats = null;
    scopeTotals.clear();
    if (tag) {
      try {
        const st = nodeStats(parsePbtxt(await getText(ctx.api.plugin("graphs", "run_metadata", { run, tag }))));
        if (statsKey !== key) return;
        stats = st;
      } catch (e) {
        if (statsKey === key) legend.replaceChildren(notice(`run metadata: ${(e as Error).message}`, "error"));
        return;
      }
    }
    show(store.get());
  }

  runSelect.addEventListener("change", () => store.set({ grun: runSelect.value, ggraph: "", gopen: [], gnode: "", gstats: "" }));
  graphSelect.addEventListener("change", () => store.set({ ggraph: graphSelect.value, gopen: [], gnode: "" }));
  statsSelect.addEventListener("change", () => store.set({ gstats: statsSelect.value }));
  colorSelect.addEventListener("change", () => store.set({ gcolor: colorSelect.value }));

  function fillRuns() {
    const s = store.get();
    colorSelect.value = s.gcolor;
    const choice = chooseGraph(info, shownRuns(ctx, s), ctx.runs.map((r) => r.name), s);
    setChildren(runSelect, (choice?.runs ?? []).map((r) => h("option", { value: r }, r)));
    if (!choice) {
      loadedKey = "";
      graph = null;
      root = null;
      setChildren(canvas, notice("No graphs among the shown runs."));
      return;
    }
    const { run, graphs, which, profiles, statsTag } = choice;
    runSelect.value = run;
    setChildren(graphSelect, graphs.map((g) => h("option", { value: g.value }, g.label)));
    graphSelect.value = which;
    setChildren(statsSelect, h("option", { value: "" }, profiles.length ? "none" : "none recorded"), profiles.map((t) => h("option", { value: t }, t)));
    statsSelect.disabled = !profiles.length;
    statsSelect.value = statsTag;
    if (run + "\n" + which !== loadedKey) load(run, which);
    loadStats(run, statsTag);
  }

  getJSON<Record<string, GraphInfo>>(ctx.api.plugin("graphs", "info"))
    .then((i) => {
      info = i;
      fillRuns();
    })
    .catch((e) => setChildren(canvas, notice(e.message, "error")));

  return {
    update(s, prev) {
      if (runsChanged(s, prev) || choiceChanged(s, prev)) fillRuns();
      if (drawingChanged(s, prev)) show(s);
    },
    // New data: the list of runs and graphs is read again; the graph in
    // view stays as it is (Reload reads it again).
    refresh() {
      getJSON<Record<string, GraphInfo>>(ctx.api.plugin("graphs", "info"))
        .then((i) => {
          info = i;
          fillRuns();
        })
        .catch(() => {});
    },
    destroy() {
      resized.disconnect();
      window.removeEventListener("pointermove", onMove);
      window.removeEventListener("pointerup", endDrag);
    },
  };
}
