// App-wide state that outlives a view: which view is shown, and the jobs in
// flight (a sweep keeps running, and reporting, when the user looks elsewhere).

import * as api from "./api";
import { finish, initialProgress, reduce, startedProgress, type JobProgress } from "./lib/progress";
import { rowsFromList, type ResultRow } from "./lib/results";
import { planOf, type SweepPlan } from "./lib/progressPlan";
import type { RatePoint } from "./lib/download";
import { emptySeries, pushTelemetry, type TelemetrySeries } from "./lib/telemetry";
import { Job } from "./stores/job.svelte";
import { columnValues, initialSync, levelKey, levelQuery, reduceSync, splitPassword, withPassword, type SyncState } from "./lib/team";
import type { ApiError, BenchForm, JobEvent, PullResult, RunsDoc, SweepDoc, SweepInput, SyncProgress, SyncReport, TeamQuery, TeamRanking, TeamStatus } from "./types";

export type View = "overview" | "models" | "sweep" | "results" | "servers" | "team" | "export" | "settings";

class Nav {
  view = $state<View>("overview");
  /** The run ("12") or sweep ("sweep:3") the Results view opens, if any. */
  resultsTarget = $state<string | null>(null);
  exportTarget = $state<string | null>(null);
  /** A hub search the Models view runs when it opens (the first-run card's suggestion). */
  hubQuery = $state<string | null>(null);
  /** A source the Sweep form should start from (set by Models). */
  sweepPrefill = $state.raw<SweepInput | null>(null);

  /** Open a view at its top: the page's scroll belongs to the view left behind. */
  go(view: View) {
    if (view !== this.view && typeof document !== "undefined") document.scrollingElement?.scrollTo?.(0, 0);
    // "Results" in the nav is the list, not the detail opened last time.
    if (view === "results") this.resultsTarget = null;
    this.view = view;
  }
  openResult(target: string) {
    if (typeof document !== "undefined") document.scrollingElement?.scrollTo?.(0, 0);
    this.resultsTarget = target;
    this.view = "results";
  }
}

export const nav = new Nav();

/**
 * The one sweep job the UI runs at a time (the backend allows one benchmark).
 *
 * While it runs, the webview's CPU time comes out of the benchmark's figures,
 * so the page re-renders at most once every `minRenderIntervalMs`: events are
 * reduced into `pending` (plain fields, nothing re-renders) and published to
 * the reactive `progress`/`tick` by a leading-and-trailing throttle. The end of
 * the job is published at once.
 *
 * The elapsed time and ETA tick once every `clockIntervalMs` between tests:
 * each render arms the next one. While a test is timed (`quiet`) none is
 * armed, so the page stays still until the test's end arrives.
 */
