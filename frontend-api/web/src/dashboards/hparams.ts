// HParams: the session groups as a table (one column per hyperparameter
// and per metric; click a header to sort, filter rows by a regex over their
// cells), as parallel coordinates (a line per group across every column),
// or as a scatter plot matrix (TensorBoard's: a small plot per pair of a
// hyperparameter or metric against a metric) above the chosen pair drawn
// large; plots are coloured by a column. Hovering a session group's point
// highlights the group in every plot; clicking it keeps it highlighted.
// Dragging along an axis of the parallel coordinates brushes a range: the
// table and scatter plot keep the groups inside every brush, the parallel
// coordinates draw the others faint. The view, sort, filter, brushes, axes
// and colour are in the URL (state.ts: hview, hsort, hfilter, hbrush, hx,
// hy, hcolor).

import { getJSON } from "../api";
import { compileFilter, debounce, fmtNum, h, setChildren } from "../dom";
import type { ViewState } from "../state";
import { notice, type Dashboard, type DashboardContext } from "./dashboard";
import { highlightGroup, makeAxis, matrixCellSize, matrixLayout, MISSING, parallelCoordinates, scatterMatrix, scatterPlot, sharedRows, type Axis, type Cell, type Column, type Row } from "./hparams-plots";

interface MetricName {
  group?: string;
  tag?: string;
}
interface SessionGroup {
  name: string;
  hparams?: Record<string, unknown>;
  metricValues?: { name: MetricName; value?: number | string; trainingStep?: number }[];
  sessions?: { name: string; status?: string }[];
}

const ALL_STATUSES = ["STATUS_UNKNOWN", "STATUS_SUCCESS", "STATUS_FAILURE", "STATUS_RUNNING"];
const NAME = "Session group";

function metricKey(m: MetricName): string {
  return m.group ? `${m.group}/${m.tag ?? ""}` : (m.tag ?? "");
}

/**
 * Calls an hparams route with a proto3-JSON request, as GET ?request=
 * (which the API accepts like a POST body), so the fetch layer caches it.
 */
function hparamsCall<T>(path: string, body: unknown): Promise<T> {
  return getJSON<T>(`${path}?request=${encodeURIComponent(JSON.stringify(body))}`);
}

/** A value as the table holds it: numbers (NaN/±Inf arrive as strings) and strings. */
function cellOf(v: unknown): Cell {
  if (v === undefined || v === null) return undefined;
  if (typeof v === "number") return v;
  if (typeof v === "boolean") return String(v);
  if (typeof v === "string") {
    if (v === "NaN" || v === "Infinity" || v === "-Infinity") return Number(v);
    return v;
  }
  return JSON.stringify(v);
}

