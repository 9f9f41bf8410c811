// The one data-fetching layer: every request the UI makes goes through
// here. The browser's session is an HttpOnly cookie (set by the server's
// sign-in routes, package session) that every same-origin request carries,
// so no credential is ever visible to scripts. It turns error statuses into
// ApiError, shares identical in-flight GETs and keeps their answers for the
// page's lifetime (until refresh()), and fetches blobs (images, audio,
// downloads) into object URLs.

/** Who is signed in (GET /api/session), and whether OIDC sign-in is offered. */
export interface Session {
  signedIn: boolean;
  userId?: string;
  userName?: string;
  email?: string;
  /** The OIDC issuer "Sign in with" goes to; absent: API tokens only. */
  oidcIssuer?: string;
}

let session: Promise<Session> | null = null;

/** The session, asked once per page load (and again after signing in or out). */
export function getSession(): Promise<Session> {
  if (!session) {
    session = fetch("/api/session", { headers: headers() })
      .then((r) => check(r, "/api/session"))
      .then((r) => r.json() as Promise<Session>);
    session.catch(() => (session = null));
  }
  return session;
}

/** Starts a session with an API token; rejects with ApiError 401 if it is not accepted. */
export async function signInWithToken(token: string): Promise<Session> {
  const s = (await send<Session>("POST", "/api/session", { token })) as Session;
  session = Promise.resolve(s);
  return s;
}

/** Ends the session (the server revokes its token). */
export async function signOut() {
  try {
    await send("DELETE", "/api/session");
  } finally {
    session = null; // asked again, whether or not the server still knew it
  }
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    /** The server's own words (its text body), for showing to the user. */
    readonly detail = message,
  ) {
    super(message);
  }
}

/**
 * Request headers. The session cookie goes by itself; a token scripts put
 * in localStorage["tbhub.token"] (browser benchmarks do) is sent as a
 * bearer header instead. The UI itself never stores a token.
 */
function headers(extra?: Record<string, string>): Record<string, string> {
  const h: Record<string, string> = { ...extra };
  // Reads just after the data changed must not get an answer the server
  // kept from before the change (its response cache).
  if (Date.now() < freshUntil) h["Cache-Control"] = "no-cache";
  let t = "";
  try {
    t = localStorage.getItem("tbhub.token") ?? "";
  } catch {
    // No storage (privacy settings): the cookie alone.
  }
  if (t) h["Authorization"] = `Bearer ${t}`;
  return h;
}

// The oldest read time (X-Tbhub-Read-At: when the server began the reads
// behind an answer, ms since the epoch) of the answers received since the
// last refresh(); Infinity when none. The page may lack an update made
// after it: an answer can come from the server's cache, or be read beside
// the experiment's metadata and before it (live.ts compares).
let oldestRead = Infinity;

/** The oldest read time of the answers received since the last refresh() (Infinity: none). */
export function readsAsOf(): number {
  return oldestRead;
}

async function check(resp: Response, path: string, noteRead = true): Promise<Response> {
  if (resp.ok) {
    const at = Date.parse(resp.headers.get("X-Tbhub-Read-At") ?? "");
    if (noteRead && at < oldestRead) oldestRead = at;
    return resp;
  }
  let text = "";
  try {
    text = (await resp.text()).trim();
  } catch {
    // The status says enough.
  }
  throw new ApiError(resp.status, `${resp.status} ${text || resp.statusText} (${path})`, text || resp.statusText);
}

/**
 * Sends a change (POST, PATCH, DELETE) with an optional JSON body and
 * decodes the JSON answer (null for 204). Cached answers are forgotten, so
 * the next reads see the change.
 */
export async function send<T>(method: string, path: string, body?: unknown): Promise<T | null> {
  const init: RequestInit = { method, headers: headers() };
  if (body !== undefined) {
    init.headers = headers({ "Content-Type": "application/json" });
    init.body = JSON.stringify(body);
  }
  const r = await check(await fetch(path, init), path);
  refresh();
  return r.status === 204 ? null : ((await r.json()) as T);
}

