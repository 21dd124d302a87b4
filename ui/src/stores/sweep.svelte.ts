// The benchmark or sweep in flight: app-wide, so it keeps running, and
// reporting, while the person looks at another view.

import * as api from "../api";
import { finish, initialProgress, reduce, startedProgress, type JobProgress } from "../lib/progress";
import { planOf, type SweepPlan } from "../lib/progressPlan";
import { emptySeries, pushTelemetry, type TelemetrySeries } from "../lib/telemetry";
import type { ApiError, BenchForm, JobEvent, RunsDoc, SweepDoc, SweepInput } from "../types";
import { Job } from "./job.svelte";

/**
 * The one sweep job the UI runs at a time (the backend allows one benchmark).
 *
 * While it runs, the webview's CPU time comes out of the benchmark's figures,
 * so the page re-renders at most once every `minRenderIntervalMs`: events are
 * reduced into `pending` (plain fields, nothing re-renders) and published to
 * the reactive `progress`/`tick` by a leading-and-trailing throttle. The end of
 * the job is published at once.
 *
 * The elapsed time and ETA tick once every `clockIntervalMs`, while a test
 * is timed too (`quiet`): each render arms the next one. A tick changes two
 * short texts, nothing else (the bars, the phase and the telemetry chart
 * wait for the test's end); a frozen clock read as a hung app. A tick costs
 * about 0.8% of one core (e2e/clock.mjs, docs/app.md).
 */
class SweepJob {
  /** The backend job: its id, the late events it drops, its end and Cancel (stores/job.svelte.ts). */
  readonly job = new Job<JobEvent, SweepDoc | RunsDoc>("sweep");
  spec = $state.raw<SweepInput | null>(null);
  /** What the sweep will measure, from its spec (progressPlan.ts). */
  plan = $state.raw<SweepPlan | null>(null);
  /** What the page shows: the progress as of the last render. */
  progress = $state.raw<JobProgress>(initialProgress());
  /** The clock (performance.now(), ms) as of the last render: elapsed time and ETA read it. */
  nowMs = $state(0);
  result = $state.raw<SweepDoc | null>(null);
  /** What the job is: a sweep from the form, or one benchmark from a button. */
  kind = $state<"sweep" | "bench">("sweep");
  /** A benchmark's result: its runs (a benchmark is never a sweep). */
  benchResult = $state.raw<RunsDoc | null>(null);
  error = $state.raw<ApiError | null>(null);
  /** Bumped (at most once a render) when telemetry arrived; the chart redraws on it. */
  tick = $state(0);
  /** Mutated in place (uPlot reads the arrays), so not reactive itself. */
  series: TelemetrySeries = emptySeries();
  /** Least time between two renders of a running sweep (ms). */
  minRenderIntervalMs = 1000;
  /** Time between two renders of the clock while nothing else happens (ms). */
  clockIntervalMs = 1000;
  /** Renders published since the page loaded (for tests and profiling). */
  renders = 0;

  /** Progress with every event so far, not yet shown. */
  private pending: JobProgress = initialProgress();
  private pendingTicks = 0;
  private lastRender = -Infinity;
  private timer: ReturnType<typeof setTimeout> | null = null;

  get running() {
    return this.progress.phase === "running";
  }

  /** Show `pending` now. */
  private render() {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    this.lastRender = performance.now();
    this.renders++;
    this.progress = this.pending;
    this.nowMs = this.lastRender;
    if (this.pendingTicks) {
      this.tick += this.pendingTicks;
      this.pendingTicks = 0;
    }
    // The clock's next tick.
    if (this.pending.phase === "running") {
      this.timer = setTimeout(() => this.render(), Math.max(this.clockIntervalMs, this.minRenderIntervalMs));
    }
  }

  /** Show `pending` now if the last render is old enough, else once it is. */
  private schedule() {
    const wait = this.lastRender + this.minRenderIntervalMs - performance.now();
    if (wait <= 0) this.render();
    else this.timer ??= setTimeout(() => this.render(), wait);
  }

  private set(p: JobProgress) {
    this.pending = p;
    this.render();
  }

  /**
   * Run `spec`. `tests` names the tests each level runs when the caller
   * knows them better than the spec does (a preset's `PresetEstimate.tests`).
   */
  async start(spec: SweepInput, tests?: string[]): Promise<void> {
    await this.follow("sweep", spec, planOf(spec, tests), (jobId, onEvent) => api.startSweep(spec, jobId, onEvent), (doc) => {
      this.result = doc;
      return doc.sweep.status === "cancelled";
    });
  }

  /**
   * Run one benchmark: `tests` are what it measures (a preset's, or the
   * disturbed tests measured again), for the overall progress. `spec` is
   * the same benchmark as the Benchmark form would write it, or null;
   * `more` the estimator's seconds per test, for the ETA, and the GPU-layer
   * settings each test runs at (the form's).
   */
  async startBench(
    form: BenchForm,
    tests: string[],
    spec: SweepInput | null = null,
    more: Partial<Pick<SweepPlan, "testSeconds" | "loadSeconds" | "layerSettings">> = {},
  ): Promise<void> {
    const plan: SweepPlan = { tests, layerSettings: 1, quality: false, ...more };
    await this.follow("bench", spec, plan, (jobId, onEvent) => api.startBench(form, jobId, onEvent), (doc) => {
      this.benchResult = doc;
      return false;
    });
  }

  /** Start a job with `call`, follow its events, and keep its result with `done` (true if it says cancelled). */
  private async follow<T extends SweepDoc | RunsDoc>(
    kind: "sweep" | "bench",
    spec: SweepInput | null,
    plan: SweepPlan,
    call: (jobId: string, onEvent: (e: JobEvent) => void) => Promise<T>,
    done: (result: T) => boolean,
  ): Promise<void> {
    if (this.running || this.job.running) {
      this.error = { code: "busy", message: "A benchmark is already running; cancel it or wait for it to finish." };
      return;
    }
    this.kind = kind;
    this.spec = spec;
    this.plan = plan;
    this.result = null;
    this.benchResult = null;
    this.error = null;
    this.series = emptySeries();
    this.tick = 0;
    this.pendingTicks = 0;
    this.set(startedProgress("starting", performance.now()));
    // The job drops a late event from an older job before it gets here.
    const onEvent = (e: JobEvent) => {
      if (e.kind === "telemetry") {
        // Placed by its own t_s: readings held back during a test arrive together.
        if (pushTelemetry(this.series, e)) this.pendingTicks++;
      } else {
        this.pending = reduce(this.pending, e, performance.now());
      }
      this.schedule();
    };
    const ended = await this.job.run(call, onEvent);
    if (ended.ok) {
      const phase = done(ended.value as T) ? "cancelled" : "done";
      this.set(finish(this.pending, phase, null, performance.now()));
    } else if (ended.error.code === "cancelled") {
      // The backend saved what was measured; its message says so.
      this.set(finish(this.pending, "cancelled", ended.error.message, performance.now()));
    } else {
      this.error = ended.error;
      this.set(finish(this.pending, "failed", ended.error.message, performance.now()));
    }
  }

  async cancel(): Promise<void> {
    if (!this.running) return;
    const failed = await this.job.cancel();
    if (failed) this.error = failed;
  }
}

export const sweepJob = new SweepJob();
