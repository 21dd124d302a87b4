// A download's speed and time left, from the bytes seen so far. The rate is
// over this session's bytes only (a resumed download's earlier part came at
// another time), and nothing is promised before a second of data: a first
// burst from a buffer would otherwise claim a rate the link does not have.

import { fmtBytes } from "./format";

export interface RatePoint {
  /** Page clock (ms) and bytes on disk then. */
  atMs: number;
  done: number;
}

/** Bytes per second since `from`, or null until a second has passed. */
export function rate(from: RatePoint, now: RatePoint): number | null {
  const s = (now.atMs - from.atMs) / 1000;
  if (s < 1 || now.done <= from.done) return null;
  return (now.done - from.done) / s;
}

/** "12.5 MiB/s · 2 min left", or "" while unknown. */
export function rateText(from: RatePoint | null, now: RatePoint | null, total: number): string {
  if (!from || !now) return "";
  const r = rate(from, now);
  if (r == null) return "";
  const left = Math.max(0, total - now.done) / r;
  const eta = left < 90 ? `${Math.round(left)} s` : left < 5400 ? `${Math.round(left / 60)} min` : `${(left / 3600).toFixed(1)} h`;
  return `${fmtBytes(r)}/s · ${eta} left`;
}
