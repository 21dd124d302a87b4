// @vitest-environment jsdom
// The Sweep view's progress as a person reads it, in jsdom with the backend
// mocked: levels one per line with badges, the overall bar with elapsed time
// and ETA, the phase in words, a clock that ticks while a test is timed
// when nothing else moves, live telemetry placed by its own time, and the telemetry note once
// a job has ended.
import { flushSync, mount, unmount } from "svelte";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { ApiError, JobEvent, SweepInput } from "../types";

vi.mock("../api", () => ({
  startSweep: vi.fn(),
  cancel: vi.fn(async () => true),
  telemetry: vi.fn(async () => []),
  // A laptop on battery: the form says so before a run starts.
  power: vi.fn(async () => ({ source: "battery", battery_pct: 54, governor: null, platform_profile: null })),
  newJobId: (() => {
    let n = 0;
    return () => `sweep-${++n}`;
  })(),
}));

// jsdom lacks what uPlot and bind:clientWidth reach for; no-ops stand in.
window.matchMedia ??= ((query: string) =>
  ({ matches: false, media: query, addEventListener() {}, removeEventListener() {}, addListener() {}, removeListener() {} }) as unknown as MediaQueryList);
globalThis.ResizeObserver ??= class {
  observe() {}
  unobserve() {}
  disconnect() {}
} as unknown as typeof ResizeObserver;
HTMLCanvasElement.prototype.getContext = function () {
  return new Proxy({}, { get: (_t, k) => (k === "measureText" ? () => ({ width: 10 }) : () => {}), set: () => true });
} as unknown as HTMLCanvasElement["getContext"];
globalThis.Path2D ??= class {
  moveTo() {}
  lineTo() {}
  rect() {}
  arc() {}
  closePath() {}
  bezierCurveTo() {}
} as unknown as typeof Path2D;

const api = await import("../api");
const { default: Sweep } = await import("../views/Sweep.svelte");
const { sweepJob } = await import("../stores/sweep.svelte");

const q = (id: string) => document.querySelector(`[data-testid="${id}"]`) as HTMLElement | null;
const qa = (id: string) => [...document.querySelectorAll(`[data-testid="${id}"]`)] as HTMLElement[];
const text = (id: string) => q(id)?.textContent?.replace(/\s+/g, " ").trim() ?? null;

const spec: SweepInput = { source: { kind: "files", files: ["/m/a.gguf", "/m/b.gguf", "/m/c.gguf"] }, prompt: 512, gen: 128, reps: 2, quality: true };
const reading = (t_s: number): JobEvent => ({ kind: "telemetry", t_s, cpu_pct: 90, ram_used_bytes: 8e9, gpu_pct: null, power_w: null, vram_bytes: null });

/** Start a sweep whose events the test sends; settle it with `end`. */
function startJob() {
  let emit: (e: JobEvent) => void = () => {};
  let end: (e: ApiError) => void = () => {};
  vi.mocked(api.startSweep).mockImplementationOnce((_s, _j, onEvent) => {
    emit = onEvent;
    return new Promise((_res, rej) => (end = rej));
  });
  const done = sweepJob.start(spec);
  return {
    send: (...events: JobEvent[]) => {
      for (const e of events) emit(e);
      flushSync();
    },
    fail: async (e: ApiError) => {
      end(e);
      await done;
      flushSync();
    },
  };
}

let view: ReturnType<typeof mount> | null = null;

beforeEach(() => {
  document.body.innerHTML = "";
  sweepJob.minRenderIntervalMs = 0;
  view = mount(Sweep, { target: document.body });
});

// Every test settles its job, so none is left running for the next.
afterEach(() => {
  if (view) unmount(view);
  view = null;
  vi.useRealTimers();
});

describe("Sweep form", () => {
  it("warns before measuring on battery", async () => {
    await vi.waitFor(() => {
      flushSync();
      expect(text("battery-warning")).toContain("on battery (54%)");
    });
  });
});

