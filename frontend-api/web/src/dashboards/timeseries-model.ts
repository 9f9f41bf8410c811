// The Time Series view's model (TensorBoard's default dashboard): which
// cards the page holds, in what order, from the timeseries plugin's tag
// index. Pure functions; timeseries.ts draws them.

/** GET data/plugin/timeseries/tags (httpapi/internal/timeseries). */
export interface TimeSeriesTags {
  scalars?: { runTagInfo?: Record<string, string[]> };
  histograms?: { runTagInfo?: Record<string, string[]> };
  images?: { tagRunSampledInfo?: Record<string, Record<string, { maxSamplesPerStep: number }>> };
}

export type CardKind = "scalars" | "histograms" | "images";

/** One card: a scalar tag (every shown run on one chart), or a histogram or image tag of one run. */
export interface TimeSeriesCard {
  kind: CardKind;
  tag: string;
  /** "" for a scalar card. */
  run: string;
  /** Images per step (image cards). */
  samples?: number;
  /** The card's id, as pins keep it in the URL. */
  key: string;
}

/** A card's id: [kind, tag, run] as JSON (tags and runs may hold any character). */
export function cardKey(kind: CardKind, tag: string, run: string): string {
  return JSON.stringify([kind, tag, run]);
}

const KIND_ORDER: Record<CardKind, number> = { scalars: 0, histograms: 1, images: 2 };

/**
 * The cards for the shown runs and the tag filter, each tag's scalars,
 * histograms and images together (by tag, then kind, then run in the
 * runs' order), and the pinned ones apart, in the order they were pinned.
 * A pin whose card is not in the index (yet) is left out of pinned.
 */
export function timeSeriesCards(
  tags: TimeSeriesTags,
  shown: Set<string>,
  tagFilter: { test(s: string): boolean },
  runOrder: string[],
  pins: string[],
): { pinned: TimeSeriesCard[]; cards: TimeSeriesCard[] } {
  const all: TimeSeriesCard[] = [];
  const scalarTags = new Set<string>();
  for (const [run, ts] of Object.entries(tags.scalars?.runTagInfo ?? {})) if (shown.has(run)) for (const t of ts) scalarTags.add(t);
  for (const tag of scalarTags) all.push({ kind: "scalars", tag, run: "", key: cardKey("scalars", tag, "") });
  for (const [run, ts] of Object.entries(tags.histograms?.runTagInfo ?? {})) {
    if (shown.has(run)) for (const tag of ts) all.push({ kind: "histograms", tag, run, key: cardKey("histograms", tag, run) });
  }
  for (const [tag, runs] of Object.entries(tags.images?.tagRunSampledInfo ?? {})) {
    for (const [run, info] of Object.entries(runs)) {
      if (shown.has(run)) all.push({ kind: "images", tag, run, samples: info.maxSamplesPerStep, key: cardKey("images", tag, run) });
    }
  }
  const order = new Map(runOrder.map((r, i) => [r, i]));
  const cards = all
    .filter((c) => tagFilter.test(c.tag))
    .sort((a, b) => a.tag.localeCompare(b.tag) || KIND_ORDER[a.kind] - KIND_ORDER[b.kind] || (order.get(a.run) ?? 0) - (order.get(b.run) ?? 0));
  const byKey = new Map(all.map((c) => [c.key, c]));
  const pinned = pins.map((k) => byKey.get(k)).filter((c): c is TimeSeriesCard => !!c);
  const pinnedKeys = new Set(pinned.map((c) => c.key));
  return { pinned, cards: cards.filter((c) => !pinnedKeys.has(c.key)) };
}

/** The global step slider's steps: those of the loaded image and histogram cards, ascending and distinct. */
export function globalSteps(perCard: Iterable<number[]>): number[] {
  const all = new Set<number>();
  for (const steps of perCard) for (const s of steps) all.add(s);
  return [...all].sort((a, b) => a - b);
}
