// The progress of a job as a pure reducer over the backend's JobEvents, so the
// views only render state and the sequence can be unit-tested. Events carry
// no time; the caller passes when each arrived (`atMs`, performance.now()),
// which is all the elapsed time and the ETA (progressPlan.ts) rest on.

import type { JobEvent } from "../types";

export type Phase = "idle" | "running" | "done" | "failed" | "cancelled";

/** What a running job is doing between two events. */
export type Stage =
  | "starting"
  | "level"
  | "quantizing"
  | "loading"
  | "testing"
  | "tested"
  | "level_done"
  | "quality"
  | "quality_done"
  | "download";

export interface LevelProgress {
  level: string;
  status: "pending" | "running" | "ok" | "failed" | "cancelled" | "skipped";
  error: string | null;
  /** The level's quality pass: scoring now, scored, or already scored before. */
  quality: "running" | "done" | "skipped" | null;
  /** A level a cancel cut short: how many of its tests had ended (and are saved). */
  saved?: number;
}

export interface Fraction {
  done: number;
  total: number;
}

/** What the reducer reads: the backend's own (generated) event type. */
export type ProgressEvent = JobEvent;

export interface JobProgress {
  phase: Phase;
  stage: Stage;
  /** What happened last, for a person ("quantizing Q4_K_M", "pp512 ok"). */
  activity: string;
  level: string | null;
  /** Index of the level in progress, from 0. */
  index: number;
  total: number;
  levels: LevelProgress[];
  model: string | null;
  test: string | null;
  rep: number;
  reps: number;
  /** The test in progress: its timed repetitions, and whether an untimed warm-up comes first. */
  testReps: number;
  warmup: boolean;
  testsDone: number;
  /** Tests started and finished in the level in progress. */
  levelTestsStarted: number;
  levelTestsDone: number;
  /** The most tests one level has started: corrects a plan that guessed too few. */
  maxLevelTests: number;
  /** A test is being timed: the backend sends nothing more until it ends. */
  quiet: boolean;
  quantize: Fraction | null;
  quality: Fraction | null;
  /** The quality pass in progress, or the last one. */
  qualityLevel: string | null;
  /** That pass is the reference's own (it computes the reference logits). */
  qualityReference: boolean;
  /** The quality phase has begun (a quality pass or a quality skip). */
  qualityStarted: boolean;
  /** Passes finished, and their time in all (ms). */
  qualityPasses: number;
  qualityPassesMs: number;
  /** Levels whose quality was measured before (no pass this time). */
  qualitySkipped: number;
  /** Reference passes of a file that is not one of the levels (the --from base). */
  qualityExtra: number;
  download: Fraction | null;
  warnings: string[];
  error: string | null;
  /** When the job started and ended, on the caller's clock (ms); null when not given. */
  startedMs: number | null;
  endedMs: number | null;
  /** When the first level began, the last test ended, the open quality pass began. */
  benchStartMs: number | null;
  lastTestEndMs: number | null;
  qualityPassStartMs: number | null;
}

export function initialProgress(): JobProgress {
  return {
    phase: "idle",
    stage: "starting",
    activity: "",
    level: null,
    index: 0,
    total: 0,
    levels: [],
    model: null,
    test: null,
    rep: 0,
    reps: 0,
    testReps: 0,
    warmup: false,
    testsDone: 0,
    levelTestsStarted: 0,
    levelTestsDone: 0,
    maxLevelTests: 0,
    quiet: false,
    quantize: null,
    quality: null,
    qualityLevel: null,
    qualityReference: false,
    qualityStarted: false,
    qualityPasses: 0,
    qualityPassesMs: 0,
    qualitySkipped: 0,
    qualityExtra: 0,
    download: null,
    warnings: [],
    error: null,
    startedMs: null,
    endedMs: null,
    benchStartMs: null,
    lastTestEndMs: null,
    qualityPassStartMs: null,
  };
}

/** A job that has just been started (at `atMs`, when the caller keeps time). */
export function startedProgress(activity = "starting", atMs: number | null = null): JobProgress {
  return { ...initialProgress(), phase: "running", activity, startedMs: atMs };
}

function setLevel(levels: LevelProgress[], level: string, patch: Partial<LevelProgress>): LevelProgress[] {
  const i = levels.findIndex((l) => l.level === level);
  if (i < 0) return [...levels, { level, status: "pending", error: null, quality: null, ...patch }];
  const next = levels.slice();
  next[i] = { ...next[i], ...patch };
  return next;
}

/** Keep the last few warnings only: a long sweep must not grow without bound. */
const MAX_WARNINGS = 20;

const FINISHED = new Set<LevelProgress["status"]>(["ok", "failed", "cancelled", "skipped"]);