class SweepJob {
  jobId = $state<string | null>(null);
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
    // The clock's next tick; never while a test is timed.
    if (this.pending.phase === "running" && !this.pending.quiet) {
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
   * `timing` the estimator's seconds per test, for the ETA.
   */
  async startBench(
    form: BenchForm,
    tests: string[],
    spec: SweepInput | null = null,
    timing: Pick<SweepPlan, "testSeconds" | "loadSeconds"> = {},
  ): Promise<void> {
    const plan: SweepPlan = { tests, layerSettings: 1, quality: false, ...timing };
    await this.follow("bench", spec, plan, (jobId, onEvent) => api.startBench(form, jobId, onEvent), (doc) => {
      this.benchResult = doc;
      return false;
    });
  }

  /** Start a job with `call`, follow its events, and keep its result with `done` (true if it says cancelled). */
  private async follow<T>(
    kind: "sweep" | "bench",
    spec: SweepInput | null,
    plan: SweepPlan,
    call: (jobId: string, onEvent: (e: JobEvent) => void) => Promise<T>,
    done: (result: T) => boolean,
  ): Promise<void> {
    if (this.running) {
      this.error = { code: "busy", message: "A benchmark is already running; cancel it or wait for it to finish." };
      return;
    }
    const jobId = api.newJobId("sweep");
    this.jobId = jobId;
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
    const onEvent = (e: JobEvent) => {
      if (this.jobId !== jobId) return; // a late event from an older job
      if (e.kind === "telemetry") {
        // Placed by its own t_s: readings held back during a test arrive together.
        if (pushTelemetry(this.series, e)) this.pendingTicks++;
      } else {
        this.pending = reduce(this.pending, e, performance.now());
      }
      this.schedule();
    };
    try {
      const result = await call(jobId, onEvent);
      if (this.jobId !== jobId) return;
      const phase = done(result) ? "cancelled" : "done";
      this.set(finish(this.pending, phase, null, performance.now()));
    } catch (e) {
      if (this.jobId !== jobId) return;
      const err = e as ApiError;
      if (err.code === "cancelled") {
        // The backend saved what was measured; its message says so.
        this.set(finish(this.pending, "cancelled", err.message, performance.now()));
      } else {
        this.error = err;
        this.set(finish(this.pending, "failed", err.message, performance.now()));
      }
    }
  }

  async cancel(): Promise<void> {
    if (!this.jobId || !this.running) return;
    try {
      await api.cancel(this.jobId);
    } catch (e) {
      this.error = e as ApiError;
    }
  }
}

export const sweepJob = new SweepJob();

/** A hub download, one at a time: one backend job per file of the level. */
class DownloadJob {
  /** The file being pulled: its id, its end and Cancel (stores/job.svelte.ts). */
  private readonly file = new Job<JobEvent, PullResult>("pull");
  /** "repo/level", to show the bar next to the level being pulled. */
  key = $state<string | null>(null);
  progress = $state.raw<JobProgress>(initialProgress());
  result = $state.raw<PullResult | null>(null);
  error = $state.raw<ApiError | null>(null);
  /** The key of the level whose download the user cancelled (the row is reset). */
  cancelledKey = $state<string | null>(null);
  /** Set by cancel(): stops a split level between two parts as well. */
  private cancelRequested = false;
  /** Set by discard() while running: delete the partial files once the job stops. */
  private discardRequested = false;
  /** The repo and files of the level pulled last, for Discard. */
  private last: { repo: string; files: string[] } | null = null;
  /** The level whose partial download was deleted, and how many bytes that freed. */
  discarded = $state.raw<{ key: string; freedBytes: number } | null>(null);
  /** Where this file's bytes stood when it started, and now: the rate and time left. */
  rateFrom = $state.raw<RatePoint | null>(null);
  rateNow = $state.raw<RatePoint | null>(null);

  get running() {
    return this.progress.phase === "running";
  }

  /** Pull every file of a level in turn (a split model has several). */
  async pull(repo: string, level: string, files: string[]): Promise<boolean> {
    if (this.running) return false;
    const key = `${repo}/${level}`;
    this.key = key;
    this.result = null;
    this.error = null;
    this.cancelledKey = null;
    this.cancelRequested = false;
    this.discardRequested = false;
    this.discarded = null;
    this.last = { repo, files };
    this.progress = startedProgress(`downloading ${level}`);
    try {
      for (const file of files) {
        if (this.cancelRequested) throw { code: "cancelled", message: "the download was cancelled" } satisfies ApiError;
        this.rateFrom = null;
        this.rateNow = null;
        const ended = await this.file.run(
          (jobId, onEvent) => api.hubPull(repo, file, jobId, onEvent),
          (e) => {
            this.progress = reduce(this.progress, e);
            const d = this.progress.download;
            if (!d) return;
            const point = { atMs: performance.now(), done: d.done };
            if (e.kind === "download_start" || e.kind === "download_resumed" || !this.rateFrom) this.rateFrom = point;
            this.rateNow = point;
          },
        );
        if (!ended.ok) throw ended.error;
        this.result = ended.value;
      }
      this.progress = finish(this.progress, "done");
      return true;
    } catch (e) {
      const err = e as ApiError;
      if (err.code === "cancelled") {
        // Back to a plain Download button: what arrived is kept on disk and
        // the next download of this level resumes it.
        this.progress = initialProgress();
        this.result = null;
        this.cancelledKey = key;
        if (this.discardRequested) await this.discardPartial(key);
      } else {
        this.error = err;
        this.progress = finish(this.progress, "failed", err.message);
      }
      return false;
    }
  }

