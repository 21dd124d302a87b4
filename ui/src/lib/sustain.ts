// A sustained decode in words and in chart rows: the burst against the
// sustained rate, when it dropped and why. Pure, so vitest checks it.
import type { CooldownRecord, Sustained } from "../types";

const CAUSE: Record<NonNullable<Sustained["cause"]>, string> = {
  throttling: "throttling",
  contention: "other programs",
  both: "throttling and other programs",
  unexplained: "unexplained",
};

/** "burst 141 t/s (first 15 s) → sustained 131 t/s (−7% from 12 s): other programs". */
export function sustainSummary(s: Sustained): string {
  // Which seconds the burst is of; runs stored before it was fixed say nothing.
  const window = s.burst_window_s > 0 ? ` (first ${s.burst_window_s.toFixed(0)} s)` : "";
  const head = `burst ${s.burst_tokens_per_s.toFixed(1)} t/s${window} → sustained ${s.sustained_tokens_per_s.toFixed(1)} t/s`;
  if (s.time_to_drop_s == null) {
    // A machine that warmed into a faster state (a governor ramping up, a
    // neighbour going quiet) rose: say so rather than only "no drop".
    return s.drop_pct <= -5 ? `${head} (rose ${(-s.drop_pct).toFixed(0)}%: no drop)` : `${head} (no drop: within 5%)`;
  }
  const why = s.cause ? `: ${CAUSE[s.cause]}` : "";
  return `${head} (−${s.drop_pct.toFixed(0)}% from ${s.time_to_drop_s.toFixed(0)} s)${why}`;
}

/** Chart rows of the rate, one per point (each the rate over the seconds up to its `t`). */
export function sustainRows(s: Sustained): { t: number; value: number; series: string }[] {
  return s.series.map((p) => ({ t: p.t_s, value: p.tokens_per_s, series: "decode t/s" }));
}

/** One panel of the machine chart: the series read in one unit, on their own axis. */
export interface MachinePanel {
  unit: string;
  /** The y axis label. */
  label: string;
  /** Every point of each series read; NaN where a reading is missing, so the line breaks there. */
  rows: { t: number; value: number; series: string }[];
}

type Pick = (p: Sustained["series"][number]) => number | null;

const PANELS: { unit: string; label: string; series: [string, Pick][] }[] = [
  { unit: "cores", label: "cores busy ↑", series: [["other programs", (p) => p.others_cpu_cores]] },
  {
    unit: "GHz",
    label: "clock GHz ↑",
    series: [
      ["CPU", (p) => (p.cpu_freq_mhz != null ? p.cpu_freq_mhz / 1000 : null)],
      ["GPU", (p) => (p.gpu_sm_clock_mhz != null ? p.gpu_sm_clock_mhz / 1000 : null)],
    ],
  },
  {
    unit: "°C",
    label: "temperature °C ↑",
    series: [
      ["CPU", (p) => p.cpu_temp_c],
      ["GPU", (p) => p.gpu_temp_c],
    ],
  },
  { unit: "W", label: "GPU power W ↑", series: [["GPU", (p) => p.gpu_power_w]] },
];

/**
 * What the machine was doing beside the rate, one panel per unit (cores,
 * GHz, °C, W) so no two units share an axis, holding only the series that
 * were read at all.
 */
export function sustainMachinePanels(s: Sustained): MachinePanel[] {
  const out: MachinePanel[] = [];
  for (const panel of PANELS) {
    const rows: MachinePanel["rows"] = [];
    for (const [series, pick] of panel.series) {
      if (!s.series.some((p) => pick(p) != null)) continue;
      for (const p of s.series) rows.push({ t: p.t_s, value: pick(p) ?? NaN, series });
    }
    if (rows.length) out.push({ unit: panel.unit, label: panel.label, rows });
  }
  return out;
}

/** How a cool-down wait before a run ended, in words. */
export function cooldownText(c: CooldownRecord): string {
  switch (c.end) {
    case "settled":
      return `waited ${(c.waited_ms / 1000).toFixed(0)} s, back to idle`;
    case "time_limit":
      return `still warm after the ${c.limit_s} s limit (${c.still.join(", ")}); measured anyway`;
    case "nothing_to_read":
      return "no temperature or clock readable here, nothing to wait for";
    case "cancelled":
      return "cancelled";
  }
}
