// HParams: the session groups as a table, one column per hyperparameter
// and per metric; click a header to sort, filter rows by a regex over
// their cells.

import { getJSON } from "../api";
import { compileFilter, fmtNum, h, setChildren } from "../dom";
import { notice, type Dashboard, type DashboardContext } from "./dashboard";

interface MetricName {
  group?: string;
  tag?: string;
}
interface SessionGroup {
  name: string;
  hparams?: Record<string, unknown>;
  metricValues?: { name: MetricName; value?: number | string; trainingStep?: number }[];
  sessions?: { name: string; status?: string }[];
}

const ALL_STATUSES = ["STATUS_UNKNOWN", "STATUS_SUCCESS", "STATUS_FAILURE", "STATUS_RUNNING"];

function metricKey(m: MetricName): string {
  return m.group ? `${m.group}/${m.tag ?? ""}` : (m.tag ?? "");
}

/**
 * Calls an hparams route with a proto3-JSON request, as GET ?request=
 * (which the API accepts like a POST body), so the fetch layer caches it.
 */
function hparamsCall<T>(path: string, body: unknown): Promise<T> {
  return getJSON<T>(`${path}?request=${encodeURIComponent(JSON.stringify(body))}`);
}

export function hparamsDashboard(el: HTMLElement, ctx: DashboardContext): Dashboard {
  const filter = h("input", { type: "search", placeholder: "Filter rows (regex)", "aria-label": "row filter", className: "row-filter" });
  const content = h("div.cards.hparams");
  setChildren(el, h("div.toolbar", null, h("label", null, "Rows ", filter)), content);
  let groups: SessionGroup[] = [];
  let sortCol = 0;
  let sortDesc = false;

  function render() {
    const hp = [...new Set(groups.flatMap((g) => Object.keys(g.hparams ?? {})))].sort();
    const metrics = [...new Set(groups.flatMap((g) => (g.metricValues ?? []).map((m) => metricKey(m.name))))].sort();
    const cols = [{ label: "Session group", kind: "name" }, ...hp.map((k) => ({ label: k, kind: "hparam" })), ...metrics.map((k) => ({ label: k, kind: "metric" }))];
    const cell = (g: SessionGroup, c: (typeof cols)[number]): unknown => {
      if (c.kind === "name") return g.name;
      if (c.kind === "hparam") return g.hparams?.[c.label];
      const m = (g.metricValues ?? []).find((v) => metricKey(v.name) === c.label);
      return m === undefined ? undefined : Number(m.value);
    };
    const f = compileFilter(filter.value);
    const rows = groups.filter((g) => cols.some((c) => f.test(String(cell(g, c) ?? ""))));
    rows.sort((a, b) => {
      const x = cell(a, cols[sortCol]);
      const y = cell(b, cols[sortCol]);
      if (x === undefined) return 1;
      if (y === undefined) return -1;
      const r = typeof x === "number" && typeof y === "number" ? x - y : String(x).localeCompare(String(y));
      return sortDesc ? -r : r;
    });
    const fmt = (v: unknown) => (v === undefined ? "" : typeof v === "number" ? fmtNum(v) : String(v));
    setChildren(
      content,
      h(
        "table.hparams-table",
        null,
        h(
          "thead",
          null,
          h(
            "tr",
            null,
            cols.map((c, i) =>
              h(
                "th",
                { className: c.kind, "aria-sort": i === sortCol ? (sortDesc ? "descending" : "ascending") : "none" },
                h(
                  "button",
                  {
                    onclick: () => {
                      sortDesc = i === sortCol ? !sortDesc : false;
                      sortCol = i;
                      render();
                    },
                  },
                  c.label,
                  i === sortCol ? (sortDesc ? " ▼" : " ▲") : "",
                ),
              ),
            ),
          ),
        ),
        h("tbody", null, rows.map((g) => h("tr", null, cols.map((c) => h(c.kind === "name" ? "td.name" : "td.num", null, fmt(cell(g, c))))))),
      ),
      h("p.hint", null, `${rows.length} of ${groups.length} session groups`),
    );
  }
  filter.addEventListener("input", render);

  content.appendChild(notice("Loading…"));
  hparamsCall<{ sessionGroups?: SessionGroup[] }>(ctx.api.plugin("hparams", "session_groups"), { startIndex: 0, sliceSize: 10000, allowedStatuses: ALL_STATUSES })
    .then((ans) => {
      groups = ans.sessionGroups ?? [];
      if (!groups.length) setChildren(content, notice("No hyperparameter sessions."));
      else render();
    })
    .catch((e) => setChildren(content, notice(e.message, "error")));

  return {
    update() {
      // The table lists session groups, not runs: the runs list does not filter it.
    },
    destroy() {},
  };
}