/**
 * GETs path past every cache (the page's and the browser's) and decodes
 * JSON, with the server's clock from the Date header (ms since the epoch;
 * NaN without one): what a live page polls.
 */
export async function getFresh<T>(path: string, signal?: AbortSignal): Promise<{ body: T; serverNow: number }> {
  const r = await check(await fetch(path, { headers: headers(), cache: "no-store", signal }), path, false);
  return { body: (await r.json()) as T, serverNow: Date.parse(r.headers.get("Date") ?? "") };
}

const cache = new Map<string, Promise<unknown>>();
const blobs = new Map<string, Promise<string>>();

// Until when reads ask the server past its response cache (see refresh).
let freshUntil = 0;

/**
 * Forgets cached answers, so that the next reads see new data; for the
 * next few seconds (the reads a change starts) they also ask the server
 * past its short-lived response cache.
 */
export function refresh() {
  cache.clear();
  oldestRead = Infinity;
  freshUntil = Date.now() + 3000;
}

/** GETs path and decodes JSON; identical calls share one request. */
export function getJSON<T>(path: string): Promise<T> {
  let p = cache.get(path) as Promise<T> | undefined;
  if (!p) {
    p = fetch(path, { headers: headers() })
      .then((r) => check(r, path))
      .then((r) => r.json() as Promise<T>);
    p.catch(() => cache.delete(path));
    cache.set(path, p);
  }
  return p;
}

/**
 * Runs at most n tasks at once, in the order they were queued. Heavy reads
 * (a scalar card of 100 runs is ~100k points) go through one, so the cards
 * at the top of the page are not slowed down by every card below them.
 */
export function limiter(n: number): <T>(task: () => Promise<T>) => Promise<T> {
  let running = 0;
  const queue: (() => void)[] = [];
  const next = () => {
    if (running >= n || !queue.length) return;
    running++;
    queue.shift()!();
  };
  return <T>(task: () => Promise<T>) =>
    new Promise<T>((resolve, reject) => {
      // The slot is handed on before the caller resumes, so that the next
      // read is under way while the caller draws what this one returned.
      const done = () => {
        running--;
        next();
      };
      queue.push(() =>
        task().then(
          (v) => {
            done();
            resolve(v);
          },
          (e) => {
            done();
            reject(e);
          },
        ),
      );
      next();
    });
}

/** POSTs a form and decodes JSON; answers are cached by path and form. */
export function postForm<T>(path: string, form: URLSearchParams): Promise<T> {
  const body = form.toString();
  const key = `POST ${path}\n${body}`;
  let p = cache.get(key) as Promise<T> | undefined;
  if (!p) {
    p = fetch(path, {
      method: "POST",
      headers: headers({ "Content-Type": "application/x-www-form-urlencoded" }),
      body,
    })
      .then((r) => check(r, path))
      .then((r) => r.json() as Promise<T>);
    p.catch(() => cache.delete(key));
    cache.set(key, p);
  }
  return p;
}

/** GETs path as bytes (mesh components), cached. */
export function getBuffer(path: string): Promise<ArrayBuffer> {
  const key = `BYTES ${path}`;
  let p = cache.get(key) as Promise<ArrayBuffer> | undefined;
  if (!p) {
    p = fetch(path, { headers: headers() })
      .then((r) => check(r, path))
      .then((r) => r.arrayBuffer());
    p.catch(() => cache.delete(key));
    cache.set(key, p);
  }
  return p;
}

/** GETs path as text (pbtxt graphs), cached. */
export function getText(path: string): Promise<string> {
  const key = `TEXT ${path}`;
  let p = cache.get(key) as Promise<string> | undefined;
  if (!p) {
    p = fetch(path, { headers: headers() })
      .then((r) => check(r, path))
      .then((r) => r.text());
    p.catch(() => cache.delete(key));
    cache.set(key, p);
  }
  return p;
}

/**
 * An object URL holding the bytes at path. Blob routes are addressed by
 * content (their keys change with the data), so the URL is kept for the
 * page's lifetime.
 */