/** A regex matching these runs and the runs under them (run/train, run/eval). */
export function runsFilter(runs: string[]): string {
  const esc = runs.map((r) => r.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&"));
  return `^(?:${esc.join("|")})(?:/|$)`;
}

/** The runs the view state shows in Scalars: the group's runs. */
function scalarsOfRuns(runs: string[]): { tab: string; runFilter: string } {
  return { tab: "scalars", runFilter: runsFilter(runs) };
}

/** The table of session groups: columns and one row per group. */
function tableOf(groups: SessionGroup[]): { columns: Column[]; rows: Row[] } {
  const hp = [...new Set(groups.flatMap((g) => Object.keys(g.hparams ?? {})))].sort();
  const metrics = [...new Set(groups.flatMap((g) => (g.metricValues ?? []).map((m) => metricKey(m.name))))].sort();
  const hpSet = new Set(hp);
  const columns: Column[] = [
    { label: NAME, kind: "name" },
    ...hp.map((k) => ({ label: k, kind: "hparam" as const })),
    // A metric named like a hyperparameter keeps its own column.
    ...metrics.map((k) => ({ label: hpSet.has(k) ? `${k} (metric)` : k, kind: "metric" as const })),
  ];
  const rows = groups.map((g) => {
    const byMetric = new Map((g.metricValues ?? []).map((m) => [metricKey(m.name), m.value]));
    return {
      name: g.name,
      runs: (g.sessions ?? []).map((x) => x.name),
      cells: [g.name, ...hp.map((k) => cellOf(g.hparams?.[k])), ...metrics.map((k) => (byMetric.has(k) ? Number(byMetric.get(k)) : undefined))],
    };
  });
  return { columns, rows };
}

/**
 * A brushed axis: a range of numbers or a set of categories, and whether
 * it holds the missing band (a brush of only the band has neither).
 */
export interface Brush {
  col: string;
  range?: [number, number];
  values?: string[];
  missing: boolean;
}

/**
 * Parses an hbrush URL value, null if malformed: [COL, LO, HI] or
 * [COL, [VALUES]], either followed by "missing" when the brush holds the
 * missing band, or [COL, "missing"] for the band alone.
 */
export function parseBrush(v: string): Brush | null {
  try {
    const b = JSON.parse(v);
    if (!Array.isArray(b) || typeof b[0] !== "string") return null;
    const missing = b.length > 1 && b[b.length - 1] === "missing";
    const rest = missing ? b.slice(1, -1) : b.slice(1);
    if (rest.length === 0 && missing) return { col: b[0], missing };
    if (rest.length === 2 && typeof rest[0] === "number" && typeof rest[1] === "number") return { col: b[0], range: [Math.min(rest[0], rest[1]), Math.max(rest[0], rest[1])], missing };
    if (rest.length === 1 && Array.isArray(rest[0])) return { col: b[0], values: rest[0].map(String), missing };
  } catch {
    // Not JSON: ignored, like any other unknown URL value.
  }
  return null;
}

/**
 * The brush of positions t0 < t1 on an axis (t0 MISSING when it holds the
 * missing band), as stored in the URL.
 */
export function brushOf(col: string, axis: Axis, t0: number, t1: number): string {
  const missing = t0 === MISSING;
  const out: unknown[] = [col];
  if (t1 !== MISSING) {
    const lo = missing ? 0 : t0;
    if (axis.numeric) {
      const at = (t: number) => Number((axis.min + t * (axis.max - axis.min)).toPrecision(6));
      out.push(at(lo), at(t1));
    } else out.push(axis.categories.filter((c) => { const t = axis.pos(c)!; return t >= lo && t <= t1; }));
  }
  if (missing) out.push("missing");
  return JSON.stringify(out);
}

/** Whether a cell passes a brush (a missing value when it holds the missing band). */
export function inBrush(b: Brush, v: Cell): boolean {
  if (v === undefined) return b.missing;
  if (b.values) return b.values.includes(String(v));
  return b.range !== undefined && typeof v === "number" && v >= b.range[0] && v <= b.range[1];
}

/** Where a brush sits on an axis, in positions (MISSING for the missing band). */
export function brushRange(b: Brush, axis: Axis): [number, number] | null {
  const ts = (b.values ? b.values.map((v) => axis.pos(v)) : b.range ? b.range.map((v) => axis.pos(v)) : []).filter((t): t is number => t !== undefined);
  if (b.missing) ts.push(MISSING);
  return ts.length ? [Math.min(...ts), Math.max(...ts)] : null;
}

export function hparamsDashboard(el: HTMLElement, ctx: DashboardContext): Dashboard {
  const { store } = ctx;
  const view = h(
    "select.hparams-view",
    { "aria-label": "view", onchange: () => store.set({ hview: view.value as ViewState["hview"] }) },
    h("option", { value: "table" }, "Table"),
    h("option", { value: "parallel" }, "Parallel coordinates"),
    h("option", { value: "scatter" }, "Scatter plot matrix"),
  );
  const filter = h("input", { type: "search", placeholder: "Filter rows (regex)", "aria-label": "row filter", className: "row-filter" });
  filter.addEventListener("input", debounce(() => store.set({ hfilter: filter.value }), 200));
  const filterError = h("span.error");
  const colorBy = h("select.hparams-color", { "aria-label": "colour by", onchange: () => store.set({ hcolor: colorBy.value }) });
  const xSel = h("select.hparams-x", { "aria-label": "x axis", onchange: () => store.set({ hx: xSel.value }) });
  const ySel = h("select.hparams-y", { "aria-label": "y axis", onchange: () => store.set({ hy: ySel.value }) });
  const colorLabel = h("label", null, "Colour by ", colorBy);
  const xLabel = h("label", null, "X ", xSel);
  const yLabel = h("label", null, "Y ", ySel);
  const clearBrushes = h("button.clear-brushes", { type: "button", hidden: true, onclick: () => store.set({ hbrush: [] }) }, "Clear brushes");
  const content = h("div.cards.hparams");
  setChildren(el, h("div.toolbar", null, h("label", null, "View ", view), h("label", null, "Rows ", filter), filterError, clearBrushes, colorLabel, xLabel, yLabel), content);

  let table: { columns: Column[]; rows: Row[] } | null = null;
  // The session group clicked in the scatter plots: highlighted in each
  // until clicked again (a hovered one is highlighted meanwhile).
  // Both survive a redraw (a resize redraws the plots under a still pointer).
  let pinned: string | null = null;
  let hovered: string | null = null;
  const highlight = () => {
    for (const plot of content.querySelectorAll(".hparams-matrix, svg.hparams-scatter")) highlightGroup(plot, hovered ?? pinned);
  };
  const groupAt = (e: Event) => ((e.target as Element).closest?.(".mx-point, .sc-point") as SVGElement | null)?.dataset.group ?? null;
  content.addEventListener("pointerover", (e) => {
    const g = groupAt(e);
    if (g === null) return;
    hovered = g;
    highlight();
  });
  content.addEventListener("pointerout", (e) => {
    if (groupAt(e) === null) return;
    hovered = null;
    highlight();
  });
  content.addEventListener("click", (e) => {
    const g = groupAt(e);
    if (g === null) return;
    pinned = pinned === g ? null : g;
    highlight();
  });

  function fillSelect(sel: HTMLSelectElement, cols: Column[], value: string) {
    setChildren(
      sel,
      cols.map((c) => h("option", { value: c.label }, c.label)),
    );
    sel.value = value;
  }

  /** Of the columns at indices, the one named label, or the first of kinds. */
  function pick(columns: Column[], indices: number[], label: string, ...kinds: Column["kind"][]): number {
    const i = indices.find((i) => columns[i].label === label);
    if (i !== undefined) return i;
    for (const k of kinds) {
      const j = indices.find((i) => columns[i].kind === k);
      if (j !== undefined) return j;
    }
    return -1;
  }

  function renderTable(s: ViewState, columns: Column[], rows: Row[]) {
    const desc = s.hsort.startsWith("-");
    const sortCol = Math.max(
      0,
      columns.findIndex((c) => c.label === (desc ? s.hsort.slice(1) : s.hsort)),
    );
    const sorted = [...rows].sort((a, b) => {
      const x = a.cells[sortCol];
      const y = b.cells[sortCol];
      if (x === undefined) return y === undefined ? 0 : 1;
      if (y === undefined) return -1;
      const r = typeof x === "number" && typeof y === "number" ? x - y : String(x).localeCompare(String(y), undefined, { numeric: true });
      return desc ? -r : r;
    });
    const fmt = (v: Cell) => (v === undefined ? "" : typeof v === "number" ? fmtNum(v) : v);
    // The group's runs (its name is often a hash), a link to Scalars
    // showing them, beside its name.
    const runsCell = (r: Row) => {
      const runs = r.runs?.length ? r.runs : [r.name];
      const view = scalarsOfRuns(runs);
      const q = new URLSearchParams({ tab: view.tab, runFilter: view.runFilter });
      return h(
        "td.runs",
        null,
        h(
          "a.group-runs",
          {
            href: `?${q}`,
            title: `Scalars of ${runs.join(", ")}`,
            onclick: (e: MouseEvent) => {
              if (e.ctrlKey || e.metaKey || e.shiftKey || e.button !== 0) return; // a new tab or window
              e.preventDefault();
              store.set(view);
            },
          },
          runs.join(", "),
        ),
      );
    };
    return h(
      "table.hparams-table",
      null,
      h(
        "thead",
        null,
        h(
          "tr",
          null,
          columns.map((c, i) => [
            h(
              "th",
              { className: c.kind, "aria-sort": i === sortCol ? (desc ? "descending" : "ascending") : "none" },
              h(
                "button",
                { onclick: () => store.set({ hsort: i === sortCol && !desc ? `-${c.label}` : c.label === NAME ? "" : c.label }) },
                c.label,
                i === sortCol ? (desc ? " ▼" : " ▲") : "",
              ),
            ),
            c.kind === "name" ? h("th.runs", null, "Runs") : null,
          ]),
        ),
      ),
      h("tbody", null, sorted.map((r) => h("tr", null, columns.map((c, i) => (c.kind === "name" ? [h("td.name", null, fmt(r.cells[i])), runsCell(r)] : h("td.num", null, fmt(r.cells[i]))))))),
    );
  }

  // Plots fill the width: draw them again when it changes.
  let lastWidth = 0;
  function render() {
    if (!table) return;
    const s = store.get();
    const { columns } = table;
    view.value = s.hview;
    if (document.activeElement !== filter) filter.value = s.hfilter;
    const f = compileFilter(s.hfilter);
    filterError.textContent = f.error ?? "";
    // The regex picks the rows plotted; brushes then keep those within them.
    const matching = table.rows.filter((r) => r.cells.some((v) => f.test(v === undefined ? "" : String(v))));
    const brushes = s.hbrush
      .map(parseBrush)
      .map((b) => (b ? { b, i: columns.findIndex((c) => c.label === b.col && c.kind !== "name") } : null))
      .filter((x): x is { b: Brush; i: number } => x !== null && x.i >= 0);
    const selected = (r: Row) => brushes.every(({ b, i }) => inBrush(b, r.cells[i]));
    const rows = matching.filter(selected);
    clearBrushes.hidden = !s.hbrush.length;
    // Plots offer the columns holding a value in a shown row.
    const present = columns.map((_, i) => i).filter((i) => columns[i].kind !== "name" && matching.some((r) => r.cells[i] !== undefined));
    const plotCols = present.map((i) => columns[i]);
    const color = pick(columns, present, s.hcolor, "metric", "hparam");
    const matrix = s.hview === "scatter" ? matrixLayout(columns, rows, present) : null;
    // Unless the URL names an axis, the large plot is the matrix's first pair sharing a group.
    const first = !s.hx && !s.hy ? matrix?.cells.find((c) => c.shared > 0) : undefined;
    const x = first ? first.x : pick(columns, present, s.hx, "hparam", "metric");
    const y = first ? first.y : pick(columns, present, s.hy, "metric", "hparam");
    fillSelect(colorBy, plotCols, columns[color]?.label ?? "");
    fillSelect(xSel, plotCols, columns[x]?.label ?? "");
    fillSelect(ySel, plotCols, columns[y]?.label ?? "");
    colorLabel.hidden = s.hview === "table";
    xLabel.hidden = yLabel.hidden = s.hview !== "scatter";
    const width = Math.max(content.clientWidth - 32, 480);
    const count = h("p.hint", null, `${rows.length} of ${table.rows.length} session groups`);
    if (s.hview === "parallel") {
      const axes = new Map<number, Axis>();
      const axisOf = (i: number) => axes.get(i) ?? axes.set(i, makeAxis(matching.map((r) => r.cells[i]))).get(i)!;
      const ranges = new Map<number, [number, number]>();
      for (const { b, i } of brushes) {
        const r = brushRange(b, axisOf(i));
        if (r) ranges.set(i, r);
      }
      const plot = parallelCoordinates(columns, matching, {
        colorBy: color,
        width,
        selected,
        brushes: ranges,
        onBrush: (i, range) => {
          const label = columns[i].label;
          const others = store.get().hbrush.filter((v) => parseBrush(v)?.col !== label);
          store.set({ hbrush: range ? [...others, brushOf(label, axisOf(i), range[0], range[1])] : others });
        },
      });
      setChildren(content, h("div.plot", null, plot), h("p.hint", null, "Drag along an axis to keep the groups in a range; click it to let go."), count);
    }
    else if (s.hview === "scatter") {
      if (x < 0 || y < 0 || !matrix) setChildren(content, notice("Nothing to plot: no hyperparameters or metrics."), count);
      else {
        const grid = scatterMatrix(columns, rows, matrix, { colorBy: color, size: matrixCellSize(width - 100, matrix.xs.length), current: { x, y }, onCell: (cx, cy) => store.set({ hx: columns[cx].label, hy: columns[cy].label }) });
        const large = rows.length > 0 && sharedRows(rows, x, y) === 0 ? notice(`No session group has both ${columns[x].label} and ${columns[y].label}.`) : h("div.plot", null, scatterPlot(columns, rows, x, y, color, Math.min(width, 900)));
        setChildren(content, h("div.plot", null, grid), h("p.hint", null, "Hover a point to find its session group in every plot; click it to keep it highlighted; click a plot to draw it large below."), large, count);
        if (pinned !== null && !rows.some((r) => r.name === pinned)) pinned = null;
        if (hovered !== null && !rows.some((r) => r.name === hovered)) hovered = null;
        highlight();
      }
    } else setChildren(content, renderTable(s, columns, rows), count);
    // Drawn for this width: the resize observer's next (debounced) call must
    // not draw it again, which would replace a plot the user is dragging on
    // (switching from the table to a plot changes the content's width).
    lastWidth = content.clientWidth;
    content.dataset.drawnWidth = String(lastWidth);
    delete content.dataset.redrawWaits;
  }

  // A brush being dragged keeps its plot: the redraw for a new width (a
  // scroll bar coming or going is enough) waits until the pointer is up,
  // or the drag would end on a plot that never saw it begin.
  const redraw = debounce(() => {
    if (content.clientWidth === lastWidth) return;
    if (content.querySelector("svg[data-dragging]")) {
      content.dataset.redrawWaits = "drag";
      redraw();
      return;
    }
    lastWidth = content.clientWidth;
    if (store.get().hview !== "table") render();
  }, 150);
  const resized = new ResizeObserver(() => redraw());
  resized.observe(content);

  content.appendChild(notice("Loading…"));
  hparamsCall<{ sessionGroups?: SessionGroup[] }>(ctx.api.plugin("hparams", "session_groups"), { startIndex: 0, sliceSize: 10000, allowedStatuses: ALL_STATUSES })
    .then((ans) => {
      const groups = ans.sessionGroups ?? [];
      if (!groups.length) {
        setChildren(content, notice("No hyperparameter sessions."));
        return;
      }
      table = tableOf(groups);
      render();
    })
    .catch((e) => setChildren(content, notice(e.message, "error")));

  return {
    update(s, prev) {
      // The table lists session groups, not runs: the runs list does not filter it.
      if (s.hview !== prev.hview || s.hsort !== prev.hsort || s.hfilter !== prev.hfilter || s.hx !== prev.hx || s.hy !== prev.hy || s.hcolor !== prev.hcolor || s.hbrush.join("\n") !== prev.hbrush.join("\n")) render();
    },
    destroy() {
      resized.disconnect();
      redraw.cancel();
    },
  };
}
