import { describe, expect, it } from "vitest";
import {
  filterRows,
  groupRegex,
  groupRows,
  hparamColumns,
  parseFilter,
  parseRunName,
  rowsOf,
  sortRows,
  visibleWindow,
  type RunRow,
} from "./runstable";

const parsed = (name: string) => Object.fromEntries(parseRunName(name).map((p) => [p.key, p.value]));

// The runs of the shared corpus's real logdirs (../shared/corpus/real),
// named as an upload of that folder names them: the folder of each event
// file.
const corpusFiles = Object.keys(import.meta.glob("../../../../../shared/corpus/real/**/*tfevents*"));
const corpusRuns = [...new Set(corpusFiles.map((f) => f.replace(/^.*\/corpus\/real\//, "").replace(/\/[^/]*$/, "")))].sort();

describe("hparams from run names", () => {
  it("reads key=value and key_value forms", () => {
    expect(parsed("lr=0.1,bs=32")).toEqual({ lr: 0.1, bs: 32 });
    expect(parsed("lr_0.1-seed_3")).toEqual({ lr: 0.1, seed: 3 });
    expect(parsed("opt=adam,lr=3e-4")).toEqual({ opt: "adam", lr: 3e-4 });
    expect(parsed("batch_size_32")).toEqual({ batch_size: 32 });
    expect(parsed("DQN_buffsize_eps_sched_all - Copy/buffer_size=1000/seed_1/DQN_1")).toEqual({ buffer_size: 1000, seed: 1 });
    expect(parsed("PPO_CartPole_a1b2c_00000_0_lr=0.001,seed=3_2023-01-01_12-00-00")).toEqual({ lr: 0.001, seed: 3 });
    expect(parsed("Ray_PPO_cycle_1e6/PPO_JBW-cycle-1e6_00001")).toEqual({ cycle: 1e6 });
  });
  it("leaves counters, dates and hashes alone", () => {
    for (const name of ["run_1", "exp_2", "DQN_1", "EXP005", "demo_01_scalar", "version_0", "2024-01-01_12-00-00", "1771595857.3236299", "train", "events"]) {
      expect(parsed(name), name).toEqual({});
    }
  });
  it("reads the shared corpus's real run names conservatively", () => {
    expect(corpusRuns.length).toBeGreaterThan(20); // the corpus is there
    const found = Object.fromEntries(corpusRuns.map((r) => [r, parsed(r)]).filter(([, hp]) => Object.keys(hp).length));
    expect(found).toEqual({
      "study_tb/runs/experiment_lr_0.001": { lr: 0.001 },
      "study_tb/runs/experiment_lr_0.01": { lr: 0.01 },
      "study_tb/runs/experiment_lr_0.1": { lr: 0.1 },
    });
  });
});

const rows: RunRow[] = rowsOf([
  { run: "lr=0.1,bs=32", metrics: { loss: { last: 0.4, step: 100, min: 0.3, max: 2 } } },
  { run: "lr=0.01,bs=32", metrics: { loss: { last: 0.7, step: 100, min: 0.6, max: 2.5 } } },
  { run: "lr=0.001,bs=64", metrics: { loss: { last: "NaN", step: 90, min: 0.9, max: 3 } } },
  { run: "baseline" },
  { run: "trial-7", hparams: { lr: 0.05, opt: "adam" }, metrics: { loss: { last: 0.2, step: 10, min: 0.1, max: 1 } } },
]);
const hp = hparamColumns(rows);
const tags = ["loss"];
const names = (rs: RunRow[]) => rs.map((r) => r.run);

describe("runs table rows", () => {
  it("take the hparams plugin's values, else the name's", () => {
    expect(rows.map((r) => r.source)).toEqual(["name", "name", "name", "none", "plugin"]);
    expect(rows[4].hparams).toEqual({ lr: 0.05, opt: "adam" });
    expect(rows[2].metrics.loss.last).toBeNaN();
    expect(hp).toEqual(["bs", "lr", "opt"]);
  });
  it("sort by an hparam or a metric, missing values last", () => {
    expect(names(sortRows(rows, "lr", hp, tags))).toEqual(["lr=0.001,bs=64", "lr=0.01,bs=32", "trial-7", "lr=0.1,bs=32", "baseline"]);
    expect(names(sortRows(rows, "-lr", hp, tags))).toEqual(["lr=0.1,bs=32", "trial-7", "lr=0.01,bs=32", "lr=0.001,bs=64", "baseline"]);
    expect(names(sortRows(rows, "loss.min", hp, tags))).toEqual(["trial-7", "lr=0.1,bs=32", "lr=0.01,bs=32", "lr=0.001,bs=64", "baseline"]);
    expect(names(sortRows(rows, "loss", hp, tags))).toEqual(["trial-7", "lr=0.1,bs=32", "lr=0.01,bs=32", "lr=0.001,bs=64", "baseline"]);
    // Natural order, as the runs list.
    expect(names(sortRows(rows, "run", hp, tags))).toEqual(["baseline", "lr=0.1,bs=32", "lr=0.01,bs=32", "lr=0.001,bs=64", "trial-7"]);
  });
  it("filter by text, hparam value and metric range", () => {
    const f = (text: string) => names(filterRows(rows, parseFilter(text, hp, tags)));
    expect(f("")).toHaveLength(5);
    expect(f("BASE")).toEqual(["baseline"]);
    expect(f("bs=32")).toEqual(["lr=0.1,bs=32", "lr=0.01,bs=32"]);
    expect(f("lr = 0.1")).toEqual(["lr=0.1,bs=32"]);
    expect(f("loss < 0.5")).toEqual(["lr=0.1,bs=32", "trial-7"]);
    expect(f("loss.min >= 0.6, bs = 32")).toEqual(["lr=0.01,bs=32"]);
    expect(f("loss.max <= 2 and lr > 0.01")).toEqual(["lr=0.1,bs=32", "trial-7"]);
    expect(f("opt = ADAM")).toEqual(["trial-7"]);
    expect(f("opt != adam")).toEqual([]); // only trial-7 has opt
    expect(f("loss.step > 95")).toEqual(["lr=0.1,bs=32", "lr=0.01,bs=32"]);
    expect(f("nosuch < 3")).toEqual([]); // text on the name, not a column
  });
  it("group by an hparam, and by a regex over names when names state it", () => {
    expect(groupRows(rows, "bs").map((g) => [g.value, names(g.rows)])).toEqual([
      ["32", ["lr=0.1,bs=32", "lr=0.01,bs=32"]],
      ["64", ["lr=0.001,bs=64"]],
      ["", ["baseline", "trial-7"]],
    ]);
    const re = new RegExp(groupRegex(rows, "bs")!);
    expect(rows.filter((r) => r.source === "name").map((r) => re.exec(r.run)?.[1])).toEqual(["32", "32", "64"]);
    expect(groupRegex(rows, "lr")).toBeNull(); // trial-7's lr is the plugin's
    const lrRe = new RegExp(groupRegex(rowsOf([{ run: "experiment_lr_0.001" }, { run: "experiment_lr_1e-3/b" }]), "lr")!);
    expect(["experiment_lr_0.001", "x/experiment_lr_1e-3/b"].map((n) => lrRe.exec(n)?.[1])).toEqual(["0.001", "1e-3"]);
  });
});

describe("visibleWindow", () => {
  it("draws only the rows on screen and a margin", () => {
    expect(visibleWindow(0, 280, 28, 1000, 5)).toEqual({ start: 0, end: 15, above: 0, below: 985 * 28 });
    expect(visibleWindow(28 * 500, 280, 28, 1000, 5)).toEqual({ start: 495, end: 515, above: 495 * 28, below: 485 * 28 });
    expect(visibleWindow(0, 280, 28, 3, 5)).toEqual({ start: 0, end: 3, above: 0, below: 0 });
  });
});

describe("parseRunName on arbitrary names", () => {
  it("never throws, and reads only keys and values the name holds", () => {
    // A fixed-seed generator (xorshift) over the characters run names use.
    let x = 2463534242;
    const rnd = (n: number) => ((x ^= x << 13), (x ^= x >>> 17), (x ^= x << 5), (x >>> 0) % n);
    const alphabet = "abclrsedABC0123456789._-=,/ ";
    for (let i = 0; i < 5000; i++) {
      const name = Array.from({ length: 1 + rnd(40) }, () => alphabet[rnd(alphabet.length)]).join("");
      for (const p of parseRunName(name)) {
        expect(name, JSON.stringify(p)).toContain(p.key);
        expect(name, JSON.stringify(p)).toContain(p.raw);
        if (typeof p.value === "number") expect(p.value).toBe(Number(p.raw));
      }
    }
  });
});
