// "My experiments": the signed-in user's experiments with their counts,
// and what the owner can do with them (rename, re-describe, change
// visibility, share, delete), the experiments shared with them, their
// display name (what others see for them), and their API tokens (create
// one, shown once; revoke). Every change is one call to
// tbhub's /api/ routes (frontend-api/httpapi/manage.go); the server decides
// who may do what.

import { ApiError, getFresh, getJSON, getSession, send, signOut, type ApiToken, type Experiment, type ExperimentList, type Grant } from "../api";
import { displayNameField, seenAs } from "../displayname";
import { h, setChildren } from "../dom";
import { listControls, renderGallery } from "./gallery";
import { renderSignIn } from "./signin";
import { compareSelection } from "./compare";
import { descriptionElement } from "../description";
import { parseListState, searchAndSort, withListState, type ListState } from "./explist";

function count(e: Experiment, key: string): string {
  const v = e.counts?.[key];
  return v === undefined ? "0" : Number(v).toLocaleString();
}

const VISIBILITIES = ["private", "unlisted", "public"] as const;

function visibility(v?: string): string {
  return (v ?? "VISIBILITY_PRIVATE").replace("VISIBILITY_", "").toLowerCase();
}

function errorText(e: unknown): string {
  return e instanceof ApiError ? e.detail : (e as Error).message;
}

function expURL(e: Experiment): string {
  return `/api/experiments/${encodeURIComponent(e.experimentId)}`;
}

/**
 * A modal dialog (the platform's <dialog>: focus moves into it, Escape
 * closes it). body gets the dialog's error line to report failures in.
 */
export function openDialog(title: string, cls: string, body: (close: () => void, error: HTMLElement) => HTMLElement[]): HTMLDialogElement {
  const error = h("p.error", { role: "alert" });
  const dialog = h("dialog", { className: `dialog ${cls}`, "aria-label": title });
  const close = () => {
    dialog.close();
    dialog.remove();
  };
  dialog.addEventListener("close", () => dialog.remove());
  setChildren(dialog, h("h2", null, title), ...body(close, error), error);
  document.body.appendChild(dialog);
  dialog.showModal();
  return dialog;
}

/**
 * The Share dialog of an experiment: who may read it, add a user by name or
 * email, remove. Used by My experiments and by the experiment page.
 */
export function shareDialog(e: Experiment) {
  const list = h("ul.grants");
  const who = h("input", { type: "text", name: "grantee", placeholder: "user name or email", "aria-label": "user name or email", size: 30, required: true });
  let report: HTMLElement;
  async function load() {
    setChildren(list, h("li.hint", null, "Loading…"));
    let grants: Grant[];
    try {
      grants = (await getJSON<{ grants?: Grant[] }>(`${expURL(e)}/grants`)).grants ?? [];
    } catch (err) {
      setChildren(list, h("li.error", null, errorText(err)));
      return;
    }
    if (!grants.length) {
      setChildren(list, h("li.hint", null, "Not shared with anyone yet."));
      return;
    }
    setChildren(
      list,
      grants.map((g) => {
        const email = g.grantee?.email;
        const label = email ?? g.userName ?? g.grantee?.userId ?? "";
        const q = email ? `email=${encodeURIComponent(email)}` : `user_id=${encodeURIComponent(g.grantee?.userId ?? "")}`;
        return h(
          "li",
          { "data-grantee": label },
          h("span.grantee", null, label),
          email ? h("span.hint", null, " (when they first sign in)") : null,
          h(
            "button.revoke",
            {
              type: "button",
              "aria-label": `Stop sharing with ${label}`,
              onclick: async () => {
                report.textContent = "";
                try {
                  await send("DELETE", `${expURL(e)}/grants?${q}`);
                } catch (err) {
                  report.textContent = errorText(err);
                }
                await load();
              },
            },
            "Remove",
          ),
        );
      }),
    );
  }
  openDialog(`Share ${e.name || e.experimentId}`, "share-dialog", (close, error) => {
    report = error;
    return [
      h("p.visibility-note", null, whoCanRead(e.visibility)),
      h("p.hint", null, "People you share a private experiment with can read it, not change it. A user name is the one given to ", h("code", null, "tbhub token create --user"), ", or the email someone signs in with."),
      list,
      h(
        "form.share",
        {
          onsubmit: async (ev: Event) => {
            ev.preventDefault();
            const v = who.value.trim();
            if (!v) return;
            error.textContent = "";
            try {
              await send("POST", `${expURL(e)}/grants`, v.includes("@") ? { email: v } : { userName: v });
              who.value = "";
            } catch (err) {
              error.textContent = errorText(err);
            }
            await load();
          },
        },
        who,
        h("button", { type: "submit", className: "primary" }, "Share"),
      ),
      h("div.buttons", null, copyLinkButton(e.experimentId), h("button.done", { type: "button", onclick: close }, "Done")),
    ];
  });
  load();
}

