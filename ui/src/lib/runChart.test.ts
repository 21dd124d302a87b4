import { describe, expect, it } from "vitest";
import ladder from "../fixtures/sweep-ladder.json";
import type { Run, SweepDoc } from "../types";
import { runBars } from "./runChart";

const run = (ladder as unknown as SweepDoc).runs[0] as Run;

describe("runBars", () => {
  it("puts prefill and decode of every test on their own charts, with intervals", () => {
    const { prefill, decode } = runBars(run);
    const ok = run.results.filter((r) => r.status === "ok");
    expect(prefill.map((b) => b.level)).toEqual(
      ok.filter((r) => r.kind !== "gen").map((r) => (r.kind === "prompt" ? r.test : `${r.test} prefill`)),
    );
    expect(decode.map((b) => b.level)).toEqual(
      ok.filter((r) => r.kind !== "prompt").map((r) => (r.kind === "gen" ? r.test : `${r.test} ${r.kind === "parallel" ? "total" : "decode"}`)),
    );
    const pp = ok.find((r) => r.kind === "prompt")!;
    expect(prefill[0]).toMatchObject({ mean: pp.prefill_tokens_per_s!.mean, half: pp.prefill_tokens_per_s!.ci95, n: pp.samples_tokens_per_s.length });
  });

  it("leaves out failed tests", () => {
    const failed = { ...run, results: run.results.map((r) => ({ ...r, status: "failed" as const })) };
    expect(runBars(failed)).toEqual({ prefill: [], decode: [] });
  });
});
