// Adding models by clicks: the Models view's "Add a folder…" and "Open a
// GGUF…", the Overview's first-run card, a typed path and files dropped on
// the window all end here, so each says the same thing and every view that
// lists models reloads after a change (`version`).

import * as api from "./api";
import { nav } from "./state.svelte";
import { sweepJob } from "./stores/sweep.svelte";
import { PRESET_TESTS } from "./lib/progressPlan";
import type { ApiError, PlaceAdded, Preset, PresetEstimate } from "./types";

/**
 * Benchmark one model file with a preset, from the Models view and the
 * Overview alike, then follow the live progress. `estimate` is the preset's
 * estimate for this file when the caller has it (the picker's): the
 * progress then counts its tests and spreads its time over them. Null when
 * it started, else why it could not.
 */
export function benchmark(path: string, preset: Preset = "standard", estimate?: PresetEstimate): ApiError | null {
  if (sweepJob.running) return { code: "busy", message: "A benchmark is already running; wait for it or cancel it under Benchmark." };
  nav.go("sweep");
  // One benchmark, one result: the runs of this file, never a sweep.
  const e = estimate?.plan.preset === preset ? estimate : undefined;
  const spec = { source: { kind: "files" as const, files: [path] }, preset, quality: false };
  const timing = e ? { testSeconds: e.test_seconds, loadSeconds: e.load_seconds } : {};
  void sweepJob.startBench({ kind: "preset", path, preset }, e?.tests ?? PRESET_TESTS[preset], spec, timing);
  return null;
}

/** "about 2 min (36 s–4 min)". */
export function fmtWait(seconds: number): string {
  const s = Math.max(0, Math.round(seconds));
  if (s < 90) return `${s} s`;
  if (s < 3600) return `${Math.round(s / 60)} min`;
  const m = Math.round(s / 60);
  return `${Math.floor(m / 60)} h ${m % 60} min`;
}

/** A short sentence for one added place: what it is and how many models it gave. */
export function addedLine(a: PlaceAdded): string {
  const n = a.models.length;
  const what = a.place.kind === "file" ? "file" : "folder";
  const models = `${n} model${n === 1 ? "" : "s"}`;
  return a.added ? `Added the ${what} ${a.place.path} (${models}).` : `Already listed: ${a.place.path} (${models}).`;
}

class ModelPlaces {
  /** Bumped after every change; views that list models reload on it. */
  version = $state(0);
  busy = $state(false);
  /** What the last add did, for a person. */
  message = $state<string | null>(null);
  error = $state.raw<ApiError | null>(null);
  /** Whether files are being dragged over the window. */
  dragging = $state(false);

  /** Add each path (folders or .gguf files); true if at least one was added. */
  async add(paths: string[]): Promise<boolean> {
    const list = paths.map((p) => p.trim()).filter(Boolean);
    if (!list.length) return false;
    this.busy = true;
    this.message = null;
    this.error = null;
    const lines: string[] = [];
    const failures: string[] = [];
    try {
      for (const p of list) {
        try {
          lines.push(addedLine(await api.addModelPlace(p)));
        } catch (e) {
          failures.push((e as ApiError).message);
        }
      }
    } finally {
      this.busy = false;
    }
    this.message = lines.length ? lines.join(" ") : null;
    if (failures.length) this.error = { code: "bad_input", message: failures.join(" ") };
    if (lines.length) this.version++;
    return lines.length > 0;
  }

  /** "Add a folder…" through the native dialog. */
  async pickFolder(): Promise<boolean> {
    try {
      const dir = await api.pickFolder();
      return dir ? this.add([dir]) : false;
    } catch (e) {
      this.error = e as ApiError;
      return false;
    }
  }

  /** "Open a GGUF…" through the native dialog. */
  async pickFiles(): Promise<boolean> {
    try {
      const files = await api.pickModelFiles();
      return files?.length ? this.add(files) : false;
    } catch (e) {
      this.error = e as ApiError;
      return false;
    }
  }

  async remove(path: string): Promise<void> {
    this.error = null;
    try {
      await api.removeModelPlace(path);
      this.message = `Removed ${path}; its files stay on disk.`;
      this.version++;
    } catch (e) {
      this.error = e as ApiError;
    }
  }
}

export const places = new ModelPlaces();
