// View state of an experiment page, kept in the URL's query so that a
// copied link reproduces the view. Defaults are left out of the URL. Each
// dashboard owns a slice (its fields, how they are read and written); the
// ViewState is their union, composed below in the URL's parameter order.
//
//   tab=scalars        the dashboard
//   runFilter=RE       runs shown (case-insensitive regex)
//   color=RUN~RRGGBB (repeated)  a run's colour chosen with its picker
//   off=RUN (repeated) runs toggled off (all runs are on by default, so
//                      runs added later by a live upload show up)
//   tagFilter=RE       tags shown
//   smoothing=0.6      EMA weight in [0, 0.999]
//   x=step|relative|wall
//   logy=1, logx=1     log scales
//   outliers=0         y range fitted to the 2nd–98th percentiles (TensorBoard's
//                      "ignore outliers in chart scaling"); on by default
//   zoom=MIN,MAX       x range of the scalar charts (drag to zoom,
//                      double-click to reset)
//   pin=TAG (repeated) pinned scalar cards, shown first
//   expand=TAG (repeated)  scalar cards expanded to the full width (and taller)
//   group=RE           group runs by this regex's first capture (or whole
//                      match) and plot each group's mean with a min–max band
//   band=std           ... with a ±1 standard deviation band instead
//   ttsort=ascending|alphabetical|nearest|default  order of the scalar
//                      tooltip's rows (default descending by value)
//   tttime=1           the scalar tooltip shows each point's wall time and
//                      relative time (since its run's first point)
//   slide=JSON (repeated)  a media or PR curve card's sliders:
//                      [PLUGIN, TAG, RUN, STEP, SAMPLE] (RUN "" for the
//                      per-tag PR cards)
//   hmode=offset|overlay  histogram mode
//   hview=table|parallel|scatter  the HParams view (default table)
//   hsort=COL, hsort=-COL  HParams table sort column (- for descending)
//   hfilter=RE         HParams rows shown (regex over their cells)
//   hx=COL, hy=COL     HParams scatter plot axes; hcolor=COL colours the
//                      parallel coordinates (COL: an hparam or metric name)
//   hbrush=JSON (repeated)  HParams rows kept by a brushed axis:
//                      [COL, LO, HI] (numbers) or [COL, [VALUE, ...]]
//   rtag=TAG (repeated)  scalar tags the runs table shows (default: the first few)
//   rsort=COL, rsort=-COL  runs table sort column (- for descending)
//   rfilter=TEXT       runs table rows shown ("lr=0.1, loss.min < 0.5, text")
//   rgroup=HPARAM      runs table rows grouped by an hparam
//   grun, ggraph       the graph shown: its run, and "" (the run graph),
//                      "keras:TAG" (a Keras model) or "op:TAG" (an op graph)
//   gopen (repeated)   open name scopes of the graph ("a/b/"); the old
//                      gscope=a/b/ opens a/ and a/b/
//   gnode              the selected graph node
//   gstats=TAG         run metadata whose compute time and memory the graph shows
//   gcolor=op|device|time|memory  what colours graph nodes (default: structure)
//   ibright=B, icontrast=C  images' brightness and contrast (1: as stored)
//   iactual=1          images at their actual size (not fitted to the card)
//   tspin=JSON (repeated)  pinned Time Series cards: [KIND, TAG, RUN]
//                      (KIND scalars, histograms or images; RUN "" for scalars)
//   tsstep=N           the Time Series view's global step (image and
//                      histogram cards); absent: each card's latest

import { BRIGHTNESS, CONTRAST, parseLevel } from "./dashboards/imageview";
import { graphsSlice, type GraphsState } from "./dashboards/graphs-model";
import { scalarsSlice, type ScalarsState } from "./dashboards/scalars-model";

export { graphsSlice, type GraphsState } from "./dashboards/graphs-model";
export { DEFAULT_SMOOTHING, scalarsSlice, type ScalarsState, type XAxis } from "./dashboards/scalars-model";


/**
 * One dashboard's part of the URL: how its fields are read from the query
 * (absent or malformed values give the defaults) and written back (defaults
 * left out). ViewState is the union of the slices, in URL order.
 */
export interface UrlSlice<T> {
  parse(q: URLSearchParams): T;
  format(s: T, q: URLSearchParams): void;
}

