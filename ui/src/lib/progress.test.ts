import { describe, expect, it } from "vitest";
import type { JobEvent } from "../types";
import { finish, initialProgress, ratio, reduce, startedProgress, statusLine, type ProgressEvent } from "./progress";

/** The state after `events`, each arriving 1 s after the one before. */
const run = (events: ProgressEvent[]) => events.reduce((s, e, i) => reduce(s, e, (i + 1) * 1000), startedProgress("starting", 0));

describe("progress reducer", () => {
  it("follows a sweep level by level", () => {
    const s = run([
      { kind: "level", level: "Q8_0", index: 0, total: 2 },
      { kind: "quantizing", level: "Q8_0" },
      { kind: "quantize_progress", done: 50, total: 200 },
      { kind: "loading", model: "m-Q8_0.gguf" },
      { kind: "test_started", run_id: 7, test: "pp128", quiet: false, reps: 5, warmup: true },
      { kind: "sample", run_id: 7, test: "pp128", rep: 1, reps: 2 },
    ]);
    const quiet = run([{ kind: "test_started", run_id: 7, test: "tg32", quiet: true, reps: 5, warmup: true }]);
    expect(quiet.activity).toBe("warm-up, then 5 timed repetitions of tg32; only the clock moves until it ends");
    expect([quiet.testReps, quiet.warmup]).toEqual([5, true]);
    const noWarmup = run([{ kind: "test_started", run_id: 7, test: "tg32", quiet: true, reps: 1, warmup: false }]);
    expect(noWarmup.activity).toBe("1 timed repetition of tg32; only the clock moves until it ends");
    expect(quiet.quiet).toBe(true);
    expect(reduce(quiet, { kind: "test_finished", run_id: 7, test: "tg32", status: "ok", error: null }).quiet).toBe(false);
    expect(s.level).toBe("Q8_0");
    expect(s.total).toBe(2);
    expect(ratio(s.quantize)).toBe(0.25);
    expect(s.model).toBe("m-Q8_0.gguf");
    expect(statusLine(s)).toBe("running: level 1/2 Q8_0 — pp128 rep 1/2");
    // A benchmark's models are counted as models, and one is named alone.
    expect(statusLine(s, "model")).toBe("running: model 1/2 Q8_0 — pp128 rep 1/2");
    expect(statusLine({ ...s, total: 1 }, "model")).toBe("running: Q8_0 — pp128 rep 1/2");
    expect(s.levels).toEqual([{ level: "Q8_0", status: "running", error: null, quality: null }]);
    expect(s.benchStartMs).toBe(1000);
  });

  it("resets per-level bars on a new level and records failures", () => {
    const s = run([
      { kind: "level", level: "Q8_0", index: 0, total: 2 },
      { kind: "quality", level: "Q8_0", reference: true },
      { kind: "quality_progress", done: 512, total: 1024 },
      { kind: "level_finished", level: "Q8_0", status: "ok", error: null },
      { kind: "level", level: "Q2_K", index: 1, total: 2 },
      { kind: "level_finished", level: "Q2_K", status: "failed", error: "quantize_failed: out of disk" },
    ]);
    expect(s.quality).toBeNull();
    expect(s.levels.map((l) => l.status)).toEqual(["ok", "failed"]);
    expect(s.levels[1].error).toContain("out of disk");
    expect(statusLine(finish(s, "done"))).toBe("done (1 level failed)");
  });

  it("turns the headline to the quality pass, reading `reference` as the boolean the backend sends", () => {
    const measured = run([
      { kind: "level", level: "Q8_0", index: 0, total: 2 },
      { kind: "test_started", run_id: 1, test: "tg128", quiet: true, reps: 5, warmup: true },
      { kind: "test_finished", run_id: 1, test: "tg128", status: "ok", error: null },
      { kind: "level_finished", level: "Q8_0", status: "ok", error: null },
      { kind: "level", level: "Q4_1", index: 1, total: 2 },
      { kind: "test_started", run_id: 2, test: "tg128", quiet: true, reps: 5, warmup: true },
      { kind: "test_finished", run_id: 2, test: "tg128", status: "ok", error: null },
      { kind: "level_finished", level: "Q4_1", status: "ok", error: null },
    ]);
    expect(statusLine(measured)).toBe("running: level 2/2 Q4_1 — tg128");

    const ref = reduce(measured, { kind: "quality", level: "Q8_0", reference: true }, 20_000);
    expect(statusLine(ref)).toBe("running: quality — computing the reference (Q8_0)");
    expect(ref.activity).not.toContain("true");
    expect(ref.levels[0].quality).toBe("running");

    const scoring = reduce(ref, { kind: "quality", level: "Q4_1", reference: false }, 50_000);
    expect(statusLine(scoring)).toBe("running: quality — scoring Q4_1 against the reference");
    expect(scoring.activity).toBe("quality: scoring Q4_1 against the reference");
    // The reference pass ended when the next began: one pass of 30 s.
    expect(scoring.qualityPasses).toBe(1);
    expect(scoring.qualityPassesMs).toBe(30_000);
    expect(scoring.levels.map((l) => l.quality)).toEqual(["done", "running"]);

    // The last token scored is not the end: the pass still writes its
    // scores. The backend's quality_done is.
    const lastToken = reduce(scoring, { kind: "quality_progress", done: 8192, total: 8192 }, 70_000);
    expect(lastToken.qualityPasses).toBe(1);
    const scored = reduce(lastToken, { kind: "quality_done", level: "Q4_1" }, 71_000);
    expect(scored.qualityPasses).toBe(2);
    expect(scored.qualityPassesMs).toBe(51_000);
    expect(scored.activity).toBe("quality of Q4_1 done");
    expect(scored.qualityPassStartMs).toBeNull();
    expect(finish(scored, "done", null, 72_000).qualityPasses).toBe(2);
  });

  it("keeps a measured level ok when only its quality is skipped", () => {
    const s = run([
      { kind: "level", level: "Q8_0", index: 0, total: 1 },
      { kind: "level_finished", level: "Q8_0", status: "ok", error: null },
      { kind: "skipped", level: "Q8_0", why: "quality already measured against the same reference" },
    ]);
    expect(s.levels).toEqual([{ level: "Q8_0", status: "ok", error: null, quality: "skipped" }]);
    expect(s.qualitySkipped).toBe(1);
    // A level skipped as it begins (resumed) is skipped itself.
    const resumed = run([
      { kind: "level", level: "Q8_0", index: 0, total: 1 },
      { kind: "skipped", level: "Q8_0", why: "already measured" },
    ]);
    expect(resumed.levels[0].status).toBe("skipped");
  });

  it("never says done, failed or cancelled in the headline while the job runs", () => {
    const s = run([
      { kind: "level", level: "Q2_K", index: 0, total: 2 },
      { kind: "level_finished", level: "Q2_K", status: "failed", error: "bad_file: not a GGUF" },
      { kind: "level", level: "Q4_0", index: 1, total: 2 },
      { kind: "loading", model: "m-Q4_0.gguf" },
    ]);
    expect(statusLine(s)).toBe("running: level 2/2 Q4_0 — loading");
    const failedBeforeTests = run([
      { kind: "level", level: "Q2_K", index: 0, total: 2 },
      { kind: "level_finished", level: "Q2_K", status: "failed", error: "bad_file: not a GGUF" },
    ]);
    expect(statusLine(failedBeforeTests)).not.toMatch(/done|failed|cancelled/);
  });

  it("says done, failed or cancelled once the job ends, and what became of a level cut short", () => {
    expect(statusLine(finish(startedProgress(), "done"))).toBe("done");
    expect(statusLine(finish(startedProgress(), "failed", "busy"))).toBe("failed: busy");
    expect(statusLine(finish(startedProgress(), "cancelled"))).toBe("cancelled");
    expect(statusLine(initialProgress())).toBe("idle");
    const mid = run([
      { kind: "level", level: "Q8_0", index: 0, total: 2 },
      { kind: "test_started", run_id: 1, test: "pp512", quiet: true, reps: 5, warmup: true },
    ]);
    const cancelled = finish(mid, "cancelled", null, 9000);
    expect(cancelled.levels[0].status).toBe("cancelled");
    expect(cancelled.quiet).toBe(false);
    expect(cancelled.endedMs).toBe(9000);
    const failed = finish(mid, "failed", "the worker died");
    expect(failed.levels[0]).toMatchObject({ status: "failed", error: "stopped: the sweep failed" });
  });

  it("tracks downloads and bounds warnings, and ignores unknown events", () => {
    let s = run([
      { kind: "download_start", path: "a.gguf", total: 1000, already: 100 },
      { kind: "download_progress", done: 600, total: 1000 },
    ]);
    expect(ratio(s.download)).toBe(0.6);
    // While a benchmark times a test the download says why it stands still.
    s = reduce(s, { kind: "download_paused" });
    expect(s.activity).toMatch(/^waiting: a benchmark is timing a test/);
    expect(ratio(s.download)).toBe(0.6);
    s = reduce(s, { kind: "download_resumed" });
    expect(s.activity).toBe("downloading");
    expect(statusLine(startedProgress("downloading Q4_K_M"))).toBe("running — downloading Q4_K_M");
    s = reduce(s, { kind: "download_finished", path: "a.gguf" });
    expect(ratio(s.download)).toBe(1);
    for (let i = 0; i < 50; i++) s = reduce(s, { kind: "warning", message: `w${i}` });
    expect(s.warnings.length).toBe(20);
    expect(s.warnings.at(-1)).toBe("w49");
    const same = reduce(s, { kind: "new_kind" } as unknown as JobEvent);
    expect(same).toBe(s);
  });

  it("ratio is null without a total", () => {
    expect(ratio(null)).toBeNull();
    expect(ratio({ done: 1, total: 0 })).toBeNull();
  });
});
