// The public gallery (/gallery, and the landing page of a signed-out
// visitor): public experiments, most recently updated first, with their
// owner's display name (never an email) and rendered description, searched
// by name, description or owner's display name
// (GET /api/experiments?scope=public&q=). Unlisted experiments are never
// listed; the server decides. The search is kept in the URL (?q=).

import { ApiError, getFresh, type Experiment, type ExperimentList } from "../api";
import { descriptionElement } from "../description";
import { debounce, h, setChildren } from "../dom";
import { compareSelection } from "./compare";

const PAGE_SIZE = 20;

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
  const search = h("input.gallery-search", {
    type: "search",
    name: "q",
    placeholder: "Search by name, description or owner",
    "aria-label": "Search public experiments",
    maxLength: 200,
    value: new URLSearchParams(location.search).get("q") ?? "",
  });
  const list = h("ol.gallery-list");
  // Check boxes and Compare: a comparison of the checked experiments.
  const compare = compareSelection();
  const status = h("p.status", { role: "status" });
  const more = h("button.more", { type: "button", hidden: true }, "More");
  // Answers to an older search that arrive late are dropped.
  let generation = 0;
  let next = "";

  async function load(append: boolean) {
    const mine = append ? generation : ++generation;
    const q = search.value.trim();
    if (!append) {
      next = "";
      status.textContent = "Loading…";
    }
    more.disabled = true;
    let page: ExperimentList;
    try {
      page = (await getFresh<ExperimentList>(galleryURL(q, append ? next : undefined))).body;
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
    if (n || q) status.textContent = n ? "" : `No public experiment matches “${q}”.`;
    else status.replaceChildren("No public experiments yet. An owner makes one public from its visibility menu, or with ", h("code", null, "tbup upload --visibility public"), ".");
  }

  const searchNow = () => {
    const q = search.value.trim();
    const url = new URL(location.href);
    if (q) url.searchParams.set("q", q);
    else url.searchParams.delete("q");
    history.replaceState(history.state, "", url);
    load(false);
  };
  const typed = debounce(searchNow, 250);
  search.addEventListener("input", typed);
  search.addEventListener("keydown", (ev) => {
    if (ev.key !== "Enter") return;
    // Now, and not again when the typing's wait ends.
    typed.cancel();
    searchNow();
  });
  more.addEventListener("click", () => load(true));

  setChildren(
    el,
    h(
      "section.gallery",
      null,
      h("h1", null, "Public experiments"),
      h("p.hint", null, "TensorBoard data its owners made public, latest update first. Unlisted experiments are not shown here."),
      search,
      compare.bar,
      status,
      list,
      more,
    ),
  );
  load(false);
}
