import { describe, expect, it } from "vitest";
import { damagedFiles, damagedSummary } from "./damaged";

describe("damaged records on the experiment page", () => {
  it("say how many records in how many files, and nothing when none", () => {
    expect(damagedSummary(undefined)).toBe("");
    expect(damagedSummary({ records: "0" })).toBe("");
    expect(damagedSummary({ records: "3", numFiles: "3" })).toBe("3 damaged records skipped in 3 files");
    expect(damagedSummary({ records: 1, numFiles: 1 })).toBe("1 damaged record skipped in 1 file");
    expect(damagedSummary({ records: "5000", numFiles: "150" })).toBe("5,000 damaged records skipped in 150 files");
  });
  it("list the files named and count the others", () => {
    expect(damagedFiles({ records: "4", numFiles: "3", files: ["a/x", "b/y"] })).toEqual({ files: ["a/x", "b/y"], more: 1 });
    expect(damagedFiles({ records: "1", numFiles: "1", files: ["a/x"] })).toEqual({ files: ["a/x"], more: 0 });
  });
});
