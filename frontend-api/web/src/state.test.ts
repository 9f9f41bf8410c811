import { describe, expect, it } from "vitest";
import { formatState, parseState, slideKey, toggled } from "./state";

describe("slides in the URL", () => {
  it("round-trips a card's step and sample, and the tooltip order", () => {
    const s = parseState("");
    s.slides = { [slideKey("images", "a/b", "run~1")]: { step: 30, sample: 2 }, [slideKey("pr_curves", "pr", "")]: { step: 5, sample: 0 } };
    s.ttsort = "nearest";
    s.tttime = true;
    const back = parseState(formatState(s));
    expect(back.slides).toEqual(s.slides);
    expect(back.ttsort).toBe("nearest");
    expect(back.tttime).toBe(true);
  });
  it("leaves defaults out and drops malformed values", () => {
    expect(formatState(parseState(""))).toBe("");
    const s = parseState("?slide=nope&slide=%5B%22images%22%2C%22t%22%2C%22r%22%2C1.5%2C0%5D&slide=%5B%22audio%22%2C%22t%22%2C%22r%22%2C7%2C1%5D&ttsort=sideways");
    expect(s.slides).toEqual({ [slideKey("audio", "t", "r")]: { step: 7, sample: 1 } });
    expect(s.ttsort).toBe("descending");
  });
});

describe("expanded cards", () => {
  it("are kept in the URL, and a second press takes a card back", () => {
    const s = parseState("?expand=loss&expand=a%2Fb");
    expect(s.expand).toEqual(["loss", "a/b"]);
    expect(parseState(formatState(s)).expand).toEqual(["loss", "a/b"]);
    expect(toggled(s.expand, "acc")).toEqual(["loss", "a/b", "acc"]);
    expect(toggled(s.expand, "loss")).toEqual(["a/b"]);
    expect(parseState("").expand).toEqual([]);
  });
});

describe("the runs table's state", () => {
  it("round-trips its tags, sort, filter and grouping", () => {
    const s = parseState("?rtag=loss&rtag=eval%2Facc&rsort=-loss.min&rfilter=lr%3D0.1%2C+loss+%3C+0.5&rgroup=lr");
    expect([s.rtag, s.rsort, s.rfilter, s.rgroup]).toEqual([["loss", "eval/acc"], "-loss.min", "lr=0.1, loss < 0.5", "lr"]);
    const back = parseState(formatState(s));
    expect([back.rtag, back.rsort, back.rfilter, back.rgroup]).toEqual([s.rtag, s.rsort, s.rfilter, s.rgroup]);
  });
});