export async function renderExperiments(el: HTMLElement, reroute: () => void) {
  setChildren(el, h("p.notice", null, "Loading…"));
  const session = await getSession();
  if (!session.signedIn) {
    // The landing page of a signed-out visitor: the public gallery, and
    // signing in beside it.
    const gallery = h("div.landing-gallery");
    const signIn = h("aside.landing-signin");
    setChildren(el, h("div.landing", null, gallery, signIn));
    renderGallery(gallery);
    renderSignIn(signIn, reroute, "Sign in to upload and to see your own experiments.", false);
    return;
  }
  const [owned, shared] = await Promise.all([
    getJSON<ExperimentList>("/api/experiments?scope=owned&page_size=500"),
    getJSON<ExperimentList>("/api/experiments?scope=shared&page_size=500").catch(() => ({}) as ExperimentList),
  ]);
  const again = () => renderExperiments(el, reroute);
  const status = h("p.status", { role: "status" });

  /** Runs a change; on success re-renders the page, on failure says why in report. */
  async function change(report: HTMLElement, fn: () => Promise<unknown>, done?: () => void): Promise<boolean> {
    report.textContent = "";
    try {
      await fn();
    } catch (e) {
      report.textContent = errorText(e);
      return false;
    }
    done?.();
    await again();
    return true;
  }

  function editDialog(e: Experiment) {
    const name = h("input", { type: "text", name: "name", value: e.name ?? "", maxLength: 100, "aria-label": "name", size: 40 });
    const desc = h("textarea", { name: "description", rows: 4, cols: 40, maxLength: 600, "aria-label": "description" });
    desc.value = e.description ?? "";
    openDialog(`Edit ${e.name || e.experimentId}`, "edit-dialog", (close, error) => [
      h(
        "form",
        {
          method: "dialog",
          onsubmit: (ev: Event) => {
            ev.preventDefault();
            change(error, () => send("PATCH", expURL(e), { name: name.value, description: desc.value }), close);
          },
        },
        h("label", null, "Name ", name),
        h("label", null, "Description (markdown) ", desc),
        h("div.buttons", null, h("button", { type: "submit", className: "primary" }, "Save"), h("button", { type: "button", onclick: close }, "Cancel")),
      ),
    ]);
    name.select();
  }

  function deleteDialog(e: Experiment) {
    const label = e.name || e.experimentId;
    openDialog(`Delete ${label}?`, "delete-dialog", (close, error) => [
      h("p", null, `This deletes the experiment "${label}" and all its data (${count(e, "numScalarPoints")} scalar points, ${count(e, "numBlobs")} blobs) for everyone. It cannot be undone.`),
      h(
        "div.buttons",
        null,
        h(
          "button.danger.confirm-delete",
          { type: "button", onclick: () => change(error, () => send("DELETE", expURL(e)), close) },
          "Delete for good",
        ),
        h("button", { type: "button", onclick: close, autofocus: true }, "Cancel"),
      ),
    ]);
  }

  function visibilitySelect(e: Experiment): HTMLSelectElement {
    const sel = h(
      "select.visibility",
      {
        "aria-label": `visibility of ${e.name || e.experimentId}`,
        onchange: () => change(status, () => send("PATCH", expURL(e), { visibility: sel.value })).then((ok) => ok || (sel.value = visibility(e.visibility))),
      },
      VISIBILITIES.map((v) => h("option", { value: v, selected: v === visibility(e.visibility) }, v)),
    );
    return sel;
  }

  // Check boxes and Compare: a comparison of the checked experiments.
  const compare = compareSelection();
  const table = (list: Experiment[], mine: boolean) =>
    h(
      "table.experiments",
      { className: mine ? "experiments owned" : "experiments shared" },
      h("thead", null, h("tr", null, ["Name", "Description", "Runs", "Tags", "Scalar points", "Blobs", "Updated", "Visibility", mine ? "" : "Owner"].map((c) => h("th", null, c)))),
      h(
        "tbody",
        null,
        list.map((e) =>
          h(
            "tr",
            { "data-eid": e.experimentId },
            h("td.name", null, compare.checkbox(e), h("a", { href: `/experiment/${encodeURIComponent(e.experimentId)}/` }, e.name || e.experimentId)),
            h("td.desc", null, descriptionElement(e, "div.desc-body")),
            // data-label names a cell where a phone shows rows as cards.
            h("td.num", { "data-label": "runs" }, count(e, "numRuns")),
            h("td.num", { "data-label": "tags" }, count(e, "numTags")),
            h("td.num", { "data-label": "scalar points" }, count(e, "numScalarPoints")),
            h("td.num", { "data-label": "blobs" }, count(e, "numBlobs")),
            h("td.updated", { "data-label": "updated" }, e.updateTime ? new Date(e.updateTime).toLocaleString() : ""),
            h("td", null, mine ? visibilitySelect(e) : visibility(e.visibility)),
            mine
              ? h(
                  "td.actions",
                  null,
                  h("button.edit", { type: "button", onclick: () => editDialog(e) }, "Edit"),
                  h("button.share", { type: "button", onclick: () => shareDialog(e) }, "Share"),
                  h("button.delete.danger", { type: "button", onclick: () => deleteDialog(e) }, "Delete"),
                )
              : h("td.owner", null, e.ownerDisplayName ?? ""),
          ),
        ),
      ),
    );
  const ownedList = owned.experiments ?? [];
  const sharedList = shared.experiments ?? [];
  const tokens = h("section.tokens");
  const profile = h("section.display-name");
  // Search and sort, kept in the URL (?q=, ?sort=): both lists are whole here.
  const lists = h("div.experiment-lists");
  const controls = listControls(parseListState(location.search), (s) => {
    history.replaceState(history.state, "", withListState(new URL(location.href), s));
    drawLists(s);
  });
  function drawLists(s: ListState) {
    const mine = searchAndSort(ownedList, s);
    const theirs = searchAndSort(sharedList, s);
    const none = (all: Experiment[]) => (s.q.trim() && all.length ? h("p.notice.no-match", null, `No experiment matches “${s.q.trim()}”.`) : null);
    setChildren(
      lists,
      ownedList.length
        ? mine.length
          ? h("div.table-scroll", null, table(mine, true))
          : none(ownedList)
        : h("p.notice", null, "No experiments yet. Upload a logdir with ", h("code", null, "tbup upload LOGDIR"), "."),
      sharedList.length ? [h("h2", null, "Shared with me"), theirs.length ? h("div.table-scroll", null, table(theirs, false)) : none(sharedList)] : null,
    );
  }
  drawLists(parseListState(location.search));
  setChildren(el, h("h1", null, "My experiments"), status, ownedList.length + sharedList.length ? controls : null, ownedList.length + sharedList.length > 1 ? compare.bar : null, lists, profile, tokens);
  renderDisplayName(profile);
  renderTokens(tokens, reroute);
}

