// The public gallery (/gallery, and the landing page of a signed-out
// visitor): public experiments, most recently updated first, with their
// owner's display name (never an email) and rendered description, searched
// by name, description or owner's display name
// (GET /api/experiments?scope=public&q=), and sorted by last update (the
// server's order, a page at a time), creation or name (the first
// SORTED_MAX matches read, then sorted here). Unlisted experiments are never
// listed; the server decides. The search and sort are kept in the URL
// (?q=, ?sort=).

import { ApiError, getFresh, type Experiment, type ExperimentList } from "../api";
import { descriptionElement } from "../description";
import { debounce, h, setChildren } from "../dom";
import { compareSelection } from "./compare";
import { EXPERIMENT_SORTS, parseListState, sortExperiments, withListState, type ExperimentSort, type ListState } from "./explist";

const PAGE_SIZE = 20;
/** Sorting other than by last update reads this many matches at most, in pages of 50. */
const SORTED_MAX = 1000;

function galleryURL(q: string, token?: string): string {
  const p = new URLSearchParams({ scope: "public", page_size: String(PAGE_SIZE) });
  if (q) p.set("q", q);
  if (token) p.set("page_token", token);
  return `/api/experiments?${p}`;
}

function item(e: Experiment, compare: ReturnType<typeof compareSelection>): HTMLElement {
  const runs = Number(e.counts?.numRuns ?? 0);
  return h(
    "li.gallery-item",
    { "data-eid": e.experimentId },
    h("h2", null, compare.checkbox(e), h("a", { href: `/experiment/${encodeURIComponent(e.experimentId)}/` }, e.name || e.experimentId)),
    h(
      "p.meta",
      null,
      h("span.owner", null, e.ownerDisplayName || "unknown owner"),
      " · updated ",
      e.updateTime ? h("time.updated", { dateTime: e.updateTime, title: new Date(e.updateTime).toLocaleString() }, new Date(e.updateTime).toLocaleDateString()) : "–",
      ` · ${runs.toLocaleString()} run${runs === 1 ? "" : "s"}`,
    ),
    descriptionElement(e),
  );
}

/** Renders the gallery into el. */
export function renderGallery(el: HTMLElement) {
  document.title = "Public experiments – tbhub";
  let state = parseListState(location.search);
  const controls = listControls(
    state,
    (s) => {
      state = s;
      history.replaceState(history.state, "", withListState(new URL(location.href), s));
      load(false);
    },
    "Search by name, description or owner",
  );
  controls.querySelector("input")!.classList.add("gallery-search");
  const list = h("ol.gallery-list");
  // Check boxes and Compare: a comparison of the checked experiments.
  const compare = compareSelection();
  const status = h("p.status", { role: "status" });
  const more = h("button.more", { type: "button", hidden: true }, "More");
  // Answers to an older search that arrive late are dropped.
  let generation = 0;
  let next = "";

  /** Every match (up to SORTED_MAX), for a sort the server does not page by; whether there were more. */
  async function readAll(q: string, mine: number): Promise<{ all: Experiment[]; cut: boolean } | null> {
    const all: Experiment[] = [];
    let token = "";
    do {
      const p = new URLSearchParams({ scope: "public", page_size: "50" });
      if (q) p.set("q", q);
      if (token) p.set("page_token", token);
      const page = (await getFresh<ExperimentList>(`/api/experiments?${p}`)).body;
      if (mine !== generation) return null;
      all.push(...(page.experiments ?? []));
      token = page.nextPageToken ?? "";
    } while (token && all.length < SORTED_MAX);
    return { all: all.slice(0, SORTED_MAX), cut: !!token || all.length > SORTED_MAX };
  }

  async function load(append: boolean) {
    const mine = append ? generation : ++generation;
    const q = state.q.trim();
    if (!append) {
      next = "";
      status.textContent = "Loading…";
    }
    more.disabled = true;
    let page: ExperimentList;
    let cut = false;
    try {
      if (state.sort === "updated") page = (await getFresh<ExperimentList>(galleryURL(q, append ? next : undefined))).body;
      else {
        const read = await readAll(q, mine);
        if (!read) return;
        page = { experiments: sortExperiments(read.all, state.sort) };
        cut = read.cut;
      }
    } catch (e) {
      if (mine !== generation) return;
      status.textContent = e instanceof ApiError ? e.detail : (e as Error).message;
      more.disabled = false;
      return;
    }
    if (mine !== generation) return;
    const items = (page.experiments ?? []).map((e) => item(e, compare));
    if (append) list.append(...items);
    else setChildren(list, items);
    next = page.nextPageToken ?? "";
    more.hidden = !next;
    more.disabled = false;
    const n = list.children.length;
    if (n || q) status.textContent = n ? (cut ? `The ${SORTED_MAX} most recently updated matches, sorted; search to narrow them.` : "") : `No public experiment matches “${q}”.`;
    else status.replaceChildren("No public experiments yet. An owner makes one public from its visibility menu, or with ", h("code", null, "tbup upload --visibility public"), ".");
  }
  more.addEventListener("click", () => load(true));

  setChildren(
    el,
    h(
      "section.gallery",
      null,
      h("h1", null, "Public experiments"),
      h("p.hint", null, "TensorBoard data its owners made public, latest update first unless sorted otherwise. Unlisted experiments are not shown here."),
      controls,
      compare.bar,
      status,
      list,
      more,
    ),
  );
  load(false);
}

/**
 * A list's search box and sort menu, starting from s; onChange gets each
 * new state (the search once typing pauses). Used by My experiments and
 * the gallery.
 */
export function listControls(s: ListState, onChange: (s: ListState) => void, placeholder = "Search by name or description"): HTMLElement {
  const search = h("input.list-search", { type: "search", name: "q", placeholder, "aria-label": "search experiments", maxLength: 200, value: s.q });
  const sort = h(
    "select.list-sort",
    { "aria-label": "sort experiments" },
    EXPERIMENT_SORTS.map((o) => h("option", { value: o.value, selected: o.value === s.sort }, o.label)),
  );
  const state = () => ({ q: search.value, sort: sort.value as ExperimentSort });
  const typed = debounce(() => onChange(state()), 250);
  search.addEventListener("input", typed);
  search.addEventListener("keydown", (ev) => {
    if (ev.key !== "Enter") return;
    typed.cancel(); // now, and not again when the typing's wait ends
    onChange(state());
  });
  sort.addEventListener("change", () => {
    typed.cancel();
    onChange(state());
  });
  return h("div.list-controls", null, search, h("label", null, "Sort by ", sort));
}

