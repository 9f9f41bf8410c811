import { describe, expect, it } from "vitest";
import { formatState, parseState } from "../state";

describe("graph view state", () => {
  it("round-trips open scopes, the graph, stats and colours", () => {
    const s = parseState("?tab=graphs&grun=train&ggraph=keras%3Amodel&gopen=a%2F&gopen=a%2Fb%2F&gnode=a%2Fb%2Fc&gstats=step1&gcolor=time");
    expect(s.gopen).toEqual(["a/", "a/b/"]);
    expect([s.grun, s.ggraph, s.gnode, s.gstats, s.gcolor]).toEqual(["train", "keras:model", "a/b/c", "step1", "time"]);
    expect(parseState(formatState(s))).toEqual(s);
  });
  it("opens every scope of an old gscope link", () => {
    expect(parseState("?gscope=a%2Fb%2F").gopen).toEqual(["a/", "a/b/"]);
    expect(formatState(parseState("?gscope=a%2Fb%2F"))).toBe("?gopen=a%2F&gopen=a%2Fb%2F");
  });
});
