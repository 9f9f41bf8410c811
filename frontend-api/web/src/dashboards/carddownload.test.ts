import { describe, expect, it } from "vitest";
import { cardDownload, type RunPoints } from "./carddownload";

const runs: RunPoints[] = [
  { run: "a", tag: "loss", points: { steps: [0, 10], wall_times: [1.5, 2.5], values: [0.25, "NaN"] } },
  { run: 'b,"x"', tag: "loss", points: { steps: [5], wall_times: [3], values: [1e-7] } },
];

describe("cardDownload", () => {
  it("writes a CSV row per point of every run, run names quoted when needed", () => {
    expect(cardDownload("loss", runs, "csv").split("\r\n")).toEqual([
      "run,wall_time,step,value",
      "a,1.5,0,0.25",
      "a,2.5,10,NaN",
      '"b,""x""",3,5,1e-7',
      "",
    ]);
  });
  it("writes one JSON document holding every run's points", () => {
    const doc = JSON.parse(cardDownload("loss", runs, "json"));
    expect(doc.tag).toBe("loss");
    expect(doc.runs.map((r: { run: string }) => r.run)).toEqual(["a", 'b,"x"']);
    expect(doc.runs[0].points).toEqual(runs[0].points);
  });
});
