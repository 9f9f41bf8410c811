// "My experiments": the signed-in user's experiments with their counts.

import { getJSON, getToken, type Experiment, type ExperimentList } from "../api";
import { h, setChildren } from "../dom";
import { renderSignIn } from "./signin";

function count(e: Experiment, key: string): string {
  const v = e.counts?.[key];
  return v === undefined ? "0" : Number(v).toLocaleString();
}

function visibility(v?: string): string {
  return (v ?? "VISIBILITY_PRIVATE").replace("VISIBILITY_", "").toLowerCase();
}

export async function renderExperiments(el: HTMLElement, reroute: () => void) {
  if (!getToken()) {
    renderSignIn(el, reroute, "Sign in to see your experiments.");
    return;
  }
  setChildren(el, h("p.notice", null, "Loading…"));
  const [owned, shared] = await Promise.all([
    getJSON<ExperimentList>("/api/experiments?scope=owned&page_size=500"),
    getJSON<ExperimentList>("/api/experiments?scope=shared&page_size=500").catch(() => ({}) as ExperimentList),
  ]);
  const table = (list: Experiment[]) =>
    h(
      "table.experiments",
      null,
      h("thead", null, h("tr", null, ["Name", "Description", "Runs", "Tags", "Scalar points", "Blobs", "Updated", "Visibility"].map((c) => h("th", null, c)))),
      h(
        "tbody",
        null,
        list.map((e) =>
          h(
            "tr",
            null,
            h("td", null, h("a", { href: `/experiment/${encodeURIComponent(e.experimentId)}/` }, e.name || e.experimentId)),
            h("td.desc", null, e.description ?? ""),
            h("td.num", null, count(e, "numRuns")),
            h("td.num", null, count(e, "numTags")),
            h("td.num", null, count(e, "numScalarPoints")),
            h("td.num", null, count(e, "numBlobs")),
            h("td", null, e.updateTime ? new Date(e.updateTime).toLocaleString() : ""),
            h("td", null, visibility(e.visibility)),
          ),
        ),
      ),
    );
  const ownedList = owned.experiments ?? [];
  const sharedList = shared.experiments ?? [];
  setChildren(
    el,
    h("h1", null, "My experiments"),
    ownedList.length ? table(ownedList) : h("p.notice", null, "No experiments yet. Upload a logdir with `tbup upload --logdir LOGDIR`."),
    sharedList.length ? [h("h2", null, "Shared with me"), table(sharedList)] : null,
  );
}
