// The experiment page: the runs list on the side, a tab per dashboard that
// has data, the dashboard itself. All view state lives in the URL (state.ts).

import { ApiError, ExperimentAPI, getJSON, getSession, readsAsOf, refresh, send, type Experiment, type PluginsListing } from "../api";
import { follow, freshnessLabel, type Freshness } from "../live";
import { assignColors, naturalCompare } from "../colors";
import { compileFilter, debounce, h, setChildren, type Child } from "../dom";
import { descriptionElement } from "../description";
import { damagedNote } from "../damaged";
import { Store, type ViewState } from "../state";
import { runColorPicker, setRunShown, showOnly, type Dashboard, type DashboardContext, type DashboardFactory, type Run } from "../dashboards/dashboard";
import { scalarsDashboard } from "../dashboards/scalars";
import { audioDashboard, imagesDashboard } from "../dashboards/images";
import { distributionsDashboard, histogramsDashboard } from "../dashboards/histograms";
import { textDashboard } from "../dashboards/text";
import { prCurvesDashboard } from "../dashboards/prcurves";
import { customScalarsDashboard } from "../dashboards/customscalars";
import { hparamsDashboard } from "../dashboards/hparams";
import { graphsDashboard } from "../dashboards/graphs";
import { meshDashboard } from "../dashboards/mesh";
import { timeSeriesDashboard } from "../dashboards/timeseries";
import { runsTableDashboard } from "../dashboards/runstable-view";
import { copyLinkButton, shareDialog } from "./experiments";
import { renderSignIn } from "./signin";
import { shortRunNames } from "../runnames";

/** The longest run name the runs list shows whole (about its default width). */
const SIDEBAR_NAME_CHARS = 30;

interface Tab {
  id: string;
  label: string;
  /** Entries of data/plugins_listing that enable the tab. */
  plugins: string[];
  make: DashboardFactory;
  /**
   * The plugin route whose answer is keyed by run (its tag index), so the
   * runs list shows only the runs with data for the tab; absent: all runs.
   */
  runIndex?: [plugin: string, route: string];
  /** The dashboard does not use the runs list (it is hidden there). */
  noRunsList?: true;
}

const TABS: Tab[] = [
  { id: "scalars", label: "Scalars", plugins: ["scalars"], make: scalarsDashboard, runIndex: ["scalars", "tags"] },
  // TensorBoard's default dashboard: each tag's scalars, histograms and images together.
  { id: "timeseries", label: "Time Series", plugins: ["scalars", "histograms", "images"], make: timeSeriesDashboard },
  // The runs table is the run selection itself: the runs list is hidden there.
  { id: "runs", label: "Runs", plugins: ["scalars", "hparams"], make: runsTableDashboard, noRunsList: true },
  { id: "images", label: "Images", plugins: ["images"], make: imagesDashboard, runIndex: ["images", "tags"] },
  { id: "audio", label: "Audio", plugins: ["audio"], make: audioDashboard, runIndex: ["audio", "tags"] },
  { id: "histograms", label: "Histograms", plugins: ["histograms"], make: histogramsDashboard, runIndex: ["histograms", "tags"] },
  { id: "distributions", label: "Distributions", plugins: ["distributions"], make: distributionsDashboard, runIndex: ["distributions", "tags"] },
  { id: "text", label: "Text", plugins: ["text"], make: textDashboard, runIndex: ["text", "tags"] },
  { id: "pr_curves", label: "PR curves", plugins: ["pr_curves"], make: prCurvesDashboard, runIndex: ["pr_curves", "tags"] },
  { id: "custom_scalars", label: "Custom scalars", plugins: ["custom_scalars"], make: customScalarsDashboard, runIndex: ["scalars", "tags"] },
  { id: "hparams", label: "HParams", plugins: ["hparams"], make: hparamsDashboard, noRunsList: true },
  { id: "graphs", label: "Graphs", plugins: ["graphs"], make: graphsDashboard, runIndex: ["graphs", "info"] },
  { id: "mesh", label: "Mesh", plugins: ["mesh"], make: meshDashboard, runIndex: ["mesh", "tags"] },
];

