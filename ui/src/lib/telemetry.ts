// A bounded buffer of live telemetry events in uPlot's column layout.

import type { JobEvent } from "../types";

type Telemetry = Extract<JobEvent, { kind: "telemetry" }>;

export interface TelemetrySeries {
  /** Seconds since the job started (x axis). */
  t: number[];
  cpuPct: (number | null)[];
  /** System RAM in use, whole machine (GiB). */
  ramGiB: (number | null)[];
  gpuPct: (number | null)[];
  powerW: (number | null)[];
  hasGpu: boolean;
  hasPower: boolean;
}

export function emptySeries(): TelemetrySeries {
  return { t: [], cpuPct: [], ramGiB: [], gpuPct: [], powerW: [], hasGpu: false, hasPower: false };
}

/** About 20 minutes at one reading per second; older readings scroll off. */
export const MAX_POINTS = 1200;

/**
 * Append one reading in place (uPlot reads these arrays directly). The x value
 * is the page's own clock for the job (`elapsedS`), so the chart never folds
 * back on itself whatever `t_s` counts from. A figure the machine cannot read
 * is null and leaves a gap, never a 0.
 */
export function pushTelemetry(s: TelemetrySeries, e: Telemetry, elapsedS: number): void {
  s.t.push(elapsedS);
  s.cpuPct.push(e.cpu_pct ?? null);
  s.ramGiB.push(e.ram_used_bytes == null ? null : e.ram_used_bytes / 1073741824);
  s.gpuPct.push(e.gpu_pct ?? null);
  s.powerW.push(e.power_w ?? null);
  if (e.gpu_pct != null) s.hasGpu = true;
  if (e.power_w != null) s.hasPower = true;
  if (s.t.length > MAX_POINTS) {
    const drop = s.t.length - MAX_POINTS;
    for (const a of [s.t, s.cpuPct, s.ramGiB, s.gpuPct, s.powerW]) a.splice(0, drop);
  }
}
