import { describe, expect, it } from "vitest";
import { CONTRAST, imageFilter, lightboxCaption, lightboxMove, parseLevel } from "./imageview";
import { formatState, parseState } from "../state";

describe("image brightness and contrast", () => {
  it("apply nothing at 1 and a CSS filter otherwise", () => {
    expect(imageFilter(1, 1)).toBe("");
    expect(imageFilter(2.5, 1)).toBe("brightness(2.5) contrast(1)");
    expect(imageFilter(1, 0.5)).toBe("brightness(1) contrast(0.5)");
  });
  it("are read from the URL within their range", () => {
    expect(parseLevel(null)).toBe(1);
    expect(parseLevel("nope")).toBe(1);
    expect(parseLevel("2")).toBe(2);
    expect(parseLevel("99", CONTRAST)).toBe(CONTRAST.max);
    expect(parseLevel("-1")).toBe(0);
  });
  it("and actual size round-trip through the URL, defaults left out", () => {
    const s = parseState("?ibright=3&icontrast=0.5&iactual=1");
    expect([s.ibright, s.icontrast, s.iactual]).toEqual([3, 0.5, true]);
    expect(formatState(s)).toBe("?ibright=3&icontrast=0.5&iactual=1");
    expect(formatState(parseState("?ibright=1&icontrast=1&iactual=0"))).toBe("");
  });
});

describe("the lightbox", () => {
  it("steps through steps with ←/→ and through a step's images with ↑/↓, stopping at the ends", () => {
    expect(lightboxMove({ index: 0, sample: 0 }, "ArrowRight", 3, 2)).toEqual({ index: 1, sample: 0 });
    expect(lightboxMove({ index: 2, sample: 0 }, "ArrowRight", 3, 2)).toBeNull();
    expect(lightboxMove({ index: 0, sample: 0 }, "ArrowLeft", 3, 2)).toBeNull();
    expect(lightboxMove({ index: 1, sample: 0 }, "ArrowDown", 3, 2)).toEqual({ index: 1, sample: 1 });
    expect(lightboxMove({ index: 1, sample: 1 }, "ArrowDown", 3, 2)).toBeNull();
    expect(lightboxMove({ index: 1, sample: 1 }, "ArrowUp", 3, 2)).toEqual({ index: 1, sample: 0 });
    expect(lightboxMove({ index: 1, sample: 0 }, "End", 3, 2)).toEqual({ index: 2, sample: 0 });
    expect(lightboxMove({ index: 1, sample: 0 }, "Home", 3, 2)).toEqual({ index: 0, sample: 0 });
    expect(lightboxMove({ index: 1, sample: 0 }, "x", 3, 2)).toBeNull();
  });
  it("names run, tag and step, and the image when the step has several", () => {
    expect(lightboxCaption("train", "weights/kernel", 40, 0, 1)).toBe("train · weights/kernel · step 40");
    expect(lightboxCaption("train", "samples", 40, 1, 3)).toBe("train · samples · step 40 · image 2 of 3");
  });
});
