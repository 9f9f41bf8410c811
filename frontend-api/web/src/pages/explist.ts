// Searching and sorting lists of experiments (My experiments, the
// gallery): pure functions, and their slice of the URL (?q=, ?sort=).

import type { Experiment } from "../api";
import { naturalCompare } from "../colors";

/** name: A to Z; created, updated: newest first (updated: the last data or metadata change). */
export const EXPERIMENT_SORTS = [
  { value: "updated", label: "Last update" },
  { value: "created", label: "Created" },
  { value: "name", label: "Name" },
] as const;
export type ExperimentSort = (typeof EXPERIMENT_SORTS)[number]["value"];

export interface ListState {
  q: string;
  sort: ExperimentSort;
}

export function parseListState(search: string): ListState {
  const p = new URLSearchParams(search);
  const sort = EXPERIMENT_SORTS.find((s) => s.value === p.get("sort"))?.value ?? "updated";
  return { q: p.get("q") ?? "", sort };
}

/** url with the list state in its query (defaults left out), other parameters kept. */
export function withListState(url: URL, s: ListState): URL {
  const out = new URL(url);
  if (s.q.trim()) out.searchParams.set("q", s.q.trim());
  else out.searchParams.delete("q");
  if (s.sort !== "updated") out.searchParams.set("sort", s.sort);
  else out.searchParams.delete("sort");
  return out;
}

/** Whether e's name, description, ID or owner's display name contains every word of q, ignoring case. */
export function matchesSearch(e: Experiment, q: string): boolean {
  const hay = [e.name, e.description, e.experimentId, e.ownerDisplayName].filter(Boolean).join("\n").toLowerCase();
  return q
    .toLowerCase()
    .split(/\s+/)
    .filter(Boolean)
    .every((w) => hay.includes(w));
}

const time = (t?: string) => Date.parse(t ?? "") || 0;

/** list sorted by sort; ties (and experiments without a time) by name, then ID. */
export function sortExperiments(list: Experiment[], sort: ExperimentSort): Experiment[] {
  const byName = (a: Experiment, b: Experiment) => naturalCompare(a.name || a.experimentId, b.name || b.experimentId) || a.experimentId.localeCompare(b.experimentId);
  const key = sort === "created" ? (e: Experiment) => time(e.createTime) : (e: Experiment) => time(e.updateTime);
  return [...list].sort(sort === "name" ? byName : (a, b) => key(b) - key(a) || byName(a, b));
}

/** The experiments of list that match q, in sort's order. */
export function searchAndSort(list: Experiment[], s: ListState): Experiment[] {
  return sortExperiments(
    list.filter((e) => matchesSearch(e, s.q)),
    s.sort,
  );
}
