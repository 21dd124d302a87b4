import { describe, expect, it } from "vitest";
import { rate, rateText } from "./download";

describe("download rate", () => {
  it("waits a second before claiming a rate", () => {
    expect(rate({ atMs: 0, done: 0 }, { atMs: 500, done: 1e9 })).toBeNull();
    expect(rate({ atMs: 0, done: 100 }, { atMs: 2000, done: 100 })).toBeNull();
  });

  it("counts this session's bytes only and says the time left", () => {
    // Resumed at 400 MiB; 100 MiB more in 10 s: 10 MiB/s, 500 MiB to go.
    const MiB = 1048576;
    const from = { atMs: 0, done: 400 * MiB };
    const now = { atMs: 10_000, done: 500 * MiB };
    expect(rate(from, now)).toBe(10 * MiB);
    expect(rateText(from, now, 1000 * MiB)).toMatch(/^10(\.0)? MiB\/s · 50 s left$/);
    expect(rateText(from, now, 50_000 * MiB)).toMatch(/ 83 min left$/);
    expect(rateText(null, now, 1)).toBe("");
  });
});
