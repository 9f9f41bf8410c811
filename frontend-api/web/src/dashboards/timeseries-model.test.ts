import { describe, expect, it } from "vitest";
import { cardKey, globalSteps, timeSeriesCards, type TimeSeriesTags } from "./timeseries-model";
import { formatState, parseState } from "../state";

const tags: TimeSeriesTags = {
  scalars: { runTagInfo: { train: ["loss", "acc"], eval: ["loss"] } },
  histograms: { runTagInfo: { train: ["loss", "weights/w"] } },
  images: { tagRunSampledInfo: { "weights/w": { train: { maxSamplesPerStep: 2 }, eval: { maxSamplesPerStep: 1 } } } },
};
const all = { test: () => true };

describe("the Time Series view's cards", () => {
  it("hold each tag's scalars, histograms and images together, runs in their order", () => {
    const { pinned, cards } = timeSeriesCards(tags, new Set(["train", "eval"]), all, ["eval", "train"], []);
    expect(pinned).toEqual([]);
    expect(cards.map((c) => [c.kind, c.tag, c.run])).toEqual([
      ["scalars", "acc", ""],
      ["scalars", "loss", ""],
      ["histograms", "loss", "train"],
      ["histograms", "weights/w", "train"],
      ["images", "weights/w", "eval"],
      ["images", "weights/w", "train"],
    ]);
    expect(cards.find((c) => c.kind === "images" && c.run === "train")?.samples).toBe(2);
  });
  it("leave out hidden runs and tags the filter does not match", () => {
    const { cards } = timeSeriesCards(tags, new Set(["eval"]), /^(loss|weights)/, ["eval", "train"], []);
    expect(cards.map((c) => [c.kind, c.tag, c.run])).toEqual([
      ["scalars", "loss", ""],
      ["images", "weights/w", "eval"],
    ]);
  });
  it("put pinned cards apart, in pin order, and ignore pins of cards not there", () => {
    const pins = [cardKey("images", "weights/w", "train"), cardKey("scalars", "gone", ""), cardKey("scalars", "loss", "")];
    const { pinned, cards } = timeSeriesCards(tags, new Set(["train", "eval"]), all, ["train", "eval"], pins);
    expect(pinned.map((c) => c.key)).toEqual([pins[0], pins[2]]);
    expect(cards.some((c) => pins.includes(c.key))).toBe(false);
    expect(cards).toHaveLength(4);
  });
  it("keep pins and the global step in the URL", () => {
    const s = parseState("");
    expect([s.tspin, s.tsstep]).toEqual([[], null]);
    s.tspin = [cardKey("histograms", "a/b & c", "run/1")];
    s.tsstep = 40;
    const back = parseState(formatState(s));
    expect(back.tspin).toEqual(s.tspin);
    expect(back.tsstep).toBe(40);
    expect(parseState("?tsstep=").tsstep).toBeNull();
    expect(parseState("?tsstep=1.5").tsstep).toBeNull();
  });
});

describe("the global step", () => {
  it("offers every loaded card's steps once, ascending", () => {
    expect(globalSteps([[0, 10, 20], [5, 10], []])).toEqual([0, 5, 10, 20]);
  });
});
