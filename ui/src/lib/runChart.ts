// A run's figures as two bar charts, prefill and decode apart (they differ
// by an order of magnitude and are different numbers): each pp test, and
// the prefill half of each pp+tg test, on one; each tg test, the decode half
// of each pp+tg test and a parallel test's total on the other. Bars carry
// their 95% interval and repetitions for lib/chartBars.ts.

import type { BarInput } from "./chartBars";
import type { Run, Stats } from "../types";

function bar(label: string, s: Stats | null, n: number): BarInput | null {
  if (!s || !Number.isFinite(s.mean)) return null;
  return { level: label, test: label, mean: s.mean, half: s.ci95 ?? null, n };
}

export function runBars(run: Run): { prefill: BarInput[]; decode: BarInput[] } {
  const prefill: BarInput[] = [];
  const decode: BarInput[] = [];
  for (const r of run.results.filter((x) => x.status === "ok")) {
    const n = r.samples_tokens_per_s.length;
    const push = (to: BarInput[], b: BarInput | null) => b && to.push(b);
    if (r.kind === "prompt") push(prefill, bar(r.test, r.prefill_tokens_per_s, n));
    else if (r.kind === "gen") push(decode, bar(r.test, r.decode_tokens_per_s, n));
    else if (r.kind === "prompt_gen") {
      push(prefill, bar(`${r.test} prefill`, r.prefill_tokens_per_s, n));
      push(decode, bar(`${r.test} decode`, r.decode_tokens_per_s, n));
    } else {
      push(prefill, bar(`${r.test} prefill`, r.prefill_tokens_per_s, n));
      push(decode, bar(`${r.test} total`, r.decode_tokens_per_s, n));
    }
  }
  return { prefill, decode };
}
