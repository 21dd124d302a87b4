import { describe, expect, it } from "vitest";
import ladder from "../fixtures/sweep-ladder.json";
import type { SweepDoc } from "../types";
import { sharedConditions } from "./conditions";
import { barData, levelRows, scatterPoints, scatterTitle } from "./sweepData";

const doc = ladder as unknown as SweepDoc;

describe("levelRows", () => {
  it("joins levels to their runs, highest precision first", () => {
    const rows = levelRows(doc);
    expect(rows.map((r) => r.level)).toEqual(["F16", "Q8_0", "Q4_1", "Q4_0"]);
    const f16 = rows[0];
    expect(f16.pp?.test).toBe("pp64");
    expect(f16.pp?.mean).toBeCloseTo(499.9667, 3);
    expect(f16.tg?.test).toBe("tg16");
    expect(f16.ttftMs?.mean).toBeCloseTo(124.6156, 3);
    expect(f16.kld).toBeCloseTo(0.002676, 5);
    expect(f16.rooflinePct).toBeCloseTo(78.974, 2);
    expect(f16.sizeBytes).toBe(270885952);
  });

  it("keeps a level that failed before any run, with its reason", () => {
    const failed: SweepDoc = {
      ...doc,
      sweep: {
        ...doc.sweep,
        levels: [
          ...doc.sweep.levels,
          {
            level: "Q2_K", origin: "quantized", path: null, status: "failed", error_code: "quantize_failed",
            error: "the quantizer ran out of disk", quality_error: null, quantize_ms: null, run_ids: [], pareto: false,
          },
        ],
      },
    };
    const rows = levelRows(failed);
    const q2 = rows.find((r) => r.level === "Q2_K")!;
    expect(q2.run).toBeNull();
    expect(q2.error).toBe("the quantizer ran out of disk");
    expect(barData(rows).some((b) => b.level === "Q2_K")).toBe(false);
  });

  it("draws the backend's interval, the one the JSON carries", () => {
    const f16 = doc.runs.find((r) => r.model.quant === "F16")!;
    const tg = f16.results.find((r) => r.test === "tg16")!;
    expect(tg.ci95_tokens_per_s).not.toBeNull();
    expect(levelRows(doc)[0].tg?.ci).toBe(tg.ci95_tokens_per_s);
    // Whatever a standard deviation would give: one interval everywhere.
    const moved = structuredClone(doc);
    const mt = moved.runs.find((r) => r.model.quant === "F16")!.results.find((r) => r.test === "tg16")!;
    mt.ci95_tokens_per_s = 1.25;
    expect(levelRows(moved)[0].tg?.ci).toBe(1.25);
  });

  it("makes bar data with whiskers that never go below zero", () => {
    const bars = barData(levelRows(doc));
    expect(bars.length).toBe(8);
    for (const b of bars) {
      expect(b.low).toBeGreaterThanOrEqual(0);
      expect(b.high).toBeGreaterThanOrEqual(b.mean);
      expect(b.high - b.mean).toBeCloseTo(b.half ?? 0, 9);
    }
  });

  it("places levels for the scatter charts with their repetitions, and titles them with units", () => {
    const rows = levelRows(doc);
    const size = scatterPoints(rows, "size");
    expect(size.map((p) => p.level)).toEqual(["F16", "Q8_0", "Q4_1", "Q4_0"]);
    expect(size[0]).toMatchObject({ x: 270885952, n: 2 });
    expect(scatterTitle(size[0], "size")).toBe("F16\ndecode 73.54 t/s, mean of 2 repetitions\nsize 258.3 MiB");
    const kld = scatterPoints(rows, "kld");
    expect(scatterTitle(kld[0], "kld")).toMatch(/^F16\ndecode 73\.54 t\/s, mean of 2 repetitions\nKLD 0\.00268 nats/);
  });
});

describe("conditions", () => {
  it("lists a sweep's shared conditions", () => {
    const c = Object.fromEntries(sharedConditions(doc.runs).map((x) => [x.label, x.value]));
    expect(c.threads).toBe("2");
    expect(c.tests).toBe("p 64 / n 16");
    expect(c.backend).toBe("CPU");
    expect(c.ngl).toBe("0 (auto)");
  });
});
