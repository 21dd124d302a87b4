import { describe, expect, it } from "vitest";
import { concurrencySeries, parseList, ttftBars, ttftByDepth, ttftTail } from "./serve";
import type { ServeReport, ServeResult } from "../types";

const pct = (v: number) => ({ value: v, ci95_low: null, ci95_high: null });
const summary = (ttft: number, decode: number, total: number) => ({
  requests: 4,
  ok: 4,
  failed: 0,
  errors: [],
  retries: 0,
  token_source: "usage" as const,
  prompt_tokens_mean: 128,
  completion_tokens_mean: 32,
  cached_tokens_mean: 0,
  ttft_ms: { n: 4, mean: ttft, p50: pct(ttft), p90: pct(ttft + 80), p99: pct(ttft + 160), max: ttft + 170 },
  itl_ms: null,
  tpot_ms: null,
  e2e_ms: null,
  prefill_tokens_per_s: null,
  decode_tokens_per_s: { n: 4, mean: decode, p50: pct(decode), p90: pct(decode), p99: pct(decode), max: decode },
  server_prefill_tokens_per_s: null,
  server_decode_tokens_per_s: null,
  wall_ms: 1000,
  total_output_tokens_per_s: total,
  total_prompt_tokens_per_s: 0,
  requests_per_s: 4,
  goodput: null,
});
const test = (c: number, d: number, ttft: number, decode: number, total: number): ServeResult => ({
  test: `pp128+tg32 @d${d} c${c}`,
  n_prompt: 128,
  n_gen: 32,
  n_depth: d,
  concurrency: c,
  status: "ok",
  error: null,
  summary: summary(ttft, decode, total),
  samples: [],
});
const report = (results: ServeResult[]): ServeReport =>
  ({
    results,
    knees: [{ n_prompt: 128, n_gen: 32, n_depth: 0, concurrency: 2 }],
  }) as unknown as ServeReport;

describe("the Servers view's helpers", () => {
  it("reads lists and names a bad entry", () => {
    expect(parseList(" 1, 2,4 ", "Concurrency")).toEqual([1, 2, 4]);
    expect(parseList("0", "Depths", 0)).toEqual([0]);
    expect(parseList("1,x", "Concurrency")).toBe("Concurrency: 'x' is not a whole number");
    expect(parseList("0", "Concurrency")).toBe("Concurrency: 0 is below 1");
    expect(parseList(" , ", "Prompt")).toBe("Prompt: give at least one number");
  });

  it("keeps per-request and total throughput apart, sorted by concurrency, with the knee", () => {
    const r = report([test(4, 0, 900, 20, 70), test(1, 0, 300, 60, 60), test(2, 0, 500, 35, 68)]);
    const [s] = concurrencySeries(r);
    expect(s.label).toBe("pp128+tg32 @d0");
    expect(s.knee).toBe(2);
    expect(s.points.map((p) => p.concurrency)).toEqual([1, 2, 4]);
    expect(s.points.map((p) => p.perRequest)).toEqual([60, 35, 20]);
    expect(s.points.map((p) => p.total)).toEqual([60, 68, 70]);
  });

  it("gives TTFT percentiles per test and TTFT against depth at concurrency 1", () => {
    const r = report([test(1, 512, 800, 50, 50), test(1, 0, 300, 60, 60), test(2, 0, 500, 35, 68)]);
    // Four requests: the median and their maximum, never a "p99" of four.
    expect(ttftBars(r).slice(0, 2)).toEqual([
      { test: "pp128+tg32 @d512 c1", pct: "p50", ms: 800 },
      { test: "pp128+tg32 @d512 c1", pct: "max", ms: 970 },
    ]);
    expect(ttftTail(r.results[0].summary.ttft_ms)).toBe("970 (max of 4)");
    const big = { ...r.results[0].summary.ttft_ms!, n: 100 };
    expect(ttftTail(big)).toBe("960 (p99)");
    expect(ttftTail({ ...big, n: 12 })).toBe("880 (p90)");
    expect(ttftByDepth(r)).toEqual([
      { depth: 0, ttft: 300 },
      { depth: 512, ttft: 800 },
    ]);
  });
});