describe("Sweep job", () => {
  it("refuses a second start while one runs, shows a Cancel that failed, and settles a cancel as cancelled", async () => {
    const job = startJob();
    job.send({ kind: "level", level: "Q8_0", index: 0, total: 3 });
    expect(sweepJob.running).toBe(true);
    expect(sweepJob.job.jobId).toMatch(/^sweep-/);

    // A second start is refused without calling the backend.
    const calls = vi.mocked(api.startSweep).mock.calls.length;
    await sweepJob.start(spec);
    expect(vi.mocked(api.startSweep).mock.calls.length).toBe(calls);
    expect(sweepJob.error?.code).toBe("busy");
    expect(sweepJob.running).toBe(true);

    // Cancel's own failure is what the page shows.
    vi.mocked(api.cancel).mockRejectedValueOnce({ code: "internal", message: "the backend did not answer" });
    await sweepJob.cancel();
    expect(sweepJob.error?.message).toBe("the backend did not answer");

    await job.fail({ code: "cancelled", message: "the sweep was cancelled; finished levels are saved" });
    expect(sweepJob.running).toBe(false);
    expect(sweepJob.progress.phase).toBe("cancelled");
    expect(sweepJob.job.jobId).toBeNull();
    expect(sweepJob.job.cancelled).toBe(true);
  });
});

