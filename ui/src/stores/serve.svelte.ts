// The server benchmark the Servers view starts: app-wide, so leaving the
// view while it runs and coming back finds it running, with its status, its
// warnings and Cancel, and its result once it ends.

import * as api from "../api";
import { serveMemory } from "../state.svelte";
import type { JobEvent, ServeInput, ServeOutcome } from "../types";
import { Job } from "./job.svelte";

class ServeJob {
  readonly job = new Job<JobEvent, ServeOutcome>("serve");
  /** One line on where the run is ("Test 2 of 4: pp512 · 3/5 requests"). */
  status = $state("");
  /** What the server's answers made Dyno warn about (plain HTTP, no usage counts). */
  warnings = $state.raw<string[]>([]);

  get running() {
    return this.job.running;
  }

  /** Run `input`; resolves with the outcome, or null (the error, or the cancel, is on `job`). */
  async start(input: ServeInput): Promise<ServeOutcome | null> {
    this.status = "Connecting…";
    this.warnings = [];
    const ended = await this.job.run((id, on) => api.startServeBench(input, id, on), (e) => this.onEvent(e));
    this.status = "";
    // For the view opened next, if the one that started the run was left:
    // its result, and the API key gone (it is sent, never kept).
    if (ended.ok) {
      serveMemory.outcome = ended.value;
      serveMemory.shown = ended.value;
    }
    if (serveMemory.form) serveMemory.form.apiKey = "";
    return ended.ok ? ended.value : null;
  }

  async cancel(): Promise<void> {
    await this.job.cancel();
  }

  private onEvent(e: JobEvent) {
    switch (e.kind) {
      case "serve_detected":
        this.status = `Found ${e.server} ${e.version ?? ""} serving '${e.model}'.`;
        break;
      case "serve_warning":
        this.warnings = [...this.warnings, e.message];
        break;
      case "serve_test":
        this.status = `Test ${e.index + 1} of ${e.total}: ${e.test}`;
        break;
      case "serve_requests":
        this.status = `${this.status.split(" · ")[0]} · ${e.done}/${e.total} requests`;
        break;
      case "serve_test_finished":
        this.status = `${e.test}: ${e.ok}/${e.requests} requests ok${e.error ? ` (${e.error})` : ""}`;
        break;
      case "loading":
        this.status = `The same model in-process: loading ${e.model}`;
        break;
      case "test_started":
        this.status = `The same model in-process: ${e.test}`;
        break;
    }
  }
}

export const serveJob = new ServeJob();
