// The runs table's model: runs as rows with their hparams (the hparams
// plugin's, else parsed from the run's name) and the last, min and max of
// chosen scalar tags as columns; sorting, filtering ("lr=0.1",
// "loss.min < 0.5", text on the name), grouping, and which rows are on
// screen. Pure functions; runstable-view.ts draws them.

import { naturalCompare } from "../colors";
import { num } from "../api";

export type HValue = number | string | boolean;

export interface MetricSummary {
  last: number;
  step: number;
  min: number;
  max: number;
}

/** One run as data/runs_table answers it. */
export interface RunsTableEntry {
  run: string;
  hparams?: Record<string, HValue>;
  metrics?: Record<string, { last: number | string; step: number; min: number | string; max: number | string }>;
}

export interface RunRow {
  run: string;
  hparams: Record<string, HValue>;
  /** Where the hparams came from: the hparams plugin, the run's name, or nowhere. */
  source: "plugin" | "name" | "none";
  metrics: Record<string, MetricSummary>;
}

export const METRIC_FIELDS = ["last", "min", "max", "step"] as const;
export type MetricField = (typeof METRIC_FIELDS)[number];

/**
 * Hparam names a run name may give with an integer value ("seed_3",
 * "bs-32"); any other name only with a value that is not an integer
 * ("lr_0.1", "cycle-1e6"), so "run_1", "exp_2" and "DQN_1" are not read as
 * hparams. "key=value" is always read.
 */
const INTEGER_KEYS = new Set([
  "bs", "batch", "batch_size", "batchsize", "seed", "layers", "num_layers", "nlayers", "units", "hidden", "hidden_size",
  "hidden_dim", "heads", "num_heads", "dim", "depth", "width", "epochs", "buffer_size", "buffsize", "warmup", "embed", "k",
]);
/** Multi-word names a run name's words are matched against, longest first ("batch_size_32"). */
const KNOWN_KEYS = new Set([
  ...INTEGER_KEYS, "lr", "learning_rate", "wd", "weight_decay", "dropout", "momentum", "eps", "epsilon", "gamma", "lambda",
  "tau", "alpha", "beta", "temperature", "temp", "clip", "ent_coef", "vf_coef", "lr_decay", "decay",
]);

const NUMBER = String.raw`-?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?`;
const IS_NUMBER = new RegExp(`^${NUMBER}$`);
const KEY_WORDS = String.raw`[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z][A-Za-z0-9]*)*`;
// key_value and key-value: a key of words, a separator, a number, between
// separators (or the ends of a path segment).
const PAIR = new RegExp(String.raw`(?<![A-Za-z0-9.])(${KEY_WORDS})[_-](${NUMBER})(?![A-Za-z0-9.])`, "g");
// key=value: the key's words up to the "=", the value up to a separator
// that is not part of it.
const ASSIGN = new RegExp(String.raw`(${KEY_WORDS})=(${NUMBER}(?=$|[,;\s_])|[^,;\s=]+?(?=$|[,;\s]|_${KEY_WORDS}=|_\d{4}-\d\d-\d\d))`, "g");

/**
 * The key a run of words before a value names: the longest known key its
 * words end with ("experiment_lr" → "lr", "batch_size"), else its last word
 * for key_value, or all of it for key=value ("buffer_size=1000").
 */
function keyOf(words: string, assign: boolean): string {
  const parts = words.split("_");
  for (let i = 0; i < parts.length; i++) {
    const k = parts.slice(i).join("_");
    if (KNOWN_KEYS.has(k.toLowerCase())) return k;
  }
  if (!assign) return parts[parts.length - 1];
  // Ray's trial names put a prefix before the first key: "PPO_env_00000_0_lr=…".
  let first = parts.length - 1;
  while (first > 0 && /^[A-Za-z]/.test(parts[first - 1])) first--;
  return parts.slice(first).join("_");
}

/** One hparam read from a run name, with the text it was read from. */
export interface NameHParam {
  key: string;
  value: HValue;
  raw: string;
  form: "assign" | "pair";
}

/**
 * The hparams a run's name states, conservatively: "key=value" anywhere
 * ("lr=0.1,bs=32", "buffer_size=1000/seed_1"), and "key_value" or
 * "key-value" with a number ("lr_0.1-seed_3", "experiment_lr_0.001") when
 * the key is a usual hparam name or the value is not an integer. A key
 * given twice keeps its first value.
 */
