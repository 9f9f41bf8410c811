import { afterEach, describe, expect, it, vi } from "vitest";
import { debounce } from "./dom";

describe("debounce", () => {
  afterEach(() => vi.useRealTimers());
  it("calls once after the calls stop, and not at all once cancelled", () => {
    vi.useFakeTimers();
    const got: number[] = [];
    const d = debounce((v: number) => got.push(v), 100);
    d(1);
    d(2);
    vi.advanceTimersByTime(100);
    expect(got).toEqual([2]);
    d(3);
    d.cancel();
    vi.advanceTimersByTime(200);
    expect(got).toEqual([2]);
  });
});