  /**
   * Cancel for good: stop the download if it runs, then delete what arrived
   * (Pause keeps it, so Resume can continue). A finished file is never touched.
   */
  async discard(level?: { repo: string; files: string[]; key: string }): Promise<void> {
    if (this.running) {
      this.discardRequested = true;
      await this.cancel();
      return;
    }
    // A partial download the listing found (from an earlier session), or
    // the one this session paused.
    if (level) {
      this.last = { repo: level.repo, files: level.files };
      this.key = level.key;
    }
    if (this.key) await this.discardPartial(this.key);
  }

  private async discardPartial(key: string): Promise<void> {
    const last = this.last;
    if (!last) return;
    let freedBytes = 0;
    try {
      for (const f of last.files) freedBytes += (await api.discardDownload(last.repo, f)).freed_bytes;
      this.discarded = { key, freedBytes };
      this.cancelledKey = null;
      this.progress = initialProgress();
      this.error = null;
    } catch (e) {
      this.error = e as ApiError;
    }
  }

  async cancel(): Promise<void> {
    if (!this.running) return;
    this.cancelRequested = true;
    const failed = await this.file.cancel();
    if (failed) this.error = failed;
  }
}

export const downloadJob = new DownloadJob();

/** Rows on one page of the Results list. */
export const RESULTS_PAGE = 50;
/** Runs asked of the backend for the whole list (every sweep is listed as well). */
const RESULTS_LIMIT = 1000;

/**
 * The Results list as last loaded, kept between visits so the view shows it
 * at once and refreshes it behind (new runs can come from the CLI too, so it
 * is always fetched again). The app fills it with the newest page shortly
 * after start. Plain fields: the view copies them into its own state.
 */
class ResultsCache {
  rows: ResultRow[] | null = null;
  /** False when `rows` is only the newest page. */
  complete = false;

  /** Bumped by `clear`, so an answer to an earlier request is not kept. */
  private generation = 0;

  /** The newest page; complete when it holds every run there is. */
  async loadFirstPage(): Promise<{ rows: ResultRow[]; complete: boolean }> {
    const asked = this.generation;
    const list = await api.resultList(RESULTS_PAGE);
    const rows = rowsFromList(list);
    const complete = list.filter((r) => r.kind === "run").length < RESULTS_PAGE;
    // A page never replaces a whole list loaded meanwhile.
    if (asked === this.generation && (!this.complete || complete)) {
      this.rows = rows;
      this.complete = complete;
    }
    return { rows, complete };
  }

  /** The whole list (up to `RESULTS_LIMIT` runs). */
  async loadAll(): Promise<ResultRow[]> {
    const asked = this.generation;
    const rows = rowsFromList(await api.resultList(RESULTS_LIMIT));
    if (asked === this.generation) {
      this.rows = rows;
      this.complete = true;
    }
    return rows;
  }

  /** Forget the list (and any answer on its way). */
  clear() {
    this.generation++;
    this.rows = null;
    this.complete = false;
  }
}

export const resultsCache = new ResultsCache();

/**
 * The team store as this session knows it: the URL typed or saved, the
 * password typed (held here, in memory, for this session only: never saved,
 * never sent to a command that keeps it), the sync in flight and the machines
 * ranking with its filters. App-wide so the Export view can set a card
 * against the team, and a sync keeps going, and reporting, while the person
 * looks elsewhere.
 */
class TeamState {
  /** The store's URL as typed, without a password. */
  url = $state("");
  password = $state("");
  status = $state.raw<TeamStatus | null>(null);
  statusError = $state.raw<ApiError | null>(null);
  saving = $state(false);
  /** The sync in flight: its id, its end and Cancel (stores/job.svelte.ts). */
  readonly syncJob = new Job<SyncProgress, SyncReport>("sync");
  progress = $state.raw<SyncState>(initialSync());
  report = $state.raw<SyncReport | null>(null);
  syncError = $state.raw<ApiError | null>(null);
  ranking = $state.raw<TeamRanking | null>(null);
  rankingError = $state.raw<ApiError | null>(null);
  rankingLoading = $state(false);
  /** The model and level ranked (levelKey), "" for the one most machines measured. */
  pick = $state("");
  backend = $state("");
  version = $state("");
  /** Every backend and Dyno version seen in a ranking this session: the filters' options. */
  backends = $state.raw<string[]>([]);
  versions = $state.raw<string[]>([]);
  /** Bumped by each ranking request, so only the newest answer is shown. */
  private asked = 0;

