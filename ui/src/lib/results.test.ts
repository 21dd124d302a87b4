import { describe, expect, it } from "vitest";
import ladder from "../fixtures/sweep-ladder.json";
import type { Run, RunsDoc, SweepDoc } from "../types";
import { buildRows, filterRows, page } from "./results";

const doc = ladder as unknown as SweepDoc;

/** 1,000 runs cloned from the fixture, with distinct ids and dates. */
function manyRuns(n: number): RunsDoc {
  const base = doc.runs;
  const runs: Run[] = [];
  for (let i = 0; i < n; i++) {
    const r = base[i % base.length];
    runs.push({
      ...r,
      run_id: i + 1,
      status: i % 10 === 0 ? "failed" : "ok",
      started_at: new Date(Date.UTC(2027, 0, 1) + i * 60000).toISOString(),
    });
  }
  return { schema_version: 1, machine: doc.machine, runs };
}

describe("results rows", () => {
  it("builds, filters and pages 1,000 runs quickly", () => {
    const t0 = performance.now();
    const rows = buildRows(manyRuns(1000), [doc]);
    const filtered = filterRows(rows, { text: "q8_0", status: "ok", kind: "run" });
    const p = page(filtered, 0, 50);
    const ms = performance.now() - t0;
    expect(rows.length).toBe(1001);
    expect(filtered.every((r) => r.quant === "Q8_0" && r.status === "ok")).toBe(true);
    expect(p.items.length).toBe(50);
    expect(ms).toBeLessThan(200);
  });
  it("sorts newest first and targets sweeps as sweep:ID", () => {
    const rows = buildRows(manyRuns(3), [doc]);
    expect(rows[0].target).toBe("3");
    expect(rows.find((r) => r.kind === "sweep")!.target).toBe("sweep:1");
  });
  it("clamps the page index", () => {
    expect(page([1, 2, 3], 9, 2)).toEqual({ items: [3], pages: 2, index: 1 });
    expect(page([], 0, 2)).toEqual({ items: [], pages: 1, index: 0 });
  });
});