/** Close the open quality pass, if any: count it and mark its level scored. */
function closeQualityPass(s: JobProgress, atMs: number | null): JobProgress {
  if (s.qualityPassStartMs === null && !s.levels.some((l) => l.quality === "running")) return s;
  const ms = s.qualityPassStartMs !== null && atMs !== null ? Math.max(0, atMs - s.qualityPassStartMs) : 0;
  return {
    ...s,
    qualityPasses: s.qualityPassStartMs !== null ? s.qualityPasses + 1 : s.qualityPasses,
    qualityPassesMs: s.qualityPassesMs + ms,
    qualityPassStartMs: null,
    levels: s.levels.map((l) => (l.quality === "running" ? { ...l, quality: "done" as const } : l)),
  };
}

/**
 * The state after one event that arrived at `atMs` (the caller's clock, ms;
 * null when it keeps none). Telemetry is handled apart (see telemetry.ts).
 */
export function reduce(s: JobProgress, e: ProgressEvent, atMs: number | null = null): JobProgress {
  switch (e.kind) {
    case "warning":
      return { ...s, warnings: [...s.warnings, e.message].slice(-MAX_WARNINGS) };
    case "level":
      return {
        ...s,
        stage: "level",
        level: e.level,
        index: e.index,
        total: e.total,
        levels: setLevel(s.levels, e.level, { status: "running", error: null }),
        test: null,
        rep: 0,
        reps: 0,
        quiet: false,
        levelTestsStarted: 0,
        levelTestsDone: 0,
        quantize: null,
        quality: null,
        benchStartMs: s.benchStartMs ?? atMs,
        activity: `level ${e.index + 1}/${e.total}: ${e.level}`,
      };
    case "skipped": {
      const known = s.levels.find((l) => l.level === e.level);
      // A level measured in this job and then skipped is a quality skip
      // ("quality already measured against the same reference"): it stays ok.
      if (known && FINISHED.has(known.status)) {
        return {
          ...s,
          qualityStarted: true,
          qualitySkipped: s.qualitySkipped + 1,
          levels: setLevel(s.levels, e.level, { quality: "skipped" }),
          activity: `quality of ${e.level} skipped: ${e.why}`,
        };
      }
      return {
        ...s,
        stage: "level_done",
        levels: setLevel(s.levels, e.level, { status: "skipped", error: e.why }),
        activity: `${e.level} skipped: ${e.why}`,
      };
    }
    case "quantizing":
      return { ...s, stage: "quantizing", quantize: { done: 0, total: 0 }, activity: `quantizing ${e.level}` };
    case "quantize_progress":
      return { ...s, quantize: { done: e.done, total: e.total } };
    case "level_finished":
      return {
        ...s,
        stage: "level_done",
        quiet: false,
        maxLevelTests: Math.max(s.maxLevelTests, s.levelTestsStarted),
        levels: setLevel(s.levels, e.level, { status: e.status, error: e.error ?? null }),
        activity: `${e.level} ${e.status}${e.error ? `: ${e.error}` : ""}`,
      };
    case "quality": {
      const closed = closeQualityPass(s, atMs);
      const reference = e.reference;
      const known = closed.levels.some((l) => l.level === e.level);
      return {
        ...closed,
        stage: "quality",
        quiet: false,
        test: null,
        rep: 0,
        reps: 0,
        quantize: null,
        quality: { done: 0, total: 0 },
        qualityLevel: e.level,
        qualityReference: reference,
        qualityStarted: true,
        qualityExtra: known ? closed.qualityExtra : closed.qualityExtra + 1,
        qualityPassStartMs: atMs,
        levels: known ? setLevel(closed.levels, e.level, { quality: "running" }) : closed.levels,
        activity: reference ? `quality: computing the reference (${e.level})` : `quality: scoring ${e.level} against the reference`,
      };
    }
    case "quality_progress":
      return { ...s, quality: { done: e.done, total: e.total } };
    case "quality_done": {
      // The pass's own end (its reference or scores are written by then),
      // so the time per pass that the ETA uses is exact.
      const closed = closeQualityPass(s, atMs);
      return { ...closed, stage: "quality_done", activity: `quality of ${e.level} done` };
    }
    case "loading":
      return { ...s, stage: "loading", model: e.model, activity: `loading ${e.model}` };
    case "test_started": {
      const reps = e.reps ?? 0;
      const warmup = e.warmup ?? false;
      const plan = `${warmup ? "warm-up, then " : ""}${reps ? `${reps} timed repetition${reps === 1 ? "" : "s"} of ` : "timing "}${e.test}`;
      return {
        ...s,
        stage: "testing",
        test: e.test,
        rep: 0,
        reps: 0,
        testReps: reps,
        warmup,
        quiet: e.quiet === true,
        levelTestsStarted: s.levelTestsStarted + 1,
        // The app holds updates back while a test is timed, so the view
        // says why only its clock moves.
        activity: e.quiet ? `${plan}; only the clock moves until it ends` : plan,
      };
    }
    case "sample":
      return { ...s, stage: "testing", test: e.test, rep: e.rep, reps: e.reps, activity: `${e.test} rep ${e.rep}/${e.reps}` };
    case "test_finished":
      return {
        ...s,
        stage: "tested",
        quiet: false,
        testsDone: s.testsDone + 1,
        levelTestsDone: s.levelTestsDone + 1,
        lastTestEndMs: atMs ?? s.lastTestEndMs,
        activity: `${e.test} ${e.status}${e.error ? `: ${e.error}` : ""}`,
      };
    case "run_finished":
      return { ...s, quiet: false, ...(e.error ? { activity: `run ${e.run_id} ${e.status}: ${e.error}` } : {}) };
    case "download_start":
      return { ...s, stage: "download", download: { done: e.already, total: e.total }, activity: `downloading ${e.path}` };
    case "download_progress":
      return { ...s, download: { done: e.done, total: e.total } };
    case "download_paused":
      return { ...s, activity: "waiting: a benchmark is timing a test; the download goes on between tests" };
    case "download_resumed":
      return { ...s, activity: "downloading" };
    case "download_finished":
      return {
        ...s,
        download: s.download ? { done: s.download.total, total: s.download.total } : null,
        activity: `downloaded ${e.path}`,
      };
    case "telemetry":
      return s;
    default:
      // An event kind this UI does not know yet: ignore it rather than fail.
      return s;
  }
}

