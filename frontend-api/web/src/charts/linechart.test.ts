import { describe, expect, it } from "vitest";
import { align } from "./linechart";

describe("align", () => {
  it("leaves a gap (null) at values a log y axis cannot draw, and joins over missing points (undefined)", () => {
    const a = { label: "a", color: "#000", x: [0, 1, 2, 3], y: [1, -1, 0, 2] };
    expect(align([a], false, true)).toEqual([[0, 1, 2, 3], [1, null, null, 2]]);
    const b = { label: "b", color: "#000", x: [0, 2], y: [5, 6] };
    const [xs, ya, yb] = align([a, b], false, true);
    expect([...xs]).toEqual([0, 1, 2, 3]);
    expect(ya).toEqual([1, null, null, 2]);
    expect(yb).toEqual([5, undefined, 6, undefined]);
  });
  it("draws non-positive values on a linear axis", () => {
    const a = { label: "a", color: "#000", x: [0, 1], y: [-1, 0] };
    expect(align([a], false, false)).toEqual([[0, 1], [-1, 0]]);
  });
});
