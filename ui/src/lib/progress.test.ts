import { describe, expect, it } from "vitest";
import type { JobEvent } from "../types";
import { finish, initialProgress, ratio, reduce, startedProgress, statusLine } from "./progress";
import { emptySeries, MAX_POINTS, pushTelemetry, timelineSeries, type TimelinePoint } from "./telemetry";

const run = (events: JobEvent[]) => events.reduce(reduce, startedProgress());

describe("progress reducer", () => {
  it("follows a sweep level by level", () => {
    const s = run([
      { kind: "level", level: "Q8_0", index: 0, total: 2 },
      { kind: "quantizing", level: "Q8_0" },
      { kind: "quantize_progress", done: 50, total: 200 },
      { kind: "loading", model: "m-Q8_0.gguf" },
      { kind: "test_started", run_id: 7, test: "pp128" },
      { kind: "sample", run_id: 7, test: "pp128", rep: 1, reps: 2 },
    ]);
    expect(run([{ kind: "test_started", run_id: 7, test: "tg32", quiet: true }]).activity).toBe(
      "timing tg32; the view stays still until it ends",
    );
    expect(s.level).toBe("Q8_0");
    expect(s.total).toBe(2);
    expect(ratio(s.quantize)).toBe(0.25);
    expect(s.model).toBe("m-Q8_0.gguf");
    expect(statusLine(s)).toBe("running: level 1/2 Q8_0 — pp128 rep 1/2");
    expect(s.levels).toEqual([{ level: "Q8_0", status: "running", error: null }]);
  });

  it("resets per-level bars on a new level and records failures", () => {
    const s = run([
      { kind: "level", level: "Q8_0", index: 0, total: 2 },
      { kind: "quality", level: "Q8_0", reference: "F16" },
      { kind: "quality_progress", done: 512, total: 1024 },
      { kind: "level_finished", level: "Q8_0", status: "ok" },
      { kind: "level", level: "Q2_K", index: 1, total: 2 },
      { kind: "level_finished", level: "Q2_K", status: "failed", error: "quantize_failed: out of disk" },
    ]);
    expect(s.quality).toBeNull();
    expect(s.levels.map((l) => l.status)).toEqual(["ok", "failed"]);
    expect(s.levels[1].error).toContain("out of disk");
    expect(statusLine(finish(s, "done"))).toBe("done (1 level failed)");
  });

  it("says done, failed or cancelled once the job ends", () => {
    expect(statusLine(finish(startedProgress(), "done"))).toBe("done");
    expect(statusLine(finish(startedProgress(), "failed", "busy"))).toBe("failed: busy");
    expect(statusLine(finish(startedProgress(), "cancelled"))).toBe("cancelled");
    expect(statusLine(initialProgress())).toBe("idle");
  });

  it("tracks downloads and bounds warnings, and ignores unknown events", () => {
    let s = run([
      { kind: "download_start", path: "a.gguf", total: 1000, already: 100 },
      { kind: "download_progress", done: 600, total: 1000 },
    ]);
    expect(ratio(s.download)).toBe(0.6);
    s = reduce(s, { kind: "download_finished", path: "a.gguf" });
    expect(ratio(s.download)).toBe(1);
    for (let i = 0; i < 50; i++) s = reduce(s, { kind: "warning", message: `w${i}` });
    expect(s.warnings.length).toBe(20);
    expect(s.warnings.at(-1)).toBe("w49");
    const same = reduce(s, { kind: "new_kind" } as unknown as JobEvent);
    expect(same).toBe(s);
  });

  it("ratio is null without a total", () => {
    expect(ratio(null)).toBeNull();
    expect(ratio({ done: 1, total: 0 })).toBeNull();
  });
});

describe("telemetry buffer", () => {
  it("appends in uPlot's column layout and scrolls old readings off", () => {
    const s = emptySeries();
    const none = { gpu_pct: null, power_w: null, vram_bytes: null };
    pushTelemetry(s, { kind: "telemetry", t_s: 0, cpu_pct: 50, ram_used_bytes: 1073741824 * 2, ...none }, 0);
    expect(s.ramGiB).toEqual([2]);
    expect(s.hasGpu).toBe(false);
    pushTelemetry(s, { kind: "telemetry", t_s: 1, cpu_pct: null, ram_used_bytes: null, gpu_pct: 10, power_w: 30, vram_bytes: 1e9 }, 1);
    expect(s.hasGpu && s.hasPower).toBe(true);
    expect(s.cpuPct[1]).toBeNull(); // unreadable: a gap, not 0
    expect(s.ramGiB[1]).toBeNull();
    for (let i = 0; i < MAX_POINTS + 10; i++) {
      pushTelemetry(s, { kind: "telemetry", t_s: i, cpu_pct: 1, ram_used_bytes: 0, ...none }, i + 2);
    }
    expect(s.t.length).toBe(MAX_POINTS);
    expect(s.cpuPct.length).toBe(MAX_POINTS);
    expect(s.t[0]).toBe(12);
  });
});

describe("telemetry timeline", () => {
  const pt = (t_s: number, cpu: number | null): TimelinePoint => ({
    t_s, phase: "timed", cpu_pct: cpu, ram_used_bytes: 2 * 1073741824, rss_bytes: 1e8, gpu_pct: null, power_w: null, vram_bytes: null,
  });
  it("joins runs level after level on one rising axis, with a span per level", () => {
    const { series, spans } = timelineSeries([
      { label: "Q8_0", points: [pt(5, 90), pt(7, null)] },
      { label: "Q6_K", points: [] },
      { label: "Q4_0", points: [pt(0.5, 80), pt(1.5, 85)] },
    ]);
    expect(series.t).toEqual([0, 2, 2.1, 3.1]);
    expect(series.t.every((t, i) => i === 0 || t > series.t[i - 1])).toBe(true);
    expect(series.cpuPct).toEqual([90, null, 80, 85]); // a missing reading stays a gap
    expect(series.ramGiB).toEqual([2, 2, 2, 2]);
    expect(series.hasGpu).toBe(false);
    expect(spans).toEqual([
      { label: "Q8_0", from: 0, to: 2 },
      { label: "Q4_0", from: 2.1, to: 3.1 },
    ]);
  });
});
