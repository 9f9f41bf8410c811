// Comparisons: runs of several experiments on one page, at
// /compare/{id1}+{id2}+…/ (the experiment page, read from the HTTP API's
// /compare/{eid}/data/ routes, where runs are named "label/run"). This is
// the model: the comparison's ID and page path, its members as the server
// answers them (GET /compare/{eid}/data/comparison), which member a run
// belongs to, the note about hidden experiments, and the selection that
// starts a comparison from a list of experiments.

import { ExperimentAPI, getJSON, type Experiment } from "./api";

/** Joins the experiments' IDs in a comparison's ID. */
export const SEP = "+";

/** The most experiments one comparison holds (the server's default --compare-max-experiments). */
export const MAX_MEMBERS = 10;

/** The experiment IDs a comparison's ID names, in order, without repeats or empties. */
export function comparisonIds(id: string): string[] {
  return [...new Set(id.split(SEP).filter((s) => s !== ""))];
}

/** The page of a comparison of ids. */
export function comparisonPath(ids: string[]): string {
  return `/compare/${ids.map(encodeURIComponent).join(SEP)}/`;
}

/** ids with id added at the end (once). */
export function withMember(ids: string[], id: string): string[] {
  return ids.includes(id) ? ids : [...ids, id];
}

/** ids without id. */
export function withoutMember(ids: string[], id: string): string[] {
  return ids.filter((x) => x !== id);
}

/** A member of a comparison the viewer may read. */
export interface Member {
  experimentId: string;
  name: string;
  /** Its runs are named "label/run". */
  label: string;
  ownerDisplayName?: string;
  updateTime?: string;
}

/** The comparison route's answer: an experiment's metadata, with the members. */
export interface ComparisonInfo extends Experiment {
  members: Member[];
  /** How many of the comparison's experiments the viewer may not read (or do not exist). */
  hidden: number;
  requested: number;
}

/** "1 experiment of 3 is not visible to you"; "" when none is hidden. */
export function hiddenNote(hidden: number, requested: number): string {
  if (hidden <= 0) return "";
  return hidden === 1 ? `1 experiment of ${requested} is not visible to you` : `${hidden} experiments of ${requested} are not visible to you`;
}

/** The member a comparison's run belongs to, and the run's name in it; null for none. */
export function splitRun(members: Member[], run: string): { experimentId: string; run: string } | null {
  for (const m of members) {
    if (run.startsWith(`${m.label}/`)) return { experimentId: m.experimentId, run: run.slice(m.label.length + 1) };
  }
  return null;
}

/**
 * Paths of a comparison's routes: the experiment's, under /compare/; its
 * metadata is the comparison route, and a series' download is its
 * experiment's.
 */
export class CompareAPI extends ExperimentAPI {
  members: Member[] = [];
  constructor(id: string) {
    super(id, `/compare/${encodeURIComponent(id)}/data/`);
  }
  override metadataPath(): string {
    return this.data("comparison");
  }
  override async metadata(): Promise<ComparisonInfo> {
    const info = await getJSON<ComparisonInfo>(this.metadataPath());
    this.members = info.members ?? [];
    return info;
  }
  override scalarDownload(run: string, tag: string, format: "csv" | "json"): string {
    const m = splitRun(this.members, run);
    if (!m) return super.scalarDownload(run, tag, format); // answered 404: no such run
    return new ExperimentAPI(m.experimentId).scalarDownload(m.run, tag, format);
  }
}

/**
 * The experiments checked in a list to start a comparison, in the order
 * they were checked. Compare needs two; more than MAX_MEMBERS are refused.
 */
export class Selection {
  ids: string[] = [];
  constructor(private readonly changed: () => void = () => {}) {}
  /** Checks (on) or unchecks id; false when on would pass MAX_MEMBERS. */
  set(id: string, on: boolean): boolean {
    if (on && !this.ids.includes(id) && this.ids.length >= MAX_MEMBERS) return false;
    this.ids = on ? withMember(this.ids, id) : withoutMember(this.ids, id);
    this.changed();
    return true;
  }
  has(id: string): boolean {
    return this.ids.includes(id);
  }
  canCompare(): boolean {
    return this.ids.length >= 2;
  }
  /** The Compare button's text. */
  label(): string {
    return this.ids.length ? `Compare ${this.ids.length} selected` : "Compare";
  }
  /** The comparison page of the selection. */
  href(): string {
    return comparisonPath(this.ids);
  }
}