/**
 * The display name section: the name others see for the caller (the
 * gallery, their experiments' pages), which they may choose; the server
 * checks it and its reason is shown when it refuses one.
 */
async function renderDisplayName(el: HTMLElement) {
  const input = h("input", { type: "text", name: "display-name", "aria-label": "display name", maxLength: 64, size: 30 });
  const status = h("p.hint", { role: "status" });
  const error = h("p.error", { role: "alert" });
  const show = (name: string) => {
    Object.assign(input, displayNameField(name));
    status.textContent = seenAs(name);
  };
  const form = h(
    "form.display-name",
    {
      onsubmit: async (ev: Event) => {
        ev.preventDefault();
        error.textContent = "";
        try {
          const ans = await send<{ displayName?: string }>("PATCH", "/api/whoami", { displayName: input.value.trim() });
          show(ans?.displayName ?? "");
        } catch (e) {
          error.textContent = errorText(e);
        }
      },
    },
    h("label", null, "Name others see ", input),
    h("button", { type: "submit", className: "primary" }, "Save"),
  );
  setChildren(el, h("h2", null, "Display name"), form, status, error);
  try {
    show((await getFresh<{ displayName?: string }>("/api/whoami")).body.displayName ?? "");
  } catch (e) {
    error.textContent = errorText(e);
  }
}