describe("Sweep progress", () => {
  it("lists levels one per line with a status badge and their error, and pending ones", async () => {
    const job = startJob();
    job.send(
      { kind: "level", level: "Q8_0", index: 0, total: 3 },
      { kind: "level_finished", level: "Q8_0", status: "ok", error: null },
      { kind: "level", level: "Q4_1", index: 1, total: 3 },
    );
    const rows = qa("sweep-level");
    expect(rows.map((r) => [r.dataset.level, r.dataset.status])).toEqual([["Q8_0", "ok"], ["Q4_1", "running"]]);
    expect(rows.map((r) => r.querySelector('[data-testid="sweep-level-badge"]')?.textContent)).toEqual(["ok", "running"]);
    expect(qa("sweep-level-pending").map((r) => r.textContent?.replace(/\s+/g, " ").trim())).toEqual(["level 3 of 3 pending"]);

    job.send({ kind: "level_finished", level: "Q4_1", status: "failed", error: "load_failed: out of memory" });
    const failed = qa("sweep-level")[1];
    expect(failed.dataset.status).toBe("failed");
    expect(failed.querySelector('[data-testid="sweep-level-error"]')?.textContent).toBe("load_failed: out of memory");
    await job.fail({ code: "failed", message: "the worker died" });
  });

  it("shows the whole plan, elapsed time, an ETA and the phase in words, and says why only the clock moves", async () => {
    const job = startJob();
    job.send({ kind: "level", level: "Q8_0", index: 0, total: 3 }, { kind: "loading", model: "SmolLM2-135M-Q8_0.gguf" });
    expect(text("sweep-phase")).toBe("loading SmolLM2-135M-Q8_0.gguf…");
    expect(text("sweep-overall-progress")).toContain("0 of 12 steps (9 tests, 3 quality passes)");
    expect(text("sweep-eta")).toBe("estimating…");
    expect(text("sweep-elapsed")).toMatch(/^elapsed 0:0\d$/);

    job.send({ kind: "test_started", run_id: 1, test: "pp512", quiet: true, reps: 5, warmup: true });
    expect(text("sweep-phase")).toBe("warm-up, then timing pp512 (5 repetitions; test 1 of 3 of level Q8_0; 1 of 9 tests in all)");
    expect(text("sweep-quiet")).toContain("While a test is timed only the clock moves, so the view does not disturb the figure");

    job.send({ kind: "test_finished", run_id: 1, test: "pp512", status: "ok", error: null });
    expect(q("sweep-quiet")).toBeNull();
    expect(text("sweep-eta")).toMatch(/left for the speed tests, then the quality passes \(not timed yet\)$/);
    expect(text("sweep-overall-progress")).toContain("1 of 12 steps");

    job.send(
      { kind: "test_started", run_id: 1, test: "tg128", quiet: true, reps: 5, warmup: true },
      { kind: "test_finished", run_id: 1, test: "tg128", status: "ok", error: null },
      { kind: "level_finished", level: "Q8_0", status: "ok", error: null },
      { kind: "quality", level: "Q8_0", reference: true } as unknown as JobEvent,
      { kind: "quality_progress", done: 2048, total: 8192 },
    );
    expect(text("sweep-status")).toBe("running: quality — computing the reference (Q8_0)");
    expect(text("sweep-phase")).toBe("quality 1 of 1: computing the reference (Q8_0) 2,048/8,192 tokens");
    job.send({ kind: "quality", level: "Q4_1", reference: false } as unknown as JobEvent, { kind: "quality_progress", done: 2048, total: 8192 });
    expect(text("sweep-status")).toBe("running: quality — scoring Q4_1 against the reference");
    expect(text("sweep-phase")).toBe("quality 2 of 2: scoring Q4_1 against the reference 2,048/8,192 tokens");
    await job.fail({ code: "cancelled", message: "the sweep was cancelled" });
    expect(text("sweep-elapsed")).toMatch(/^took /);
    expect(q("sweep-eta")).toBeNull();
  });

  it("ticks the elapsed time once a second, while a test is timed too, and holds everything else still then", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "performance"] });
    sweepJob.minRenderIntervalMs = 1000;
    const job = startJob();
    job.send({ kind: "level", level: "Q8_0", index: 0, total: 1 }, { kind: "loading", model: "m.gguf" });
    vi.advanceTimersByTime(3000);
    flushSync();
    expect(text("sweep-elapsed")).toBe("elapsed 0:03");

    job.send({ kind: "test_started", run_id: 1, test: "pp512", quiet: true, reps: 5, warmup: true });
    vi.advanceTimersByTime(1000); // the trailing render shows the test
    flushSync();
    expect(text("sweep-phase")).toMatch(/^warm-up, then timing pp512/);
    const renders = sweepJob.renders;
    const progress = sweepJob.progress;
    const phase = text("sweep-phase");
    const bar = text("sweep-overall-progress");
    vi.advanceTimersByTime(60_000);
    flushSync();
    // The clock ticks once a second and nothing else changes.
    expect(sweepJob.renders - renders).toBe(60);
    expect(text("sweep-elapsed")).toBe("elapsed 1:04");
    expect(sweepJob.progress).toBe(progress);
    expect([text("sweep-phase"), text("sweep-overall-progress")]).toEqual([phase, bar]);

    // The readings held back during the test arrive together with its end.
    for (let t = 5; t <= 64; t++) job.send(reading(t + 0.49));
    job.send({ kind: "test_finished", run_id: 1, test: "pp512", status: "ok", error: null });
    vi.advanceTimersByTime(1000);
    flushSync();
    expect(text("sweep-elapsed")).toBe("elapsed 1:05");
    // Placed by their own t_s, not all at the instant they arrived.
    expect(sweepJob.series.t.length).toBe(60);
    expect(sweepJob.series.t.at(-1)! - sweepJob.series.t[0]).toBeCloseTo(59, 6);
    await job.fail({ code: "failed", message: "stop" });
  });

  it("says no telemetry was recorded once a job ends without any, instead of waiting for it", async () => {
    const job = startJob();
    job.send({ kind: "level", level: "Q8_0", index: 0, total: 1 });
    expect(q("telemetry-waiting")).not.toBeNull();
    await job.fail({ code: "failed", message: "the model failed to load" });
    expect(text("sweep-status")).toBe("failed: the model failed to load");
    expect(q("telemetry-waiting")).toBeNull();
    expect(text("telemetry-none")).toBe("No telemetry was recorded.");
    expect(document.querySelector(".telemetry canvas")).toBeNull();
  });
});
