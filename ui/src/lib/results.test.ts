import { describe, expect, it } from "vitest";
import ladder from "../fixtures/sweep-ladder.json";
import type { Run, RunsDoc, SweepDoc } from "../types";
import { buildRows, filterRows, listRow, page, rowName, rowsFromList, shownStatus } from "./results";

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
  it("maps result_list rows as they come, filterable by file, level and arch", () => {
    const rows = rowsFromList([
      { target: "sweep:3", kind: "sweep", id: 3, title: "SmolLM2", file_name: "smol-Q8_0.gguf", quant: "Q8_0, Q4_0", arch: "llama",
        status: "ok", started_at: "2027-01-02T00:00:00Z", pp_mean: null, pp_test: null, tg_mean: null, tg_test: null, pp_disturbed: false, tg_disturbed: false, disturbed: [], levels: 2, sweep_id: null, machine: "Xeon · 2 threads · 24 GiB", this_machine: true, server: null, synthetic: null },
      { target: "12", kind: "run", id: 12, title: "SmolLM2", file_name: "smol-Q4_0.gguf", quant: "Q4_0", arch: "llama",
        status: "failed", started_at: "2027-01-01T00:00:00Z", pp_mean: 812.5, pp_test: "pp512", tg_mean: 41.2, tg_test: "tg128", pp_disturbed: false, tg_disturbed: false, disturbed: [], levels: 1, sweep_id: 3, machine: "Xeon · 2 threads · 24 GiB", this_machine: true, server: null, synthetic: null },
    ]);
    expect(rows.map((r) => r.target)).toEqual(["sweep:3", "12"]);
    expect(rows[1]).toMatchObject({ kind: "run", id: 12, quant: "Q4_0", status: "failed", startedAt: "2027-01-01T00:00:00Z",
      ppMean: 812.5, ppTest: "pp512", tgMean: 41.2, tgTest: "tg128", levels: 1 });
    expect(rows[0]).toMatchObject({ kind: "sweep", quant: "Q8_0, Q4_0", levels: 2, ppMean: null });
    expect(filterRows(rows, { text: "smol-q8_0", status: "", kind: "" }).map((r) => r.target)).toEqual(["sweep:3"]);
    expect(filterRows(rows, { text: "llama q4_0", status: "failed", kind: "run" }).map((r) => r.target)).toEqual(["12"]);
    expect(listRow(rows.length ? { ...rows[0], file_name: "", arch: "", started_at: "", pp_mean: null, pp_test: null, tg_mean: null, tg_test: null, pp_disturbed: false, tg_disturbed: false, disturbed: [], sweep_id: null, machine: "", this_machine: false } : (null as never)).haystack).toBe("smollm2  q8_0, q4_0  ");
  });
  it("shows a finished run whose figures were disturbed as 'disturbed', never a plain 'ok', and filters by it", () => {
    const base = { kind: "run" as const, title: "SmolLM2", file_name: "smol.gguf", quant: "Q4_1", arch: "llama", status: "ok",
      started_at: "2027-01-01T00:00:00Z", pp_mean: 121, pp_test: "pp128", tg_mean: 9.3, tg_test: "tg32", levels: 1, sweep_id: null,
      machine: "Xeon", this_machine: true, server: null, synthetic: null };
    const rows = rowsFromList([
      { ...base, target: "2", id: 2, pp_disturbed: false, tg_disturbed: true, disturbed: ["tg32"] },
      { ...base, target: "1", id: 1, pp_disturbed: false, tg_disturbed: false, disturbed: [] },
    ]);
    expect(rows.map(shownStatus)).toEqual(["disturbed", "ok"]);
    expect(rows[0]).toMatchObject({ tgDisturbed: true, ppDisturbed: false });
    expect(filterRows(rows, { text: "", status: "disturbed", kind: "" }).map((r) => r.target)).toEqual(["2"]);
    expect(filterRows(rows, { text: "", status: "ok", kind: "" }).map((r) => r.target)).toEqual(["1"]);
    // A failed run stays failed whatever else was disturbed.
    expect(shownStatus({ status: "failed", disturbed: ["tg32"] })).toBe("failed");
  });
  it("carries a synthetic model's label, and 'synthetic' in the filter finds its runs", () => {
    const base = { kind: "run" as const, title: "SmolLM2", file_name: "smol.gguf", quant: "Q4_1", arch: "llama", status: "ok",
      started_at: "2027-01-01T00:00:00Z", pp_mean: 121, pp_test: "pp128", tg_mean: 90, tg_test: "tg32", levels: 1, sweep_id: null,
      machine: "Xeon", this_machine: true, server: null, pp_disturbed: false, tg_disturbed: false, disturbed: [] };
    const rows = rowsFromList([
      { ...base, target: "2", id: 2, synthetic: "twin of SmolLM2 135M, seed 1" },
      { ...base, target: "1", id: 1, synthetic: null },
    ]);
    expect(rows.map((r) => r.synthetic)).toEqual(["twin of SmolLM2 135M, seed 1", null]);
    expect(filterRows(rows, { text: "synthetic", status: "", kind: "" }).map((r) => r.target)).toEqual(["2"]);
  });
  it("lists a server run with its server, filterable by kind and by the server's name", () => {
    const [row] = rowsFromList([
      { target: "serve:2", kind: "serve", id: 2, title: "SmolLM2-135M-Instruct.Q4_1.gguf", file_name: "SmolLM2-135M-Instruct.Q4_1.gguf",
        quant: "", arch: "", status: "ok", started_at: "2027-01-03T00:00:00Z", pp_mean: 502, pp_test: "pp128+tg32 @d0 c1",
        tg_mean: 176, tg_test: "pp128+tg32 @d0 c1", pp_disturbed: false, tg_disturbed: false, disturbed: [], levels: 1, sweep_id: null, machine: "Xeon · 2 threads · 24 GiB", this_machine: true,
        server: "llama-server b6000", synthetic: null },
    ]);
    expect(rowName(row)).toBe("server run 2");
    expect(row.server).toBe("llama-server b6000");
    expect(filterRows([row], { text: "llama-server", status: "", kind: "" })).toHaveLength(1);
    expect(filterRows([row], { text: "", status: "", kind: "serve" })).toHaveLength(1);
    expect(filterRows([row], { text: "", status: "", kind: "run" })).toHaveLength(0);
  });

  it("clamps the page index", () => {
    expect(page([1, 2, 3], 9, 2)).toEqual({ items: [3], pages: 2, index: 1 });
    expect(page([], 0, 2)).toEqual({ items: [], pages: 1, index: 0 });
  });
});
