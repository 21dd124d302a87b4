// A hub download in flight: app-wide, so its bar is there when the Models
// view is opened again.

import * as api from "../api";
import { finish, initialProgress, reduce, startedProgress, type JobProgress } from "../lib/progress";
import type { RatePoint } from "../lib/download";
import type { ApiError, JobEvent, PullResult } from "../types";
import { Job } from "./job.svelte";

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
