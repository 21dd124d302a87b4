// How far a sweep has come across its whole plan, and how long it may still
// take. The backend sends no plan, so it is rebuilt from the spec the page
// started (levels × tests, plus one quality pass per level) and corrected by
// what the events show (a level running more tests than planned, levels that
// fail and will not be scored). Pure: the clock is an argument, so the
// figures are pinned by tests and the view only re-renders them.

import type { Preset, SweepInput } from "../types";
import { fmtAbout, fmtCount } from "./format";
import type { JobProgress, Unit } from "./progress";

/** What one sweep will measure, as far as the page can know it. */
export interface SweepPlan {
  /** The tests each level runs once per GPU-layer setting: "pp512", "tg128", "pp512+tg128". */
  tests: string[];
  /** GPU-layer settings each test runs at (several in an offload sweep). */
  layerSettings: number;
  quality: boolean;
  /**
   * The estimator's seconds for each of `tests` (a preset's estimate), and
   * for loading the model before them: the ETA then spreads the time over
   * the tests as the Benchmark… picker did, from the first second.
   */
  testSeconds?: number[];
  loadSeconds?: number;
}

/** The tests of `prompt` and `gen` tokens, as the backend names and orders them. */
export function testsFor(prompt: number, gen: number): string[] {
  const t: string[] = [];
  if (prompt > 0) t.push(`pp${prompt}`);
  if (gen > 0) t.push(`tg${gen}`);
  if (prompt > 0 && gen > 0) t.push(`pp${prompt}+tg${gen}`);
  return t;
}

/**
 * The presets' tests, as src/app/presets.rs defines them (Plan::tests). Only
 * the estimate leans on this copy, and the plan grows if a level runs more.
 */
export const PRESET_TESTS: Record<Preset, string[]> = {
  quick: ["pp128", "tg32", "pp128+tg32"],
  standard: ["pp512", "tg128", "pp512+tg128"],
  thorough: ["pp512", "pp2048", "tg128", "pp512+tg128"],
};

/** Defaults of `start_sweep` (docs/app-api.md) for a spec that leaves them out. */
const DEFAULT_PROMPT = 512;
const DEFAULT_GEN = 128;

/**
 * How many GPU-layer settings an `ngl` string names: "99" 1, "0,8,16,99" 4,
 * "0-32+8" 5, "1-64*2" 7, as `--ngl` expands them (src/cli/args.rs).
 */
export function layerSettings(ngl: string | undefined): number {
  if (!ngl?.trim()) return 1;
  let n = 0;
  for (const item of ngl.replace(/\s+/g, "").split(",")) {
    const m = /^(\d+)-(\d+)(?:([+*])(\d+))?$/.exec(item);
    if (!m) {
      n += 1;
      continue;
    }
    const [first, last, op, k] = [Number(m[1]), Number(m[2]), m[3], Number(m[4] ?? 1)];
    let count = 0;
    for (let v = first; v <= last && count < 256; v = op === "*" ? v * k : v + k) {
      count++;
      if (op === "*" && (k < 2 || v === 0)) break;
    }
    n += Math.max(1, count);
  }
  return Math.max(1, n);
}

/** The plan of a spec; `tests` overrides the spec's (a preset's own list, when the caller has it). */
export function planOf(spec: SweepInput, tests?: string[]): SweepPlan {
  // A sustained decode is one test, tg32, repeated for its minutes.
  const list =
    tests ??
    (spec.sustain_min != null
      ? ["tg32"]
      : spec.preset
        ? PRESET_TESTS[spec.preset]
        : testsFor(spec.prompt ?? DEFAULT_PROMPT, spec.gen ?? DEFAULT_GEN));
  // Each expert placement and override group is a load of its own, as
  // each layer count is.
  const groups = spec.override_tensor ? spec.override_tensor.split(",").length : 1;
  return { tests: list, layerSettings: layerSettings(spec.ngl) * layerSettings(spec.n_cpu_moe) * groups, quality: spec.quality ?? true };
}

/** The whole job at a glance. */
export interface Overall {
  /** Steps: tests, then quality passes. `total` is null until the number of levels is known. */
  done: number;
  total: number | null;
  testsDone: number;
  testsTotal: number | null;
  qualityDone: number;
  qualityTotal: number;
  /** Tests one level runs (at every GPU-layer setting). */
  testsPerLevel: number;
  elapsedMs: number;
  /** Time still to go; null while it cannot be estimated yet. */
  etaMs: number | null;
  /** The ETA leaves out quality passes, none of which has been timed yet. */
  etaWithoutQuality: boolean;
  /**
   * The test under way has run longer than the tests before it took on
   * average: the ETA counts the tests after it at the slower pace this
   * implies, and cannot say when this one ends.
   */
  overdue: boolean;
}

const finished = (status: string) => status === "ok" || status === "failed" || status === "cancelled" || status === "skipped";

/** A quality pass needs this share scored before its pace says much. */
const MIN_QUALITY_FRACTION = 0.05;

/**
 * Steps done and to go, elapsed time and an ETA at `nowMs` (the clock of
 * `p`'s times). The ETA extrapolates from the steps finished so far: the
 * time per test so far (loading and quantising included, as each level
 * repeats them) and the time per quality pass; null until a test has ended.
 */
