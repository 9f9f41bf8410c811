import { describe, expect, it } from "vitest";
import { mergeColumns, pointDetail, scalarLines, type Held, type Points } from "./scalars-model";
import { parseState } from "../state";

const held = (): { had: Record<string, Points>; live: Record<string, Held> } => ({
  had: {
    a: { step: [0, 5, 9], wall: [100, 105, 109], value: [1, 2, 3] },
    b: { step: [0, 9], wall: [100, 109], value: [4, 5] },
    gone: { step: [1], wall: [101], value: [0] },
  },
  live: { a: { maxWall: 109, appended: 2 }, b: { maxWall: 109, appended: 0 }, gone: { maxWall: 101, appended: 0 } },
});

describe("mergeColumns", () => {
  it("appends a tail, takes a full answer in place, drops runs not answered", () => {
    const { had, live } = held();
    const { byRun, live: next } = mergeColumns(had, live, {
      a: { after: 9, wall_time_base: 110, max_wall_time: 111, wall_time: [0, 1], step: [10, 11], value: [6, "NaN"] },
      b: { wall_time_base: 100, max_wall_time: 200, wall_time: [0, 100], step: [0, 20], value: [7, 8] },
    });
    expect(byRun.a).toEqual({ step: [0, 5, 9, 10, 11], wall: [100, 105, 109, 110, 111], value: [1, 2, 3, 6, NaN] });
    expect(next.a).toEqual({ maxWall: 111, appended: 4 });
    expect(byRun.b).toEqual({ step: [0, 20], wall: [100, 200], value: [7, 8] });
    expect(next.b).toEqual({ maxWall: 200, appended: 0 });
    expect("gone" in byRun).toBe(false);
  });

  it("keeps the points of an empty tail", () => {
    const { had, live } = held();
    const { byRun, broken } = mergeColumns(had, live, { a: { after: 9, max_wall_time: 109, wall_time: [], step: [], value: [] } });
    expect(byRun.a).toBe(had.a);
    expect(broken).toBe(false);
  });

  it("never merges a tail that does not start past the last step held", () => {
    const { had, live } = held();
    const { broken } = mergeColumns(had, live, { b: { after: 5, max_wall_time: 120, wall_time: [120], step: [10], value: [9] } });
    expect(broken).toBe(true);
  });
});

describe("the scalar tooltip's time", () => {
  it("adds wall time and relative time when asked", () => {
    const wall = Date.UTC(2026, 10, 27, 10, 0, 0) / 1000;
    const plain = pointDetail(0.5, 1200, wall + 3723, wall, { smoothing: 0.6, tttime: false });
    expect(plain).toBe("raw 0.5 · step 1200");
    const timed = pointDetail(0.5, 1200, wall + 3723, wall, { smoothing: 0, tttime: true });
    expect(timed).toBe(`step 1200 · ${new Date((wall + 3723) * 1000).toLocaleString()} · 1h 2m`);
  });
  it("reads the relative time from the run's first point, not the chart's", () => {
    const s = { ...parseState(""), smoothing: 0, tttime: true };
    const data = { late: { step: [5, 6], wall: [1000, 1010], value: [1, 2] }, early: { step: [0, 1], wall: [10, 20], value: [3, 4] } };
    const lines = scalarLines(data, ["late", "early"], () => "#000", s);
    expect(lines.find((l) => l.run === "late")!.detail!(1)).toMatch(/ · 10s$/);
  });
});
