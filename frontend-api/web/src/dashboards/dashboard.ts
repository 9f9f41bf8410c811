// What every dashboard module gets and gives.

import type { ExperimentAPI } from "../api";
import type { Slide, Store, ViewState } from "../state";
import { compileFilter, exactRegex, h, setChildren } from "../dom";

export interface Run {
  name: string;
  color: string;
}

export interface DashboardContext {
  api: ExperimentAPI;
  /** Every run of the experiment, in the server's order. */
  runs: Run[];
  colorOf: (run: string) => string;
  store: Store;
}

export interface Dashboard {
  /** The view state changed (runs, filters, smoothing, ...). */
  update(s: ViewState, prev: ViewState): void;
  /**
   * The experiment received data (a live upload): read what is new and
   * show it where it is, keeping the view (zoom, scroll, open menus).
   * Without it the page mounts the dashboard again.
   */
  refresh?(change: { runsAdded: string[] }): void;
  destroy(): void;
}

export type DashboardFactory = (el: HTMLElement, ctx: DashboardContext) => Dashboard;

/** The runs the view shows: matching the run filter and not toggled off. */
export function shownRuns(ctx: DashboardContext, s: ViewState): Set<string> {
  const f = compileFilter(s.runFilter);
  const off = new Set(s.off);
  return new Set(ctx.runs.filter((r) => f.test(r.name) && !off.has(r.name)).map((r) => r.name));
}

/** Whether the set of shown runs differs between two states. */
export function runsChanged(s: ViewState, prev: ViewState): boolean {
  return s.runFilter !== prev.runFilter || s.off.join("\n") !== prev.off.join("\n");
}

/** "Show only this run" (a chart's pinned tooltip, the runs list): the run filter matching just run. */
export function showOnly(store: Store, run: string) {
  store.set({ runFilter: exactRegex(run), off: [] });
}

/** Turns run on or off in every dashboard (off= in the URL, in run order). */
export function setRunShown(ctx: DashboardContext, run: string, shown: boolean) {
  const off = new Set(ctx.store.get().off);
  if (shown) off.delete(run);
  else off.add(run);
  ctx.store.set({ off: ctx.runs.map((x) => x.name).filter((x) => off.has(x)) });
}

/**
 * A run's colour swatch, a picker showing color; what is picked goes into
 * the URL (color=), and picking the run's own colour (own) takes it out.
 */
export function runColorPicker(ctx: DashboardContext, run: string, own: string, color = own): HTMLInputElement {
  const picker = h("input", {
    type: "color",
    className: "swatch",
    value: color,
    title: `Colour of ${run}`,
    "aria-label": `colour of ${run}`,
    onchange: () => {
      const colors = { ...ctx.store.get().colors };
      if (picker.value === own) delete colors[run];
      else colors[run] = picker.value;
      ctx.store.set({ colors });
    },
  });
  return picker;
}

/** Groups tags by their prefix before the first "/". */
export function groupByPrefix<T>(items: T[], key: (t: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const it of items) {
    const k = key(it);
    const i = k.indexOf("/");
    const g = i > 0 ? k.slice(0, i) : k;
    if (!groups.has(g)) groups.set(g, []);
    groups.get(g)!.push(it);
  }
  return new Map([...groups.entries()].sort(([a], [b]) => a.localeCompare(b)));
}

/** A message in place of a dashboard's content. */
/**
 * A card's run, named whole on a line of its own below the card's other
 * head items (in the run's colour), wrapping where it must: a name cut to
 * fit beside the tag lost the part that tells runs apart.
 */
export function cardRun(ctx: DashboardContext, run: string): HTMLElement {
  return h("span.card-run", { style: { color: ctx.colorOf(run) } }, run);
}

export function notice(text: string, cls = "notice"): HTMLElement {
  return h(`div.${cls}` as "div.x", null, text);
}

/**
 * Calls load(el) once el is near the viewport, so a page with hundreds of
 * cards only fetches what is seen. Returns a function that stops watching.
 */
export function whenVisible(el: Element, load: () => void): () => void {
  const io = new IntersectionObserver(
    (entries) => {
      if (entries.some((e) => e.isIntersecting)) {
        io.disconnect();
        load();
      }
    },
    // Cards just below the fold load too, but after the visible ones
    // (observers report in document order, and reads are queued).
    { rootMargin: "100px" },
  );
  io.observe(el);
  return () => io.disconnect();
}

/**
 * Fills a card's body (emptied first) once the card is near the viewport;
 * a failure is shown in the body. Returns a function that stops watching.
 */
export function fillWhenVisible(card: Element, body: HTMLElement, fill: () => Promise<unknown>): () => void {
  return whenVisible(card, async () => {
    try {
      body.replaceChildren();
      await fill();
    } catch (e) {
      body.replaceChildren(notice((e as Error).message, "error"));
    }
  });
}

/** A step slider over the indices of a list of steps. */
export function stepSlider(steps: number[], onChange: (i: number) => void, initial = steps.length - 1): HTMLElement {
  return rangeSlider(steps.length, "step", (i) => (steps.length ? `step ${steps[i]}` : ""), onChange, initial);
}

/** The index of step in steps (ascending), or of the latest step before it (the first if none). */
export function stepIndex(steps: number[], step: number): number {
  let best = 0;
  for (let i = 0; i < steps.length; i++) if (steps[i] <= step) best = i;
  return best;
}

