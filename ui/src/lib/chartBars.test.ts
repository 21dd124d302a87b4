import { describe, expect, it } from "vitest";
import ladder from "../fixtures/sweep-ladder.json";
import type { SweepDoc } from "../types";
import { barAxis, barChart, barNotes, barTitle, drawnBars, type BarInput } from "./chartBars";
import { barData, levelRows, ttftBars } from "./sweepData";

const doc = ladder as unknown as SweepDoc;
const bar = (level: string, mean: number, half: number | null, n: number): BarInput => ({ level, test: "tg16", mean, half, n });

describe("bars with whiskers", () => {
  it("keeps 2-repetition whiskers from squashing the bars: cut at the axis top and marked", () => {
    // 2 repetitions: t(1) = 12.7, so the interval can be 4× the bar.
    const bars = [bar("Q8_0", 100, 400, 2), bar("Q4_0", 120, 30, 2)];
    const c = barChart(bars, "t/s");
    expect(c.top).toBe(200); // room for 1.5× the tallest bar, not for 500
    expect(c.bars[0]).toMatchObject({ cut: true, high: 200, low: 0, few: true });
    expect(c.bars[1]).toMatchObject({ cut: false, high: 150, low: 90 });
    expect(c.notes.cut).toMatch(/▲/);
    expect(c.notes.warning).toMatch(/^Fewer than 3 repetitions/);
  });

  it("draws the real sweep's decode bars (2 repetitions) at a readable scale", () => {
    const decode = barData(levelRows(doc)).filter((b) => b.rate === "decode");
    const c = barChart(decode, "t/s");
    const tallest = Math.max(...decode.map((b) => b.mean));
    expect(c.top).toBeGreaterThanOrEqual(tallest * 1.5);
    expect(c.top).toBeLessThanOrEqual(tallest * 2);
    expect(c.bars.every((b) => b.low >= 0 && b.high <= c.top && b.few)).toBe(true);
    expect(c.ticks.map(c.format)).toEqual(["0 t/s", "100 t/s", "200 t/s", "300 t/s"]);
  });

  it("shows every whisker of 3 or more repetitions in full", () => {
    const bars = [bar("Q8_0", 100, 80, 3), bar("Q4_0", 150, 10, 5)];
    const { top } = barAxis(bars);
    expect(top).toBeGreaterThanOrEqual(180);
    expect(drawnBars(bars, top).some((b) => b.cut)).toBe(false);
  });

  it("clips the low end of a whisker at 0", () => {
    const [d] = drawnBars([bar("Q2_K", 10, 40, 2)], 100);
    expect(d.low).toBe(0);
    expect(d.high).toBe(50);
  });

  it("says what whiskers are, and warns when a bar has fewer than 3 repetitions", () => {
    const few = barNotes(drawnBars([bar("Q8_0", 100, 50, 2), bar("Q4_0", 120, 5, 5)], 200));
    expect(few.caption).toBe("Bars: mean; whiskers: 95% confidence interval of the mean over 2–5 repetitions (Student's t).");
    expect(few.warning).toBe("Fewer than 3 repetitions (Q8_0): the interval is wide; measure with more repetitions.");
    const all = barNotes(drawnBars([bar("Q8_0", 100, 50, 2)], 200));
    expect(all.caption).toContain("over 2 repetitions");
    expect(all.warning).toBe("Fewer than 3 repetitions: the interval is wide; measure with more repetitions.");
    const enough = barNotes(drawnBars([bar("Q8_0", 100, 5, 5)], 200));
    expect(enough.warning).toBeNull();
    expect(enough.cut).toBeNull();
  });

  it("tooltips give the value with its unit, the repetitions and the whole interval", () => {
    expect(barTitle(bar("Q8_0", 130.96667, 20.87173, 2), "t/s")).toBe(
      "Q8_0 · tg16\n131.0 t/s, mean of 2 repetitions\n95% CI 110.1 t/s to 151.8 t/s (± 20.87 t/s)\nfewer than 3 repetitions: the interval is wide",
    );
    expect(barTitle({ level: "F16", test: "pp64+tg16", mean: 124.6156, half: null, n: 1 }, "ms")).toBe(
      "F16 · pp64+tg16\n124.6 ms, mean of 1 repetition\none repetition: no interval",
    );
  });

  it("draws TTFT from the pp+tg test, in ms, with its repetitions", () => {
    const t = ttftBars(levelRows(doc));
    expect(t.map((b) => b.level)).toEqual(["F16", "Q8_0", "Q4_1", "Q4_0"]);
    expect(t[0]).toMatchObject({ test: "pp64+tg16", n: 2 });
    expect(t[0].mean).toBeCloseTo(124.6156, 3);
    expect(barChart(t, "ms").format(100)).toMatch(/ ms$/);
  });
});
