// Scalars: one card per tag, grouped by tag prefix, filtered by a tag
// regex; every shown run is a line, smoothed with TensorBoard's debiased
// EMA over its raw line drawn faint. Cards load when scrolled into view,
// all runs of a tag in one scalars_multirun request, bucketed at about one
// bucket per pixel column (each bucket's first, last, lowest and highest
// point and first NaN: no spike is hidden); a zoom reads its step range
// again at screen resolution (every stored point once it holds fewer than
// about two per pixel).

import { download, getJSON, getOnce, limiter, postForm, saveBlob, type RunTagIndex } from "../api";
import { TOOLTIP_SORTS, type TooltipSort } from "../charts/format";
import { LineChart } from "../charts/linechart";
import { compileFilter, debounce, h, setChildren } from "../dom";
import { toggled, type ViewState } from "../state";
import { cardDownload, type RunPoints } from "./carddownload";
import { groupByPrefix, notice, runsChanged, showOnly, shownRuns, whenVisible, type Dashboard, type DashboardContext } from "./dashboard";
import {
  cardsChanged,
  chartsChanged,
  chartView,
  indexKey,
  mergeColumns,
  pointsInZoom,
  samplesFor,
  scalarCards,
  scalarLines,
  scalarsForm,
  tagRuns,
  tailAfter,
  yRangeOf,
  zoomKey,
  zoomWindow,
  type Held,
  type Points,
  type ScalarColumns,
} from "./scalars-model";

/** The chart height of an expanded card, in CSS pixels (others: the chart's default, 220). */
const EXPANDED_HEIGHT = 440;

