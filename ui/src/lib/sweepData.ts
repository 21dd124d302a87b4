// Shape a sweep document into one row per level for the tables and charts.
// Pure: the chart components only map these rows to marks.

import type { Run, Stats, SweepDoc, TestResult } from "../types";
import { fmtBytes, fmtRate, fmtSig } from "./format";

/** One measured figure with what a whisker needs. */
export interface Figure {
  test: string;
  mean: number;
  sd: number | null;
  n: number;
  /** Half-width of the 95% interval of the mean (null below 2 samples). */
  ci: number | null;
}

export interface LevelRow {
  level: string;
  status: string;
  error: string | null;
  qualityError: string | null;
  origin: string;
  pareto: boolean;
  run: Run | null;
  sizeBytes: number | null;
  bitsPerWeight: number | null;
  pp: Figure | null;
  tg: Figure | null;
  ttftMs: Figure | null;
  kld: number | null;
  kldP99: number | null;
  ppl: number | null;
  top1: number | null;
  isReference: boolean;
  rooflinePct: number | null;
  tokensPerJ: number | null;
  cpuUtilPct: number | null;
  rssPeakBytes: number | null;
  quantizeMs: number | null;
}

function fromStats(test: string, s: Stats | null | undefined): Figure | null {
  if (!s || !Number.isFinite(s.mean)) return null;
  const n = s.samples?.length ?? 0;
  // The backend's interval, the one the JSON and every export carry: a
  // figure has one interval everywhere.
  return { test, mean: s.mean, sd: s.stddev ?? null, n, ci: s.ci95 ?? null };
}

function headline(r: TestResult): Figure | null {
  if (r.mean_tokens_per_s == null) return null;
  const n = r.samples_tokens_per_s?.length ?? 0;
  return {
    test: r.test,
    mean: r.mean_tokens_per_s,
    sd: r.stddev_tokens_per_s,
    n,
    ci: r.ci95_tokens_per_s ?? null,
  };
}

const plain = (r: TestResult) => r.n_depth === 0 && r.n_parallel <= 1;
const measured = (r: TestResult) => r.status === "ok" || r.samples_tokens_per_s?.length > 0;

/** Prefill: the first plain ppN test, else the prefill phase of a pp+tg test. */
export function prefillOf(run: Run): Figure | null {
  const pp = run.results.find((r) => r.kind === "prompt" && plain(r) && measured(r));
  if (pp) return headline(pp);
  const pg = run.results.find((r) => r.kind === "prompt_gen" && plain(r) && r.prefill_tokens_per_s);
  return pg ? fromStats(pg.test, pg.prefill_tokens_per_s) : null;
}

/** Decode: the first plain tgN test, else the decode phase of a pp+tg test. */
export function decodeOf(run: Run): Figure | null {
  const tg = run.results.find((r) => r.kind === "gen" && plain(r) && measured(r));
  if (tg) return headline(tg);
  const pg = run.results.find((r) => r.kind === "prompt_gen" && plain(r) && measured(r));
  return pg ? headline(pg) : null;
}

/** TTFT in ms from the first plain pp+tg test. */
export function ttftOf(run: Run): Figure | null {
  const pg = run.results.find((r) => r.kind === "prompt_gen" && plain(r) && r.ttft_stats_ms);
  return pg ? fromStats(pg.test, pg.ttft_stats_ms) : null;
}

function rooflineOf(run: Run): number | null {
  const tg = run.results.find((r) => r.kind === "gen" && r.roofline_pct != null);
  return tg?.roofline_pct ?? run.results.find((r) => r.roofline_pct != null)?.roofline_pct ?? null;
}

