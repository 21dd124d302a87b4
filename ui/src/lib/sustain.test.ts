import { describe, expect, it } from "vitest";
import { cooldownText, sustainMachinePanels, sustainRows, sustainSummary } from "./sustain";
import type { Sustained } from "../types";

function point(t: number, rate: number, others: number | null, mhz: number | null) {
  return { t_s: t, tokens_per_s: rate, cpu_freq_mhz: mhz, cpu_temp_c: null, gpu_sm_clock_mhz: null, gpu_temp_c: null, gpu_power_w: null, others_cpu_cores: others };
}

const dropped: Sustained = {
  duration_s: 30,
  burst_tokens_per_s: 140.2,
  burst_window_s: 15,
  sustained_tokens_per_s: 60.4,
  drop_pct: 56.9,
  time_to_drop_s: 12.3,
  cause: "contention",
  reasons: ["other programs went from 0.01 to 0.99 cores of the 2 in use (dyno-hog 0.99)"],
  series: [point(1, 140, 0.01, 2596), point(2, 141, null, 2596), point(13, 60, 0.99, null)],
};

describe("sustained decode", () => {
  it("says burst, sustained, when and why", () => {
    // A run stored before the burst window was fixed names none.
    expect(sustainSummary({ ...dropped, burst_window_s: 0 })).toBe("burst 140.2 t/s → sustained 60.4 t/s (−57% from 12 s): other programs");
    expect(sustainSummary(dropped)).toBe("burst 140.2 t/s (first 15 s) → sustained 60.4 t/s (−57% from 12 s): other programs");
    expect(sustainSummary({ ...dropped, time_to_drop_s: null, cause: null, drop_pct: 1 })).toBe(
      "burst 140.2 t/s (first 15 s) → sustained 60.4 t/s (no drop: within 5%)",
    );
    expect(sustainSummary({ ...dropped, sustained_tokens_per_s: 160, time_to_drop_s: null, cause: null, drop_pct: -14.1 })).toBe(
      "burst 140.2 t/s (first 15 s) → sustained 160.0 t/s (rose 14%: no drop)",
    );
  });

  it("charts the rate and only the machine series that were read, one unit per axis, with gaps left as gaps", () => {
    expect(sustainRows(dropped).map((r) => r.value)).toEqual([140, 141, 60]);
    const panels = sustainMachinePanels(dropped);
    // Cores and GHz each on their own axis; nothing read in °C or W.
    expect(panels.map((p) => p.unit)).toEqual(["cores", "GHz"]);
    expect(panels.map((p) => p.label)).toEqual(["cores busy ↑", "clock GHz ↑"]);
    // A missing reading is a break in the line, not a line drawn across it.
    expect(panels[0].rows.map((r) => r.value)).toEqual([0.01, NaN, 0.99]);
    expect(panels[1].rows.map((r) => [r.series, r.value])).toEqual([
      ["CPU", 2.596],
      ["CPU", 2.596],
      ["CPU", NaN],
    ]);
  });
});

describe("cool-down", () => {
  it("says how the wait ended", () => {
    const idle = { cpu_temp_c: 45, cpu_freq_mhz: null, gpu_temp_c: null, gpu_sm_clock_mhz: null };
    const base = { waited_ms: 42_400, limit_s: 120, idle, before: idle, after: idle, still: [] };
    expect(cooldownText({ ...base, end: "settled" })).toBe("waited 42 s, back to idle");
    expect(cooldownText({ ...base, end: "time_limit", still: ["CPU at 60 °C (idle 45 °C)"] })).toBe(
      "still warm after the 120 s limit (CPU at 60 °C (idle 45 °C)); measured anyway",
    );
  });
});
