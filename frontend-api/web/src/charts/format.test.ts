import { describe, expect, it } from "vitest";
import { beside, fmtSI, fmtTicks, placeBox, sortRows } from "./format";

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
