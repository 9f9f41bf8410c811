import { describe, expect, it } from "vitest";
import { prCurveLines } from "./prcurves";

describe("prCurveLines", () => {
  const entry = (precision: number[], recall: number[]) => ({ wall_time: 0, step: 3, precision, recall, thresholds: precision.map((_, i) => i / precision.length) });
  it("marks the points of a curve that is one place (or two), so that it shows", () => {
    const lines = prCurveLines(
      {
        flat: [entry([1, 1, 1], [1, 1, 1])],
        curve: [entry([0.5, 0.7, 0.9, 1], [1, 0.8, 0.4, 0.1])],
      },
      3,
      () => "#000",
    );
    expect(lines.map((l) => [l.label, !!l.markers])).toEqual([
      ["flat", true],
      ["curve", false],
    ]);
    expect(lines[1].x).toEqual([0.1, 0.4, 0.8, 1]);
  });
});
