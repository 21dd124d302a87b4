import { describe, expect, it } from "vitest";
import type { Prediction } from "../types";
import { basisTag, basisTitle, qualityText, rateShort, rateWithRange, versusPredicted } from "./predict";

const rate = (v: number) => ({ tokens_per_s: v, low: v * 0.8, high: v * 1.25 });
const basis = (source: string, model_seen = false, by_shape = false) => ({
  source,
  runs: 3,
  models: 1,
  level_seen: true,
  model_seen,
  by_shape,
  text: source === "machine" ? "from 3 runs of 1 model on this machine" : "prior only: no runs on this machine yet",
});

const prediction = (over: Partial<Prediction> = {}): Prediction =>
  ({
    level: "Q4_K_M",
    file: "m-Q4_K_M.gguf",
    sha256: null,
    conditions: { threads: 2, gpu_layers: 0, n_prompt: 512, n_gen: 128, ctx: 4096 },
    prefill: rate(346),
    prefill_basis: basis("machine"),
    decode: rate(52.94),
    decode_basis: basis("machine"),
    memory: { words: "fits in RAM with 4k context" },
    quality: { kld: 0.031, source: "prior", words: "small", note: "" },
    ...over,
  }) as Prediction;

describe("predictions in words", () => {
  it("rounds rates to what the interval can support", () => {
    expect(rateShort(136.4)).toBe("136");
    expect(rateShort(52.94)).toBe("52.9");
    expect(rateShort(7.414)).toBe("7.41");
    expect(rateWithRange(rate(52.94))).toBe("~52.9 t/s (42.4–66.2)");
    expect(rateWithRange(null)).toBe("–");
  });
  it("names the basis", () => {
    expect(basisTag(basis("prior"))).toBe("prior");
    expect(basisTag(basis("machine"))).toBe("from your runs");
    expect(basisTag(basis("machine", true))).toBe("this file measured");
    expect(basisTag(basis("machine", true, true))).toBe("measured by its shape");
    const t = basisTitle(prediction());
    expect(t).toContain("Decode from 3 runs of 1 model on this machine.");
    expect(t).toContain("pp512 and tg128");
  });
  it("labels a prior quality figure as another model's", () => {
    expect(qualityText(prediction())).toBe("small loss (prior from another model)");
    const measured = prediction({ quality: { kld: 0.0123, source: "measured", words: "very small", note: "" } });
    expect(qualityText(measured)).toBe("very small loss (KLD 0.0123, measured)");
  });
  it("sets a measured rate against its prediction", () => {
    expect(versusPredicted(110, rate(100))).toBe("10% faster than predicted (100 t/s, inside the predicted range)");
    expect(versusPredicted(50, rate(100))).toBe("50% slower than predicted (100 t/s, outside the predicted range)");
    expect(versusPredicted(100.2, rate(100))).toBe("as predicted (100 t/s, inside the predicted range)");
    expect(versusPredicted(null, rate(100))).toBeNull();
    expect(versusPredicted(100, null)).toBeNull();
  });
});
