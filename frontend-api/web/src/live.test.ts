import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { Experiment } from "./api";

// follow() polls with api.getFresh; the answers are given here.
const answers: Experiment[] = [];
// The paths asked, and how long the server holds each answer (0: at once).
const asked: string[] = [];
let holdMs = 0;
vi.mock("./api", () => ({
  getFresh: async (path: string) => {
    asked.push(path);
    if (holdMs > 0) await new Promise((r) => setTimeout(r, holdMs));
    return { body: answers.shift(), serverNow: Date.parse("2026-01-01T00:10:00Z") };
  },
}));
const { follow, freshnessLabel, POLL_MS } = await import("./live");

// withFakePage gives each test of the describe block calling it fake
// timers and a visible document, and forgets the answers and paths after.
function withFakePage() {
  beforeEach(() => {
    vi.useFakeTimers();
    vi.stubGlobal("document", { visibilityState: "visible", addEventListener() {}, removeEventListener() {} });
  });
  afterEach(() => {
    vi.useRealTimers();
    vi.unstubAllGlobals();
    asked.length = 0;
    answers.length = 0;
    holdMs = 0;
  });
}

describe("follow", () => {
  withFakePage();

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

describe("follow, long-polling", () => {
  withFakePage();

  it("asks to be held past the update time it saw, and asks again at once when it was held", async () => {
    const t0 = "2026-01-01T00:00:00Z";
    const t1 = "2026-01-01T00:00:01.5Z";
    const e = (updateTime: string, points: number): Experiment => ({ experimentId: "e", updateTime, counts: { numScalarPoints: String(points) } });
    answers.push(e(t0, 1), e(t1, 2), e(t1, 2));
    holdMs = 25_000; // the server holds every answer (the first unchanged, the second moved)
    const changed: string[] = [];
    const stop = follow("e", e(t0, 1), async (x) => void changed.push(x.updateTime!), () => {}, "/compare/E1%2BE3/data/comparison");
    await vi.advanceTimersByTimeAsync(25_000); // the first answer: unchanged after 25 s
    await vi.advanceTimersByTimeAsync(25_000); // the second: moved
    await vi.advanceTimersByTimeAsync(100); // the third asked at once (held)
    stop();
    expect(asked).toEqual([
      `/compare/E1%2BE3/data/comparison?waitPast=${encodeURIComponent(t0)}`,
      `/compare/E1%2BE3/data/comparison?waitPast=${encodeURIComponent(t0)}`,
      `/compare/E1%2BE3/data/comparison?waitPast=${encodeURIComponent(t1)}`,
    ]);
    expect(changed).toEqual([t1]);
  });

  it("is not held while the page's answers were read before the update time it holds, and has them read again", async () => {
    // The page's metadata says t1, but its data answers were read at t0
    // (beside the metadata, or kept in the server's cache): the update of
    // t1 may be missing from them.
    const t0 = Date.parse("2026-01-01T00:00:00Z");
    const t1 = "2026-01-01T00:00:01.500Z";
    const e: Experiment = { experimentId: "e", updateTime: t1 };
    answers.push(e, e, e);
    holdMs = 25_000;
    let readAt = t0;
    const changed: string[] = [];
    const stop = follow(
      "e",
      e,
      async (x) => {
        changed.push(x.updateTime!);
        readAt = Date.parse(t1) + 10; // read again after the update
      },
      () => {},
      "/api/experiments/e",
      () => readAt,
    );
    await vi.advanceTimersByTimeAsync(25_000);
    await vi.advanceTimersByTimeAsync(100);
    stop();
    expect(changed).toEqual([t1]);
    // Asked at once while behind; held once the answers are newer.
    expect(asked).toEqual(["/api/experiments/e", `/api/experiments/e?waitPast=${encodeURIComponent(t1)}`]);
  });

  it("polls every POLL_MS where the server answers at once", async () => {
    const t0 = "2026-01-01T00:00:00Z";
    const e: Experiment = { experimentId: "e", updateTime: t0 };
    answers.push(e, e, e, e);
    const stop = follow("e", e, async () => {}, () => {});
    await vi.advanceTimersByTimeAsync(2 * POLL_MS + 1);
    stop();
    expect(asked.length).toBe(3); // at 0, POLL_MS and 2 × POLL_MS: not a busy loop
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
