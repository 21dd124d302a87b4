// One long backend job at a time of its kind: a server benchmark, a team
// sync, a download. The backend streams its events on a channel and ends it
// with a result or an error; the person may cancel it. Each kind's store
// keeps only what is its own (a server run's status line, a sync's bars) and
// leaves the job's id, its end and Cancel to this one, so they behave alike
// and survive the view that started them being left and opened again.

import * as api from "../api";
import type { ApiError } from "../types";

/** How a job ended: its result, or the error the backend gave (code "cancelled" when the person cancelled it). */
export type Ended<R> = { ok: true; value: R } | { ok: false; error: ApiError };

export class Job<E, R> {
  /** The backend's id for the job while it runs. */
  jobId = $state<string | null>(null);
  running = $state(false);
  /** The last job's result, kept until the next one starts. */
  result = $state.raw<R | null>(null);
  /** The last job's error, unless the person cancelled it. */
  error = $state.raw<ApiError | null>(null);
  /** The person cancelled the last job. */
  cancelled = $state(false);

  /** `prefix` names the kind in job ids ("serve-…"), for the backend's logs. */
  constructor(private readonly prefix: string) {}

  /**
   * Start a job with `call` and hand each of its events to `onEvent`; an
   * event from an older job of this store is dropped. Refused, without
   * calling, while one runs.
   */
  async run(call: (jobId: string, onEvent: (e: E) => void) => Promise<R>, onEvent: (e: E) => void = () => {}): Promise<Ended<R>> {
    if (this.running) {
      const error: ApiError = { code: "busy", message: "This is already running; cancel it or wait for it to finish." };
      return { ok: false, error };
    }
    const jobId = api.newJobId(this.prefix);
    this.jobId = jobId;
    this.running = true;
    this.result = null;
    this.error = null;
    this.cancelled = false;
    try {
      const value = await call(jobId, (e) => {
        if (this.jobId === jobId) onEvent(e);
      });
      this.result = value;
      return { ok: true, value };
    } catch (e) {
      const error = e as ApiError;
      if (error.code === "cancelled") this.cancelled = true;
      else this.error = error;
      return { ok: false, error };
    } finally {
      this.running = false;
      this.jobId = null;
    }
  }

  /**
   * Ask the backend to stop the running job; it answers the job's call with
   * "cancelled". Resolves with the error if the request itself failed (kept
   * on `error` too), so a caller never reads an older job's error instead.
   */
  async cancel(): Promise<ApiError | null> {
    if (!this.jobId) return null;
    try {
      await api.cancel(this.jobId);
      return null;
    } catch (e) {
      this.error = e as ApiError;
      return this.error;
    }
  }
}
