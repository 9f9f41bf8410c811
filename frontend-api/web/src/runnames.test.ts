import { describe, expect, it } from "vitest";
import { cutMiddle, sharedFolder, shortRunNames } from "./runnames";

describe("run names", () => {
  it("keeps the trial that tells four Ray trials apart (issue 23)", () => {
    const trials = ["0003", "0004", "0007", "0012"].map((t) => `Ray_PPO_cycle_1e6/PPO_JBW-cycle-1e6_${t}`);
    const short = shortRunNames(trials, 28);
    expect(short.get(trials[2])).toBe("…/PPO_JBW-cycle-1e6_0007");
    expect(new Set(short.values()).size).toBe(4);
  });
  it("keeps its ellipsis when the middle is cut (issue 23)", () => {
    const name = "DQN_buffsize_eps_sched_all - Copy/buffer_size=1000/seed_1/DQN_1";
    const cut = cutMiddle(name, 32);
    expect(cut).toHaveLength(32);
    expect(cut).toBe("DQN_buffsize…e=1000/seed_1/DQN_1");
    // In a list of its sweep, the shared folder goes first.
    const runs = [name, name.replace("seed_1", "seed_2"), name.replace("1000/", "5000/")];
    expect(shortRunNames(runs, 32).get(runs[1])).toBe("…/buffer_size=1000/seed_2/DQN_1");
    const tight = shortRunNames(runs, 24).get(runs[2])!;
    expect(tight).toBe("…/buffer_s…/seed_1/DQN_1");
    expect(tight).toHaveLength(24);
  });
  it("leaves names that fit whole", () => {
    expect(shortRunNames(["train", "validation"], 20)).toEqual(
      new Map([
        ["train", "train"],
        ["validation", "validation"],
      ]),
    );
    expect(cutMiddle("run-1", 5)).toBe("run-1");
  });
  it("cuts a lone long name in the middle", () => {
    expect(shortRunNames(["a/very/long/run/name/of/one/run"], 12).get("a/very/long/run/name/of/one/run")).toBe("a/ve…one/run");
  });
  it("finds the folders names share, not a partial one", () => {
    expect(sharedFolder(["a/b/c1", "a/b/c2"])).toBe("a/b/");
    expect(sharedFolder(["seed_1/x", "seed_2/x"])).toBe("");
    expect(sharedFolder(["a/b", "a/b/c"])).toBe("a/");
    expect(sharedFolder(["only/one"])).toBe("");
  });
});