export function overall(p: JobProgress, plan: SweepPlan | null, nowMs: number): Overall {
  const planned = plan ? plan.tests.length * plan.layerSettings : 0;
  const perLevel = Math.max(planned, p.maxLevelTests, p.levelTestsStarted, 1);
  const levels = p.total;
  const ended = p.phase !== "running";
  // The level under way, or the one a cancel cut short, counts the tests it
  // finished; a finished level counts them all.
  const current = p.levels.find((l) => l.level === p.level && (l.status === "running" || l.status === "cancelled"));
  const levelsFinished = p.levels.filter((l) => finished(l.status) && l !== current).length;
  let testsDone = levelsFinished * perLevel + (current ? Math.min(perLevel, p.levelTestsDone) : 0);
  const testsTotal = levels > 0 ? levels * perLevel : null;

  // One pass per level that can be scored; once scoring has begun, the
  // levels it can score are known (the failed ones are not).
  let qualityTotal = 0;
  if (plan?.quality && levels > 0) {
    const lost = p.levels.filter((l) => l.status === "failed" || l.status === "cancelled").length;
    const scorable = p.levels.filter((l) => l.status === "ok" || l.status === "skipped").length;
    qualityTotal = p.qualityStarted ? scorable + p.qualityExtra : levels - lost;
  }
  let qualityDone = Math.min(qualityTotal, p.qualityPasses + p.qualitySkipped);
  qualityTotal = Math.max(qualityTotal, qualityDone + (p.qualityPassStartMs !== null ? 1 : 0));

  let total = testsTotal === null ? null : testsTotal + qualityTotal;
  if (testsTotal !== null) testsDone = Math.min(testsDone, testsTotal);
  if (p.phase === "done" && total !== null) {
    testsDone = testsTotal ?? testsDone;
    qualityDone = qualityTotal;
  }
  if (p.phase === "done" && total === null) total = 0;

  const start = p.startedMs ?? nowMs;
  const elapsedMs = Math.max(0, (ended ? (p.endedMs ?? nowMs) : nowMs) - start);

  let etaMs: number | null = null;
  let etaWithoutQuality = false;
  let overdue = false;
  const estimated = plan ? estimatedEta(p, plan, testsTotal, nowMs) : null;
  if (!ended && estimated) {
    etaMs = estimated.etaMs;
    overdue = estimated.overdue;
  } else if (!ended && testsTotal !== null) {
    const testsLeft = testsTotal - testsDone;
    let benchMs: number | null = 0;
    if (testsLeft > 0) {
      if (p.testsDone > 0 && p.benchStartMs !== null && p.lastTestEndMs !== null) {
        const perTest = (p.lastTestEndMs - p.benchStartMs) / p.testsDone;
        const inTest = nowMs - p.lastTestEndMs;
        if (inTest <= perTest) benchMs = testsLeft * perTest - inTest;
        else {
          // Past the average: were the test to end now, the pace would be
          // this, and every second it goes on slows it further. So the ETA
          // grows with the clock rather than standing at zero.
          overdue = true;
          const pace = (nowMs - p.benchStartMs) / (p.testsDone + 1);
          benchMs = (testsLeft - 1) * pace;
        }
      } else benchMs = null;
    }
    const passesLeft = qualityTotal - qualityDone;
    let qualityMs: number | null = 0;
    if (passesLeft > 0) {
      const open = p.qualityPassStartMs !== null;
      const inPass = open ? Math.max(0, nowMs - p.qualityPassStartMs!) : 0;
      const f = open && p.quality && p.quality.total > 0 ? p.quality.done / p.quality.total : 0;
      const perPass = p.qualityPasses > 0 ? p.qualityPassesMs / p.qualityPasses : f >= MIN_QUALITY_FRACTION ? inPass / f : null;
      if (perPass === null) qualityMs = null;
      else if (open) {
        const current = f >= MIN_QUALITY_FRACTION ? (inPass * (1 - f)) / f : Math.max(0, perPass - inPass);
        qualityMs = current + (passesLeft - 1) * perPass;
      } else qualityMs = passesLeft * perPass;
    }
    if (benchMs !== null && qualityMs !== null) etaMs = benchMs + qualityMs;
    else if (benchMs !== null && testsLeft > 0) {
      etaMs = benchMs;
      etaWithoutQuality = true;
    }
  }

  return {
    done: testsDone + qualityDone,
    total,
    testsDone,
    testsTotal,
    qualityDone,
    qualityTotal,
    testsPerLevel: perLevel,
    elapsedMs,
    etaMs,
    etaWithoutQuality,
    overdue,
  };
}

/**
 * The ETA of a plan that carries the estimator's seconds per test (a
 * preset's benchmark): the estimate of the tests left, scaled by how the
 * tests so far compared with theirs, less the time the current one has
 * run. A test past its share makes the ETA grow with the clock, as below.
 * Null when the plan has no such estimate or runs quality passes, which it
 * does not time.
 */
