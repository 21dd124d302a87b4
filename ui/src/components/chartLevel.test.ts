// @vitest-environment jsdom
// The result charts as drawn by Plot in jsdom from a real sweep (2
// repetitions): ticks carry units and round values, the notes say what the
// whiskers are and warn about the few repetitions, and every mark has a tip.
import { flushSync, mount, unmount } from "svelte";
import { afterEach, describe, expect, it } from "vitest";
import ladder from "../fixtures/sweep-ladder.json";
import { levelRows } from "../lib/sweepData";
import type { SweepDoc } from "../types";
import LevelChart from "./LevelChart.svelte";
import ScatterChart from "./ScatterChart.svelte";
import TtftChart from "./TtftChart.svelte";

globalThis.ResizeObserver ??= class {
  observe() {}
  unobserve() {}
  disconnect() {}
} as unknown as typeof ResizeObserver;

const rows = levelRows(ladder as unknown as SweepDoc);
let view: ReturnType<typeof mount> | null = null;

function draw(component: typeof LevelChart | typeof TtftChart | typeof ScatterChart, props: Record<string, unknown>) {
  document.body.innerHTML = "";
  view = mount(component as typeof LevelChart, { target: document.body, props: props as { rows: typeof rows } });
  flushSync();
}

/** The tick labels of the figure's axes. */
const ticks = () => [...document.querySelectorAll('svg [aria-label$="tick label"] text')].map((t) => t.textContent ?? "");

afterEach(() => {
  if (view) unmount(view);
  view = null;
});

describe("result charts", () => {
  it("speed bars: ticks with t/s, what the whiskers are, and a warning for 2 repetitions", () => {
    draw(LevelChart, { rows });
    const labels = ticks();
    expect(labels.filter((l) => l.endsWith(" t/s")).length).toBeGreaterThanOrEqual(6);
    expect(labels.some((l) => /\d\.\d{3,}/.test(l))).toBe(false);
    expect(document.querySelector('[data-testid="chart-whiskers"]')?.textContent).toBe(
      "Bars: mean; whiskers: 95% confidence interval of the mean over 2 repetitions (Student's t).",
    );
    expect(document.querySelector('[data-testid="chart-few-reps"]')?.textContent).toBe(
      "Fewer than 3 repetitions: the interval is wide; measure with more repetitions.",
    );
    // Dashed whiskers for the 2-repetition bars.
    expect(document.querySelector('svg [stroke-dasharray="3,2"]')).not.toBeNull();
  });

  it("TTFT in ms with its own notes", () => {
    draw(TtftChart, { rows });
    expect(ticks().some((l) => l.endsWith(" ms"))).toBe(true);
    expect(document.querySelector('[data-testid="chart-few-reps"]')).not.toBeNull();
  });

  it("decode against size: sizes in MiB, speed in t/s, from 0", () => {
    draw(ScatterChart, { rows, against: "size" });
    const labels = ticks();
    expect(labels).toContain("0 MiB");
    expect(labels.some((l) => /^\d+ MiB$/.test(l) && l !== "0 MiB")).toBe(true);
    expect(labels).toContain("0 t/s");
    expect(labels.some((l) => /\d\.\d{3,}/.test(l))).toBe(false);
  });

  it("decode against KLD: one tick per decade", () => {
    draw(ScatterChart, { rows, against: "kld" });
    const labels = ticks();
    expect(labels).toEqual(expect.arrayContaining(["0", "0.001", "0.01"]));
  });
});