/** Who may read an experiment of this visibility besides those it is shared with, and where it is listed. */
function whoCanRead(v?: string): (string | HTMLElement)[] {
  switch (v) {
    case "VISIBILITY_PUBLIC":
      return ["Public: anyone can read it, signed in or not, and it is listed in the ", h("a", { href: "/gallery" }, "public gallery"), "."];
    case "VISIBILITY_UNLISTED":
      return ["Unlisted: anyone with the link can read it; it is not listed anywhere."];
  }
  return ["Private: only you and the people you share it with can read it; it is listed only in your own experiments."];
}

/**
 * A "Copy link" button for an experiment's page; says "Copied" (or how
 * to copy it by hand) beside it.
 */
export function copyLinkButton(eid: string, path = `/experiment/${encodeURIComponent(eid)}/`): HTMLElement {
  const url = `${location.origin}${path}`;
  const status = h("span.hint.copy-status", { role: "status" });
  const button = h(
    "button.copy-link",
    {
      type: "button",
      title: url,
      onclick: async () => {
        try {
          await navigator.clipboard.writeText(url);
          status.textContent = "Copied";
        } catch {
          status.textContent = url; // no clipboard (http, permissions): shown to copy by hand
        }
        button.dataset.copied = url;
      },
    },
    "Copy link",
  );
  return h("span.copy-link-wrap", null, button, status);
}

function fmtTime(t?: string): string {
  return t ? new Date(t).toLocaleString() : "–";
}

/** The API tokens section: the caller's tokens, a form to create one. */
/** The name the server gives the tokens browser sign-ins mint (package session). */
const SESSION_TOKEN = "web session";

/**
 * The API tokens section, and apart from it the browser sessions (the
 * tokens sign-ins mint) with sign-out-everywhere.
 */
