// The bars-with-whiskers charts (speed and TTFT per level) as data: where the
// axis ends, which whiskers are cut at its top, the tooltip text and the
// notes under the chart. With 2 repetitions Student's t has one degree of
// freedom (12.7), so an honest 95% interval can be 4× the bar; drawn in full
// it squashes every bar. Such whiskers are cut at the top of the axis and
// marked, the tooltip gives the whole interval, and a note says why it is wide.

import { fmtMs, fmtRate } from "./format";
import { tickFormatter, zeroTicks } from "./chartAxis";

/** One bar: a mean over `n` repetitions and its 95% half-width (null below 2). */
export interface BarInput {
  level: string;
  test: string;
  mean: number;
  half: number | null;
  n: number;
}

/** A bar as drawn. */
export interface DrawnBar extends BarInput {
  /** The whisker's ends on the chart: at least 0, at most the axis top. */
  low: number;
  high: number;
  /** The interval runs past the top of the axis (drawn to it, and marked). */
  cut: boolean;
  /** Fewer than 3 repetitions: the whisker is drawn dashed. */
  few: boolean;
}

/** Repetitions below which the interval is too wide to read much into. */
export const MIN_REPS = 3;

/**
 * The axis for `bars`: every whisker of 3 or more repetitions in full, and
 * room for 1.5× the tallest bar, whatever a 2-repetition whisker would ask.
 */
export function barAxis(bars: BarInput[]): { top: number; ticks: number[] } {
  const headroom = bars.some((b) => b.n < MIN_REPS && b.half != null) ? 1.5 : 1.1;
  let want = 0;
  for (const b of bars) {
    want = Math.max(want, b.mean * headroom);
    if (b.n >= MIN_REPS && b.half != null) want = Math.max(want, b.mean + b.half);
  }
  const ticks = zeroTicks(want);
  return { top: ticks[ticks.length - 1], ticks };
}

/** The bars with their whiskers clipped to [0, top]. */
export function drawnBars(bars: BarInput[], top: number): DrawnBar[] {
  return bars.map((b) => {
    const half = b.half ?? 0;
    return {
      ...b,
      low: Math.max(0, b.mean - half),
      high: Math.min(top, b.mean + half),
      cut: b.mean + half > top,
      few: b.n < MIN_REPS,
    };
  });
}

export type BarUnit = "t/s" | "ms";
const fmtValue = (v: number, unit: BarUnit) => (unit === "ms" ? fmtMs(v) : fmtRate(v));

/** The tooltip of one bar: the value with its unit, the repetitions, the whole interval. */
export function barTitle(b: BarInput, unit: BarUnit): string {
  const lines = [`${b.level} · ${b.test}`, `${fmtValue(b.mean, unit)}, mean of ${b.n} repetition${b.n === 1 ? "" : "s"}`];
  if (b.half == null) lines.push("one repetition: no interval");
  else lines.push(`95% CI ${fmtValue(b.mean - b.half, unit)} to ${fmtValue(b.mean + b.half, unit)} (± ${fmtValue(b.half, unit)})`);
  if (b.n < MIN_REPS && b.half != null) lines.push(`fewer than ${MIN_REPS} repetitions: the interval is wide`);
  return lines.join("\n");
}

/** "2", "2–5": the repetitions behind a set of bars. */
function repsRange(bars: BarInput[]): string {
  const ns = bars.map((b) => b.n);
  const lo = Math.min(...ns);
  const hi = Math.max(...ns);
  return lo === hi ? String(lo) : `${lo}–${hi}`;
}

/**
 * What the notes under a chart say: what the whiskers are, a warning when
 * any bar has fewer than 3 repetitions, and what a ▲ means.
 */
export function barNotes(bars: DrawnBar[]): { caption: string; warning: string | null; cut: string | null } {
  if (bars.length === 0) return { caption: "", warning: null, cut: null };
  const caption = `Bars: mean; whiskers: 95% confidence interval of the mean over ${repsRange(bars)} repetitions (Student's t).`;
  const few = bars.filter((b) => b.n < MIN_REPS);
  let warning: string | null = null;
  if (few.length) {
    const which = few.length === bars.length ? "" : ` (${[...new Set(few.map((b) => b.level))].join(", ")})`;
    warning = `Fewer than ${MIN_REPS} repetitions${which}: the interval is wide; measure with more repetitions.`;
  }
  const cut = bars.some((b) => b.cut) ? "▲: the interval runs past the top of the chart; hover the bar for all of it." : null;
  return { caption, warning, cut };
}

/** Everything a bar chart needs, from its bars. */
export function barChart(bars: BarInput[], unit: BarUnit) {
  const axis = barAxis(bars);
  const drawn = drawnBars(bars, axis.top);
  return { ...axis, bars: drawn, format: tickFormatter(axis.ticks, unit), notes: barNotes(drawn) };
}