export function parseRunName(name: string): NameHParam[] {
  const out: NameHParam[] = [];
  const seen = new Set<string>();
  const add = (key: string, raw: string, form: NameHParam["form"]) => {
    if (!key || seen.has(key)) return;
    seen.add(key);
    out.push({ key, value: IS_NUMBER.test(raw) ? Number(raw) : raw, raw, form });
  };
  for (const segment of name.split("/")) {
    let rest = segment;
    for (const m of segment.matchAll(ASSIGN)) {
      add(keyOf(m[1], true), m[2], "assign");
      rest = rest.replace(m[0], " ");
    }
    for (const m of rest.matchAll(PAIR)) {
      const key = keyOf(m[1], false);
      const integer = /^-?\d+$/.test(m[2]);
      if (key.length < 2 && !INTEGER_KEYS.has(key.toLowerCase())) continue;
      if (integer && !INTEGER_KEYS.has(key.toLowerCase())) continue;
      add(key, m[2], "pair");
    }
  }
  return out;
}

/** The table's rows from data/runs_table's answer: a run of no hparams session gets its name's. */
export function rowsOf(entries: RunsTableEntry[]): RunRow[] {
  return entries.map((e) => {
    const metrics: Record<string, MetricSummary> = {};
    for (const [tag, m] of Object.entries(e.metrics ?? {})) metrics[tag] = { last: num(m.last), step: m.step, min: num(m.min), max: num(m.max) };
    if (e.hparams && Object.keys(e.hparams).length) return { run: e.run, hparams: e.hparams, source: "plugin", metrics };
    const parsed = parseRunName(e.run);
    const hparams = Object.fromEntries(parsed.map((p) => [p.key, p.value]));
    return { run: e.run, hparams, source: parsed.length ? "name" : "none", metrics };
  });
}

/** Hparam columns: those whose values differ between runs first, then by name. */
export function hparamColumns(rows: RunRow[]): string[] {
  const values = new Map<string, Set<string>>();
  for (const r of rows) {
    for (const [k, v] of Object.entries(r.hparams)) {
      if (!values.has(k)) values.set(k, new Set());
      values.get(k)!.add(String(v));
    }
  }
  const differs = (k: string) => values.get(k)!.size > 1 || rows.some((r) => !(k in r.hparams));
  return [...values.keys()].sort((a, b) => Number(differs(b)) - Number(differs(a)) || naturalCompare(a, b));
}

/** A column: the run's name, an hparam, or a field of a tag's summary. */
export type Column = { kind: "run" } | { kind: "hparam"; name: string } | { kind: "metric"; tag: string; field: MetricField };

/** A column's key in the URL and in filters: "run", the hparam's name, "TAG" (its last value) or "TAG.min". */
export function columnKey(c: Column): string {
  if (c.kind === "run") return "run";
  if (c.kind === "hparam") return c.name;
  return c.field === "last" ? c.tag : `${c.tag}.${c.field}`;
}

/** The column a key names among the table's hparams and tags; null if none. Hparams win over tags. */
export function parseColumn(key: string, hparams: string[], tags: string[]): Column | null {
  if (key === "run") return { kind: "run" };
  if (hparams.includes(key)) return { kind: "hparam", name: key };
  if (tags.includes(key)) return { kind: "metric", tag: key, field: "last" };
  const i = key.lastIndexOf(".");
  const field = key.slice(i + 1) as MetricField;
  if (i > 0 && METRIC_FIELDS.includes(field) && tags.includes(key.slice(0, i))) return { kind: "metric", tag: key.slice(0, i), field };
  return null;
}

/** A row's value in a column; undefined when it has none. */
export function cellValue(row: RunRow, c: Column): HValue | undefined {
  if (c.kind === "run") return row.run;
  if (c.kind === "hparam") return row.hparams[c.name];
  return row.metrics[c.tag]?.[c.field];
}

/** Orders values: numbers by value (NaN after numbers), others in natural order after numbers. */
function compareValues(a: HValue, b: HValue): number {
  if (typeof a === "number" && typeof b === "number") {
    if (Number.isNaN(a) || Number.isNaN(b)) return Number(Number.isNaN(a)) - Number(Number.isNaN(b));
    return a - b;
  }
  if (typeof a === "number") return -1;
  if (typeof b === "number") return 1;
  return naturalCompare(String(a), String(b));
}

/**
 * rows sorted by the column sort names ("lr", "-loss.min": "-" for
 * descending); rows without a value last either way, ties in run order.
 * An unknown column leaves the run order.
 */
export function sortRows(rows: RunRow[], sort: string, hparams: string[], tags: string[]): RunRow[] {
  const desc = sort.startsWith("-");
  const col = parseColumn(desc ? sort.slice(1) : sort, hparams, tags) ?? { kind: "run" };
  const byRun = (a: RunRow, b: RunRow) => naturalCompare(a.run, b.run);
  // Each row's value read once, not twice per comparison.
  const keyed = rows.map((row) => ({ row, v: cellValue(row, col) }));
  keyed.sort((a, b) => {
    const va = a.v, vb = b.v;
    if (va === undefined || vb === undefined) return Number(va === undefined) - Number(vb === undefined) || byRun(a.row, b.row);
    return (desc ? -1 : 1) * compareValues(va, vb) || byRun(a.row, b.row);
  });
  return keyed.map((k) => k.row);
}

