import { describe, expect, it } from "vitest";
import { displayNameField, isHandle, seenAs } from "./displayname";

describe("display name", () => {
  it("tells the handle from a chosen name", () => {
    expect(isHandle("user-K3f9aZq1")).toBe(true);
    expect(isHandle("Grace H.")).toBe(false);
    expect(isHandle("")).toBe(false);
  });
  it("puts a chosen name in the field and the handle only in its placeholder", () => {
    expect(displayNameField("user-K3f9aZq1")).toEqual({ value: "", placeholder: "user-K3f9aZq1" });
    expect(displayNameField("Grace H.")).toEqual({ value: "Grace H.", placeholder: "" });
  });
  it("says what others see", () => {
    expect(seenAs("Grace H.")).toBe("Others see you as “Grace H.”.");
    expect(seenAs("user-K3f9aZq1")).toContain("until you choose");
  });
});
