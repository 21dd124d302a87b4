// @vitest-environment jsdom
// Smoke tests of the real components in jsdom with the backend mocked by
// fixtures: every view renders its test ids, errors show their message, and
// the Results list renders 1,000 runs within budget.
import { flushSync, mount, unmount } from "svelte";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import compareFx from "./fixtures/compare.json";
import hwFx from "./fixtures/hw.json";
import ladder from "./fixtures/sweep-ladder.json";
import type { RunsDoc, SweepDoc } from "./types";

const sweepDoc = ladder as unknown as SweepDoc;
let runCount = 4;
/** The mocked sweep waits on this, so the test can look at it mid-run. */
const sweepGate: { promise: Promise<void>; open: () => void } = (() => {
  let open = () => {};
  const promise = new Promise<void>((r) => (open = r));
  return { promise, open };
})();

function manyRuns(n: number): RunsDoc {
  const runs = Array.from({ length: n }, (_, i) => ({
    ...sweepDoc.runs[i % sweepDoc.runs.length],
    run_id: i + 1,
    started_at: new Date(Date.UTC(2027, 0, 1) + i * 60000).toISOString(),
  }));
  return { schema_version: 1, machine: sweepDoc.machine, runs };
}

vi.mock("./api", () => ({
  hw: vi.fn(async () => hwFx),
  appInfo: vi.fn(async () => ({ version: "0.1.0-test", db: "/tmp/dyno.db", downloads: "/home/u/Downloads" })),
  models: vi.fn(async () => []),
  runs: vi.fn(async () => manyRuns(runCount)),
  run: vi.fn(async (id: number) => ({ ...manyRuns(1), runs: [{ ...sweepDoc.runs[0], run_id: id }] })),
  sweeps: vi.fn(async () => [sweepDoc]),
  sweep: vi.fn(async () => sweepDoc),
  compare: vi.fn(async () => compareFx),
  cardSvg: vi.fn(async () => "<svg xmlns='http://www.w3.org/2000/svg'/>"),
  exportCard: vi.fn(async (_t: string, _f: string, path: string) => ({ path })),
  exportText: vi.fn(async (t: string, f: string) => (f === "md" ? `## exported ${t}\n` : `{"target":"${t}"}`)),
  hubSearch: vi.fn(async () => {
    throw { code: "network", message: "The hub could not be reached; check the connection." };
  }),
  hubLevels: vi.fn(),
  startSweep: vi.fn(async (_spec: unknown, _job: string, onEvent: (e: unknown) => void) => {
    onEvent({ kind: "level", level: "Q4_1", index: 0, total: 1 });
    onEvent({ kind: "test_started", run_id: 1, test: "pp128" });
    onEvent({ kind: "sample", run_id: 1, test: "pp128", rep: 1, reps: 2 });
    onEvent({ kind: "telemetry", t_s: 0.5, cpu_pct: 97, ram_used_bytes: 8e9, gpu_pct: null, power_w: null, vram_bytes: null });
    await sweepGate.promise;
    onEvent({ kind: "level_finished", level: "Q4_1", status: "ok" });
    return sweepDoc;
  }),
  hubPull: vi.fn(),
  cancel: vi.fn(async () => true),
  newJobId: () => "job-1",
}));

// uPlot reads the pixel ratio through matchMedia when it loads; jsdom lacks it.
window.matchMedia ??= ((query: string) =>
  ({ matches: false, media: query, addEventListener() {}, removeEventListener() {}, addListener() {}, removeListener() {} }) as unknown as MediaQueryList);

// bind:clientWidth observes sizes; jsdom has no layout, so a no-op observer.
globalThis.ResizeObserver ??= class {
  observe() {}
  unobserve() {}
  disconnect() {}
} as unknown as typeof ResizeObserver;

// uPlot draws on a canvas; jsdom has none, so every context call is a no-op.
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

const { default: App } = await import("./App.svelte");
const { nav } = await import("./state.svelte");

/** Let the mocked promises settle and Svelte flush. */
async function settle() {
  for (let i = 0; i < 5; i++) {
    await new Promise((r) => setTimeout(r, 0));
    flushSync();
  }
}

const q = (id: string) => document.querySelector(`[data-testid="${id}"]`) as HTMLElement | null;
const qa = (id: string) => document.querySelectorAll(`[data-testid="${id}"]`);

let app: ReturnType<typeof mount> | null = null;

beforeEach(() => {
  // jsdom has neither blob URLs nor layout; the views only need these to exist.
  URL.createObjectURL ??= () => "blob:test";
  URL.revokeObjectURL ??= () => {};
  document.body.innerHTML = "";
  nav.go("overview");
  nav.resultsTarget = null;
  runCount = 4;
  app = mount(App, { target: document.body });
});

afterEach(() => {
  if (app) unmount(app);
  app = null;
});