/** Shared by every dashboard: the tab, which runs are shown, their colours, the tag filter. */
export interface SharedState {
  tab: string;
  runFilter: string;
  off: string[];
  /** Run colours chosen by the reader, "#rrggbb" by run name. */
  colors: Record<string, string>;
  tagFilter: string;
}

export const sharedSlice: UrlSlice<SharedState> = {
  parse: (q) => ({
    tab: q.get("tab") ?? "",
    runFilter: q.get("runFilter") ?? "",
    off: q.getAll("off"),
    colors: parseColors(q.getAll("color")),
    tagFilter: q.get("tagFilter") ?? "",
  }),
  format(s, q) {
    if (s.tab) q.set("tab", s.tab);
    if (s.runFilter) q.set("runFilter", s.runFilter);
    for (const r of s.off) q.append("off", r);
    for (const [r, c] of Object.entries(s.colors)) q.append("color", `${r}~${c.slice(1)}`);
    if (s.tagFilter) q.set("tagFilter", s.tagFilter);
  },
};

/** Media and PR curve cards' sliders (images, audio, PR curves). */
export interface SlidesState {
  /** Slider positions of cards, by slideKey: the step and sample shown. */
  slides: Record<string, Slide>;
}

export const slidesSlice: UrlSlice<SlidesState> = {
  parse: (q) => ({ slides: parseSlides(q.getAll("slide")) }),
  format(s, q) {
    for (const [k, v] of Object.entries(s.slides)) q.append("slide", JSON.stringify([...JSON.parse(k), v.step, v.sample]));
  },
};

export interface HistogramsState {
  hmode: "offset" | "overlay";
}

export const histogramsSlice: UrlSlice<HistogramsState> = {
  parse: (q) => ({ hmode: q.get("hmode") === "overlay" ? "overlay" : "offset" }),
  format(s, q) {
    if (s.hmode !== "offset") q.set("hmode", s.hmode);
  },
};

export interface HparamsState {
  hview: "table" | "parallel" | "scatter";
  hsort: string;
  hfilter: string;
  hx: string;
  hy: string;
  hcolor: string;
  hbrush: string[];
}

const HPARAMS_TEXT = ["hsort", "hfilter", "hx", "hy", "hcolor"] as const;

export const hparamsSlice: UrlSlice<HparamsState> = {
  parse(q) {
    const v = q.get("hview");
    return {
      hview: v === "parallel" || v === "scatter" ? v : "table",
      ...textFields(q, HPARAMS_TEXT),
      hbrush: q.getAll("hbrush"),
    };
  },
  format(s, q) {
    if (s.hview !== "table") q.set("hview", s.hview);
    for (const k of HPARAMS_TEXT) if (s[k]) q.set(k, s[k]);
    for (const b of s.hbrush) q.append("hbrush", b);
  },
};

export interface RunsTableState {
  rtag: string[];
  rsort: string;
  rfilter: string;
  rgroup: string;
}

const RUNS_TEXT = ["rsort", "rfilter", "rgroup"] as const;

export const runsTableSlice: UrlSlice<RunsTableState> = {
  parse: (q) => ({ rtag: q.getAll("rtag"), ...textFields(q, RUNS_TEXT) }),
  format(s, q) {
    for (const t of s.rtag) q.append("rtag", t);
    for (const k of RUNS_TEXT) if (s[k]) q.set(k, s[k]);
  },
};

export interface ImagesState {
  ibright: number;
  icontrast: number;
  iactual: boolean;
}

export const imagesSlice: UrlSlice<ImagesState> = {
  parse: (q) => ({
    ibright: parseLevel(q.get("ibright"), BRIGHTNESS),
    icontrast: parseLevel(q.get("icontrast"), CONTRAST),
    iactual: q.get("iactual") === "1",
  }),
  format(s, q) {
    if (s.ibright !== 1) q.set("ibright", String(s.ibright));
    if (s.icontrast !== 1) q.set("icontrast", String(s.icontrast));
    if (s.iactual) q.set("iactual", "1");
  },
};

export interface TimeSeriesState {
  tspin: string[];
  tsstep: number | null;
}

export const timeSeriesSlice: UrlSlice<TimeSeriesState> = {
  parse: (q) => ({
    tspin: q.getAll("tspin"),
    tsstep: /^-?\d+$/.test(q.get("tsstep") ?? "") ? Number(q.get("tsstep")) : null,
  }),
  format(s, q) {
    for (const p of s.tspin) q.append("tspin", p);
    if (s.tsstep !== null) q.set("tsstep", String(s.tsstep));
  },
};