  get syncing(): boolean {
    return this.syncJob.running;
  }

  /** The person cancelled the last sync (its progress bars stay, showing how far it got). */
  get syncCancelled(): boolean {
    return this.syncJob.cancelled;
  }

  /** The URL commands connect with: the typed password set in it. */
  get connectUrl(): string {
    return withPassword(this.url, this.password);
  }

  /**
   * The saved settings. The first answer fills an empty URL field with the
   * URL in force: DYNO_TEAM_URL wins over the saved one, as on the command
   * line (its password, hidden by the backend, is not carried over).
   */
  async loadStatus(): Promise<void> {
    try {
      const s = await api.teamStatus();
      this.statusError = null;
      if (!this.status && !this.url.trim()) {
        this.url = s.env_url ? splitPassword(s.env_url).url : (s.saved_url ?? "");
      }
      this.status = s;
    } catch (e) {
      this.statusError = e as ApiError;
    }
  }

  /** Save the typed URL without its password; an empty field forgets the saved one. */
  async save(): Promise<void> {
    this.moveTypedPassword();
    this.saving = true;
    this.statusError = null;
    try {
      this.status = await api.saveTeamUrl(this.url.trim());
      if (this.status.saved_url) this.url = this.status.saved_url;
    } catch (e) {
      this.statusError = e as ApiError;
    } finally {
      this.saving = false;
    }
  }

  /** Push and pull; on success the machines ranking loads from the store just synced. */
  async sync(withTelemetry: boolean): Promise<void> {
    if (this.syncing) return;
    this.moveTypedPassword();
    this.report = null;
    this.progress = initialSync();
    if (!this.url.trim()) {
      this.syncError = { code: "bad_input", message: "Type the team store's URL first: postgres://USER@HOST:PORT/DATABASE." };
      return;
    }
    this.syncError = null;
    const request = { url: this.connectUrl, with_telemetry: withTelemetry, push_only: false };
    const ended = await this.syncJob.run(
      (jobId, on) => api.teamSync(request, jobId, on),
      (p) => (this.progress = reduceSync(this.progress, p)),
    );
    if (ended.ok) this.report = ended.value;
    else if (ended.error.code !== "cancelled") this.syncError = ended.error;
    // What is left to push changed.
    this.loadStatus();
    if (this.report) await this.loadRanking();
  }

  /** Stop the running sync after the batch in flight; what the store committed is kept. */
  async cancelSync(): Promise<void> {
    const failed = await this.syncJob.cancel();
    if (failed) this.syncError = failed;
  }

  /** The machines ranking for the picked level and filters. */
  async loadRanking(): Promise<void> {
    this.moveTypedPassword();
    if (!this.url.trim()) {
      this.rankingError = { code: "bad_input", message: "Type the team store's URL first: postgres://USER@HOST:PORT/DATABASE." };
      return;
    }
    const asked = ++this.asked;
    this.rankingLoading = true;
    this.rankingError = null;
    const query: TeamQuery = { ...levelQuery(this.pick), backend: this.backend || null, dyno_version: this.version || null };
    try {
      const r = await api.teamMachines(this.connectUrl, query);
      if (asked !== this.asked) return;
      this.ranking = r;
      if (r.level) this.pick = levelKey(r.level);
      this.backends = columnValues(r.machines, "backends", this.backends);
      this.versions = columnValues(r.machines, "dyno_versions", this.versions);
    } catch (e) {
      if (asked === this.asked) this.rankingError = e as ApiError;
    } finally {
      if (asked === this.asked) this.rankingLoading = false;
    }
  }

  /**
   * A password typed into the URL field goes to the password field (unless
   * one is typed there already) before the URL is used or saved, so the page
   * never shows it again.
   */
  private moveTypedPassword() {
    const { url, password } = splitPassword(this.url);
    if (!password) return;
    this.url = url;
    if (!this.password) this.password = password;
  }
}

export const team = new TeamState();

/**
 * The Servers view's form and last result, kept while the app runs so that
 * leaving the view and coming back finds them as they were (the API key
 * too, in memory only: it is never saved).
 */
export const serveMemory: { form: Record<string, unknown> | null; outcome: unknown; shown: unknown } = {
  form: null,
  outcome: null,
  shown: null,
};