/** A scalar card as drawn. */
interface Card {
  chart?: LineChart;
  /** The data the chart was built from (undefined: build it anew). */
  built?: Record<string, Points>;
  /** The view the chart was built for (chartView). */
  view?: string;
  body: HTMLElement;
  /** The runs shown (of those holding the tag). */
  runs: string[];
  /** Near the viewport: drawn when the view changes. */
  inView: boolean;
  /** Out of date: drawn when it comes near the viewport. */
  dirty: boolean;
}
export function scalarsDashboard(el: HTMLElement, ctx: DashboardContext): Dashboard {
  const { api, store } = ctx;
  const tagFilter = h("input", { type: "search", placeholder: "Filter tags (regex)", "aria-label": "tag filter", className: "tag-filter" });
  const smoothRange = h("input", { type: "range", min: 0, max: 0.99, step: 0.01, "aria-label": "smoothing", className: "smoothing-range" });
  const smoothNum = h("input", { type: "number", min: 0, max: 0.999, step: 0.01, "aria-label": "smoothing value", className: "smoothing-num" });
  const xSelect = h(
    "select",
    { "aria-label": "x axis", className: "x-axis" },
    h("option", { value: "step" }, "Step"),
    h("option", { value: "relative" }, "Relative"),
    h("option", { value: "wall" }, "Wall"),
  );
  const logy = h("input", { type: "checkbox", className: "logy" });
  const logx = h("input", { type: "checkbox", className: "logx" });
  const outliers = h("input", { type: "checkbox", className: "ignore-outliers" });
  const group = h("input", { type: "search", placeholder: "Group runs (regex)", "aria-label": "group runs", className: "group-filter" });
  const band = h(
    "select",
    { "aria-label": "group band", className: "band-select", title: "The band around each group's mean" },
    h("option", { value: "minmax" }, "min–max"),
    h("option", { value: "std" }, "±std"),
  );
  const ttsort = h(
    "select",
    { "aria-label": "tooltip order", className: "ttsort-select", title: "The order of the runs in the tooltip" },
    TOOLTIP_SORTS.map((o) => h("option", { value: o.value }, o.label)),
  );
  const tttime = h("input", { type: "checkbox", className: "tttime", title: "Show each point's wall time and relative time in the tooltip" });
  const filterError = h("span.error");
  const content = h("div.cards");

  const setSmoothing = debounce((v: number) => store.set({ smoothing: Math.min(Math.max(v, 0), 0.999) }), 120);
  tagFilter.addEventListener("input", debounce(() => store.set({ tagFilter: tagFilter.value }), 200));
  group.addEventListener("input", debounce(() => store.set({ group: group.value }), 300));
  band.addEventListener("change", () => store.set({ band: band.value as ViewState["band"] }));
  ttsort.addEventListener("change", () => store.set({ ttsort: ttsort.value as TooltipSort }));
  tttime.addEventListener("change", () => store.set({ tttime: tttime.checked }));
  smoothRange.addEventListener("input", () => {
    smoothNum.value = smoothRange.value;
    setSmoothing(Number(smoothRange.value));
  });
  smoothNum.addEventListener("change", () => setSmoothing(Number(smoothNum.value)));
  // A zoom is in the old axis's units.
  xSelect.addEventListener("change", () => store.set({ x: xSelect.value as ViewState["x"], zoom: null }));
  logy.addEventListener("change", () => store.set({ logy: logy.checked }));
  logx.addEventListener("change", () => store.set({ logx: logx.checked }));
  outliers.addEventListener("change", () => store.set({ ignoreOutliers: outliers.checked }));

  setChildren(
    el,
    h(
      "div.toolbar",
      null,
      h("label", null, "Tags ", tagFilter),
      filterError,
      h("label", null, "Smoothing ", smoothRange, smoothNum),
      h("label", null, "X axis ", xSelect),
      h("label", null, logy, " log y"),
      h("label", null, logx, " log x"),
      h("label", { title: "Fit the y axis to the 2nd–98th percentiles" }, outliers, " ignore outliers"),
      h("label", { title: "Runs whose names give the same first capture group (or whole match) are plotted as one mean line with a band: min–max, or ±1 sample standard deviation" }, "Group ", group, " ", band),
      h("label", null, "Tooltip ", ttsort),
      h("label", null, tttime, " time"),
    ),
    content,
  );

  const data = new Map<string, Record<string, Points>>();
  const held = new Map<string, Record<string, Held>>();
  // Tags whose data predates the experiment's last change (a live page).
  const stale = new Set<string>();
  // Two card reads at a time, in page order (see api.limiter); the first
  // card's alone, so that it has the server and the connection to itself.
  const heavy = limiter(2);
  let firstRead: Promise<unknown> | null = null;
  const charts = new Map<string, Card>();
  // The tag of the card shown full screen (its □ button), if any: its
  // chart is built as tall as the screen, and again at its size after.
  let fullTag: string | null = null;
  const onFullScreen = () => {
    const el = document.fullscreenElement;
    const tag = el instanceof HTMLElement && el.classList.contains("scalar-card") ? (el.dataset.tag ?? null) : null;
    const was = fullTag;
    fullTag = tag;
    for (const t of new Set([was, tag])) if (t !== null) redraw(t, true);
  };
  document.addEventListener("fullscreenchange", onFullScreen);
  // The charts of cards a layout removed, by tag, kept for the next layout
  // to take up where they are still good (see card): None removes every
  // card, and All after it would otherwise build every chart again.
  const spare = new Map<string, Pick<Card, "chart" | "built" | "view" | "body">>();
  // The runs each card's data was last asked for (a run shown later that
  // was not is read then).
  const asked = new Map<string, Set<string>>();
  // Which cards are near the viewport: only those are drawn; the others
  // are marked dirty and drawn when they scroll in.
  const near = new IntersectionObserver(
    (entries) => {
      for (const e of entries) {
        const tag = (e.target as HTMLElement).dataset.tag ?? "";
        const c = charts.get(tag);
        if (!c) continue;
        c.inView = e.isIntersecting;
        if (c.inView && c.dirty) drawSoon(tag);
      }
    },
    // A card scrolling in is drawn just before it shows; one further off
    // waits (a 100-run chart takes a frame or more to draw).
    { rootMargin: "50px" },
  );
  let index: Map<string, string[]> | null = null;
  let stops: (() => void)[] = [];
  // Cards made by the current layout that have not been checked for view.
  const pending: { el: HTMLElement; load: () => void; card: Card }[] = [];

  function syncControls(s: ViewState) {
    if (document.activeElement !== tagFilter) tagFilter.value = s.tagFilter;
    if (document.activeElement !== group) group.value = s.group;
    band.value = s.band;
    ttsort.value = s.ttsort;
    tttime.checked = s.tttime;
    band.disabled = !s.group;
    smoothRange.value = String(s.smoothing);
    if (document.activeElement !== smoothNum) smoothNum.value = String(s.smoothing);
    xSelect.value = s.x;
    logy.checked = s.logy;
    logx.checked = s.logx;
    outliers.checked = s.ignoreOutliers;
    filterError.textContent = compileFilter(s.tagFilter).error ?? compileFilter(s.group).error ?? "";
  }

  /**
   * Draws a card from its data. A card whose chart holds that data, drawn
   * for the same view but other runs, only shows and hides lines (a run
   * toggled in the runs list); anything else builds the chart anew. A run
   * shown now whose points were never asked for is read first.
   */
  function draw(tag: string) {
    const c = charts.get(tag);
    const s = store.get();
    const d = shownData(tag, s);
    if (!c || !d) return;
    c.dirty = false;
    const had = asked.get(tag);
    if (had && c.runs.some((r) => !had.has(r))) {
      void read(tag, c.runs, c.body).then((ok) => ok && drawSoon(tag));
      return;
    }
    c.body.dataset.zoomed = zoomed.get(tag)?.key === zoomReadKey(tag, s) ? (zoomKey(s) ?? "") : "";
    // What the chart holds, for readers of the page (and its tests): the
    // last step of any shown run, and how many runs have points.
    c.body.dataset.lastStep = String(Math.max(...c.runs.map((r) => d[r]?.step.at(-1) ?? -Infinity)));
    c.body.dataset.runs = String(c.runs.filter((r) => d[r]?.step.length).length);
    c.body.dataset.points = String(c.runs.reduce((n, r) => n + (d[r]?.step.length ?? 0), 0));
    // Zoomed, how many of them lie in the zoom's x range.
    const zoom = s.zoom;
    c.body.dataset.inview = zoom ? String(pointsInZoom(d, c.runs, s.x, zoom)) : "";
    const shown = new Set(c.runs);
    // Groups are made of the shown runs; log y counts the hidden values
    // of the lines drawn: both are built anew.
    const toggleOnly = !s.group && !s.logy;
    const view = chartView(tag, s, tag === fullTag);
    if (c.chart && c.built === d && c.view === view && toggleOnly && c.chart.lines.some((l) => l.run && shown.has(l.run))) {
      c.chart.setHidden((l) => !!l.run && !shown.has(l.run), yRangeOf(c.chart.lines.filter((l) => !l.run || shown.has(l.run)), s));
      return;
    }
    c.chart?.destroy();
    c.chart = undefined;
    c.built = d;
    c.view = view;
    // Every run read is a line (the hidden ones shown again by a toggle
    // without building the chart), unless runs are grouped.
    const order = index?.get(tag) ?? c.runs;
    const lineRuns = toggleOnly ? order.filter((r) => shown.has(r) || d[r]) : c.runs;
    const lines = scalarLines(d, lineRuns, ctx.colorOf, s).map((l) => (l.run && !shown.has(l.run) ? { ...l, hidden: true } : l));
    c.body.replaceChildren();
    c.body.classList.remove("loading");
    if (!lines.some((l) => !l.hidden)) {
      c.body.appendChild(notice("No data for the shown runs."));
      c.built = undefined;
      return;
    }
    c.chart = new LineChart(c.body, {
      lines,
      xKind: s.x,
      logy: s.logy,
      logx: s.logx,
      yRange: yRangeOf(lines.filter((l) => !l.hidden), s),
      // One x zoom for every card, kept in the URL.
      xRange: s.zoom ?? undefined,
      onZoom: (zoom) => store.set({ zoom }),
      tooltipSort: s.ttsort,
      onOnly: (run) => showOnly(store, run),
      // Full screen: down to the window's bottom, less the card's padding.
      height: tag === fullTag ? Math.max(220, innerHeight - c.body.getBoundingClientRect().top - 24) : s.expand.includes(tag) ? EXPANDED_HEIGHT : undefined,
    });
  }

  /**
   * The view changed: a card near the viewport is drawn now, the others
   * when they scroll in. rebuild: the chart is built anew (not only lines
   * shown or hidden).
   */
  function redraw(tag: string, rebuild: boolean) {
    const c = charts.get(tag);
    if (!c || !data.has(tag)) return;
    if (rebuild) c.built = undefined;
    if (c.inView) draw(tag);
    else c.dirty = true;
  }

  function drawAll() {
    for (const tag of charts.keys()) redraw(tag, true);
  }

  // A zoomed card's points of the zoom's step range, read at screen
  // resolution, by the zoom and runs (zoomReadKey) they were read for; the
  // zoom being read per card.
  const zoomed = new Map<string, { key: string; byRun: Record<string, Points> }>();
  const zoomReading = new Map<string, string>();

  /**
   * The points a card draws: its whole read, or, zoomed, those of the
   * zoom's read once it has arrived (the whole read until then, which
   * asks for it).
   */
  function shownData(tag: string, s: ViewState): Record<string, Points> | undefined {
    const d = data.get(tag);
    const key = zoomReadKey(tag, s);
    if (!d || !key || !s.zoom) return d;
    const z = zoomed.get(tag);
    if (z?.key === key) return z.byRun;
    if (zoomReading.get(tag) !== key) void readZoom(tag, key, d, s);
    return d;
  }

  /** Reads the step range of a card's zoom (see zoomWindow), bucketed at screen resolution. */
  async function readZoom(tag: string, key: string, whole: Record<string, Points>, s: ViewState) {
    const c = charts.get(tag);
    if (!c || !s.zoom) return;
    zoomReading.set(tag, key);
    const [lo, hi] = zoomWindow(whole, c.runs, s.x, s.zoom);
    const form = scalarsForm(tag, c.runs, samplesFor(c.body.clientWidth), { minStep: lo, maxStep: hi });
    let byRun: Record<string, Points>;
    try {
      byRun = mergeColumns({}, {}, await heavy(() => postForm<Record<string, ScalarColumns>>(api.plugin("scalars", "scalars_multirun"), form))).byRun;
    } catch {
      zoomReading.delete(tag); // the whole read stays drawn; the next draw asks again
      return;
    }
    if (zoomReading.get(tag) !== key) return; // another zoom since
    zoomed.set(tag, { key, byRun });
    if (zoomReadKey(tag, store.get()) === key) drawSoon(tag);
  }

  /** What a card's zoom read is for: the zoom and the card's runs (a run shown since needs its points). */
  function zoomReadKey(tag: string, s: ViewState): string | null {
    const key = zoomKey(s);
    return key && `${key}\n${charts.get(tag)?.runs.join("\n") ?? ""}`;
  }

  // Cards whose data arrived are drawn one per frame, in arrival order, so
  // that each is on screen before the next one's drawing (a 100-run card
  // takes a good part of a frame budget or more) holds up the page.
  const drawQueue: string[] = [];
  function drawSoon(tag: string) {
    if (drawQueue.includes(tag)) return;
    drawQueue.push(tag);
    if (drawQueue.length === 1) requestAnimationFrame(drawNext);
  }
  function drawNext() {
    const tag = drawQueue.shift();
    if (drawQueue.length) requestAnimationFrame(drawNext);
    if (tag !== undefined) redraw(tag, false);
  }

  /**
   * Reads a card's series (all its runs) into data; false, with the error
   * shown in the card, if that failed. With tail (a live page's read after
   * a change) it asks only for the points past the last step it holds of
   * each run (scalars_multirun's "after"), and appends them; the server
   * answers a run in full instead when its series was rewritten at or
   * before that step, or has more new points than samples, and the card
   * takes that in place of what it held. A run is read in full again, too,
   * once its appended points reach samples (so a card holds at most twice
   * the points it draws at full resolution, and picks the downsampled
   * points afresh).
   */
  async function read(tag: string, runs: string[], body: HTMLElement, tail = false): Promise<boolean> {
    // As many points per run as the chart has pixel columns: more cost the
    // server, the network and the drawing and show nothing more (every
    // point is in the card's download).
    const samples = samplesFor(body.clientWidth);
    const had = data.get(tag) ?? {};
    const hadLive = held.get(tag) ?? {};
    const form = scalarsForm(tag, runs, samples, { after: tail ? tailAfter(had, hadLive, runs, samples) : null });
    asked.set(tag, new Set(runs));
    stale.delete(tag);
    try {
      const ask = () => postForm<Record<string, ScalarColumns>>(api.plugin("scalars", "scalars_multirun"), form);
      let answer: Record<string, ScalarColumns>;
      if (!firstRead) answer = await (firstRead = heavy(ask));
      else answer = await firstRead.then(() => heavy(ask), () => heavy(ask));
      const { byRun, live, broken } = mergeColumns(had, hadLive, answer);
      if (broken) return read(tag, runs, body);
      data.set(tag, byRun);
      held.set(tag, live);
      return true;
    } catch (e) {
      body.replaceChildren(notice(String((e as Error).message), "error"));
      return false;
    }
  }

  function card(tag: string, runs: string[], pinned: boolean): HTMLElement {
    // The chart the last layout had for the tag, if any: drawn from its
    // data it only shows and hides lines (see draw).
    const kept = spare.get(tag);
    spare.delete(tag);
    const body = kept?.body ?? h("div.chart.loading", null, "Loading…");
    const c: Card = { body, runs, inView: false, dirty: false, chart: kept?.chart, built: kept?.built, view: kept?.view };
    charts.set(tag, c);
    // A button putting the tag in a list of the view state, or taking it out: [off, on] titles and glyphs.
    const listButton = (key: "pin" | "expand", on: boolean, titles: [string, string], glyphs: [string, string]) =>
      h(
        "button.icon",
        { title: titles[+on], "aria-pressed": String(on), className: `icon ${key}`, onclick: () => store.set({ [key]: toggled(store.get()[key], tag) }) },
        glyphs[+on],
      );
    const pin = listButton("pin", pinned, ["Pin to the top", "Unpin"], ["☆", "★"]);
    // TensorBoard's expand button: the card takes the grid's whole width, and a taller chart.
    const expanded = store.get().expand.includes(tag);
    const expand = listButton("expand", expanded, ["Expand to the full width", "Back to the grid"], ["⤢", "⤡"]);
    const full = h(
      "button.icon",
      {
        className: "icon fullscreen",
        title: "Full screen (Esc leaves it)",
        onclick: () => void (document.fullscreenElement === el ? document.exitFullscreen() : el.requestFullscreen()).catch(() => {}),
      },
      "□",
    );
    // The menu's rows (three elements per run, for every card) are built
    // when it is first opened, not with the page.
    const menu = h("div.menu");
    const dl = h("details.download", null, h("summary", { title: "Download at full resolution" }, "⤓"), menu);
    const saveAll = async (format: "csv" | "json", button: HTMLButtonElement) => {
      button.disabled = true;
      try {
        const four = limiter(4);
        const parts = await Promise.all(c.runs.map((run) => four(() => getOnce<RunPoints>(api.scalarDownload(run, tag, "json")))));
        const type = format === "csv" ? "text/csv" : "application/json";
        saveBlob(new Blob([cardDownload(tag, parts, format)], { type }), `${safeName("all_runs", tag)}.${format}`);
      } finally {
        button.disabled = false;
      }
    };
    dl.addEventListener("toggle", () => {
      // Built anew on each opening: the shown runs may have changed.
      if (!dl.open) return;
      const all = (format: "csv" | "json") => {
        const b: HTMLButtonElement = h("button", { onclick: () => void saveAll(format, b) }, format.toUpperCase());
        return b;
      };
      const runs = c.runs;
      setChildren(
        menu,
        runs.length > 1 ? h("div.menu-row", { className: "menu-row menu-all" }, h("span.menu-run", null, `All ${runs.length} runs, one file`), all("csv"), all("json")) : null,
        runs.map((run) =>
          h(
            "div.menu-row",
            null,
            h("span.menu-run", { title: run }, run),
            h("button", { onclick: () => download(api.scalarDownload(run, tag, "csv"), `${safeName(run, tag)}.csv`) }, "CSV"),
            h("button", { onclick: () => download(api.scalarDownload(run, tag, "json"), `${safeName(run, tag)}.json`) }, "JSON"),
          ),
        ),
      );
    });
    const el = h("div.card.scalar-card", { "data-tag": tag }, h("div.card-head", null, h("span.card-title", { title: tag }, tag), pin, expand, full, dl), body);
    el.classList.toggle("expanded", expanded);
    let started = false;
    const load = async () => {
      if (started) return;
      started = true;
      if (data.has(tag)) {
        // Drawn from what it had (a live page laid out again), then read
        // again if the experiment changed since. A chart kept from the
        // last layout for this view is drawn now (lines shown or hidden:
        // no frame of its own needed).
        if (c.chart && c.view === chartView(tag, store.get(), tag === fullTag)) redraw(tag, false);
        else drawSoon(tag);
        if (!stale.has(tag)) return;
      }
      if (await read(tag, c.runs, body, data.has(tag))) drawSoon(tag);
    };
    stops.push(whenVisible(el, load));
    near.observe(el);
    pending.push({ el, load, card: c });
    return el;
  }

  /** The cards the view state asks for: each tag shown with its shown runs, in page order. */
  function cardsFor(s: ViewState): { tag: string; runs: string[] }[] {
    return index ? scalarCards(index, shownRuns(ctx, s), s.tagFilter) : [];
  }

  /**
   * Runs shown or hidden: when the same cards stay, each keeps its chart
   * and shows the runs now shown (see draw); false when the cards change
   * (a tag with no run left, or one with its first), which a layout does.
   */
  function reshow(s: ViewState): boolean {
    const want = cardsFor(s);
    if (want.length !== charts.size || want.some((w) => !charts.has(w.tag))) return false;
    for (const w of want) {
      charts.get(w.tag)!.runs = w.runs;
      redraw(w.tag, false);
    }
    return true;
  }

  function layout() {
    for (const stop of stops) stop();
    stops = [];
    near.disconnect();
    for (const [tag, c] of charts) if (c.chart) spare.set(tag, c);
    charts.clear();
    // Charts of tags gone from the index will not be wanted again.
    for (const [tag, c] of spare) {
      if (index?.has(tag)) continue;
      c.chart?.destroy();
      spare.delete(tag);
    }
    if (!index) return;
    const s = store.get();
    const withRuns = cardsFor(s);
    if (!withRuns.length) {
      setChildren(content, notice(index.size ? "No tag matches the filters and runs." : "No scalar data."));
      return;
    }
    const pinned = withRuns.filter((t) => s.pin.includes(t.tag));
    const sections: HTMLElement[] = [];
    if (pinned.length) {
      sections.push(h("section.group.pinned", null, h("h3", null, "Pinned"), h("div.grid", null, pinned.map((t) => card(t.tag, t.runs, true)))));
    }
    // Tags without a "/" (each its own prefix) share one grid, instead of
    // a section and a row each.
    const groups = [...groupByPrefix(withRuns, (t) => t.tag)];
    const lone = groups.filter(([, items]) => items.length === 1 && !items[0].tag.includes("/")).flatMap(([, items]) => items);
    const merged: [string, typeof withRuns][] = lone.length > 1 ? [["(no prefix)", lone], ...groups.filter(([, items]) => !lone.includes(items[0]))] : groups;
    for (const [prefix, items] of merged) {
      const rest = items.filter((t) => !s.pin.includes(t.tag));
      if (!rest.length) continue;
      sections.push(
        h(
          "details.group",
          { open: true },
          h("summary", null, prefix, h("span.count", null, ` ${rest.length}`)),
          h("div.grid", null, rest.map((t) => card(t.tag, t.runs, false))),
        ),
      );
    }
    setChildren(content, sections);
    // Cards already in view load now, in page order, instead of after the
    // next frame when their observers report (which a page of many cards
    // takes a while to lay out and paint).
    for (const { el, load, card } of pending.splice(0)) {
      const r = el.getBoundingClientRect();
      card.inView = r.bottom > -50 && r.top < innerHeight + 50 && r.width > 0;
      if (r.bottom > 0 && r.top < innerHeight && r.width > 0) load();
    }
  }

  /** The tag → runs index of the scalars plugin. */
  async function readIndex(): Promise<Map<string, string[]>> {
    return tagRuns(await getJSON<RunTagIndex>(api.plugin("scalars", "tags")));
  }

  syncControls(store.get());
  content.appendChild(notice("Loading tags…"));
  readIndex()
    .then((idx) => {
      index = idx;
      layout();
    })
    .catch((e) => setChildren(content, notice(String(e.message), "error")));

  /**
   * New data: every series read so far is out of date. Cards drawn read
   * what is new (read's tail) and are redrawn where they are (the zoom is
   * the URL's, the page does not move); the others read when they come
   * into view, the same way. New
   * tags, or new runs of a tag, lay the cards out again, drawn at once
   * from what they had.
   */
  async function refresh() {
    let idx: Map<string, string[]>;
    try {
      idx = await readIndex();
    } catch {
      return; // the next change tries again
    }
    for (const tag of data.keys()) stale.add(tag);
    // Zoomed views read their range again when next drawn.
    zoomed.clear();
    zoomReading.clear();
    if (indexKey(idx) !== indexKey(index)) {
      index = idx;
      const y = scrollY;
      layout();
      scrollTo({ top: y });
      return;
    }
    await Promise.all(
      [...charts]
        .filter(([tag]) => data.has(tag)) // the others read when they come into view
        .map(async ([tag, c]) => {
          if (await read(tag, c.runs, c.body, true)) drawSoon(tag);
        }),
    );
  }

  return {
    update(s, prev) {
      syncControls(s);
      if (cardsChanged(s, prev) || (runsChanged(s, prev) && !reshow(s))) {
        layout();
        return;
      }
      // Runs shown or hidden are drawn by reshow; a change of the view as
      // well (a URL from history) builds the charts anew.
      if (chartsChanged(s, prev)) drawAll();
    },
    refresh() {
      void refresh();
    },
    destroy() {
      document.removeEventListener("fullscreenchange", onFullScreen);
      for (const stop of stops) stop();
      near.disconnect();
      for (const c of [...charts.values(), ...spare.values()]) c.chart?.destroy();
    },
  };
}

function safeName(run: string, tag: string): string {
  return `${run}__${tag}`.replace(/[^A-Za-z0-9._-]+/g, "_");
}