describe("App", () => {
  it("shows the hardware, the nav and the version", async () => {
    await settle();
    for (const v of ["overview", "models", "sweep", "results", "export"]) expect(q(`nav-${v}`)).not.toBeNull();
    expect(q("hw-cpu")!.textContent).toBe("AMD EPYC");
    expect(q("quick-sweep")).not.toBeNull();
    expect(q("app-version")!.textContent).toBe("0.1.0-test");
  });

  it("quick sweep without models says why in the error element", async () => {
    await settle();
    q("quick-sweep")!.click();
    await settle();
    expect(q("error")!.textContent).toContain("No GGUF model found");
  });

  it("has every sweep form control", async () => {
    q("nav-sweep")!.click();
    flushSync();
    for (const id of ["sweep-source-kind", "sweep-files", "sweep-prompt", "sweep-gen", "sweep-reps", "sweep-quality", "sweep-run", "sweep-cancel"]) {
      expect(q(id), id).not.toBeNull();
    }
    expect(q("sweep-status")!.textContent).toBe("idle");
    const kind = q("sweep-source-kind") as HTMLSelectElement;
    kind.value = "from";
    kind.dispatchEvent(new Event("change"));
    flushSync();
    expect(q("sweep-base")).not.toBeNull();
    expect(q("sweep-levels")).not.toBeNull();
  });

  it("shows a hub error readably", async () => {
    q("nav-models")!.click();
    await settle();
    const input = q("hub-query") as HTMLInputElement;
    input.value = "llama";
    input.dispatchEvent(new Event("input"));
    flushSync();
    q("hub-search")!.click();
    await settle();
    expect(q("error")!.textContent).toBe("The hub could not be reached; check the connection.");
  });

  it("lists 1,000 runs a page at a time, quickly, and opens a sweep with its chart", async () => {
    runCount = 1000;
    const t0 = performance.now();
    q("nav-results")!.click();
    await settle();
    const ms = performance.now() - t0;
    expect(qa("results-row").length).toBe(50);
    console.log(`results: 1,000 runs listed and rendered in ${ms.toFixed(0)} ms (jsdom)`);
    expect(ms).toBeLessThan(200 * 3); // jsdom is several times slower than a webview
    const sweepRow = [...qa("results-row")].find((r) => (r as HTMLElement).dataset.target === "sweep:1");
    expect(sweepRow).toBeUndefined(); // the sweep is older than the 1,000 runs: on a later page
    const filter = q("results-kind") as HTMLSelectElement;
    filter.value = "sweep";
    filter.dispatchEvent(new Event("change"));
    flushSync();
    expect(qa("results-row").length).toBe(1);
    (q("results-open") as HTMLElement).click();
    await settle();
    expect(q("level-chart")).not.toBeNull();
    const levels = [...qa("level-group")].map((e) => (e as HTMLElement).dataset.level);
    expect(levels).toEqual(["F16", "Q8_0", "Q4_1", "Q4_0"]);
    expect(q("level-chart")!.querySelectorAll("svg").length).toBeGreaterThanOrEqual(2);
    expect(q("recommendation")!.textContent).toContain("Q8_0");
  });

  it("compares two runs", async () => {
    q("nav-results")!.click();
    await settle();
    q("results-tab-compare")!.click();
    flushSync();
    for (const [id, v] of [["compare-a", "1"], ["compare-b", "2"]]) {
      const s = q(id) as HTMLSelectElement;
      s.value = v;
      s.dispatchEvent(new Event("change"));
    }
    flushSync();
    q("compare-run")!.click();
    await settle();
    expect(q("compare-table")!.querySelectorAll("tbody tr").length).toBe(3);
  });

  it("exports to the typed path and previews the card as an image", async () => {
    q("nav-export")!.click();
    await settle();
    expect((q("export-path") as HTMLInputElement).value).toMatch(/^\/home\/u\/Downloads\/dyno-.+\.png$/);
    expect(q("card-preview")!.tagName).toBe("IMG");
    q("export-save")!.click();
    await settle();
    expect(q("export-done")!.textContent).toContain("/home/u/Downloads/dyno-");
  });

  it("falls back to ~/Downloads without a Downloads folder, and copies the backend's export", async () => {
    const api = await import("./api");
    vi.mocked(api.appInfo).mockResolvedValueOnce({ version: "0.1.0-test", db: "/tmp/dyno.db", downloads: null });
    const writeText = vi.fn(async () => {});
    Object.defineProperty(navigator, "clipboard", { value: { writeText }, configurable: true });
    q("nav-export")!.click();
    await settle();
    expect((q("export-path") as HTMLInputElement).value).toMatch(/^~\/Downloads\/dyno-.+\.png$/);
    const target = (q("export-target") as HTMLSelectElement).value;
    q("export-copy-md")!.click();
    await settle();
    expect(vi.mocked(api.exportText)).toHaveBeenLastCalledWith(target, "md");
    expect(writeText).toHaveBeenLastCalledWith(`## exported ${target}\n`);
    expect(q("export-copied")!.textContent).toBe("Markdown copied");
    q("export-copy-json")!.click();
    await settle();
    expect(vi.mocked(api.exportText)).toHaveBeenLastCalledWith(target, "json");
    expect(q("export-copied")!.textContent).toBe("JSON copied");
  });

  it("resets the download row when the user cancels", async () => {
    const api = await import("./api");
    vi.mocked(api.hubSearch).mockResolvedValueOnce([{ id: "org/m-GGUF", downloads: 1, likes: 0, lastModified: null }]);
    vi.mocked(api.hubLevels).mockResolvedValueOnce({
      repo: "org/m-GGUF", commit: "0123456789abcdef", mmproj: [], imatrix: [],
      levels: [{ level: "Q4_0", files: [{ path: "m-Q4_0.gguf", size: 1000, sha256: null }], size_bytes: 1000, fit: "ram" }],
    });
    let reject: (e: unknown) => void = () => {};
    vi.mocked(api.hubPull).mockImplementationOnce((_r, _f, _j, onEvent) => {
      onEvent({ kind: "download_start", path: "m-Q4_0.gguf", total: 1000, already: 400 });
      onEvent({ kind: "download_progress", done: 600, total: 1000 });
      return new Promise((_res, rej) => (reject = rej));
    });
    vi.mocked(api.cancel).mockImplementationOnce(async () => {
      reject({ code: "cancelled", message: "the download was cancelled; what arrived is kept" });
      return true;
    });
    q("nav-models")!.click();
    await settle();
    const input = q("hub-query") as HTMLInputElement;
    input.value = "m";
    input.dispatchEvent(new Event("input"));
    flushSync();
    q("hub-search")!.click();
    await settle();
    q("hub-repo")!.click();
    await settle();
    q("download")!.click();
    await settle();
    expect(q("download-progress")).not.toBeNull();
    q("download-cancel")!.click();
    await settle();
    expect(q("download-progress")).toBeNull();
    expect(q("download-cancel")).toBeNull();
    expect(q("download")!.hasAttribute("disabled")).toBe(false);
    expect(q("download-cancelled")).not.toBeNull();
    expect(q("error")).toBeNull();
  });

  it("runs a quick sweep and follows it to done", async () => {
    const api = await import("./api");
    vi.mocked(api.models).mockResolvedValueOnce([
      { origin: "folder", name: "big", path: "/m/big.gguf", arch: "llama", quant: "F16", size_bytes: 2e9, n_params: 1e9, fit: "ram", error: null },
      { origin: "folder", name: "small", path: "/m/small.gguf", arch: "llama", quant: "Q4_1", size_bytes: 1e8, n_params: 1e8, fit: "ram", error: null },
    ]);
    await settle();
    q("quick-sweep")!.click();
    await settle();
    expect(vi.mocked(api.startSweep).mock.calls[0][0]).toEqual({
      source: { kind: "files", files: ["/m/small.gguf"] }, prompt: 128, gen: 32, reps: 2, quality: false,
    });
    expect(q("sweep-status")!.textContent).toBe("running: level 1/1 Q4_1 — pp128 rep 1/2");
    expect(q("sweep-cancel")!.hasAttribute("disabled")).toBe(false);
    sweepGate.open();
    await settle();
    expect(q("sweep-status")!.textContent).toBe("done");
    expect(q("level-chart")).not.toBeNull();
  });

  it("says cancelled when the user cancels a sweep", async () => {
    const api = await import("./api");
    let reject: (e: unknown) => void = () => {};
    vi.mocked(api.startSweep).mockImplementationOnce((_spec, _job, onEvent) => {
      onEvent({ kind: "level", level: "Q4_1", index: 0, total: 2 });
      return new Promise((_res, rej) => (reject = rej));
    });
    vi.mocked(api.cancel).mockImplementationOnce(async () => {
      reject({ code: "cancelled", message: "the sweep was cancelled; what was measured is saved" });
      return true;
    });
    q("nav-sweep")!.click();
    flushSync();
    const files = q("sweep-files") as HTMLTextAreaElement;
    files.value = "/m/small.gguf";
    files.dispatchEvent(new Event("input"));
    flushSync();
    q("sweep-run")!.click();
    await settle();
    expect(q("sweep-status")!.textContent).toMatch(/^running/);
    q("sweep-cancel")!.click();
    await settle();
    expect(q("sweep-status")!.textContent).toBe("cancelled");
    expect((q("sweep-level") as HTMLElement).dataset.status).toBe("cancelled");
    expect(q("error")).toBeNull();
  });
});
