// Helpers of the Servers view: reading the form's lists and shaping a
// server run's figures for its charts. Pure functions, unit-tested.

import type { ServeReport, ServeResult } from "../types";

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

/** One bar group of the latency chart: a test's p50, p90 and p99. */
export interface LatencyBars {
  test: string;
  p50: number;
  p90: number;
  p99: number;
}

/** TTFT percentiles per test, for tests that have them. */
export function ttftBars(r: ServeReport): LatencyBars[] {
  return r.results.flatMap((t) => {
    const p = t.summary.ttft_ms;
    return p ? [{ test: t.test, p50: p.p50.value, p90: p.p90.value, p99: p.p99.value }] : [];
  });
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
