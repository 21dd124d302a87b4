// Offload sweeps: tokens/s against layers on the GPU, one line per test and
// rate. Prefill and decode are separate lines (and separate panels), never
// one blended figure: offloading moves them very differently.

import type { OffloadSeries } from "../types";

export interface OffloadPointRow {
  layers: number;
  /** "pp512 prefill", "tg128 decode". */
  series: string;
  rate: "prefill" | "decode" | string;
  mean: number;
  low: number;
  high: number;
  runId: number;
}

/** Plot rows of one series, ordered by layers; failed points have no row. */
export function offloadRows(s: OffloadSeries): OffloadPointRow[] {
  const out: OffloadPointRow[] = [];
  for (const p of s.points) {
    for (const t of p.tests) {
      const half = t.ci95_tokens_per_s ?? 0;
      out.push({
        layers: p.n_gpu_layers,
        series: `${t.test} ${t.rate}`,
        rate: t.rate,
        mean: t.mean_tokens_per_s,
        low: Math.max(0, t.mean_tokens_per_s - half),
        high: t.mean_tokens_per_s + half,
        runId: p.run_id,
      });
    }
  }
  return out.sort((a, b) => a.layers - b.layers || a.series.localeCompare(b.series));
}

/** The best layer count per line, as "tg128 decode: 31 layers, 3.2× CPU". */
export function offloadGains(s: OffloadSeries): string[] {
  const rows = offloadRows(s);
  const names = [...new Set(rows.map((r) => r.series))];
  return names.map((name) => {
    const line = rows.filter((r) => r.series === name);
    const best = line.reduce((a, b) => (b.mean > a.mean ? b : a));
    const cpu = line.find((r) => r.layers === 0);
    const gain = cpu && cpu.mean > 0 ? `, ${(best.mean / cpu.mean).toFixed(2)}× CPU only` : "";
    return `${name}: best at ${best.layers} layers${gain}`;
  });
}