export type ViewState = SharedState &
  ScalarsState &
  SlidesState &
  HistogramsState &
  HparamsState &
  RunsTableState &
  GraphsState &
  ImagesState &
  TimeSeriesState;

/** The slices in the order their parameters appear in the URL. */
const SLICES: UrlSlice<Partial<ViewState>>[] = [
  sharedSlice,
  scalarsSlice,
  slidesSlice,
  histogramsSlice,
  hparamsSlice,
  runsTableSlice,
  graphsSlice,
  imagesSlice,
  timeSeriesSlice,
];

/** A card's sliders: the step shown (a step number, not an index) and the sample. */
export interface Slide {
  step: number;
  sample: number;
}

/** The key of a card's sliders in ViewState.slides. */
export function slideKey(plugin: string, tag: string, run: string): string {
  return JSON.stringify([plugin, tag, run]);
}

/** slide=[PLUGIN, TAG, RUN, STEP, SAMPLE] values; malformed ones are dropped. */
function parseSlides(values: string[]): Record<string, Slide> {
  const out: Record<string, Slide> = {};
  for (const v of values) {
    try {
      const a = JSON.parse(v);
      if (!Array.isArray(a) || a.length !== 5) continue;
      const [plugin, tag, run, step, sample] = a;
      if (typeof plugin !== "string" || typeof tag !== "string" || typeof run !== "string") continue;
      if (!Number.isInteger(step) || !Number.isInteger(sample) || sample < 0) continue;
      out[slideKey(plugin, tag, run)] = { step, sample };
    } catch {
      // not JSON: ignored
    }
  }
  return out;
}

/** color=RUN~RRGGBB values (the run name may hold "~": the last one splits). */
function parseColors(values: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const v of values) {
    const i = v.lastIndexOf("~");
    const hex = v.slice(i + 1);
    if (i > 0 && /^[0-9a-fA-F]{6}$/.test(hex)) out[v.slice(0, i)] = `#${hex.toLowerCase()}`;
  }
  return out;
}

/** Single-valued text parameters, "" when absent. */
function textFields<K extends string>(q: URLSearchParams, keys: readonly K[]): Record<K, string> {
  return Object.fromEntries(keys.map((k) => [k, q.get(k) ?? ""])) as Record<K, string>;
}

export function parseState(search: string): ViewState {
  const q = new URLSearchParams(search);
  return Object.assign({}, ...SLICES.map((sl) => sl.parse(q)));
}


/** list with item taken out if it holds it, else added at the end (a pin, an expanded card). */
export function toggled(list: string[], item: string): string[] {
  return list.includes(item) ? list.filter((x) => x !== item) : [...list, item];
}


export function formatState(s: ViewState): string {
  const q = new URLSearchParams();
  for (const sl of SLICES) sl.format(s, q);
  const out = q.toString();
  return out ? `?${out}` : "";
}

type Listener = (s: ViewState, prev: ViewState) => void;

/** The page's view state, synchronised with location.search. */
export class Store {
  private s: ViewState;
  private listeners: Listener[] = [];

  private onPop = () => this.emit(parseState(location.search));

  constructor() {
    this.s = parseState(location.search);
    window.addEventListener("popstate", this.onPop);
  }

  /** Stops following the URL (the page is being replaced). */
  close() {
    window.removeEventListener("popstate", this.onPop);
    this.listeners = [];
  }

  get(): ViewState {
    return this.s;
  }

  /**
   * Changes the state and the URL. A new tab is a new history entry;
   * other changes replace the current one (a slider would flood history).
   */
  set(patch: Partial<ViewState>) {
    const next = { ...this.s, ...patch };
    const url = location.pathname + formatState(next) + location.hash;
    if (url === location.pathname + location.search + location.hash) return;
    if (patch.tab !== undefined && patch.tab !== this.s.tab) history.pushState(null, "", url);
    else history.replaceState(null, "", url);
    this.emit(next);
  }

  subscribe(fn: Listener): () => void {
    this.listeners.push(fn);
    return () => {
      this.listeners = this.listeners.filter((l) => l !== fn);
    };
  }

  private emit(next: ViewState) {
    const prev = this.s;
    this.s = next;
    for (const l of [...this.listeners]) l(next, prev);
  }
}