/** One row per level, in the sweep's order (highest precision first). */
export function levelRows(doc: SweepDoc): LevelRow[] {
  const byId = new Map(doc.runs.map((r) => [r.run_id, r]));
  return doc.sweep.levels.map((l) => {
    // The latest attempt at a level is its last run id.
    const runId = l.run_ids.length ? l.run_ids[l.run_ids.length - 1] : null;
    const run = runId === null ? null : (byId.get(runId) ?? null);
    const q = run?.quality ?? null;
    return {
      level: l.level,
      status: l.status,
      error: l.error ?? run?.error ?? null,
      qualityError: l.quality_error,
      origin: l.origin,
      pareto: l.pareto,
      run,
      sizeBytes: run?.model.size_bytes ?? null,
      bitsPerWeight: run?.model.bits_per_weight ?? null,
      pp: run ? prefillOf(run) : null,
      tg: run ? decodeOf(run) : null,
      ttftMs: run ? ttftOf(run) : null,
      kld: q?.kld_mean ?? null,
      kldP99: q?.kld_p99 ?? null,
      ppl: q?.ppl ?? null,
      top1: q?.top1_agreement ?? null,
      isReference: q?.is_reference ?? false,
      rooflinePct: run ? rooflineOf(run) : null,
      tokensPerJ: run?.telemetry?.tokens_per_j ?? null,
      cpuUtilPct: run?.telemetry?.cpu_util_mean_pct ?? null,
      rssPeakBytes: run?.telemetry?.rss_peak_bytes ?? run?.peak_rss_bytes ?? null,
      quantizeMs: l.quantize_ms,
    };
  });
}

/** Long-format bars for the pp/tg chart: one datum per level and rate. */
export interface BarDatum {
  level: string;
  rate: "prefill" | "decode";
  test: string;
  mean: number;
  /** Half-width of the 95% interval (null below 2 repetitions). */
  half: number | null;
  /** The interval's ends, the low one never below 0 (a rate is never negative). */
  low: number;
  high: number;
  n: number;
}

export function barData(rows: LevelRow[]): BarDatum[] {
  const out: BarDatum[] = [];
  for (const r of rows) {
    for (const [rate, f] of [
      ["prefill", r.pp],
      ["decode", r.tg],
    ] as const) {
      if (!f) continue;
      const half = f.ci ?? 0;
      out.push({ level: r.level, rate, test: f.test, mean: f.mean, half: f.ci, low: Math.max(0, f.mean - half), high: f.mean + half, n: f.n });
    }
  }
  return out;
}

/** Bars for the TTFT chart: one per level with a pp+tg test. */
export function ttftBars(rows: LevelRow[]): { level: string; test: string; mean: number; half: number | null; n: number }[] {
  return rows
    .filter((r) => r.ttftMs)
    .map((r) => ({ level: r.level, test: r.ttftMs!.test, mean: r.ttftMs!.mean, half: r.ttftMs!.ci, n: r.ttftMs!.n }));
}

/** A level on the decode-against-size or -KLD chart. */
export interface ScatterPoint {
  level: string;
  /** Bytes, or KLD in nats. */
  x: number;
  /** Decode t/s. */
  y: number;
  n: number;
}

/** The levels with both figures, in the sweep's order. */
export function scatterPoints(rows: LevelRow[], against: "size" | "kld"): ScatterPoint[] {
  const out: ScatterPoint[] = [];
  for (const r of rows) {
    const x = against === "size" ? r.sizeBytes : r.kld;
    if (x == null || !Number.isFinite(x) || !r.tg) continue;
    out.push({ level: r.level, x, y: r.tg.mean, n: r.tg.n });
  }
  return out;
}

/** The tooltip of a level on the scatter chart, with units and repetitions. */
export function scatterTitle(p: ScatterPoint, against: "size" | "kld"): string {
  const x = against === "size" ? `size ${fmtBytes(p.x)}` : `KLD ${fmtSig(p.x)} nats against the reference`;
  return `${p.level}\ndecode ${fmtRate(p.y)}, mean of ${p.n} repetition${p.n === 1 ? "" : "s"}\n${x}`;
}
