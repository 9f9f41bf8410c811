// The Runs tab: the runs table (model: runstable.ts). A row per run with
// its colour, whether it is shown (the same selection as the runs list and
// every dashboard: off= in the URL), its hparams and the last, min and max
// of the chosen scalar tags; sorted by a header, filtered by text, hparam
// value or metric range, grouped by an hparam. Only the rows on screen are
// in the DOM, so 1,000 runs scroll as smoothly as 10.

import { ApiError, getJSON, type RunTagIndex } from "../api";
import { compileFilter, debounce, fmtNum, h, setChildren } from "../dom";
import type { ViewState } from "../state";
import { notice, runColorPicker, setRunShown, type Dashboard, type DashboardContext } from "./dashboard";
import {
  columnKey,
  filterRows,
  groupRegex,
  groupRows,
  hparamColumns,
  parseColumn,
  parseFilter,
  rowsOf,
  sortRows,
  visibleWindow,
  type Column,
  type HValue,
  type RunRow,
  type RunsTableEntry,
} from "./runstable";

/** Tags shown when the URL names none: those the most runs have. */
const DEFAULT_TAGS = 3;
/** Height of a row in px (style.css: table.runs-table tr). */
const ROW_HEIGHT = 28;

type Item = { group: string; count: number } | { row: RunRow };