export function blobURL(path: string): Promise<string> {
  let p = blobs.get(path);
  if (!p) {
    p = fetch(path, { headers: headers() })
      .then((r) => check(r, path))
      .then((r) => r.blob())
      .then((b) => URL.createObjectURL(b));
    p.catch(() => blobs.delete(path));
    blobs.set(path, p);
  }
  return p;
}

/** Fetches path with the token and saves it as filename. */
export async function download(path: string, filename: string) {
  const r = await check(await fetch(path, { headers: headers() }), path);
  saveBlob(await r.blob(), filename);
}

/** GETs path and decodes JSON, without keeping the answer (a large download read once). */
export async function getOnce<T>(path: string): Promise<T> {
  const r = await check(await fetch(path, { headers: headers() }), path);
  return (await r.json()) as T;
}

/** Hands blob to the browser as a file download. */
export function saveBlob(blob: Blob, filename: string) {
  const url = URL.createObjectURL(blob);
  const a = document.createElement("a");
  a.href = url;
  a.download = filename;
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

/**
 * TensorBoard's JSON writes NaN and infinities as strings; this turns a
 * JSON number-or-string into a number.
 */
export function num(v: unknown): number {
  return typeof v === "number" ? v : Number(v);
}

// Shapes of the routes the UI reads (reference/tensorboard_apis.md §5 and
// frontend-api/httpapi).

export interface Experiment {
  experimentId: string;
  name?: string;
  description?: string;
  /** The description (markdown) rendered and sanitized by the server. */
  descriptionHtml?: string;
  ownerUserId?: string;
  /** The name the owner shows everyone: their display name, or their handle. */
  ownerDisplayName?: string;
  /** The owner's user name and email: only in answers to the owner. */
  ownerName?: string;
  ownerEmail?: string;
  visibility?: string;
  createTime?: string;
  updateTime?: string;
  url?: string;
  counts?: Record<string, string | number>;
  /** Event records the uploader skipped as damaged (int64s come as strings); absent: none. */
  damaged?: DamagedRecords;
}

export interface DamagedRecords {
  records?: string | number;
  numFiles?: string | number;
  /** The first of the files, "RUN/FILE". */
  files?: string[];
}

export interface Grant {
  grantee?: { userId?: string; email?: string; userName?: string };
  /** The grantee's user name, for grants to users who exist. */
  userName?: string;
}

export interface ApiToken {
  tokenId: string;
  name?: string;
  scopes?: string[];
  secretPrefix?: string;
  createTime?: string;
  expireTime?: string;
  lastUseTime?: string;
  revokeTime?: string;
}

export interface ExperimentList {
  experiments?: Experiment[];
  nextPageToken?: string;
}

export type PluginsListing = Record<string, { enabled: boolean }>;
export type TagInfo = { displayName?: string; description?: string; samples?: number };
export type RunTagIndex = Record<string, Record<string, TagInfo>>;
/** [wall_time, step, value] with NaN/±Inf possibly as strings. */
export type ScalarDatum = [number, number, number | string];

/** Paths of one experiment's routes (of a comparison's: compare.ts). */
export class ExperimentAPI {
  constructor(
    readonly eid: string,
    readonly base = `/experiment/${encodeURIComponent(eid)}/data/`,
  ) {}
  data(route: string, params?: Record<string, string | number | boolean>): string {
    const q = params ? new URLSearchParams(Object.entries(params).map(([k, v]) => [k, String(v)])).toString() : "";
    return this.base + route + (q ? `?${q}` : "");
  }
  plugin(plugin: string, route: string, params?: Record<string, string | number | boolean>): string {
    return this.data(`plugin/${plugin}/${route}`, params);
  }
  /** The experiment's metadata, which the page follows for new data. */
  metadataPath(): string {
    return `/api/experiments/${encodeURIComponent(this.eid)}`;
  }
  metadata(): Promise<Experiment> {
    return getJSON<Experiment>(this.metadataPath());
  }
  /** Full-resolution download of one scalar series (tbhub's /api route). */
  scalarDownload(run: string, tag: string, format: "csv" | "json"): string {
    const q = new URLSearchParams({ run, tag, format });
    return `/api/experiments/${encodeURIComponent(this.eid)}/scalars?${q}`;
  }
}