/** What another page built on this one (a comparison: compare.ts) changes. */
export interface PageKind {
  api: ExperimentAPI;
  /** The head's elements after the title. */
  head: (meta: Experiment) => Child[];
  /** Renders the page of a 404 (missing, or not readable). */
  notFound: (el: HTMLElement, reroute: () => void) => Promise<void>;
}

/** Renders the page; returns what stops it (before the next page renders). */
export async function renderExperiment(el: HTMLElement, eid: string, reroute: () => void, kind?: PageKind): Promise<() => void> {
  const api = kind?.api ?? new ExperimentAPI(eid);
  setChildren(el, h("p.notice", null, "Loading…"));
  let meta, listing, runNames;
  // The Scalars tab (the default) reads its tags next: ask now, beside the
  // page's own reads (getJSON shares the answer).
  if (["", "scalars"].includes(new URLSearchParams(location.search).get("tab") ?? "")) {
    getJSON(api.plugin("scalars", "tags")).catch(() => {});
  }
  try {
    [meta, listing, runNames] = await Promise.all([
      api.metadata(),
      getJSON<PluginsListing>(api.data("plugins_listing")),
      getJSON<string[]>(api.data("runs", { format: "list" })),
    ]);
  } catch (e) {
    if (e instanceof ApiError && (e.status === 404 || e.status === 401 || e.status === 403)) {
      await (kind ? kind.notFound(el, reroute) : renderNotFound(el, eid, reroute));
      return () => {};
    }
    throw e;
  }
  document.title = `${meta.name || eid} – tbhub`;
  const colors = assignColors(runNames);
  const runs: Run[] = [...runNames].sort(naturalCompare).map((name) => ({ name, color: colors.get(name)! }));
  const store = new Store();
  // A colour the reader picked (in the URL) wins over the run's own.
  const ctx: DashboardContext = { api, runs, store, colorOf: (r) => store.get().colors[r] ?? colors.get(r) ?? "#888" };
  let tabs = TABS.filter((t) => t.plugins.some((p) => listing[p]?.enabled));

  const tabBar = h("nav.tabs", { role: "tablist" });
  const main = h("div.dashboard");
  const sidebar = runsSidebar(ctx);
  const liveEl = h("span.live", { role: "status", title: "When data last arrived; the page follows new data on its own" });
  const reloadButton = h("button.reload", { title: "Read everything again" }, "↻ Reload");
  setChildren(
    el,
    h(
      "div.exp-head",
      null,
      h("h1", null, meta.name || eid),
      kind
        ? kind.head(meta)
        : [
            descriptionElement(meta),
            h("span.badge", null, (meta.visibility ?? "").replace("VISIBILITY_", "").toLowerCase()),
            ownerControls(meta),
            copyLinkButton(eid),
          ],
      liveEl,
      reloadButton,
    ),
    damagedNote(meta.damaged),
    h("div.exp-body", null, sidebar.el, h("div.exp-main", null, tabBar, main)),
  );

  // A tab bar wider than the screen (a phone) fades out where more tabs
  // are, until scrolled to its end.
  const hintTabs = () => tabBar.classList.toggle("more", tabBar.scrollLeft + tabBar.clientWidth < tabBar.scrollWidth - 1);
  tabBar.addEventListener("scroll", hintTabs, { passive: true });
  // The selected tab is scrolled into the bar's view (?tab=mesh on a phone
  // would otherwise select a tab off screen).
  const showSelectedTab = () => {
    const sel = tabBar.querySelector('[aria-selected="true"]');
    if (!sel) return;
    const bar = tabBar.getBoundingClientRect(), r = sel.getBoundingClientRect();
    if (r.left < bar.left) tabBar.scrollLeft -= bar.left - r.left;
    else if (r.right > bar.right) tabBar.scrollLeft += r.right - bar.right;
  };
  addEventListener("resize", hintTabs);

  let current: { id: string; dash: Dashboard } | null = null;
  // Dashboards without a refresh of their own are mounted again for new
  // data at most every REMOUNT_MS (a live upload changes the experiment
  // every few seconds); remountDue says one is waiting.
  const REMOUNT_MS = 15_000;
  let lastMount = Date.now();
  let remountDue = false;
  function activeTab(s: ViewState): Tab | undefined {
    return tabs.find((t) => t.id === s.tab) ?? tabs[0];
  }
  function drawTabs(tab: Tab | undefined) {
    requestAnimationFrame(() => {
      showSelectedTab();
      hintTabs();
    });
    setChildren(
      tabBar,
      tabs.map((t) =>
        h(
          "button.tab",
          { role: "tab", "aria-selected": String(t === tab), "data-tab": t.id, onclick: () => store.set({ tab: t.id }) },
          t.label,
        ),
      ),
    );
  }
  function mount(s: ViewState) {
    current?.dash.destroy();
    current = null;
    const tab = activeTab(s);
    drawTabs(tab);
    if (!tab) {
      setChildren(main, h("p.notice", null, "This experiment has no data the UI can show yet."));
      return;
    }
    const host = h("div", { className: `dash dash-${tab.id}` });
    // A tab the URL asks for that has no data (yet: a live upload may
    // bring it, and the page switches then) is said, not silently replaced.
    const asked = s.tab && s.tab !== tab.id ? (TABS.find((t) => t.id === s.tab)?.label ?? s.tab) : "";
    setChildren(main, asked ? h("p.notice.tab-missing", null, `No ${asked} data in this experiment; showing ${tab.label}.`) : null, host);
    current = { id: tab.id, dash: tab.make(host, ctx) };
    showRunsOf(tab);
  }
  /** Lists only the runs with data for tab (all until its index arrives). */
  function showRunsOf(tab: Tab) {
    sidebar.el.hidden = !!tab.noRunsList;
    sidebar.setAvailable(null);
    if (!tab.runIndex) return;
    const [plugin, route] = tab.runIndex;
    getJSON<Record<string, unknown>>(api.plugin(plugin, route))
      .then((idx) => {
        if (current?.id === tab.id) sidebar.setAvailable(new Set(Object.keys(idx)));
      })
      .catch(() => {});
  }
  /**
   * Mounts the current dashboard again where the reader is: the page keeps
   * its height while the new one loads, so the scroll position holds.
   */
  function remountInPlace() {
    lastMount = Date.now();
    remountDue = false;
    const y = scrollY;
    main.style.minHeight = `${main.offsetHeight}px`;
    mount(store.get());
    scrollTo({ top: y });
  }

  /**
   * Reads what changed: the runs, the dashboards with data, and (through
   * the dashboard's refresh) the data of the current one. The view state
   * (tab, zoom, filters, toggled runs) is in the URL and is kept; so is
   * the scroll position. full re-reads everything (the Reload button).
   */
  async function reread(full: boolean) {
    refresh();
    const [newListing, newRuns] = await Promise.all([
      getJSON<PluginsListing>(api.data("plugins_listing")),
      getJSON<string[]>(api.data("runs", { format: "list" })),
    ]);
    const added = newRuns.filter((r) => !colors.has(r));
    for (const [name, color] of assignColors(added, colors)) colors.set(name, color);
    for (const name of added.sort(naturalCompare)) {
      const run = { name, color: colors.get(name)! };
      const at = runs.findIndex((r) => naturalCompare(r.name, name) > 0);
      runs.splice(at < 0 ? runs.length : at, 0, run);
      sidebar.add(run);
    }
    const before = activeTab(store.get());
    const newTabs = TABS.filter((t) => t.plugins.some((p) => newListing[p]?.enabled));
    const tabsChanged = newTabs.map((t) => t.id).join() !== tabs.map((t) => t.id).join();
    tabs = newTabs;
    const after = activeTab(store.get());
    if (full || !current || before?.id !== after?.id) remountInPlace();
    else if (!current.dash.refresh) {
      if (tabsChanged) drawTabs(after);
      if (after) showRunsOf(after);
      remountDue = true;
      remountSoon();
    } else {
      if (tabsChanged) drawTabs(after);
      current.dash.refresh({ runsAdded: added });
      if (after) showRunsOf(after);
    }
  }

  function remountSoon() {
    if (remountDue && Date.now() - lastMount >= REMOUNT_MS) remountInPlace();
  }

  let fresh: Freshness | null = null;
  function showFreshness() {
    if (!fresh) return;
    const { active, text } = freshnessLabel(fresh, Date.now());
    liveEl.classList.toggle("active", active);
    liveEl.dataset.updated = String(fresh.updated);
    liveEl.dataset.latest = String(fresh.latest);
    liveEl.textContent = text;
  }
  const loaded = Date.parse(meta.updateTime ?? "") || 0;
  fresh = { updated: loaded, dataSeen: false, latest: loaded, serverNow: Date.now(), polledAt: Date.now() };
  showFreshness();
  const clock = setInterval(showFreshness, 1000);

  let rereading: Promise<void> = Promise.resolve();
  const queue = (full: boolean) => (rereading = rereading.then(() => reread(full)).catch(() => {}));
  reloadButton.addEventListener("click", () => queue(true));
  const stopFollowing = follow(
    eid,
    meta,
    () => queue(false),
    (f) => {
      fresh = f;
      showFreshness();
      remountSoon();
    },
    api.metadataPath(),
    readsAsOf,
  );

  store.subscribe((s, prev) => {
    sidebar.update(s);
    if (current && activeTab(s)?.id === current.id && JSON.stringify(s.colors) !== JSON.stringify(prev.colors)) {
      remountInPlace(); // every chart's colours
      return;
    }
    if (!current || activeTab(s)?.id !== current.id) {
      main.style.minHeight = "";
      lastMount = Date.now();
      remountDue = false;
      mount(s);
    } else current.dash.update(s, prev);
  });
  mount(store.get());
  return () => {
    removeEventListener("resize", hintTabs);
    stopFollowing();
    clearInterval(clock);
    store.close();
    current?.dash.destroy();
  };
}

