// Run colours: a palette safe for colour-blind readers (Okabe and Ito's,
// with Paul Tol's dark and muted colours after it), ordered so that
// neighbours differ in hue and lightness. A run's colour follows from its
// name (a hash picks a slot), so it is the same in every experiment and
// under any filter; runs whose slots collide take the next free one, in
// natural order, while the palette lasts; after that, the least used colour
// that differs from the run's neighbours in natural order.

export const PALETTE = [
  "#0072b2", "#e69f00", "#009e73", "#cc79a7", "#56b4e9", "#d55e00",
  "#332288", "#999933", "#882255", "#44aa99", "#555555", "#ddaa33",
];

/** FNV-1a of a string: the palette slot a name prefers. */
function slot(name: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < name.length; i++) {
    h ^= name.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return (h >>> 0) % PALETTE.length;
}

/** Natural order of run names: run-2 before run-10. */
export const naturalCompare = new Intl.Collator(undefined, { numeric: true, sensitivity: "base" }).compare;

/**
 * Assigns colours to runs: each keeps the one it has in `taken` (runs
 * already shown), the others take their name's slot or, if another run
 * holds it, the next free slot. Once every colour is taken, a run takes
 * the least used colour (from its name's slot on) that its neighbours in
 * natural order do not have, so that runs listed next to each other
 * (a job's train and eval) are still told apart.
 */
export function assignColors(names: string[], taken: Map<string, string> = new Map()): Map<string, string> {
  const out = new Map(taken);
  const uses = new Map<string, number>();
  for (const c of out.values()) uses.set(c, (uses.get(c) ?? 0) + 1);
  const all = [...new Set([...out.keys(), ...names])].sort(naturalCompare);
  all.forEach((name, i) => {
    if (out.has(name)) return;
    const near = new Set([out.get(all[i - 1]), out.get(all[i + 1])]);
    let best = -1;
    for (let j = 0, k = slot(name); j < PALETTE.length; j++, k = (k + 1) % PALETTE.length) {
      if (near.has(PALETTE[k])) continue;
      if (best < 0 || (uses.get(PALETTE[k]) ?? 0) < (uses.get(PALETTE[best]) ?? 0)) best = k;
    }
    const color = PALETTE[best];
    out.set(name, color);
    uses.set(color, (uses.get(color) ?? 0) + 1);
  });
  return out;
}

/** color with alpha (0..1) as #rrggbbaa. */
export function withAlpha(color: string, alpha: number): string {
  const a = Math.round(Math.min(Math.max(alpha, 0), 1) * 255)
    .toString(16)
    .padStart(2, "0");
  return color.length === 7 ? color + a : color;
}

/** A CSS custom property of the page (theme colors for canvas drawing). */
export function themeColor(name: string, fallback: string): string {
  const v = getComputedStyle(document.documentElement).getPropertyValue(name).trim();
  return v || fallback;
}