export type Op = "<" | "<=" | ">" | ">=" | "=" | "!=";

/** A filter clause: a comparison on a column, or text the run's name contains. */
export type Clause = { column: Column; key: string; op: Op; value: string } | { text: string };

const COMPARISON = /^(.+?)\s*(<=|>=|!=|==|=|<|>)\s*(.+)$/;

/**
 * Parses the table's filter: clauses separated by "," or " and ", all of
 * which a row must pass. "COLUMN OP VALUE" (OP one of < <= > >= = == !=)
 * compares a column ("lr = 0.1", "loss.min < 0.5", "opt != sgd"); anything
 * else, or a comparison on a name that is no column, is text the run's
 * name must contain (ignoring case).
 */
export function parseFilter(text: string, hparams: string[], tags: string[]): Clause[] {
  const out: Clause[] = [];
  for (const part of text.split(/,|\s+and\s+/i)) {
    const t = part.trim();
    if (!t) continue;
    const m = COMPARISON.exec(t);
    const column = m ? parseColumn(m[1].trim(), hparams, tags) : null;
    if (m && column && column.kind !== "run") out.push({ column, key: m[1].trim(), op: (m[2] === "==" ? "=" : m[2]) as Op, value: m[3].trim() });
    else out.push({ text: t.toLowerCase() });
  }
  return out;
}

/** Whether row passes a clause; a comparison on a value the row does not have fails. */
export function passes(row: RunRow, c: Clause): boolean {
  if ("text" in c) return row.run.toLowerCase().includes(c.text);
  const v = cellValue(row, c.column);
  if (v === undefined) return false;
  const want = IS_NUMBER.test(c.value) ? Number(c.value) : NaN;
  if (typeof v === "number" && !Number.isNaN(want)) {
    const eq = v === want || Math.abs(v - want) <= 1e-9 * Math.max(Math.abs(v), Math.abs(want));
    switch (c.op) {
      case "<": return v < want && !eq;
      case "<=": return v < want || eq;
      case ">": return v > want && !eq;
      case ">=": return v > want || eq;
      case "=": return eq;
      case "!=": return !eq;
    }
  }
  const same = String(v).toLowerCase() === c.value.toLowerCase();
  if (c.op === "=") return same;
  if (c.op === "!=") return !same;
  return false; // an order on something that is not a number
}

/** The rows that pass every clause. */
export function filterRows(rows: RunRow[], clauses: Clause[]): RunRow[] {
  return clauses.length ? rows.filter((r) => clauses.every((c) => passes(r, c))) : rows;
}

/**
 * The scalars dashboard's group regex (its first capture names a run's
 * group) that groups runs by hparam key as their names state it; null when
 * some run with the hparam has it from elsewhere (the hparams plugin),
 * where no regex over names can.
 */
export function groupRegex(rows: RunRow[], key: string): string | null {
  const withKey = rows.filter((r) => key in r.hparams);
  if (!withKey.length || withKey.some((r) => r.source !== "name")) return null;
  const esc = key.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  return String.raw`(?<![A-Za-z0-9])${esc}(?:=|[_-])(${NUMBER}|[^,;/\s_]+)`;
}

/** The groups of rows by an hparam's value, in the rows' order of first appearance; runs without it last, under "". */
export function groupRows(rows: RunRow[], key: string): { value: string; rows: RunRow[] }[] {
  const groups = new Map<string, RunRow[]>();
  for (const r of rows) {
    const v = key in r.hparams ? String(r.hparams[key]) : "";
    if (!groups.has(v)) groups.set(v, []);
    groups.get(v)!.push(r);
  }
  const missing = groups.get("");
  groups.delete("");
  const out = [...groups].map(([value, rows]) => ({ value, rows }));
  return missing ? [...out, { value: "", rows: missing }] : out;
}

/**
 * The rows to draw of n rows of rowHeight px scrolled to scrollTop in a
 * viewport of height px, with overscan rows beyond each edge: [start, end)
 * and the blank space above and below them.
 */
export function visibleWindow(scrollTop: number, height: number, rowHeight: number, n: number, overscan = 10) {
  const start = Math.max(0, Math.floor(scrollTop / rowHeight) - overscan);
  const end = Math.min(n, Math.ceil((scrollTop + height) / rowHeight) + overscan);
  return { start, end: Math.max(start, end), above: start * rowHeight, below: Math.max(0, n - Math.max(start, end)) * rowHeight };
}
