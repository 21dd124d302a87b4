// @vitest-environment jsdom
// A run's detail as a person reads it: a result timed while another program
// was busy carries a "disturbed" badge, and the run says why under its
// table, naming the program; a quiet run shows neither.
import { flushSync, mount, unmount } from "svelte";
import { clearMocks, mockIPC } from "@tauri-apps/api/mocks";
import { afterEach, describe, expect, it, vi } from "vitest";
import sweepFiles from "../fixtures/sweep-files.json";
import type { Run, RunsDoc, SweepDoc } from "../types";
import RunDetail from "./RunDetail.svelte";
import { nav } from "../state.svelte";
import { sweepJob } from "../stores/sweep.svelte";

window.matchMedia ??= ((query: string) =>
  ({ matches: false, media: query, addEventListener() {}, removeEventListener() {}, addListener() {}, removeListener() {} }) as unknown as MediaQueryList);
globalThis.ResizeObserver ??= class {
  observe() {}
  unobserve() {}
  disconnect() {}
} as unknown as typeof ResizeObserver;

const sweep = sweepFiles as unknown as SweepDoc;
const base = sweep.runs[0] as Run;
let app: ReturnType<typeof mount> | null = null;

function show(run: Run) {
  const doc = { schema_version: 1, machine: sweep.machine, runs: [run] } as unknown as RunsDoc;
  const target = document.createElement("div");
  document.body.appendChild(target);
  app = mount(RunDetail, { target, props: { doc } });
  flushSync();
  return target;
}

afterEach(() => {
  if (app) unmount(app);
  app = null;
  document.body.innerHTML = "";
});

describe("RunDetail", () => {
  it("flags a disturbed result and names what disturbed it", async () => {
    const [first, ...rest] = base.results;
    const disturbed = {
      ...first,
      disturbed: true,
      disturbance: {
        disturbed: true,
        reasons: ["other processes used 48% of the 2 cores in use (0.96 cores: stress-ng 0.95)"],
        others_cpu_cores: 0.96,
        cores_in_use: 2,
        steal_pct: 0,
        cv: 0.02,
        processes: [{ name: "stress-ng", cpu_cores: 0.95 }],
      },
    };
    const el = show({ ...base, results: [disturbed, ...rest] });
    const badges = el.querySelectorAll("[data-testid=disturbed-badge]");
    expect(badges.length).toBe(1);
    expect(badges[0].getAttribute("title")).toContain("stress-ng");
    const notes = el.querySelector("[data-testid=disturbed-notes]")?.textContent ?? "";
    expect(notes).toContain(first.test);
    expect(notes).toContain("stress-ng 0.95");
    // "Measure these again" measures exactly that run's flagged tests, as
    // one benchmark followed on the Benchmark page.
    const calls: [string, Record<string, unknown>][] = [];
    let finish = () => {};
    mockIPC(async (cmd, args) => {
      calls.push([cmd, args as Record<string, unknown>]);
      await new Promise<void>((r) => (finish = r));
      return { schema_version: 1, machine: sweep.machine, runs: [] };
    });
    (el.querySelector("[data-testid=measure-again]") as HTMLButtonElement).click();
    flushSync();
    expect(nav.view).toBe("sweep");
    expect(calls.map(([cmd, a]) => [cmd, a.form])).toEqual([["start_bench", { kind: "again", run_id: base.run_id }]]);
    expect(sweepJob.plan?.tests).toEqual([first.test]);
    expect(sweepJob.running).toBe(true);
    // A second press while it runs says why nothing starts.
    (el.querySelector("[data-testid=measure-again]") as HTMLButtonElement).click();
    flushSync();
    expect(el.querySelector("[data-testid=measure-again-error]")?.textContent).toMatch(/already running/);
    expect(calls.length).toBe(1);
    finish();
    await vi.waitFor(() => expect(sweepJob.running).toBe(false));
    clearMocks();
  });

  it("sets each measured rate against the prediction made before the run", () => {
    const results = base.results.map((r, i) => ({
      ...r,
      predicted: i === 0 ? { tokens_per_s: (r.mean_tokens_per_s ?? 0) / 1.1, low: 1, high: 1e9 } : undefined,
    }));
    const basis = { source: "machine", runs: 3, models: 1, level_seen: true, model_seen: false, by_shape: false, text: "from 3 runs of 1 model on this machine" };
    const prediction = {
      made_at: "t",
      memory_bytes: 1e8,
      tests: [{ test: results[0].test, phase: "prefill" as const, estimate: results[0].predicted!, basis }],
    };
    const el = show({ ...base, results, prediction });
    const notes = el.querySelector("[data-testid=predicted-notes]")?.textContent ?? "";
    expect(notes).toContain("Predicted before this run (from 3 runs of 1 model on this machine)");
    const lines = el.querySelectorAll("[data-testid=predicted-vs-measured]");
    expect(lines.length).toBe(1);
    expect(lines[0].textContent).toMatch(new RegExp(`${results[0].test}: 10% faster than predicted \\(.* inside the predicted range\\)`));
  });

  it("shows no prediction for a run measured before predictions were kept", () => {
    const el = show(base);
    expect(el.querySelector("[data-testid=predicted-notes]")).toBeNull();
  });

  it("charts a sustained decode and says why it dropped", () => {
    const [first] = base.results;
    const series = [1, 2, 3, 14, 15, 16].map((t) => ({
      t_s: t,
      tokens_per_s: t < 12 ? 140 : 60,
      cpu_freq_mhz: 2596,
      cpu_temp_c: null,
      gpu_sm_clock_mhz: null,
      gpu_temp_c: null,
      gpu_power_w: null,
      others_cpu_cores: t < 12 ? 0.01 : 0.99,
    }));
    const sustained = {
      duration_s: 16,
      burst_tokens_per_s: 140,
      burst_window_s: 15,
      sustained_tokens_per_s: 60,
      drop_pct: 57,
      time_to_drop_s: 12,
      cause: "contention" as const,
      reasons: ["other programs went from 0.01 to 0.99 cores of the 2 in use (dyno-hog 0.99)"],
      series,
    };
    const el = show({ ...base, results: [{ ...first, sustained }] });
    const box = el.querySelector("[data-testid=sustain]");
    expect(box).not.toBeNull();
    expect(el.querySelector("[data-testid=sustain-summary]")?.textContent).toBe(
      "burst 140.0 t/s (first 15 s) → sustained 60.0 t/s (−57% from 12 s): other programs",
    );
    expect(box?.textContent).toContain("dyno-hog 0.99");
  });

  it("shows no flag on a quiet run", () => {
    const quiet = base.results.map((r) => ({ ...r, disturbed: false, disturbance: null }));
    const el = show({ ...base, results: quiet });
    expect(el.querySelector("[data-testid=disturbed-badge]")).toBeNull();
    expect(el.querySelector("[data-testid=disturbed-notes]")).toBeNull();
  });
});
