// The progress of a job as a pure reducer over the backend's JobEvents, so the
// views only render state and the sequence can be unit-tested.

import type { JobEvent } from "../types";

export type Phase = "idle" | "running" | "done" | "failed" | "cancelled";

export interface LevelProgress {
  level: string;
  status: "pending" | "running" | "ok" | "failed" | "cancelled" | "skipped";
  error: string | null;
}

export interface Fraction {
  done: number;
  total: number;
}

export interface JobProgress {
  phase: Phase;
  /** What is happening now, for a person ("quantizing Q4_K_M", "pp512 rep 2/5"). */
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
  testsDone: number;
  quantize: Fraction | null;
  quality: Fraction | null;
  download: Fraction | null;
  warnings: string[];
  error: string | null;
}

export function initialProgress(): JobProgress {
  return {
    phase: "idle",
    activity: "",
    level: null,
    index: 0,
    total: 0,
    levels: [],
    model: null,
    test: null,
    rep: 0,
    reps: 0,
    testsDone: 0,
    quantize: null,
    quality: null,
    download: null,
    warnings: [],
    error: null,
  };
}

/** A job that has just been started. */
export function startedProgress(activity = "starting"): JobProgress {
  return { ...initialProgress(), phase: "running", activity };
}

function setLevel(levels: LevelProgress[], level: string, patch: Partial<LevelProgress>): LevelProgress[] {
  const i = levels.findIndex((l) => l.level === level);
  if (i < 0) return [...levels, { level, status: "pending", error: null, ...patch }];
  const next = levels.slice();
  next[i] = { ...next[i], ...patch };
  return next;
}

/** Keep the last few warnings only: a long sweep must not grow without bound. */
const MAX_WARNINGS = 20;

/** The state after one event. Telemetry is handled apart (see telemetry.ts). */
export function reduce(s: JobProgress, e: JobEvent): JobProgress {
  switch (e.kind) {
    case "warning":
      return { ...s, warnings: [...s.warnings, e.message].slice(-MAX_WARNINGS) };
    case "level":
      return {
        ...s,
        level: e.level,
        index: e.index,
        total: e.total,
        levels: setLevel(s.levels, e.level, { status: "running", error: null }),
        test: null,
        rep: 0,
        reps: 0,
        quantize: null,
        quality: null,
        activity: `level ${e.index + 1}/${e.total}: ${e.level}`,
      };
    case "skipped":
      return {
        ...s,
        levels: setLevel(s.levels, e.level, { status: "skipped", error: e.why }),
        activity: `${e.level} skipped: ${e.why}`,
      };
    case "quantizing":
      return { ...s, quantize: { done: 0, total: 0 }, activity: `quantizing ${e.level}` };
    case "quantize_progress":
      return { ...s, quantize: { done: e.done, total: e.total } };
    case "level_finished":
      return {
        ...s,
        levels: setLevel(s.levels, e.level, { status: e.status, error: e.error ?? null }),
        activity: `${e.level} ${e.status}${e.error ? `: ${e.error}` : ""}`,
      };
    case "quality":
      return { ...s, quality: { done: 0, total: 0 }, activity: `quality of ${e.level} against ${e.reference}` };
    case "quality_progress":
      return { ...s, quality: { done: e.done, total: e.total } };
    case "loading":
      return { ...s, model: e.model, activity: `loading ${e.model}` };
    case "test_started":
      return {
        ...s,
        test: e.test,
        rep: 0,
        reps: 0,
        // The app holds updates back while a test is timed, so the view
        // says why it is still.
        activity: e.quiet ? `timing ${e.test}; the view stays still until it ends` : `${e.test}`,
      };
    case "sample":
      return { ...s, test: e.test, rep: e.rep, reps: e.reps, activity: `${e.test} rep ${e.rep}/${e.reps}` };
    case "test_finished":
      return {
        ...s,
        testsDone: s.testsDone + 1,
        activity: `${e.test} ${e.status}${e.error ? `: ${e.error}` : ""}`,
      };
    case "run_finished":
      return e.error ? { ...s, activity: `run ${e.run_id} ${e.status}: ${e.error}` } : s;
    case "download_start":
      return { ...s, download: { done: e.already, total: e.total }, activity: `downloading ${e.path}` };
    case "download_progress":
      return { ...s, download: { done: e.done, total: e.total } };
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

/** The state when the job's promise settles. */
export function finish(s: JobProgress, phase: Exclude<Phase, "idle" | "running">, error: string | null = null) {
  // A level still marked running when the job was cancelled was cut short.
  const levels =
    phase === "cancelled" && s.levels.some((l) => l.status === "running")
      ? s.levels.map((l) => (l.status === "running" ? { ...l, status: "cancelled" as const } : l))
      : s.levels;
  return { ...s, phase, error, levels, activity: phase === "done" ? "done" : s.activity };
}

/** A fraction in [0, 1], or null when the total is not known yet. */
export function ratio(f: Fraction | null): number | null {
  if (!f || !(f.total > 0)) return null;
  return Math.min(1, Math.max(0, f.done / f.total));
}

/** The status line: always contains "done", "failed" or "cancelled" once the job ended. */
export function statusLine(s: JobProgress): string {
  switch (s.phase) {
    case "idle":
      return "idle";
    case "running": {
      const lvl = s.total > 0 ? `level ${s.index + 1}/${s.total} ${s.level ?? ""}`.trim() : "";
      const test = s.test ? `${s.test}${s.reps ? ` rep ${s.rep}/${s.reps}` : ""}` : s.activity;
      return `running${lvl ? `: ${lvl}` : ""}${test ? ` — ${test}` : ""}`;
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
