// A bounded buffer of live telemetry events in uPlot's column layout, and the
// stored timelines of a sweep's runs joined onto one time axis.

import type { TimelinePoint } from "../bindings";
import type { JobEvent } from "../types";

type Telemetry = Extract<JobEvent, { kind: "telemetry" }>;

export interface TelemetrySeries {
  /** Seconds since the job's sampler started (x axis), strictly increasing. */
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
 * is the reading's own `t_s` (seconds since the job's sampler started), never
 * the time it reached the page: the backend holds readings back while a test
 * is timed and sends them together when it ends, so arrival times would pile
 * a whole test onto one instant. uPlot needs x strictly increasing, so a
 * reading not after the last one (a repeat) is dropped; returns whether it
 * was kept. A figure the machine cannot read is null and leaves a gap, never
 * a 0.
 */
export function pushTelemetry(s: TelemetrySeries, e: Telemetry): boolean {
  if (!Number.isFinite(e.t_s)) return false;
  if (s.t.length && !(e.t_s > s.t[s.t.length - 1])) return false;
  s.t.push(e.t_s);
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
  return true;
}

/** One stored reading of a run's timeline (`telemetry` command, docs/app-api.md). */
export type { TimelinePoint } from "../bindings";

/** Where each level's run sits on the joined time axis. */
export interface TimelineSpan {
  label: string;
  from: number;
  to: number;
}

/**
 * Join the runs of a sweep into one series on one time axis, each run
 * starting where the previous ended, so the chart reads level after level.
 * Each run's own clock starts at its sampler; only the gaps between runs
 * (quantising, loading the next worker) are left out, and the spans say
 * which stretch is which level. Runs without readings get no span.
 */
export function timelineSeries(runs: { label: string; points: TimelinePoint[] }[]): {
  series: TelemetrySeries;
  spans: TimelineSpan[];
} {
  const s = emptySeries();
  const spans: TimelineSpan[] = [];
  let offset = 0;
  for (const r of runs) {
    if (r.points.length === 0) continue;
    const t0 = r.points[0].t_s;
    for (const p of r.points) {
      s.t.push(offset + (p.t_s - t0));
      s.cpuPct.push(p.cpu_pct);
      s.ramGiB.push(p.ram_used_bytes == null ? null : p.ram_used_bytes / 1073741824);
      s.gpuPct.push(p.gpu_pct);
      s.powerW.push(p.power_w);
      if (p.gpu_pct != null) s.hasGpu = true;
      if (p.power_w != null) s.hasPower = true;
    }
    const end = s.t[s.t.length - 1];
    spans.push({ label: r.label, from: offset, to: end });
    // A small step between runs keeps x strictly increasing for uPlot.
    offset = end + 0.1;
  }
  return { series: s, spans };
}
