import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { Experiment } from "./api";

// follow() polls with api.getFresh; the answers are given here.
const answers: Experiment[] = [];
vi.mock("./api", () => ({
  getFresh: async () => ({ body: answers.shift(), serverNow: Date.parse("2026-01-01T00:10:00Z") }),
}));
const { follow, freshnessLabel, POLL_MS } = await import("./live");

describe("follow", () => {
  beforeEach(() => {
    vi.useFakeTimers();
    vi.stubGlobal("document", { visibilityState: "visible", addEventListener() {}, removeEventListener() {} });
  });
  afterEach(() => {
    vi.useRealTimers();
    vi.unstubAllGlobals();
  });

  const exp = (updateTime: string, points: number, name = "a"): Experiment => ({
    experimentId: "e",
    name,
    updateTime,
    counts: { numRuns: "1", numScalarPoints: String(points) },
  });

  it("says when data last arrived: a rename, description or visibility change moves the update time, not that", async () => {
    const first = exp("2026-01-01T00:00:00Z", 10);
    answers.push(exp("2026-01-01T00:05:00Z", 10, "renamed"), exp("2026-01-01T00:06:00Z", 12, "renamed"));
    const seen: number[] = [];
    const changed: string[] = [];
    const stop = follow(
      "e",
      first,
      async (e) => void changed.push(e.updateTime!),
      (f) => seen.push(f.updated),
    );
    await vi.advanceTimersByTimeAsync(POLL_MS);
    await vi.advanceTimersByTimeAsync(POLL_MS);
    stop();
    // The rename is read (the page shows the new name) but is not data.
    expect(changed).toEqual(["2026-01-01T00:05:00Z", "2026-01-01T00:06:00Z"]);
    expect(seen).toEqual([Date.parse("2026-01-01T00:00:00Z"), Date.parse("2026-01-01T00:06:00Z")]);
  });
});

describe("freshnessLabel", () => {
  const t0 = Date.parse("2026-01-01T00:00:00Z");
  it("says receiving data only when the page saw data arrive lately", () => {
    // Opened 3 s after a rename: nothing says data is arriving.
    expect(freshnessLabel({ updated: t0, dataSeen: false, latest: t0, serverNow: t0 + 3000, polledAt: t0 + 3000 }, t0 + 3000)).toEqual({ active: false, text: "updated 3 s ago" });
    expect(freshnessLabel({ updated: t0, dataSeen: true, latest: t0, serverNow: t0 + 3000, polledAt: t0 + 3000 }, t0 + 5000)).toEqual({ active: true, text: "● receiving data · last 5 s ago" });
    expect(freshnessLabel({ updated: t0, dataSeen: true, latest: t0, serverNow: t0 + 60_000, polledAt: t0 + 60_000 }, t0 + 60_000)).toEqual({ active: false, text: "last data 1 min ago" });
  });
});
