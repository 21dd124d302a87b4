import { describe, expect, it } from "vitest";
import type { OffloadSeries } from "../types";
import { offloadGains, offloadRows } from "./offload";

const series: OffloadSeries = {
  model: "m.gguf",
  sha256: "x",
  conditions: "threads 2",
  points: [
    {
      run_id: 7,
      n_gpu_layers: 31,
      layers_total: 31,
      status: "ok",
      tests: [
        { test: "pp512", rate: "prefill", mean_tokens_per_s: 900, ci95_tokens_per_s: 10 },
        { test: "tg128", rate: "decode", mean_tokens_per_s: 60, ci95_tokens_per_s: null },
      ],
    },
    {
      run_id: 5,
      n_gpu_layers: 0,
      layers_total: 31,
      status: "ok",
      tests: [
        { test: "pp512", rate: "prefill", mean_tokens_per_s: 300, ci95_tokens_per_s: 400 },
        { test: "tg128", rate: "decode", mean_tokens_per_s: 40, ci95_tokens_per_s: 1 },
      ],
    },
    { run_id: 6, n_gpu_layers: 16, layers_total: 31, status: "failed", tests: [] },
  ],
};

describe("offload sweep", () => {
  it("orders points by layers and keeps prefill and decode apart", () => {
    const rows = offloadRows(series);
    expect(rows.map((r) => [r.layers, r.series])).toEqual([
      [0, "pp512 prefill"],
      [0, "tg128 decode"],
      [31, "pp512 prefill"],
      [31, "tg128 decode"],
    ]);
    expect(rows[0].low).toBe(0);
    expect(rows[2].high).toBe(910);
    expect(rows[3].low).toBe(60);
  });

  it("names the best layer count and the gain over CPU only per line", () => {
    expect(offloadGains(series)).toEqual([
      "pp512 prefill: best at 31 layers, 3.00× CPU only",
      "tg128 decode: best at 31 layers, 1.50× CPU only",
    ]);
  });
});