export function runsTableDashboard(el: HTMLElement, ctx: DashboardContext): Dashboard {
  const { api, store } = ctx;
  let allTags: string[] = [];
  /** Tags by how many runs have them, most first: the default columns. */
  let commonTags: string[] = [];
  let rows: RunRow[] = [];
  let hparams: string[] = [];
  let items: Item[] = [];
  let loaded = false;
  let generation = 0;

  const filter = h("input", {
    type: "search",
    className: "runs-table-filter",
    placeholder: "Filter: text, lr=0.1, loss < 0.5 (comma: and)",
    "aria-label": "filter the runs table",
  });
  filter.addEventListener("input", debounce(() => store.set({ rfilter: filter.value }), 250));
  const groupSel = h("select", { "aria-label": "group runs by", className: "runs-table-group" });
  groupSel.addEventListener("change", () => {
    const key = groupSel.value;
    // The scalars dashboard groups by a regex over run names: set it
    // when the names state the hparam.
    const re = key ? groupRegex(rows, key) : null;
    store.set({ rgroup: key, ...(key ? (re ? { group: re } : {}) : { group: "" }) });
  });
  const tagsMenu = h("details.runs-table-tags", null);
  const selectShown = h("button", { type: "button", title: "Show every run the filter keeps, in every dashboard" }, "Select shown");
  const deselectShown = h("button", { type: "button", title: "Hide every run the filter keeps, in every dashboard" }, "Deselect shown");
  const count = h("span.runs-table-count", { role: "status" });
  const note = h("div.runs-table-note");
  const head = h("thead");
  const body = h("tbody");
  const table = h("table.runs-table", null, head, body);
  const scroller = h("div.runs-table-scroll", null, table);
  setChildren(
    el,
    h("div.toolbar.runs-table-toolbar", null, filter, h("label", null, "Group by ", groupSel), tagsMenu, selectShown, deselectShown, count),
    note,
    scroller,
  );

  const shownNames = () => items.flatMap((i) => ("row" in i ? [i.row.run] : []));
  selectShown.addEventListener("click", () => {
    const shown = new Set(shownNames());
    store.set({ off: store.get().off.filter((r) => !shown.has(r)) });
  });
  deselectShown.addEventListener("click", () => {
    const off = new Set([...store.get().off, ...shownNames()]);
    store.set({ off: ctx.runs.map((r) => r.name).filter((r) => off.has(r)) });
  });

  function chosenTags(s: ViewState): string[] {
    if (s.rtag.length) return s.rtag;
    return commonTags.slice(0, DEFAULT_TAGS);
  }

  function columns(s: ViewState): Column[] {
    const cols: Column[] = [{ kind: "run" }, ...shownHparams.map((name) => ({ kind: "hparam" as const, name }))];
    for (const tag of chosenTags(s)) for (const field of ["last", "min", "max"] as const) cols.push({ kind: "metric", tag, field });
    return cols;
  }

  async function load() {
    const gen = ++generation;
    const s = store.get();
    try {
      if (!allTags.length) {
        const index = await getJSON<RunTagIndex>(api.plugin("scalars", "tags")).catch(() => ({}) as RunTagIndex);
        const runsOf = new Map<string, number>();
        for (const t of Object.values(index).flatMap((tags) => Object.keys(tags))) runsOf.set(t, (runsOf.get(t) ?? 0) + 1);
        allTags = [...runsOf.keys()].sort();
        commonTags = allTags.filter((t) => !t.startsWith("_")).sort((a, b) => runsOf.get(b)! - runsOf.get(a)! || (a < b ? -1 : 1));
      }
      const q = new URLSearchParams(chosenTags(s).map((t) => ["tag", t]));
      const answer = await getJSON<{ runs: RunsTableEntry[] }>(api.data("runs_table") + (q.size ? `?${q}` : ""));
      if (gen !== generation) return;
      rows = rowsOf(answer.runs ?? []);
      hparams = hparamColumns(rows);
      loaded = true;
      note.textContent = "";
      drawControls(store.get());
      draw(store.get());
    } catch (e) {
      if (gen !== generation) return;
      note.textContent = e instanceof ApiError ? e.detail : (e as Error).message;
      note.classList.add("error");
    }
  }

  function drawControls(s: ViewState) {
    if (document.activeElement !== filter) filter.value = s.rfilter;
    setChildren(
      groupSel,
      h("option", { value: "" }, "(none)"),
      hparams.map((k) => h("option", { value: k, selected: k === s.rgroup }, k)),
    );
    const chosen = new Set(chosenTags(s));
    setChildren(
      tagsMenu,
      h("summary", null, `Metrics (${chosen.size})`),
      h(
        "div.runs-table-tag-list",
        null,
        allTags.map((t) =>
          h(
            "label",
            null,
            h("input", {
              type: "checkbox",
              checked: chosen.has(t),
              "data-tag": t,
              onchange: (ev: Event) => {
                const on = (ev.target as HTMLInputElement).checked;
                const next = new Set(chosenTags(store.get()));
                if (on) next.add(t);
                else next.delete(t);
                store.set({ rtag: allTags.filter((x) => next.has(x)) });
              },
            }),
            t,
          ),
        ),
      ),
    );
  }

  function drawHead(s: ViewState, cols: Column[]) {
    const desc = s.rsort.startsWith("-");
    const sortKey = desc ? s.rsort.slice(1) : s.rsort || "run";
    setChildren(
      head,
      h(
        "tr",
        null,
        h("th.sel", null, ""),
        cols.map((c) => {
          const key = columnKey(c);
          const sorted = key === sortKey;
          return h(
            `th.${c.kind}` as "th.x",
            { "aria-sort": sorted ? (desc ? "descending" : "ascending") : "none", "data-col": key, title: c.kind === "metric" ? `${c.tag}: ${c.field === "last" ? "last value" : c.field}` : key },
            h("button", { type: "button", onclick: () => store.set({ rsort: sorted && !desc ? `-${key}` : key }) }, c.kind === "metric" ? (c.field === "last" ? c.tag : `${c.field}`) : key, sorted ? (desc ? " ▼" : " ▲") : ""),
          );
        }),
      ),
    );
  }

  function cell(row: RunRow, c: Column): HTMLElement {
    if (c.kind === "run") return h("td.run", { title: row.run }, row.run);
    if (c.kind === "hparam") {
      const v: HValue | undefined = row.hparams[c.name];
      return h(`td.hparam${typeof v === "number" ? ".num" : ""}` as "td.x", { title: row.source === "name" ? "read from the run's name" : "" }, v === undefined ? "" : typeof v === "number" ? fmtNum(v) : String(v));
    }
    const m = row.metrics[c.tag];
    return h("td.num", { title: m ? `${c.tag} at step ${m.step}: ${m.last}` : "" }, m ? fmtNum(m[c.field]) : "");
  }

  function drawRows(s: ViewState) {
    const cols = columns(s);
    const off = new Set(s.off);
    // The runs list's regex hides runs from every dashboard too: such a
    // row is dimmed and says so.
    const listed = compileFilter(s.runFilter);
    // The scroller grows with its rows up to its CSS max-height: until it
    // has, the window's height stands for its own.
    const { start, end, above, below } = visibleWindow(scroller.scrollTop, Math.max(scroller.clientHeight, innerHeight), ROW_HEIGHT, items.length);
    const span = cols.length + 1;
    const trs: HTMLElement[] = [h("tr.spacer", { style: { height: `${above}px` } }, h("td", { colSpan: span }))];
    for (const it of items.slice(start, end)) {
      if ("group" in it) {
        trs.push(h("tr.group", null, h("th", { colSpan: span }, `${s.rgroup} = ${it.group || "(none)"} · ${it.count} run${it.count === 1 ? "" : "s"}`)));
        continue;
      }
      const r = it.row;
      const own = ctx.runs.find((x) => x.name === r.run)?.color ?? ctx.colorOf(r.run);
      const box = h("input", { type: "checkbox", checked: !off.has(r.run), "aria-label": `show ${r.run}`, onchange: () => setRunShown(ctx, r.run, box.checked) });
      const picker = runColorPicker(ctx, r.run, own, ctx.colorOf(r.run));
      const hidden = !listed.test(r.run);
      trs.push(
        h(
          `tr${hidden ? ".not-listed" : ""}` as "tr",
          { "data-run": r.run, title: hidden ? `Hidden from the dashboards by the runs list's filter ${s.runFilter}` : "" },
          h("td.sel", null, box, picker),
          cols.map((c) => cell(r, c)),
        ),
      );
    }
    trs.push(h("tr.spacer", { style: { height: `${below}px` } }, h("td", { colSpan: span })));
    setChildren(body, trs);
  }

  // What items were computed from: a change of selection or colour only
  // redraws the rows on screen.
  let itemsOf: { rows: RunRow[]; key: string } | null = null;
  let kept: RunRow[] = [];
  let shownHparams: string[] = [];

  function draw(s: ViewState) {
    if (!loaded) return;
    const tags = chosenTags(s);
    const byGroup = s.rgroup && hparams.includes(s.rgroup);
    const key = JSON.stringify([s.rfilter, s.rsort, byGroup ? s.rgroup : "", tags]);
    if (itemsOf?.rows !== rows || itemsOf.key !== key) {
      kept = sortRows(filterRows(rows, parseFilter(s.rfilter, hparams, tags)), s.rsort, hparams, tags);
      items = byGroup ? groupRows(kept, s.rgroup).flatMap((g) => [{ group: g.value, count: g.rows.length }, ...g.rows.map((row) => ({ row }))]) : kept.map((row) => ({ row }));
      // Hparams none of the rows kept has (another sweep's) are left out.
      shownHparams = hparams.filter((k) => kept.some((r) => k in r.hparams));
      itemsOf = { rows, key };
    }
    count.textContent = kept.length === rows.length ? `${rows.length} runs` : `${kept.length} of ${rows.length} runs`;
    const unknownSort = s.rsort && !parseColumn(s.rsort.replace(/^-/, ""), hparams, tags);
    note.classList.remove("error");
    note.textContent = !rows.length
      ? "No runs yet."
      : byGroup && !groupRegex(rows, s.rgroup)
        ? `Grouped here by ${s.rgroup}; the charts cannot group by it (it is not in the run names).`
        : unknownSort
          ? `No column ${s.rsort.replace(/^-/, "")}: sorted by run.`
          : "";
    if (s.runFilter) {
      const clear = h("button", { type: "button", onclick: () => store.set({ runFilter: "" }) }, "Clear it");
      note.append(note.textContent ? " " : "", `The runs list's filter ${s.runFilter} hides the dimmed runs from every dashboard. `, clear);
    }
    drawHead(s, columns(s));
    drawRows(s);
  }

  let frame = 0;
  scroller.addEventListener(
    "scroll",
    () => {
      if (frame) return;
      frame = requestAnimationFrame(() => {
        frame = 0;
        drawRows(store.get());
      });
    },
    { passive: true },
  );

  setChildren(body, h("tr", null, h("td", null, notice("Loading…"))));
  void load();
  return {
    update(s, prev) {
      if (s.rtag.join("\n") !== prev.rtag.join("\n")) {
        drawControls(s);
        void load();
        return;
      }
      if (s.rgroup !== prev.rgroup) drawControls(s);
      else if (document.activeElement !== filter) filter.value = s.rfilter;
      draw(s);
    },
    refresh() {
      void load();
    },
    destroy() {
      generation++;
      if (frame) cancelAnimationFrame(frame);
    },
  };
}