/**
 * For the experiment's owner: its visibility and the Share dialog, so that
 * a page can be shared from where it is read. Filled in once the session
 * is known; empty for everyone else.
 */
function ownerControls(meta: Experiment): HTMLElement {
  const el = h("span.owner-controls");
  getSession()
    .then((s) => {
      if (!s.signedIn || s.userId !== meta.ownerUserId) return;
      const badge = el.previousElementSibling;
      const error = h("span.error", { role: "alert" });
      const current = (meta.visibility ?? "VISIBILITY_PRIVATE").replace("VISIBILITY_", "").toLowerCase();
      const sel = h(
        "select.visibility",
        {
          "aria-label": "visibility",
          onchange: async () => {
            error.textContent = "";
            try {
              const e = await send<Experiment>("PATCH", `/api/experiments/${encodeURIComponent(meta.experimentId)}`, { visibility: sel.value });
              meta.visibility = e?.visibility ?? meta.visibility;
            } catch (err) {
              error.textContent = err instanceof ApiError ? err.detail : (err as Error).message;
            }
            sel.value = (meta.visibility ?? "").replace("VISIBILITY_", "").toLowerCase();
            el.dataset.visibility = meta.visibility; // what the server holds
          },
        },
        ["private", "unlisted", "public"].map((v) => h("option", { value: v, selected: v === current }, v)),
      );
      badge?.remove(); // the select says it
      el.dataset.visibility = meta.visibility;
      setChildren(el, sel, h("button.share", { type: "button", onclick: () => shareDialog(meta) }, "Share"), error);
    })
    .catch(() => {});
  return el;
}