/** The state when the job's promise settles (at `atMs` on the caller's clock). */
export function finish(
  s: JobProgress,
  phase: Exclude<Phase, "idle" | "running">,
  error: string | null = null,
  atMs: number | null = null,
): JobProgress {
  // A pass cut short by a cancel or a failure was not scored.
  const ended = phase === "done" ? closeQualityPass(s, atMs) : { ...s, qualityPassStartMs: null };
  // A level still marked running when the job ended was cut short.
  const cut: LevelProgress["status"] | null = phase === "cancelled" ? "cancelled" : phase === "failed" ? "failed" : null;
  const levels = ended.levels.map((l) => {
    let next = l;
    if (cut && l.status === "running") next = { ...next, status: cut, error: cut === "failed" ? "stopped: the sweep failed" : next.error };
    if (cut === "cancelled" && l.status === "running" && l.level === s.level) next = { ...next, saved: s.levelTestsDone };
    if (next.quality === "running") next = { ...next, quality: null };
    return next;
  });
  return { ...ended, phase, error, levels, quiet: false, endedMs: atMs, activity: phase === "done" ? "done" : s.activity };
}

/** A fraction in [0, 1], or null when the total is not known yet. */
export function ratio(f: Fraction | null): number | null {
  if (!f || !(f.total > 0)) return null;
  return Math.min(1, Math.max(0, f.done / f.total));
}

/**
 * The status line (the page's headline): contains "done", "failed" or
 * "cancelled" once the job ended, and none of those words before.
 */
/** What a job measures one after another: a sweep's levels, or a benchmark's model files. */
export type Unit = "level" | "model";

export function statusLine(s: JobProgress, unit: Unit = "level"): string {
  switch (s.phase) {
    case "idle":
      return "idle";
    case "running": {
      if (s.stage === "quality" && s.qualityLevel) {
        const what = s.qualityReference ? `computing the reference (${s.qualityLevel})` : `scoring ${s.qualityLevel} against the reference`;
        return `running: quality — ${what}`;
      }
      // A benchmark's models are files, not a sweep's levels: one is named alone.
      const lvl =
        unit === "model" && s.total === 1
          ? (s.level ?? "")
          : s.total > 0
            ? `${unit} ${s.index + 1}/${s.total} ${s.level ?? ""}`.trim()
            : "";
      // Never the activity: it can say "failed" about one level, and a
      // running headline must not contain a word that reads as the end.
      const doing = s.test
        ? `${s.test}${s.reps ? ` rep ${s.rep}/${s.reps}` : ""}`
        : s.stage === "quantizing"
          ? `quantizing`
          : s.stage === "loading"
            ? `loading`
            : s.stage === "download" || s.stage === "starting"
              ? s.activity
              : "";
      return `running${lvl ? `: ${lvl}` : ""}${doing ? ` — ${doing}` : ""}`;
    }
    case "done": {
      const failed = s.levels.filter((l) => l.status === "failed").length;
      return failed ? `done (${failed} level${failed > 1 ? "s" : ""} failed)` : "done";
    }
    case "failed":
      return `failed${s.error ? `: ${s.error}` : ""}`;
    case "cancelled":
      return "cancelled";
  }
}
