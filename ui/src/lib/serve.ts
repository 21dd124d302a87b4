// Helpers of the Servers view: reading the form's lists and shaping a
// server run's figures for its charts. Pure functions, unit-tested.

import type { Percentiles, ServeReport, ServeResult } from "../types";
import { fmtSig } from "./format";

/** Each server kind as people write it. */
export const SERVER_KINDS: Record<ServeReport["server"]["kind"], string> = {
  llama_server: "llama-server",
  ollama: "Ollama",
  lm_studio: "LM Studio",
  vllm: "vLLM",
  open_ai: "OpenAI-compatible",
};

/**
 * "1, 2,4" → [1, 2, 4]. Every entry must be a whole number ≥ `min`; the
 * error says which entry is wrong, in the form's words.
 */
export function parseList(text: string, what: string, min = 1): number[] | string {
  const parts = text
    .split(",")
    .map((p) => p.trim())
    .filter((p) => p.length > 0);
  if (parts.length === 0) return `${what}: give at least one number`;
  const out: number[] = [];
  for (const p of parts) {
    if (!/^\d+$/.test(p)) return `${what}: '${p}' is not a whole number`;
    const n = Number(p);
    if (n < min) return `${what}: ${n} is below ${min}`;
    out.push(n);
  }
  return out;
}

/** One bar of the latency chart: a test, a percentile's name, its value. */
export interface LatencyBar {
  test: string;
  pct: string;
  ms: number;
}

/**
 * The percentiles a sample of `n` supports beyond the median: p90 from 10
 * values, p99 from 100. Below 10 the tail is the largest value, named so:
 * the "p99" of five requests is their maximum.
 */
function tails(p: Percentiles): { pct: string; ms: number }[] {
  if (p.n >= 100) return [{ pct: "p90", ms: p.p90.value }, { pct: "p99", ms: p.p99.value }];
  if (p.n >= 10) return [{ pct: "p90", ms: p.p90.value }];
  return [{ pct: "max", ms: p.max }];
}

/** TTFT per test: the median and the tail its sample supports. */
export function ttftBars(r: ServeReport): LatencyBar[] {
  return r.results.flatMap((t) => {
    const p = t.summary.ttft_ms;
    return p ? [{ test: t.test, pct: "p50", ms: p.p50.value }, ...tails(p).map((b) => ({ test: t.test, ...b }))] : [];
  });
}

/** "960 (p99)", "880 (p90)", "912 (max of 5)": the tail a table can honestly show. */
export function ttftTail(p: Percentiles | null): string {
  if (!p) return "–";
  const top = tails(p)[tails(p).length - 1];
  return `${fmtSig(top.ms, 4)} (${top.pct === "max" ? `max of ${p.n}` : top.pct})`;
}

/** One point of the concurrency chart. */
export interface ConcurrencyPoint {
  concurrency: number;
  /** Median decode rate of one request. */
  perRequest: number | null;
  /** Output tokens per second across all requests together. */
  total: number;
}

/** A concurrency series: tests that differ only in concurrency. */
export interface ConcurrencySeries {
  label: string;
  points: ConcurrencyPoint[];
  knee: number | null;
}

const groupKey = (t: ServeResult) => `pp${t.n_prompt}+tg${t.n_gen} @d${t.n_depth}`;

/** Per-request against total throughput, one series per prompt/gen/depth. */
export function concurrencySeries(r: ServeReport): ConcurrencySeries[] {
  const groups = new Map<string, ServeResult[]>();
  for (const t of r.results) {
    if (t.status !== "ok") continue;
    const k = groupKey(t);
    groups.set(k, [...(groups.get(k) ?? []), t]);
  }
  return [...groups.entries()].map(([label, ts]) => {
    const knee = r.knees.find((k) => `pp${k.n_prompt}+tg${k.n_gen} @d${k.n_depth}` === label);
    return {
      label,
      knee: knee ? knee.concurrency : null,
      points: ts
        .map((t) => ({
          concurrency: t.concurrency,
          perRequest: t.summary.decode_tokens_per_s?.p50.value ?? null,
          total: t.summary.total_output_tokens_per_s,
        }))
        .sort((a, b) => a.concurrency - b.concurrency),
    };
  });
}

/** TTFT (p50) against depth, for tests at concurrency 1. */
export function ttftByDepth(r: ServeReport): { depth: number; ttft: number }[] {
  return r.results
    .filter((t) => t.concurrency === 1 && t.status === "ok" && t.summary.ttft_ms)
    .map((t) => ({ depth: t.n_depth, ttft: t.summary.ttft_ms!.p50.value }))
    .sort((a, b) => a.depth - b.depth);
}
