import { describe, expect, it } from "vitest";
import type { JobEvent } from "../types";
import { emptySeries, MAX_POINTS, pushTelemetry, timelineSeries, type TimelinePoint } from "./telemetry";

type Telemetry = Extract<JobEvent, { kind: "telemetry" }>;
const none = { gpu_pct: null, power_w: null, vram_bytes: null };
const reading = (t_s: number, cpu: number | null = 50): Telemetry => ({ kind: "telemetry", t_s, cpu_pct: cpu, ram_used_bytes: 2 * 1073741824, ...none });

describe("telemetry buffer", () => {
  it("appends in uPlot's column layout and scrolls old readings off", () => {
    const s = emptySeries();
    pushTelemetry(s, reading(0));
    expect(s.ramGiB).toEqual([2]);
    expect(s.hasGpu).toBe(false);
    pushTelemetry(s, { kind: "telemetry", t_s: 1, cpu_pct: null, ram_used_bytes: null, gpu_pct: 10, power_w: 30, vram_bytes: 1e9 });
    expect(s.hasGpu && s.hasPower).toBe(true);
    expect(s.cpuPct[1]).toBeNull(); // unreadable: a gap, not 0
    expect(s.ramGiB[1]).toBeNull();
    for (let i = 0; i < MAX_POINTS + 10; i++) pushTelemetry(s, reading(2 + i, 1));
    expect(s.t.length).toBe(MAX_POINTS);
    expect(s.cpuPct.length).toBe(MAX_POINTS);
    expect(s.t[0]).toBe(12);
  });

  it("places each reading at its own t_s, so a burst held back during a test keeps its time span", () => {
    // 164 readings taken a second apart during a timed test, all delivered
    // in the same instant when it ended: the axis must span 164 s, not 0.03 s.
    const s = emptySeries();
    for (let i = 1; i <= 164; i++) pushTelemetry(s, reading(i + 0.49));
    expect(s.t[0]).toBeCloseTo(1.49, 6);
    expect(s.t.at(-1)! - s.t[0]).toBeCloseTo(163, 6);
  });

  it("keeps x strictly increasing: a reading not after the last one is dropped", () => {
    const s = emptySeries();
    expect(pushTelemetry(s, reading(1))).toBe(true);
    expect(pushTelemetry(s, reading(2))).toBe(true);
    expect(pushTelemetry(s, reading(2))).toBe(false);
    expect(pushTelemetry(s, reading(1.5))).toBe(false);
    expect(pushTelemetry(s, reading(Number.NaN))).toBe(false);
    expect(pushTelemetry(s, reading(3))).toBe(true);
    expect(s.t).toEqual([1, 2, 3]);
    expect(s.cpuPct.length).toBe(3);
  });
});

describe("telemetry timeline", () => {
  const pt = (t_s: number, cpu: number | null): TimelinePoint => ({
    t_s, phase: "timed", cpu_pct: cpu, ram_used_bytes: 2 * 1073741824, rss_bytes: 1e8, gpu_pct: null, power_w: null, vram_bytes: null,
  });
  it("joins runs level after level on one rising axis, with a span per level", () => {
    const { series, spans } = timelineSeries([
      { label: "Q8_0", points: [pt(5, 90), pt(7, null)] },
      { label: "Q6_K", points: [] },
      { label: "Q4_0", points: [pt(0.5, 80), pt(1.5, 85)] },
    ]);
    expect(series.t).toEqual([0, 2, 2.1, 3.1]);
    expect(series.t.every((t, i) => i === 0 || t > series.t[i - 1])).toBe(true);
    expect(series.cpuPct).toEqual([90, null, 80, 85]); // a missing reading stays a gap
    expect(series.ramGiB).toEqual([2, 2, 2, 2]);
    expect(series.hasGpu).toBe(false);
    expect(spans).toEqual([
      { label: "Q8_0", from: 0, to: 2 },
      { label: "Q4_0", from: 2.1, to: 3.1 },
    ]);
  });
});
