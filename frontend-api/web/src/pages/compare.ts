// A comparison's page (/compare/{id1}+{id2}+…/): the experiment page over
// the comparison's routes, with its members in the head (each a link to
// its experiment, with a button that leaves it out), the note saying how
// many experiments are not visible to the viewer, Add experiment, and
// Copy link (the selection is the URL). Also the check boxes that start a
// comparison from My experiments and the gallery. The model is compare.ts.

import { getJSON, getSession, type Experiment, type ExperimentList } from "../api";
import { CompareAPI, comparisonIds, comparisonPath, hiddenNote, MAX_MEMBERS, Selection, withMember, withoutMember, type ComparisonInfo } from "../compare";
import { h, setChildren, type Child } from "../dom";
import { renderExperiment } from "./experiment";
import { copyLinkButton, openDialog } from "./experiments";
import { renderSignIn } from "./signin";

/** Renders the comparison id's page; returns what stops it. */
export function renderComparison(el: HTMLElement, id: string, reroute: () => void): Promise<() => void> {
  const ids = comparisonIds(id);
  const api = new CompareAPI(ids.join("+"));
  const go = (next: string[]) => {
    history.pushState(null, "", comparisonPath(next));
    reroute();
  };
  return renderExperiment(el, api.eid, reroute, {
    api,
    head: (meta) => comparisonHead(meta as ComparisonInfo, ids, go),
    notFound: async (el, reroute) => {
      document.title = "Not found – tbhub";
      const text = "None of the experiments of this comparison exists or is visible to you.";
      if (!(await getSession().catch(() => ({ signedIn: false }))).signedIn) {
        renderSignIn(el, reroute, `${text} If they are private, sign in with an account that may see them.`);
        return;
      }
      setChildren(el, h("div.not-found", null, h("h1", null, "Comparison not found"), h("p", null, text), h("p", null, h("a", { href: "/" }, "My experiments"))));
    },
  });
}

/** The head of a comparison: members, the hidden note, Add experiment, Copy link. */
function comparisonHead(info: ComparisonInfo, ids: string[], go: (ids: string[]) => void): Child[] {
  document.title = `Comparison: ${info.name} – tbhub`;
  const members = info.members.map((m) =>
    h(
      "li.member",
      { "data-eid": m.experimentId },
      h("a", { href: `/experiment/${encodeURIComponent(m.experimentId)}/`, title: m.ownerDisplayName ? `${m.name || m.experimentId} · ${m.ownerDisplayName}` : m.name }, m.label),
      info.members.length > 1
        ? h("button.remove-member", { type: "button", title: `Leave ${m.label} out`, "aria-label": `leave ${m.label} out`, onclick: () => go(withoutMember(ids, m.experimentId)) }, "×")
        : null,
    ),
  );
  const note = hiddenNote(info.hidden, info.requested);
  return [
    h("span.badge", null, "comparison"),
    h("ul.members", { "aria-label": "experiments compared" }, members),
    note ? h("span.hidden-note", { role: "note" }, note) : null,
    ids.length < MAX_MEMBERS ? h("button.add-experiment", { type: "button", onclick: () => addDialog(ids, go) }, "Add experiment") : null,
    copyLinkButton(info.experimentId, comparisonPath(ids)),
  ];
}

/**
 * Add experiment: the experiments the viewer may read (their own, shared
 * with them, public), filtered by name; or an experiment ID or page link
 * pasted in.
 */
async function addDialog(ids: string[], go: (ids: string[]) => void) {
  const signedIn = (await getSession().catch(() => ({ signedIn: false }))).signedIn;
  const lists = await Promise.all(
    [...(signedIn ? ["owned", "shared"] : []), "public"].map((scope) =>
      getJSON<ExperimentList>(`/api/experiments?scope=${scope}&page_size=200`).then(
        (l) => l.experiments ?? [],
        () => [] as Experiment[],
      ),
    ),
  );
  const seen = new Set(ids);
  const choices: Experiment[] = [];
  for (const e of lists.flat()) {
    if (!seen.has(e.experimentId)) {
      seen.add(e.experimentId);
      choices.push(e);
    }
  }
  const filter = h("input", { type: "search", placeholder: "Filter by name, or paste an experiment ID or link", "aria-label": "experiment to add", size: 40 });
  const list = h("ul.add-choices");
  openDialog("Add an experiment to the comparison", "add-dialog", (close, error) => {
    const add = (id: string) => {
      close();
      go(withMember(ids, id));
    };
    const draw = () => {
      const q = filter.value.trim().toLowerCase();
      const shown = choices.filter((e) => !q || (e.name ?? "").toLowerCase().includes(q) || e.experimentId.toLowerCase() === q).slice(0, 50);
      setChildren(
        list,
        shown.map((e) =>
          h(
            "li",
            { "data-eid": e.experimentId },
            h("button.choose", { type: "button", onclick: () => add(e.experimentId) }, e.name || e.experimentId),
            e.ownerDisplayName ? h("span.hint", null, ` ${e.ownerDisplayName}`) : null,
          ),
        ),
      );
      error.textContent = shown.length ? "" : "No experiment you may read matches; an ID or link pasted here is added with Enter.";
    };
    filter.addEventListener("input", draw);
    filter.addEventListener("keydown", (ev) => {
      if (ev.key !== "Enter") return;
      ev.preventDefault();
      // A link to an experiment's page, or its ID.
      const v = filter.value.trim();
      const m = v.match(/\/experiment\/([^/?#]+)/);
      const id = m ? decodeURIComponent(m[1]) : v;
      if (/^[A-Za-z0-9_-]+$/.test(id)) add(id);
    });
    draw();
    return [filter, list, h("div.buttons", null, h("button", { type: "button", onclick: close }, "Cancel"))];
  });
  filter.focus();
}

/**
 * The check boxes of a list of experiments (My experiments, the gallery)
 * and the Compare button that opens the comparison of those checked.
 */
export function compareSelection(): { bar: HTMLElement; checkbox: (e: Experiment) => HTMLElement } {
  const button = h("button.compare", { type: "button", disabled: true, title: "Check two or more experiments to see their runs together" });
  const hint = h("span.hint", { role: "status" });
  const sel = new Selection(() => {
    button.textContent = sel.label();
    (button as HTMLButtonElement).disabled = !sel.canCompare();
  });
  button.textContent = sel.label();
  button.addEventListener("click", () => {
    if (sel.canCompare()) location.assign(sel.href());
  });
  const checkbox = (e: Experiment) => {
    const box = h("input", { type: "checkbox", className: "compare-check", "aria-label": `compare ${e.name || e.experimentId}` }) as HTMLInputElement;
    box.checked = sel.has(e.experimentId);
    box.addEventListener("change", () => {
      hint.textContent = "";
      if (!sel.set(e.experimentId, box.checked)) {
        box.checked = false;
        hint.textContent = `A comparison holds at most ${MAX_MEMBERS} experiments.`;
      }
    });
    return box;
  };
  return { bar: h("div.compare-bar", null, button, hint), checkbox };
}
