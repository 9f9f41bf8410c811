import { describe, expect, it } from "vitest";
import { tokenLead } from "./signin";

describe("tokenLead", () => {
  it("says Or only when there is an OIDC sign-in above it", () => {
    expect(tokenLead(false)).toBe("Paste an API token.");
    expect(tokenLead(true)).toBe("Or paste an API token.");
  });
});