async function renderTokens(el: HTMLElement, reroute: () => void) {
  const error = h("p.error", { role: "alert" });
  const created = h("div.created");
  const name = h("input", { type: "text", name: "token-name", placeholder: "e.g. laptop, ci", "aria-label": "token name", maxLength: 100, required: true });
  const upload = h("input", { type: "checkbox", name: "scope-upload", checked: true });
  const read = h("input", { type: "checkbox", name: "scope-read", checked: true });
  // Off by default: tbup and scripts need no more, and a token that may
  // manage tokens can mint new ones (which die with it) and revoke others.
  const manage = h("input", { type: "checkbox", name: "scope-tokens" });
  const list = h("tbody");
  const sessionList = h("tbody");
  const revoke = async (t: ApiToken) => {
    await send("DELETE", `/api/tokens/${encodeURIComponent(t.tokenId)}`);
  };
  let liveSessions: ApiToken[] = [];
  const everywhere = h(
    "button.signout-everywhere",
    {
      type: "button",
      onclick: async () => {
        error.textContent = "";
        try {
          // This browser's own session last: its cookie stands for it.
          for (const t of liveSessions) await revoke(t);
        } catch (e) {
          error.textContent = errorText(e);
          return;
        }
        await signOut().catch(() => {});
        reroute();
      },
    },
    "Sign out everywhere",
  );
  async function load() {
    let all: ApiToken[];
    try {
      all = (await getJSON<{ tokens?: ApiToken[] }>("/api/tokens")).tokens ?? [];
    } catch (e) {
      error.textContent = errorText(e);
      return;
    }
    const now = Date.now();
    const live = (t: ApiToken) => !t.revokeTime && !(t.expireTime && Date.parse(t.expireTime) < now);
    // Ended sessions are left out: every sign-in makes one.
    liveSessions = all.filter((t) => t.name === SESSION_TOKEN && live(t));
    const tokens = all.filter((t) => t.name !== SESSION_TOKEN);
    everywhere.disabled = !liveSessions.length;
    setChildren(
      sessionList,
      liveSessions.map((t) =>
        h(
          "tr",
          { "data-session": t.tokenId },
          h("td", null, fmtTime(t.createTime)),
          h("td", null, t.lastUseTime ? fmtTime(t.lastUseTime) : "never"),
          h("td", null, t.expireTime ? fmtTime(t.expireTime) : "never"),
          h(
            "td",
            null,
            h(
              "button.end-session",
              {
                type: "button",
                onclick: async () => {
                  error.textContent = "";
                  try {
                    await revoke(t);
                  } catch (e) {
                    error.textContent = errorText(e);
                  }
                  // Ending this browser's own session signs it out.
                  const still = await getFresh<{ signedIn: boolean }>("/api/session").then((r) => r.body.signedIn, () => false);
                  if (still) await load();
                  else {
                    await signOut().catch(() => {});
                    reroute();
                  }
                },
              },
              "Sign out",
            ),
          ),
        ),
      ),
    );
    setChildren(
      list,
      tokens.map((t) => {
        const dead = t.revokeTime ? "revoked" : t.expireTime && Date.parse(t.expireTime) < now ? "expired" : "";
        return h(
          "tr",
          { "data-token": t.tokenId, className: dead ? "dead" : "" },
          h("td", null, t.name ?? ""),
          h("td", null, h("code", null, `${t.secretPrefix ?? ""}…`)),
          h("td", null, (t.scopes ?? []).map((s) => s.replace("SCOPE_", "").toLowerCase()).join(", ")),
          h("td", null, fmtTime(t.createTime)),
          h("td", null, t.lastUseTime ? fmtTime(t.lastUseTime) : "never"),
          h("td", null, t.expireTime ? fmtTime(t.expireTime) : "never"),
          h(
            "td",
            null,
            dead ||
              h(
                "button.revoke-token",
                {
                  type: "button",
                  onclick: async () => {
                    error.textContent = "";
                    try {
                      await send("DELETE", `/api/tokens/${encodeURIComponent(t.tokenId)}`);
                    } catch (e) {
                      error.textContent = errorText(e);
                    }
                    await load();
                  },
                },
                "Revoke",
              ),
          ),
        );
      }),
    );
  }
  const form = h(
    "form.new-token",
    {
      onsubmit: async (ev: Event) => {
        ev.preventDefault();
        error.textContent = "";
        const scopes = [upload.checked && "SCOPE_UPLOAD", read.checked && "SCOPE_READ", manage.checked && "SCOPE_TOKENS"].filter(Boolean);
        let ans: { secret?: string } | null;
        try {
          ans = await send<{ secret?: string }>("POST", "/api/tokens", { name: name.value.trim(), scopes });
        } catch (e) {
          error.textContent = errorText(e);
          return;
        }
        const secret = h("input", { type: "text", readOnly: true, value: ans?.secret ?? "", className: "secret", "aria-label": "new token", size: 50 });
        const copied = h("span.hint", { role: "status" });
        setChildren(
          created,
          h("p", null, h("strong", null, "Copy this token now: it is shown only once.")),
          secret,
          h(
            "button.copy",
            {
              type: "button",
              onclick: async () => {
                secret.select();
                try {
                  await navigator.clipboard.writeText(secret.value);
                  copied.textContent = "Copied.";
                } catch {
                  copied.textContent = document.execCommand("copy") ? "Copied." : "Select it and copy.";
                }
              },
            },
            "Copy",
          ),
          copied,
          h("p.hint", null, `Use it with: TBUP_TOKEN=… tbup upload --server ${location.origin} --logdir LOGDIR`),
        );
        name.value = "";
        await load();
      },
    },
    h("label", null, "Name ", name),
    h("label", null, upload, " upload"),
    h("label", null, read, " read"),
    h("label", null, manage, " manage tokens"),
    h("button", { type: "submit", className: "primary" }, "Create token"),
  );
  setChildren(
    el,
    h("h2", null, "API tokens"),
    h("p.hint", null, "For ", h("code", null, "tbup"), " and scripts."),
    form,
    created,
    error,
    h("div.table-scroll", null, h("table.tokens", null, h("thead", null, h("tr", null, ["Name", "Token", "Scopes", "Created", "Last used", "Expires", ""].map((c) => h("th", null, c)))), list)),
    h("h2", null, "Signed-in browsers"),
    h("p.hint", null, "Each browser sign-in is a session until it signs out or expires (30 days)."),
    everywhere,
    h("div.table-scroll", null, h("table.tokens.sessions", null, h("thead", null, h("tr", null, ["Signed in", "Last used", "Expires", ""].map((c) => h("th", null, c)))), sessionList)),
  );
  await load();
}
