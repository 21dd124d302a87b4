import { describe, expect, it } from "vitest";
import { finish, reduce, startedProgress, statusLine, type JobProgress, type ProgressEvent } from "./progress";
import { etaText, layerSettings, overall, phaseLine, planOf, stepsText, testsFor, type SweepPlan } from "./progressPlan";

/** Feed `events` at the given times (ms). */
function feed(s: JobProgress, events: [number, ProgressEvent][]): JobProgress {
  return events.reduce((acc, [at, e]) => reduce(acc, e, at), s);
}
const started = (test: string, run_id = 1): ProgressEvent => ({ kind: "test_started", run_id, test, quiet: true, reps: 5, warmup: true });
const ended = (test: string, run_id = 1): ProgressEvent => ({ kind: "test_finished", run_id, test, status: "ok", error: null });

describe("the plan of a spec", () => {
  it("names the tests of each level, leaving out a length of 0", () => {
    expect(testsFor(512, 128)).toEqual(["pp512", "tg128", "pp512+tg128"]);
    expect(testsFor(0, 128)).toEqual(["tg128"]);
    expect(testsFor(512, 0)).toEqual(["pp512"]);
  });
  it("counts GPU-layer settings as --ngl expands them", () => {
    expect(layerSettings(undefined)).toBe(1);
    expect(layerSettings("99")).toBe(1);
    expect(layerSettings("auto")).toBe(1);
    expect(layerSettings("0,8,16,99")).toBe(4);
    expect(layerSettings("0-32+8")).toBe(5);
    expect(layerSettings("1-64*2")).toBe(7);
    expect(layerSettings("0-3, 99")).toBe(5);
  });
  it("counts each expert placement and override group as a load of its own", () => {
    const files = { kind: "files" as const, files: ["/m/a.gguf"] };
    const spec = { source: files, prompt: 64, gen: 0, reps: 2, quality: false, ngl: "0,99", n_cpu_moe: "0-16+8" };
    expect(planOf(spec).layerSettings).toBe(6);
    expect(planOf({ ...spec, override_tensor: "exps=CPU,attn=CPU;ffn=CPU" }).layerSettings).toBe(12);
  });
  it("reads the spec, a preset, or the caller's own list of tests", () => {
    const files = { kind: "files" as const, files: ["/m/a.gguf"] };
    expect(planOf({ source: files, prompt: 64, gen: 16, reps: 2, quality: false })).toEqual({
      tests: ["pp64", "tg16", "pp64+tg16"], layerSettings: 1, quality: false,
    });
    expect(planOf({ source: files }).tests).toEqual(["pp512", "tg128", "pp512+tg128"]);
    // A sustained decode is its one test, whatever the lengths say.
    expect(planOf({ source: files, sustain_min: 5, prompt: 64 }).tests).toEqual(["tg32"]);
    expect(planOf({ source: files }).quality).toBe(true);
    expect(planOf({ source: files, preset: "thorough" }).tests.length).toBe(4);
    expect(planOf({ source: files, preset: "quick" }, ["pp1", "tg1"]).tests).toEqual(["pp1", "tg1"]);
  });
});

describe("a cancel", () => {
  const plan: SweepPlan = { tests: ["pp512", "tg128", "pp512+tg128"], layerSettings: 1, quality: false };
  it("fills the bar only as far as the tests that ended, and says which of the cut level's are saved", () => {
    const s = feed(startedProgress("starting", 0), [
      [100, { kind: "level", level: "Q8_0", index: 0, total: 2 }],
      [200, started("pp512")],
      [300, ended("pp512")],
      [400, started("tg128")],
      [500, ended("tg128")],
      [600, started("pp512+tg128")],
    ]);
    const c = finish(s, "cancelled", "the sweep was cancelled", 700);
    expect(overall(c, plan, 700)).toMatchObject({ done: 2, total: 6 });
    expect(c.levels[0]).toMatchObject({ level: "Q8_0", status: "cancelled", saved: 2 });
  });
});

