import { describe, expect, it } from "vitest";
import {
  bandLabels,
  fmtAxisSeconds,
  fmtKldTick,
  fmtTick,
  kldTicks,
  marginFor,
  niceStep,
  sizeUnit,
  stepDecimals,
  tickFormatter,
  uplotTicks,
  zeroTicks,
} from "./chartAxis";

describe("axis ticks", () => {
  it("steps are 1, 2 or 5 times a power of ten", () => {
    expect(niceStep(100, 5)).toBe(20);
    expect(niceStep(24.46854, 5)).toBe(5);
    expect(niceStep(0.7, 5)).toBeCloseTo(0.2, 12);
    expect(niceStep(0, 5)).toBe(1);
  });
  it("bar axes run from 0 to a round top, a handful of ticks", () => {
    expect(zeroTicks(24.46854)).toEqual([0, 5, 10, 15, 20, 25]);
    expect(zeroTicks(158.8)).toEqual([0, 50, 100, 150, 200]);
    expect(zeroTicks(0.3)).toEqual([0, 0.1, 0.2, 0.3]);
    expect(zeroTicks(0.7)).toEqual([0, 0.2, 0.4, 0.6, 0.8]);
    for (const max of [1, 7.3, 99, 523.67, 12345]) {
      const t = zeroTicks(max);
      expect(t.length).toBeGreaterThanOrEqual(3);
      expect(t.length).toBeLessThanOrEqual(8);
      expect(t.at(-1)).toBeGreaterThanOrEqual(max);
    }
  });
  it("labels carry units at the precision of the step, never a raw float", () => {
    expect(stepDecimals(50)).toBe(0);
    expect(stepDecimals(0.5)).toBe(1);
    expect(stepDecimals(0.25)).toBe(2);
    const f = tickFormatter(zeroTicks(24.46854), "t/s");
    expect(zeroTicks(24.46854).map(f)).toEqual(["0 t/s", "5 t/s", "10 t/s", "15 t/s", "20 t/s", "25 t/s"]);
    expect(tickFormatter([0, 0.5, 1], "GiB")(0.5)).toBe("0.5 GiB");
    expect(fmtTick(1500, "ms")).toBe("1,500 ms");
    expect(fmtTick(50, "%")).toBe("50%");
    expect(uplotTicks([0, 2.5, 5, 7.5], "GiB")).toEqual(["0.0 GiB", "2.5 GiB", "5.0 GiB", "7.5 GiB"]);
  });
  it("leaves a left margin as wide as the widest label", () => {
    expect(marginFor(["0 t/s", "1,500 t/s"])).toBeGreaterThan(marginFor(["0 t/s", "50 t/s"]));
    expect(marginFor(["12,000 t/s"])).toBeGreaterThanOrEqual(10 * 6 + 14);
    expect(marginFor([])).toBe(40);
  });
  it("turns level names only when they do not fit their band", () => {
    expect(bandLabels(["F16", "Q8_0", "Q4_1"], 560, 60).rotate).toBe(0);
    const crowded = bandLabels(["F16", "Q8_0", "Q6_K", "Q5_K_M", "Q4_K_M", "Q3_K_M", "Q2_K", "IQ4_XS", "IQ3_XXS"], 300, 60);
    expect(crowded.rotate).toBeLessThan(0);
    expect(crowded.marginBottom).toBeGreaterThan(30);
  });
  it("sizes in MiB below a GiB, else GiB", () => {
    expect(sizeUnit(270885952).unit).toBe("MiB");
    expect(sizeUnit(4.5 * 1073741824).unit).toBe("GiB");
  });
  it("KLD ticks are decades from the smallest value, with 0 for the reference", () => {
    expect(kldTicks([0, 0.002676, 0.0451])).toEqual([0, 0.001, 0.01, 0.1]);
    expect(kldTicks([0])).toEqual([0, 0.001]);
    expect(fmtKldTick(0.001)).toBe("0.001");
    expect(fmtKldTick(0.00001)).toBe("1e-5");
  });
  it("time ticks read as seconds, then minutes", () => {
    expect(fmtAxisSeconds(45)).toBe("45 s");
    expect(fmtAxisSeconds(120)).toBe("2 min");
    expect(fmtAxisSeconds(150)).toBe("2:30");
    expect(fmtAxisSeconds(3600)).toBe("1 h");
    expect(fmtAxisSeconds(164.49)).toBe("2:44");
  });
});
