import { describe, expect, it } from "vitest";
import { usableLanguage } from "./locale-guard";

describe("usableLanguage", () => {
  it("keeps a valid tag and replaces the POSIX locale or nothing", () => {
    expect(usableLanguage("de-DE")).toBe("de-DE");
    expect(usableLanguage("C")).toBe("en-US");
    expect(usableLanguage("")).toBe("en-US");
    expect(usableLanguage(undefined)).toBe("en-US");
  });
});
