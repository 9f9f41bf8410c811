import { describe, expect, it } from "vitest";
import { beside, fmtSI, fmtTicks, moreNote, nearestRows, placeBox, sortRows, TOOLTIP_ROWS } from "./format";

describe("fmtTicks", () => {
  it("writes large values with SI suffixes, not exponents", () => {
    expect(fmtTicks([0, 500000, 1000000, 1500000])).toEqual(["0", "500k", "1M", "1.5M"]);
    expect(fmtTicks([1e9, 2e9])).toEqual(["1G", "2G"]);
  });
  it("keeps the digits that tell neighbours apart", () => {
    expect(fmtTicks([20000, 20010, 20020])).toEqual(["20k", "20.01k", "20.02k"]);
    expect(fmtTicks([0, 0.5, 1, 1.5])).toEqual(["0", "0.5", "1", "1.5"]);
  });
  it("drops float noise", () => {
    expect(fmtTicks([0.1, 0.2, 0.30000000000000004, 0.4])).toEqual(["0.1", "0.2", "0.3", "0.4"]);
  });
  it("labels log-axis decades and small values", () => {
    expect(fmtTicks([1, 10, 100, 1000, 10000, 100000])).toEqual(["1", "10", "100", "1000", "10k", "100k"]);
    expect(fmtTicks([0.0001, 0.0002, null])).toEqual(["1e-4", "2e-4", ""]);
  });
});

describe("fmtSI", () => {
  it("rounds up into the next unit", () => {
    expect(fmtSI(999999, 3)).toBe("1M");
    expect(fmtSI(-1234567)).toBe("-1.2346M");
    expect(fmtSI(12.3456789)).toBe("12.346");
    expect(fmtSI(NaN)).toBe("NaN");
  });
});

describe("sortRows", () => {
  const rows = [
    { label: "run-10", y: 1, dist: 5 },
    { label: "run-2", y: NaN, dist: Infinity },
    { label: "run-1", y: 3, dist: 30 },
    { label: "Run-3", y: -2, dist: 1 },
  ];
  const labels = (s: Parameters<typeof sortRows>[1]) => sortRows(rows, s).map((r) => r.label);
  it("orders by value, NaN last either way", () => {
    expect(labels("descending")).toEqual(["run-1", "run-10", "Run-3", "run-2"]);
    expect(labels("ascending")).toEqual(["Run-3", "run-10", "run-1", "run-2"]);
  });
  it("orders by name naturally, by distance, or keeps the run order", () => {
    expect(labels("alphabetical")).toEqual(["run-1", "run-2", "Run-3", "run-10"]);
    expect(labels("nearest")).toEqual(["Run-3", "run-10", "run-1", "run-2"]);
    expect(labels("default")).toEqual(rows.map((r) => r.label));
  });
});

describe("placeBox", () => {
  it("goes right of the cursor when it fits, else left", () => {
    expect(placeBox(100, 100, 200, 50, 1000, 800)).toEqual({ left: 112, top: 90 });
    expect(placeBox(900, 100, 200, 50, 1000, 800)).toEqual({ left: 688, top: 90 });
  });
  it("stays inside the window", () => {
    // Wider than the room on either side: pushed back in.
    expect(placeBox(50, 700, 990, 300, 1000, 800)).toEqual({ left: 4, top: 496 });
    // Taller than the window: from its top.
    expect(placeBox(50, 700, 100, 900, 1000, 800).top).toBe(4);
  });
});

describe("beside", () => {
  it("goes gap after the cursor when it fits, else gap before, inside the viewport", () => {
    expect(beside(700, 50, 14, 800)).toBe(714);
    expect(beside(760, 50, 14, 800)).toBe(696);
    expect(beside(20, 900, 14, 800)).toBe(4);
  });
});

describe("tooltip cap", () => {
  // 100 runs at values 0..99, the cursor at the height of value 42.5.
  const rows = Array.from({ length: 100 }, (_, i) => ({ label: `run${i}`, y: i, dist: Math.abs(i - 42.5) }));
  it("keeps the rows nearest the cursor's value, in the chosen order", () => {
    const shown = nearestRows(sortRows(rows, "descending"), TOOLTIP_ROWS);
    expect(shown.map((r) => r.y)).toEqual([47, 46, 45, 44, 43, 42, 41, 40, 39, 38]);
    expect(nearestRows(sortRows(rows, "alphabetical"), 2).map((r) => r.label)).toEqual(["run42", "run43"]);
  });
  it("keeps every row when they are few", () => {
    const few = rows.slice(0, 7);
    expect(nearestRows(few, TOOLTIP_ROWS)).toEqual(few);
  });
  it("says how many are left out and the key that shows them", () => {
    expect(moreNote(90, false)).toBe("+90 more (press A for all)");
    expect(moreNote(40, true)).toBe("+40 more (click to pin and scroll)");
    expect(moreNote(0, false)).toBe("");
  });
});
