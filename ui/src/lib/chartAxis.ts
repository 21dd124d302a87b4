// Axis ticks for the charts: a few round values that carry their unit
// ("250 t/s", "1.5 GiB", "2 min"), and margins wide enough for the longest
// label, so no axis prints "24.468540" or runs its labels into each other.
// Pure, so the choices are pinned by tests rather than by looking at charts.

export type AxisUnit = "t/s" | "ms" | "%" | "MiB" | "GiB" | "W" | "";

/** A round step (1, 2 or 5 × 10^k) that cuts `span` into about `count` parts. */
export function niceStep(span: number, count = 5): number {
  if (!(span > 0) || !Number.isFinite(span)) return 1;
  const raw = span / Math.max(1, count);
  const mag = 10 ** Math.floor(Math.log10(raw));
  const f = raw / mag;
  return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * mag;
}

/**
 * Ticks from 0 to the first round value at or above `max` ([0, 50, 100, 150]):
 * the axis of a bar chart, whose bars must start at 0 to compare by length.
 */
export function zeroTicks(max: number, count = 5): number[] {
  const top = Number.isFinite(max) && max > 0 ? max : 1;
  const step = niceStep(top, count);
  const n = Math.ceil(top / step - 1e-9);
  // Rounding through toPrecision keeps 0.30000000000000004 out of the labels.
  return Array.from({ length: n + 1 }, (_, i) => Number((i * step).toPrecision(12)));
}

/** Decimals a step between ticks needs: 0 for 50, 1 for 0.5, 2 for 0.25. */
export function stepDecimals(step: number): number {
  if (!(step > 0) || !Number.isFinite(step)) return 0;
  for (let d = 0; d < 6; d++) {
    if (Math.abs(Math.round(step * 10 ** d) - step * 10 ** d) < 1e-6) return d;
  }
  return 6;
}

const fmts = new Map<number, Intl.NumberFormat>();
function grouped(v: number, decimals: number): string {
  let f = fmts.get(decimals);
  if (!f) {
    f = new Intl.NumberFormat("en-US", { minimumFractionDigits: decimals, maximumFractionDigits: decimals });
    fmts.set(decimals, f);
  }
  return f.format(v);
}

/** One tick label: the value at `decimals`, then its unit ("1,500 t/s", "50%"). */
export function fmtTick(v: number, unit: AxisUnit, decimals = 0): string {
  const s = grouped(v, decimals);
  if (unit === "%") return `${s}%`;
  return unit ? `${s} ${unit}` : s;
}

/** A formatter for a known set of evenly spaced ticks: one precision for all of them. */
export function tickFormatter(ticks: number[], unit: AxisUnit): (v: number) => string {
  const step = ticks.length > 1 ? Math.abs(ticks[1] - ticks[0]) : Math.abs(ticks[0] ?? 1);
  const d = stepDecimals(step);
  return (v) => fmtTick(v, unit, d);
}

/** Average glyph width of Plot's 10 px sans-serif labels, a little generous. */
const CHAR_PX = 6.2;

/**
 * Left margin (px) for a y axis whose widest tick label is one of `labels`:
 * the text, the tick and a gap, so labels never run off the figure or into
 * the axis line.
 */
export function marginFor(labels: string[], min = 40): number {
  const chars = labels.reduce((m, l) => Math.max(m, l.length), 0);
  return Math.max(min, Math.ceil(chars * CHAR_PX) + 14);
}

/**
 * How to set level names under bars of a `width`-px chart: flat while each
 * fits its band, else turned 30° with the bottom margin the turned text needs.
 */
export function bandLabels(labels: string[], width: number, marginLeft: number): { rotate: number; marginBottom: number } {
  const chars = labels.reduce((m, l) => Math.max(m, l.length), 0);
  const band = (width - marginLeft - 20) / Math.max(1, labels.length);
  const textPx = chars * CHAR_PX;
  if (textPx <= band - 6) return { rotate: 0, marginBottom: 30 };
  return { rotate: -30, marginBottom: Math.ceil(textPx * Math.sin(Math.PI / 6)) + 18 };
}

/** The binary unit sizes on an axis read best in: MiB below 1 GiB, else GiB. */
export function sizeUnit(maxBytes: number): { unit: "MiB" | "GiB"; bytes: number } {
  return maxBytes >= 1073741824 ? { unit: "GiB", bytes: 1073741824 } : { unit: "MiB", bytes: 1048576 };
}

/**
 * Ticks for a symlog KLD axis: 0, then every decade from the smallest
 * non-zero value's to the first at or above the largest ([0, 0.001, 0.01]).
 */
export function kldTicks(values: number[]): number[] {
  const pos = values.filter((v) => Number.isFinite(v) && v > 0);
  if (pos.length === 0) return [0, 0.001];
  const lo = Math.floor(Math.log10(Math.min(...pos)));
  const hi = Math.max(lo, Math.ceil(Math.log10(Math.max(...pos))));
  const out = [0];
  for (let k = lo; k <= hi; k++) out.push(Number((10 ** k).toPrecision(3)));
  return out;
}

/** A KLD tick: "0", "0.001", "1e-5". */
export function fmtKldTick(v: number): string {
  if (v === 0) return "0";
  return v >= 1e-4 ? String(v) : v.toExponential(0);
}

/**
 * Steps (s) uPlot may put between time ticks: round seconds, then whole
 * minutes, so a long run reads "5 min", "10 min" rather than "300", "600".
 */
export const SECOND_INCRS = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200];

/** A time tick in seconds since the job began: "45 s", "2 min", "2:30". */
export function fmtAxisSeconds(v: number): string {
  if (!Number.isFinite(v)) return "";
  const s = Math.round(v);
  if (Math.abs(s) < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  const rest = s - m * 60;
  if (rest === 0) return m >= 60 && m % 60 === 0 ? `${m / 60} h` : `${m} min`;
  return `${m}:${String(rest).padStart(2, "0")}`;
}

/** Labels for uPlot's value ticks: the step's precision and the unit. */
export function uplotTicks(splits: number[], unit: AxisUnit): string[] {
  return splits.map(tickFormatter(splits, unit));
}