/** Keeps a card's sliders in the URL (ViewState.slides), or forgets them (null: the default view). */
export function saveSlide(store: Store, key: string, slide: Slide | null) {
  const slides = { ...store.get().slides };
  if (slide) slides[key] = slide;
  else delete slides[key];
  store.set({ slides });
}

/**
 * A range input over 0..n-1 with a label beside it (label(i) for the value i),
 * calling onChange as it moves; disabled when there is nothing to choose.
 */
export function rangeSlider(n: number, name: string, label: (i: number) => string, onChange: (i: number) => void, initial = 0): HTMLElement {
  const text = h(`span.${name}-label`, null, label(initial));
  const input = h("input", {
    type: "range",
    min: 0,
    max: Math.max(n - 1, 0),
    value: initial,
    "aria-label": name,
    disabled: n < 2,
    oninput: () => {
      const i = Number(input.value);
      text.textContent = label(i);
      onChange(i);
    },
  });
  return h(`div.slider.${name}-slider`, null, input, text);
}

/** What a plugin's tag index says of a card. */
export interface CardInfo {
  samples?: number;
  /** For per-tag cards: the runs holding the tag. */
  runs?: string[];
}

export interface RunTagOptions {
  /** CSS class of each card, e.g. "image-card". */
  cardClass: string;
  /**
   * The run → tag → info index of the plugin. Cards under the run "" are
   * per tag, for all runs (the card filters by the shown runs itself).
   */
  tags: () => Promise<Record<string, Record<string, CardInfo>>>;
  /** Fills a card's body once it is visible; it starts empty. */
  fill: (body: HTMLElement, run: string, tag: string, info: CardInfo) => Promise<void>;
  /** Controls shown before the tag filter. */
  controls?: HTMLElement[];
  /** Whether a state change (other than runs and tags) needs the cards redrawn. */
  redraw?: (s: ViewState, prev: ViewState) => boolean;
  wide?: boolean;
  empty: string;
}

/**
 * The layout of the dashboards whose cards are one (tag, run) each
 * (images, audio, text, histograms, distributions): grouped by tag prefix,
 * filtered by the tag regex and the shown runs, loaded when visible.
 */
export function runTagDashboard(el: HTMLElement, ctx: DashboardContext, o: RunTagOptions): Dashboard {
  const { store } = ctx;
  const tagFilter = h("input", { type: "search", placeholder: "Filter tags (regex)", "aria-label": "tag filter", className: "tag-filter" });
  tagFilter.addEventListener("change", () => store.set({ tagFilter: tagFilter.value }));
  const content = h(o.wide ? "div.cards.wide" : "div.cards");
  setChildren(el, h("div.toolbar", null, ...(o.controls ?? []), h("label", null, "Tags ", tagFilter)), content);
  let index: Record<string, Record<string, CardInfo>> | null = null;
  let stops: (() => void)[] = [];

  function card(run: string, tag: string, info: CardInfo): HTMLElement {
    const body = h("div.card-body", null, "Loading…");
    const el = h(
      "div.card",
      { className: `card ${o.cardClass}`, "data-run": run, "data-tag": tag },
      h("div.card-head", null, h("span.card-title", { title: tag }, tag), run ? cardRun(ctx, run) : null),
      body,
    );
    stops.push(fillWhenVisible(el, body, () => o.fill(body, run, tag, info)));
    return el;
  }

  function layout() {
    for (const stop of stops) stop();
    stops = [];
    if (!index) return;
    const s = store.get();
    if (document.activeElement !== tagFilter) tagFilter.value = s.tagFilter;
    const shown = shownRuns(ctx, s);
    const filter = compileFilter(s.tagFilter);
    const items: { run: string; tag: string; info: CardInfo }[] = [];
    for (const [run, tags] of Object.entries(index)) {
      if (run !== "" && !shown.has(run)) continue;
      for (const [tag, info] of Object.entries(tags)) {
        if (!filter.test(tag) || (info.runs && !info.runs.some((r) => shown.has(r)))) continue;
        items.push({ run, tag, info });
      }
    }
    const order = new Map(ctx.runs.map((r, i) => [r.name, i]));
    items.sort((a, b) => a.tag.localeCompare(b.tag) || (order.get(a.run) ?? 0) - (order.get(b.run) ?? 0));
    if (!items.length) {
      setChildren(content, notice(o.empty));
      return;
    }
    setChildren(
      content,
      [...groupByPrefix(items, (i) => i.tag)].map(([prefix, group]) =>
        h(
          "details.group",
          { open: true },
          h("summary", null, prefix, h("span.count", null, ` ${group.length}`)),
          h("div.grid", null, group.map((i) => card(i.run, i.tag, i.info))),
        ),
      ),
    );
  }

  content.appendChild(notice("Loading…"));
  o.tags()
    .then((idx) => {
      index = idx;
      layout();
    })
    .catch((e) => setChildren(content, notice(e.message, "error")));

  return {
    update(s, prev) {
      if (runsChanged(s, prev) || s.tagFilter !== prev.tagFilter || o.redraw?.(s, prev)) layout();
    },
    // New data: the cards are laid out again from the new index where the
    // reader is (the page keeps its height until they have loaded), and
    // those in view read their data again.
    refresh() {
      o.tags()
        .then((idx) => {
          index = idx;
          const y = scrollY;
          content.style.minHeight = `${content.offsetHeight}px`;
          layout();
          scrollTo({ top: y });
        })
        .catch(() => {}); // the next change tries again
    },
    destroy() {
      for (const stop of stops) stop();
    },
  };
}