describe("overall progress, elapsed time and ETA", () => {
  // Two levels, pp512/tg128/pp512+tg128 each, with quality: 6 tests and 2 passes.
  const plan: SweepPlan = { tests: ["pp512", "tg128", "pp512+tg128"], layerSettings: 1, quality: true };
  const t0 = startedProgress("starting", 0);

  it("says estimating… until a step has finished, and shows the plan and the elapsed time", () => {
    const s = feed(t0, [
      [500, { kind: "level", level: "Q8_0", index: 0, total: 2 }],
      [1000, { kind: "loading", model: "SmolLM2-135M-Q8_0.gguf" }],
    ]);
    expect(phaseLine(s, overall(s, plan, 1500))).toBe("loading SmolLM2-135M-Q8_0.gguf…");
    const timing = reduce(s, started("pp512"), 2000);
    const o = overall(timing, plan, 167_000);
    expect(o).toMatchObject({ done: 0, total: 8, testsTotal: 6, qualityTotal: 2, etaMs: null, elapsedMs: 167_000 });
    expect(etaText(o)).toBe("estimating…");
    expect(stepsText(o)).toBe("0 of 8 steps (6 tests, 2 quality passes)");
    expect(phaseLine(timing, o)).toBe("warm-up, then timing pp512 (5 repetitions; test 1 of 3 of level Q8_0; 1 of 6 tests in all)");
    expect(phaseLine(timing, o, "model")).toBe("warm-up, then timing pp512 (5 repetitions; test 1 of 3 of Q8_0; 1 of 6 tests in all)");
    expect(phaseLine(s, overall(s, plan, 1500), "model")).toBe("loading SmolLM2-135M-Q8_0.gguf…");
  });

  it("estimates from the tests finished so far, and says the quality passes are not timed yet", () => {
    const s = feed(t0, [
      [0, { kind: "level", level: "Q8_0", index: 0, total: 2 }],
      [1000, started("pp512")],
      [10_000, ended("pp512")],
      [10_000, started("tg128")],
    ]);
    // 10 s a test so far, 5 tests to go, 2 s of them already spent.
    const o = overall(s, plan, 12_000);
    expect(o.done).toBe(1);
    expect(o.etaMs).toBe(48_000);
    expect(o.etaWithoutQuality).toBe(true);
    expect(etaText(o)).toBe("about 50 s left for the speed tests, then the quality passes (not timed yet)");
    expect(phaseLine(s, o)).toBe("warm-up, then timing tg128 (5 repetitions; test 2 of 3 of level Q8_0; 2 of 6 tests in all)");
  });

  it("lets the ETA grow while a test runs past the others' average, and says so", () => {
    const s = feed(t0, [
      [0, { kind: "level", level: "Q8_0", index: 0, total: 2 }],
      [0, started("pp512")],
      [10_000, ended("pp512")],
      [10_000, started("tg128")],
    ]);
    // Within the average (10 s a test) the ETA counts down.
    expect(overall(s, plan, 19_000)).toMatchObject({ etaMs: 41_000, overdue: false });
    // Past it: the 4 tests after this one at the pace if it ended now,
    // which slows as the clock runs.
    const at30 = overall(s, plan, 30_000);
    expect(at30).toMatchObject({ etaMs: 60_000, overdue: true });
    const at50 = overall(s, plan, 50_000);
    expect(at50.etaMs).toBe(100_000);
    expect(etaText(at50)).toBe(
      "this test is taking longer than the others; about 2 min left after it for the speed tests, then the quality passes (not timed yet)",
    );
  });

  it("spreads a preset's estimate over its tests from the first second, and scales it by the tests so far", () => {
    // The picker said 2 s to load, then 10 s, 30 s and 40 s for the three tests.
    const est: SweepPlan = { tests: ["pp128", "tg32", "pp128+tg32"], layerSettings: 1, quality: false, testSeconds: [10, 30, 40], loadSeconds: 2 };
    const s = feed(t0, [[100, { kind: "level", level: "small.gguf", index: 0, total: 1 }]]);
    // Before any test ends: the estimate less the time spent.
    expect(overall(s, est, 5_000)).toMatchObject({ etaMs: 77_000, overdue: false });
    expect(etaText(overall(s, est, 5_000))).toBe("about 1 min left");
    // The first test (with the load) took 24 s where 12 were estimated:
    // the rest is estimated at twice its seconds.
    const one = feed(s, [
      [1_000, started("pp128")],
      [24_000, ended("pp128")],
      [24_000, started("tg32")],
    ]);
    expect(overall(one, est, 34_000)).toMatchObject({ etaMs: 2 * 70_000 - 10_000, overdue: false });
    // A test past its scaled share: the ETA grows with the clock.
    const late = overall(one, est, 100_000);
    expect(late.overdue).toBe(true);
    expect(late.etaMs).toBeCloseTo((100_000 / 42_000) * 40_000, 0);
    expect(overall(one, est, 120_000).etaMs!).toBeGreaterThan(late.etaMs!);
    // Without the estimator's seconds, the old extrapolation stands.
    expect(overall(s, { ...est, testSeconds: undefined }, 5_000).etaMs).toBeNull();
  });

  it("follows the quality phase: headline, tokens, and an ETA from the pass's own pace", () => {
    let s = t0;
    let t = 0;
    for (const [i, level] of ["Q8_0", "Q4_1"].entries()) {
      s = reduce(s, { kind: "level", level, index: i, total: 2 }, t);
      for (const test of plan.tests) {
        s = reduce(s, started(test), t);
        t += 10_000;
        s = reduce(s, ended(test), t);
      }
      s = reduce(s, { kind: "level_finished", level, status: "ok", error: null }, t);
    }
    expect(overall(s, plan, t).done).toBe(6);
    s = reduce(s, { kind: "quality", level: "Q8_0", reference: true }, 60_000);
    s = reduce(s, { kind: "quality_progress", done: 4096, total: 8192 }, 70_000);
    expect(statusLine(s)).toBe("running: quality — computing the reference (Q8_0)");
    let o = overall(s, plan, 70_000);
    expect(phaseLine(s, o)).toBe("quality 1 of 2: computing the reference (Q8_0) 4,096/8,192 tokens");
    // Half scored in 10 s: 10 s to go for this pass, then one more of 20 s.
    expect(o.etaMs).toBe(30_000);
    expect(o.etaWithoutQuality).toBe(false);

    s = reduce(s, { kind: "quality_progress", done: 8192, total: 8192 }, 79_000);
    s = reduce(s, { kind: "quality_done", level: "Q8_0" }, 80_000);
    expect(phaseLine(s, overall(s, plan, 80_000))).toBe("quality: 1 of 2 passes done (Q8_0 last)");
    s = reduce(s, { kind: "quality", level: "Q4_1", reference: false }, 80_500);
    s = reduce(s, { kind: "quality_progress", done: 2048, total: 8192 }, 85_000);
    o = overall(s, plan, 85_000);
    expect(statusLine(s)).toBe("running: quality — scoring Q4_1 against the reference");
    expect(phaseLine(s, o)).toBe("quality 2 of 2: scoring Q4_1 against the reference 2,048/8,192 tokens");
    expect(stepsText(o)).toBe("7 of 8 steps (6 tests, 2 quality passes)");

    const done = finish(s, "done", null, 95_000);
    o = overall(done, plan, 200_000);
    expect(o.done).toBe(o.total);
    expect(o.elapsedMs).toBe(95_000);
    expect(o.etaMs).toBeNull();
    expect(phaseLine(done, o)).toBe("");
  });

  it("drops the quality pass of a level that failed, and counts a reference that is not a level", () => {
    const s = feed(t0, [
      [0, { kind: "level", level: "Q8_0", index: 0, total: 2 }],
      [1000, { kind: "level_finished", level: "Q8_0", status: "failed", error: "load_failed" }],
      [2000, { kind: "level", level: "Q4_1", index: 1, total: 2 }],
    ]);
    let o = overall(s, plan, 2000);
    expect(o.qualityTotal).toBe(1);
    expect(o.done).toBe(3); // the failed level's tests are accounted for
    const ref = feed(s, [
      [3000, { kind: "level_finished", level: "Q4_1", status: "ok", error: null }],
      [3000, { kind: "quality", level: "F16 (reference)", reference: true }],
    ]);
    o = overall(ref, plan, 4000);
    expect(o.qualityTotal).toBe(2);
    expect(ref.levels.map((l) => l.level)).toEqual(["Q8_0", "Q4_1"]);
  });

  it("grows the plan when a level runs more tests than it said (a preset it did not know)", () => {
    const small: SweepPlan = { tests: ["pp128"], layerSettings: 1, quality: false };
    const s = feed(t0, [
      [0, { kind: "level", level: "Q8_0", index: 0, total: 1 }],
      [0, started("pp128")],
      [1000, ended("pp128")],
      [1000, started("tg32")],
    ]);
    const o = overall(s, small, 1000);
    expect(o.testsPerLevel).toBe(2);
    expect(o.done).toBeLessThanOrEqual(o.total!);
  });

  it("waits for the number of levels before it shows a total", () => {
    const o = overall(t0, plan, 3000);
    expect(o.total).toBeNull();
    expect(stepsText(o)).toBe("waiting for the plan…");
    expect(phaseLine(t0, o)).toBe("starting…");
  });
});
