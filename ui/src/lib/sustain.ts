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

/** Chart rows: the rate, and each machine series that has readings. */
export function sustainRows(s: Sustained): { t: number; value: number; series: string }[] {
  const out: { t: number; value: number; series: string }[] = [];
  for (const p of s.series) {
    out.push({ t: p.t_s, value: p.tokens_per_s, series: "decode t/s" });
  }
  return out;
}

/** Which machine series were read beside the rate, for the second panel. */
export function sustainMachineRows(s: Sustained): { t: number; value: number; series: string }[] {
  const out: { t: number; value: number; series: string }[] = [];
  const add = (t: number, v: number | null, series: string) => {
    if (v != null) out.push({ t, value: v, series });
  };
  for (const p of s.series) {
    add(p.t_s, p.others_cpu_cores, "other programs (cores)");
    add(p.t_s, p.cpu_temp_c != null ? p.cpu_temp_c / 10 : null, "CPU °C ÷ 10");
    add(p.t_s, p.cpu_freq_mhz != null ? p.cpu_freq_mhz / 1000 : null, "CPU GHz");
    add(p.t_s, p.gpu_sm_clock_mhz != null ? p.gpu_sm_clock_mhz / 1000 : null, "GPU GHz");
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