/**
 * The runs list: colour (a picker, kept in the URL), toggle, the run
 * regex. Runs are in natural order (run-2 before run-10); a long name
 * loses the folders all runs share and then its middle, where runs differ
 * least (trial numbers, seeds and hashes at the end tell them apart), and
 * is shown whole on hover. The sidebar can be
 * resized by its edge.
 */
function runsSidebar(ctx: DashboardContext): {
  el: HTMLElement;
  update: (s: ViewState) => void;
  add: (r: Run) => void;
  setAvailable: (runs: Set<string> | null) => void;
} {
  const { store } = ctx;
  const filter = h("input", { type: "search", placeholder: "Filter runs (regex)", "aria-label": "run filter", className: "run-filter" });
  const error = h("div.error");
  const list = h("ul.runs");
  const all = h("button", { title: "Show every matching run" }, "All");
  const none = h("button", { title: "Hide every matching run" }, "None");
  let available: Set<string> | null = null;
  filter.addEventListener("input", debounce(() => store.set({ runFilter: filter.value }), 200));
  const matching = () => {
    const f = compileFilter(store.get().runFilter);
    return ctx.runs.filter((r) => f.test(r.name) && (!available || available.has(r.name))).map((r) => r.name);
  };
  all.addEventListener("click", () => {
    const m = new Set(matching());
    store.set({ off: store.get().off.filter((r) => !m.has(r)) });
  });
  none.addEventListener("click", () => {
    const off = new Set(store.get().off);
    for (const r of matching()) off.add(r);
    store.set({ off: ctx.runs.map((r) => r.name).filter((r) => off.has(r)) });
  });
  const rows = new Map<string, { li: HTMLElement; box: HTMLInputElement; picker: HTMLInputElement; run: Run }>();
  // On a phone the list folds under its heading (style.css), which opens it.
  const heading = h("h2", { role: "button", tabIndex: 0, "aria-expanded": "false" });
  const toggle = () => heading.setAttribute("aria-expanded", String(el.classList.toggle("open")));
  heading.addEventListener("click", toggle);
  heading.addEventListener("keydown", (e) => (e.key === "Enter" || e.key === " ") && toggle());
  let short = new Map<string, string>();
  const add = (r: Run) => {
    const box = h("input", { type: "checkbox", onchange: () => setRunShown(ctx, r.name, box.checked) });
    const picker = runColorPicker(ctx, r.name, r.color);
    // The name without what every run shares, cut in its middle if long
    // (runnames.ts); a narrower list shrinks its head with an ellipsis,
    // the tail stays.
    if (!short.has(r.name)) short = shortRunNames(ctx.runs.map((x) => x.name), SIDEBAR_NAME_CHARS);
    const label = short.get(r.name) ?? r.name;
    const cut = Math.max(label.length - Math.max(8, Math.ceil(label.length * 0.4)), 0);
    // "only": the run filter matching just this run (as the scalar tooltip's).
    const only = h("button.run-only", { title: `Show only ${r.name}`, "aria-label": `show only ${r.name}`, onclick: () => showOnly(store, r.name) }, "only");
    const li = h(
      "li",
      { "data-run": r.name, title: r.name },
      picker,
      h("label", null, box, h("span.run-name", null, h("span.run-head", null, label.slice(0, cut)), h("span.run-tail", null, label.slice(cut)))),
      only,
    );
    rows.set(r.name, { li, box, picker, run: r });
    const next = [...rows.values()].find((x) => x.run !== r && naturalCompare(x.run.name, r.name) > 0 && x.li.parentNode === list);
    list.insertBefore(li, next ? next.li : null);
  };
  for (const r of ctx.runs) add(r);
  const el = h("aside.sidebar", null, heading, filter, error, h("div.run-buttons", null, all, none), list);
  const update = (s: ViewState) => {
    if (document.activeElement !== filter) filter.value = s.runFilter;
    const f = compileFilter(s.runFilter);
    error.textContent = f.error ?? "";
    const off = new Set(s.off);
    let shown = 0, total = 0;
    for (const [name, { li, box, picker, run }] of rows) {
      const here = !available || available.has(name);
      if (here) total++;
      li.hidden = !here || !f.test(name);
      if (!li.hidden) shown++;
      box.checked = !off.has(name);
      const color = s.colors[name] ?? run.color;
      if (picker.value !== color) picker.value = color;
    }
    heading.textContent = shown === total ? `Runs (${shown})` : `Runs (${shown} of ${total})`;
  };
  update(store.get());
  return {
    el,
    update,
    add: (r) => {
      add(r);
      update(store.get());
    },
    setAvailable: (runs) => {
      available = runs;
      update(store.get());
    },
  };
}

/** Missing and private experiments look the same to a viewer (both 404). */
async function renderNotFound(el: HTMLElement, eid: string, reroute: () => void) {
  document.title = "Not found – tbhub";
  if (!(await getSession().catch(() => ({ signedIn: false }))).signedIn) {
    renderSignIn(el, reroute, `Experiment ${eid} was not found. If it is private, sign in with an account that may see it.`);
    return;
  }
  setChildren(
    el,
    h(
      "div.not-found",
      null,
      h("h1", null, "Experiment not found"),
      h("p", null, `There is no experiment ${eid}, or it is private and not shared with you.`),
      h("p", null, h("a", { href: "/" }, "My experiments")),
    ),
  );
}
