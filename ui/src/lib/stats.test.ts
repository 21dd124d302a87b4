import { describe, expect, it } from "vitest";
import ladder from "../fixtures/sweep-ladder.json";
import type { SweepDoc } from "../types";
import { ci95HalfWidth, ci95Interval, tQuantile975 } from "./stats";

describe("tQuantile975", () => {
  it("matches the t table at small df", () => {
    expect(tQuantile975(1)).toBeCloseTo(12.706, 3);
    expect(tQuantile975(4)).toBeCloseTo(2.776, 3);
    expect(tQuantile975(30)).toBeCloseTo(2.042, 3);
  });
  it("approximates beyond the table and tends to the normal quantile", () => {
    expect(tQuantile975(40)).toBeCloseTo(2.021, 3);
    expect(tQuantile975(60)).toBeCloseTo(2.0, 2);
    expect(tQuantile975(120)).toBeCloseTo(1.98, 3);
    expect(tQuantile975(1e6)).toBeCloseTo(1.96, 3);
  });
  it("is NaN without a degree of freedom", () => {
    expect(tQuantile975(0)).toBeNaN();
  });
});

describe("ci95HalfWidth", () => {
  it("is null below two samples or without a deviation", () => {
    expect(ci95HalfWidth(3, 1)).toBeNull();
    expect(ci95HalfWidth(null, 5)).toBeNull();
  });
  it("is t·sd/√n", () => {
    expect(ci95HalfWidth(10, 5)).toBeCloseTo((2.776 * 10) / Math.sqrt(5), 6);
  });
  it("agrees with the backend's ci95 on every result of a real sweep", () => {
    const doc = ladder as unknown as SweepDoc;
    let checked = 0;
    for (const run of doc.runs) {
      for (const r of run.results) {
        if (r.ci95_tokens_per_s == null) continue;
        const mine = ci95HalfWidth(r.stddev_tokens_per_s, r.samples_tokens_per_s.length)!;
        // The backend uses the exact quantile; the table has 3 decimals.
        expect(Math.abs(mine - r.ci95_tokens_per_s) / r.ci95_tokens_per_s).toBeLessThan(1e-3);
        checked++;
      }
    }
    expect(checked).toBeGreaterThan(5);
  });
  it("gives an interval around the mean", () => {
    expect(ci95Interval(100, 10, 5).low).toBeCloseTo(100 - 12.4146, 3);
    expect(ci95Interval(100, null, 5)).toEqual({ low: 100, high: 100, half: null });
  });
});
