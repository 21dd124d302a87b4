// @vitest-environment jsdom
// The Overview's Predictions card: how close past predictions came, per
// phase, from `predict_accuracy`; and what it says before any exist.
import { flushSync, mount, unmount } from "svelte";
import { afterEach, describe, expect, it, vi } from "vitest";

const report = vi.hoisted(() => ({ value: null as unknown }));
vi.mock("../api", () => ({ predictAccuracy: vi.fn(async () => report.value) }));

import PredictionAccuracy from "./PredictionAccuracy.svelte";

let app: ReturnType<typeof mount> | null = null;
async function show() {
  const target = document.createElement("div");
  document.body.appendChild(target);
  app = mount(PredictionAccuracy, { target });
  await new Promise((r) => setTimeout(r, 0));
  flushSync();
  return target;
}

afterEach(() => {
  if (app) unmount(app);
  app = null;
  document.body.innerHTML = "";
});

describe("PredictionAccuracy", () => {
  it("says what will show before any run kept a prediction", async () => {
    report.value = { phases: [], disturbed_left_out: 0, memory: null, pairs: [] };
    const el = await show();
    expect(el.textContent).toContain("Each benchmark stores the prediction it made first");
  });

  it("leaves disturbed figures out and says how many, so a slowed run cannot pass as a bad prediction", async () => {
    report.value = { phases: [], disturbed_left_out: 3, memory: null, pairs: [] };
    let el = await show();
    expect(el.querySelector("[data-testid=accuracy-left-out]")!.textContent).toContain("was disturbed (3: a busy machine or unsteady repetitions)");
    document.body.innerHTML = "";
    report.value = {
      phases: [{ phase: "decode", n: 4, median_abs_error: 0.05, p90_abs_error: 0.1, median_ratio: 1, within_interval: 1 }],
      disturbed_left_out: 1, memory: null, pairs: [],
    };
    el = await show();
    expect(el.querySelector("[data-testid=accuracy-left-out]")!.textContent).toBe(
      "1 disturbed figure is left out: a busy machine or unsteady repetitions, not the prediction, decided it.",
    );
  });

  it("gives each phase's typical and 90th-percentile error and the interval's coverage", async () => {
    report.value = {
      phases: [
        { phase: "prefill", n: 14, median_abs_error: 0.182, p90_abs_error: 0.41, median_ratio: 1.1, within_interval: 0.71 },
        { phase: "decode", n: 14, median_abs_error: 0.064, p90_abs_error: 0.15, median_ratio: 0.98, within_interval: 0.86 },
      ],
      disturbed_left_out: 0,
      memory: { n: 14, median_ratio: 1.31, min_ratio: 1.1, max_ratio: 1.6 },
      pairs: [],
    };
    const el = await show();
    expect(el.querySelector("[data-testid=accuracy-decode]")!.textContent).toMatch(
      /decode: typical error 6\.4%, 9 in 10 within 15%; 86% inside the predicted range \(14 tests\)/,
    );
    expect(el.querySelector("[data-testid=accuracy-prefill]")!.textContent).toMatch(/typical error 18%/);
    expect(el.textContent).toContain("Memory estimate ÷ peak use: 1.31");
  });
});