function estimatedEta(p: JobProgress, plan: SweepPlan, testsTotal: number | null, nowMs: number): { etaMs: number; overdue: boolean } | null {
  const each = plan.testSeconds;
  const n = plan.tests.length;
  if (!each || each.length !== n || n === 0 || plan.quality || plan.layerSettings !== 1 || testsTotal === null) return null;
  const est = (i: number) => 1000 * (each[i % n] + (i % n === 0 ? (plan.loadSeconds ?? 0) : 0));
  const sum = (from: number, to: number) => {
    let s = 0;
    for (let i = from; i < to; i++) s += est(i);
    return s;
  };
  const start = p.startedMs ?? nowMs;
  const done = Math.min(p.testsDone, testsTotal);
  if (done >= testsTotal) return { etaMs: 0, overdue: false };
  const since = done > 0 && p.lastTestEndMs !== null ? p.lastTestEndMs : start;
  const doneEst = sum(0, done);
  const scale = done > 0 && doneEst > 0 ? (since - start) / doneEst : 1;
  const inTest = Math.max(0, nowMs - since);
  if (inTest <= scale * est(done)) return { etaMs: Math.max(0, scale * sum(done, testsTotal) - inTest), overdue: false };
  // Past its share: were it to end now, this would be the pace.
  const pace = (nowMs - start) / sum(0, done + 1);
  return { etaMs: pace * sum(done + 1, testsTotal), overdue: true };
}

/** The ETA in words: "estimating…" until a step has finished. */
export function etaText(o: Overall): string {
  if (o.etaMs === null) return "estimating…";
  const left = o.overdue
    ? `this test is taking longer than the others; ${fmtAbout(o.etaMs)} left after it`
    : `${fmtAbout(o.etaMs)} left`;
  return o.etaWithoutQuality ? `${left} for the speed tests, then the quality passes (not timed yet)` : left;
}

/** What the bar counts: "5 of 16 steps (12 tests, 4 quality passes)". */
export function stepsText(o: Overall): string {
  if (o.total === null) return "waiting for the plan…";
  const parts = [`${o.testsTotal} test${o.testsTotal === 1 ? "" : "s"}`];
  if (o.qualityTotal) parts.push(`${o.qualityTotal} quality pass${o.qualityTotal === 1 ? "" : "es"}`);
  return `${o.done} of ${o.total} steps (${parts.join(", ")})`;
}

/**
 * The phase in words: "loading SmolLM2…", "timing pp512 (test 2 of 3 of
 * level Q8_0)", "quality: scoring Q4_1 against the reference 2,048/8,192
 * tokens". Empty once the job has ended.
 */
export function phaseLine(p: JobProgress, o: Overall, unit: Unit = "level"): string {
  if (p.phase !== "running") return "";
  const ofLevel = p.level ? ` of ${unit === "model" ? "" : "level "}${p.level}` : "";
  // Which test of the plan: the one in progress, or the one that just ended.
  const nth = p.stage === "tested" ? o.testsDone : o.testsDone + 1;
  const inAll = o.testsTotal ? `; ${Math.min(nth, o.testsTotal)} of ${o.testsTotal} tests in all` : "";
  const testPos = `test ${Math.max(1, p.levelTestsStarted)} of ${o.testsPerLevel}${ofLevel}${inAll}`;
  switch (p.stage) {
    case "starting":
      return "starting…";
    case "level":
      if (unit === "model") return p.total > 1 ? `model ${p.index + 1} of ${p.total}: ${p.level}` : `${p.level ?? ""}`;
      return p.total > 0 ? `level ${p.index + 1} of ${p.total}: ${p.level}` : `level ${p.level}`;
    case "quantizing":
      return `quantizing ${p.level} (level ${p.index + 1} of ${p.total})`;
    case "loading":
      return `loading ${p.model ?? "the model"}…`;
    case "testing":
      if (p.quiet) {
        // Said once as the test starts: only the clock moves until it ends.
        const reps = p.testReps ? `${p.testReps} repetition${p.testReps === 1 ? "" : "s"}; ` : "";
        return `${p.warmup ? "warm-up, then " : ""}timing ${p.test} (${reps}${testPos})`;
      }
      return `${p.test}${p.reps ? ` rep ${p.rep}/${p.reps}` : ""} (${testPos})`;
    case "tested":
      return `${p.activity} (${testPos})`;
    case "quality": {
      const tokens = p.quality && p.quality.total > 0 ? ` ${fmtCount(p.quality.done)}/${fmtCount(p.quality.total)} tokens` : "";
      const nth = o.qualityTotal ? ` ${Math.min(p.qualityPasses + 1, o.qualityTotal)} of ${o.qualityTotal}` : "";
      return p.qualityReference
        ? `quality${nth}: computing the reference (${p.qualityLevel})${tokens}`
        : `quality${nth}: scoring ${p.qualityLevel} against the reference${tokens}`;
    }
    case "quality_done":
      return o.qualityTotal
        ? `quality: ${p.qualityPasses} of ${o.qualityTotal} passes done (${p.qualityLevel} last)`
        : `quality: ${p.qualityLevel} done`;
    default:
      return p.activity;
  }
}
