// A small DOM builder: h("div.card", {onclick}, child, ...) makes elements
// without a framework. Strings become text nodes (never HTML).

export type Child = Node | string | number | null | undefined | false | Child[];
type Attrs = Record<string, unknown>;

export function h<K extends keyof HTMLElementTagNameMap>(
  spec: K | `${K}.${string}` | `${K}#${string}`,
  attrs?: Attrs | null,
  ...children: Child[]
): HTMLElementTagNameMap[K];
export function h(spec: string, attrs?: Attrs | null, ...children: Child[]): HTMLElement {
  const [tagAndId, ...classes] = spec.split(".");
  const [tag, id] = tagAndId.split("#");
  const el = document.createElement(tag);
  if (id) el.id = id;
  if (classes.length) el.className = classes.join(" ");
  for (const [k, v] of Object.entries(attrs ?? {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on") && typeof v === "function") {
      el.addEventListener(k.slice(2), v as EventListener);
    } else if (k === "style" && typeof v === "object") {
      Object.assign(el.style, v);
    } else if (k in el && k !== "list" && k !== "form") {
      (el as unknown as Record<string, unknown>)[k] = v;
    } else {
      el.setAttribute(k, v === true ? "" : String(v));
    }
  }
  append(el, children);
  return el;
}

function append(el: Node, children: Child[]) {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else el.appendChild(typeof c === "object" ? c : document.createTextNode(String(c)));
  }
}

/** Replaces el's children. */
export function setChildren(el: Element, ...children: Child[]) {
  el.replaceChildren();
  append(el, children);
}

/** A debounced version of fn; its cancel() drops a call still waiting. */
export function debounce<A extends unknown[]>(fn: (...a: A) => void, ms: number): ((...a: A) => void) & { cancel(): void } {
  let t: ReturnType<typeof setTimeout> | undefined;
  const debounced = (...a: A) => {
    clearTimeout(t);
    t = setTimeout(() => fn(...a), ms);
  };
  return Object.assign(debounced, { cancel: () => clearTimeout(t) });
}

/** Compiles a user's regex filter; an empty one matches everything. */
export function compileFilter(src: string): { test: (s: string) => boolean; error?: string } {
  if (!src) return { test: () => true };
  try {
    const re = new RegExp(src, "i");
    return { test: (s) => re.test(s) };
  } catch (e) {
    return { test: () => true, error: (e as Error).message };
  }
}

/** A regex matching just s, for the filters compileFilter reads (a run filter showing one run, an exact tag). */
export function exactRegex(s: string): string {
  return `^${s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}$`;
}

/** Formats a number compactly for axes and tooltips. */
export function fmtNum(v: number | null | undefined): string {
  if (v === null || v === undefined) return "–";
  if (!Number.isFinite(v)) return Number.isNaN(v) ? "NaN" : v > 0 ? "∞" : "−∞";
  const a = Math.abs(v);
  if (a !== 0 && (a >= 1e6 || a < 1e-3)) return v.toExponential(3).replace(/\.?0+e/, "e");
  return Number(v.toPrecision(5)).toString();
}

/** Formats a duration in seconds as 1d 2h 3m 4s. */
export function fmtDuration(s: number): string {
  if (!Number.isFinite(s)) return "–";
  const neg = s < 0;
  let r = Math.abs(s);
  const parts: string[] = [];
  for (const [unit, n] of [["d", 86400], ["h", 3600], ["m", 60]] as const) {
    if (r >= n) {
      parts.push(`${Math.floor(r / n)}${unit}`);
      r %= n;
    }
  }
  if (parts.length < 2) parts.push(`${Number(r.toFixed(r < 10 && parts.length === 0 ? 2 : 0))}s`);
  return (neg ? "−" : "") + parts.join(" ");
}
