import { describe, expect, it } from "vitest";
import { GENERIC_SIGN_IN_ERROR, signInErrorText } from "./signinerror";

describe("signInErrorText", () => {
  it("shows a fixed text for each code the server sends", () => {
    for (const code of ["unreachable", "expired", "mismatch", "refused", "failed", "not_accepted"]) {
      const text = signInErrorText(code);
      expect(text).not.toBe("");
      expect(text).not.toBe(GENERIC_SIGN_IN_ERROR);
    }
    expect(signInErrorText("refused")).toBe("The identity provider refused the sign-in.");
  });
  it("shows the generic text, never the link's words, for anything else", () => {
    for (const code of ["Your account is locked: call +1 555 0100", "constructor", "__proto__", "toString", "REFUSED"]) {
      expect(signInErrorText(code)).toBe(GENERIC_SIGN_IN_ERROR);
    }
  });
  it("shows nothing without an error", () => {
    expect(signInErrorText(null)).toBe("");
    expect(signInErrorText("")).toBe("");
  });
});
