// Following an experiment that is still receiving data: the page
// long-polls the experiment's metadata (GET /api/experiments/{eid}, or a
// comparison's own route, with ?waitPast= the update time it last saw).
// The server holds the request until the update time moves (one shared
// check per experiment for all its viewers, every second by default) or
// 25 s pass, and the page asks again at once; when the update time moved
// it tells the page to read what is new. A server that answers at once
// (it does not hold, or refuses with 429 past its per-client cap) is
// asked every POLL_MS instead. A page in a hidden tab does not poll.

import { getFresh, type Experiment } from "./api";

/**
 * How often a visible page asks whether the experiment changed when the
 * server does not hold its long poll.
 */
export const POLL_MS = 2500;

/** A long poll answered sooner than this, unchanged, was not held. */
const HELD_MS = 1000;

/** path asking to be held while the update time is since (none: answered at once). */
export function waitPath(path: string, since: string | undefined): string {
  if (!since) return path;
  return `${path}${path.includes("?") ? "&" : "?"}waitPast=${encodeURIComponent(since)}`;
}

/**
 * Data that arrived within this long counts as an upload being active
 * (tbup looks for new data every 5 s by default, and sends what it found
 * at once).
 */
export const ACTIVE_MS = 30_000;

export interface Freshness {
  /**
   * When data last arrived, ms since the epoch: the update time of the
   * last answer whose counts moved (a rename, a new description or
   * visibility moves the update time only). Until one is seen, the update
   * time at load, of data or metadata (the page cannot tell which).
   */
  updated: number;
  /** Whether the page saw data arrive (the counts move) while following. */
  dataSeen: boolean;
  /** The experiment's update time in the last answer (data or metadata), ms since the epoch. */
  latest: number;
  /** The server's clock at the last poll (the browser's when it gave none). */
  serverNow: number;
  /** The browser's clock at the last poll. */
  polledAt: number;
}

/** The experiment's counts (runs, tags, points, blobs, bytes) as one comparable string. */
function countsKey(e: Experiment): string {
  const c = e.counts ?? {};
  return Object.keys(c)
    .sort()
    .map((k) => `${k}=${c[k]}`)
    .join(",");
}

/**
 * Follows the experiment while the page is visible: long-polls it (or
 * polls it every POLL_MS where the server does not hold). changed is
 * called (and awaited before the next poll) when its update time moves
 * past the one seen first (data or metadata: the page reads both again);
 * tick after every answer, with when data last arrived. path is what is
 * polled (a comparison's own route). asOf is the oldest read time of the
 * answers the page holds (api.readsAsOf): an update at or after it may be
 * missing from them (read beside the first metadata, or from the server's
 * cache), so the page is not held but told to read again. Returns a
 * function that stops following.
 */
export function follow(
  eid: string,
  first: Experiment,
  changed: (e: Experiment) => Promise<void>,
  tick: (f: Freshness) => void,
  path = `/api/experiments/${encodeURIComponent(eid)}`,
  asOf: () => number = () => Infinity,
): () => void {
  let last = Date.parse(first.updateTime ?? "") || 0;
  let since = first.updateTime;
  let dataUpdated = last;
  let dataSeen = false;
  let counts = countsKey(first);
  let stopped = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let busy = false;
  let inFlight: AbortController | undefined;

  async function poll() {
    timer = undefined;
    if (stopped || busy) return;
    if (document.visibilityState === "hidden") return; // visibilitychange resumes
    busy = true;
    let next = POLL_MS;
    try {
      const asked = Date.now();
      inFlight = new AbortController();
      // Answers read at or before the last update may lack it: ask at once.
      const behind = asOf() <= last;
      const { body, serverNow } = await getFresh<Experiment>(waitPath(path, behind ? undefined : since), inFlight.signal);
      const updated = Date.parse(body.updateTime ?? "") || 0;
      const moved = updated > last || updated >= asOf();
      if (moved && countsKey(body) !== counts) [dataUpdated, dataSeen] = [updated, true];
      counts = countsKey(body);
      since = body.updateTime ?? since;
      const now = Date.now();
      tick({ updated: dataUpdated, dataSeen, latest: updated, serverNow: Number.isFinite(serverNow) ? serverNow : now, polledAt: now });
      if (moved) {
        last = updated;
        await changed(body);
      }
      // Held until now (the server long-polls), or moved: ask again at once.
      if (moved || Date.now() - asked >= HELD_MS) next = 0;
    } catch {
      // Offline for a moment, signed out, too many live pages (429), or
      // hidden (aborted): try again after POLL_MS.
    }
    inFlight = undefined;
    busy = false;
    schedule(next);
  }
  function schedule(ms: number) {
    if (!stopped && timer === undefined) timer = setTimeout(poll, ms);
  }
  const onVisible = () => {
    if (document.visibilityState === "hidden") inFlight?.abort(); // a hidden tab holds nothing
    else if (timer === undefined && !busy) poll();
  };
  document.addEventListener("visibilitychange", onVisible);
  schedule(0);
  return () => {
    stopped = true;
    clearTimeout(timer);
    inFlight?.abort();
    document.removeEventListener("visibilitychange", onVisible);
  };
}

/**
 * The live indicator at now (the browser's clock): "● receiving data"
 * (active) only when the page saw data arrive less than ACTIVE_MS ago;
 * "last data 5 min ago" after; "updated 3 s ago" while it has seen none
 * (the update time at load may be a rename's).
 */
export function freshnessLabel(f: Freshness, now: number): { active: boolean; text: string } {
  const age = f.serverNow - f.updated + (now - f.polledAt);
  if (!f.dataSeen) return { active: false, text: `updated ${ago(age)} ago` };
  const active = age < ACTIVE_MS;
  return { active, text: active ? `● receiving data · last ${ago(age)} ago` : `last data ${ago(age)} ago` };
}

/** "3 s", "5 min", "2 h", "4 d": how long ago, for the live indicator. */
export function ago(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min`;
  if (s < 86400) return `${Math.floor(s / 3600)} h`;
  return `${Math.floor(s / 86400)} d`;
}
