import { describe, expect, it } from "vitest";
import {
  baseName,
  nameParts,
  fmtBandwidth,
  fmtBytes,
  fmtAbout,
  fmtChange,
  fmtClock,
  fmtMeanSd,
  fmtMs,
  fmtParams,
  fmtPct,
  fmtRate,
  fmtSeconds,
  fmtSig,
  sentence,
  sweepName,
} from "./format";

describe("format", () => {
  it("rates keep 1 to 3 decimals by magnitude", () => {
    expect(fmtRate(1234.567)).toBe("1,234.6 t/s");
    expect(fmtRate(73.54408)).toBe("73.54 t/s");
    expect(fmtRate(0.81234)).toBe("0.812 t/s");
    expect(fmtRate(null)).toBe("–");
    expect(fmtRate(Number.NaN)).toBe("–");
  });
  it("mean ± sd at the mean's precision", () => {
    expect(fmtMeanSd(499.9667, 3.9464)).toBe("500.0 ± 3.9 t/s");
    expect(fmtMeanSd(73.544, null, "")).toBe("73.54");
  });
  it("bytes in binary units", () => {
    expect(fmtBytes(512)).toBe("512 B");
    expect(fmtBytes(98 * 1048576)).toBe("98.0 MiB");
    expect(fmtBytes(25276510208)).toBe("23.54 GiB");
    expect(fmtBytes(undefined)).toBe("–");
  });
  it("bandwidth in GB/s", () => {
    expect(fmtBandwidth(16581500226)).toBe("16.6 GB/s");
  });
  it("durations", () => {
    expect(fmtMs(124.6155)).toBe("124.6 ms");
    expect(fmtMs(12.345)).toBe("12.35 ms");
    expect(fmtMs(1250)).toBe("1.25 s");
    expect(fmtSeconds(10.739)).toBe("10.7 s");
    expect(fmtSeconds(125)).toBe("2 min 05 s");
    expect(fmtSeconds(119.7)).toBe("2 min 00 s");
  });
  it("percentages, changes, parameters, significant digits, names", () => {
    expect(fmtPct(78.974)).toBe("79.0%");
    expect(fmtChange(2.594)).toBe("+2.6%");
    expect(fmtChange(-12)).toBe("-12.0%");
    // As llama-bench and the card write it.
    expect(fmtParams(134515008)).toBe("134.52 M");
    expect(fmtParams(1235814400)).toBe("1.24 B");
    expect(fmtSig(0.002676184)).toBe("0.00268");
    expect(fmtSig(21.5599, 4)).toBe("21.56");
    expect(fmtSig(0)).toBe("0");
    expect(baseName("/a/b/model.gguf")).toBe("model.gguf");
    expect(baseName("C:\\m\\x.gguf")).toBe("x.gguf");
  });
  it("elapsed time as a clock, and estimates rounded as far as they deserve", () => {
    expect(fmtClock(5_400)).toBe("0:05");
    expect(fmtClock(164_490)).toBe("2:44");
    expect(fmtClock(3_723_000)).toBe("1:02:03");
    expect(fmtClock(-5)).toBe("0:00");
    expect(fmtAbout(4_000)).toBe("under 10 s");
    expect(fmtAbout(48_000)).toBe("about 50 s");
    expect(fmtAbout(185_000)).toBe("about 3 min");
    expect(fmtAbout(3_900_000)).toBe("about 1 h 05 min");
    expect(fmtAbout(null)).toBe("–");
  });
});

describe("nameParts", () => {
  it("cuts a long name after its separators and loses nothing", () => {
    const name = "SmolLM2-135M-Instruct.Q4_1.twin-seed1.gguf";
    expect(nameParts(name)).toEqual(["SmolLM2-", "135M-", "Instruct.", "Q4_", "1.", "twin-", "seed1.", "gguf"]);
    expect(nameParts(name).join("")).toBe(name);
    expect(nameParts("plain")).toEqual(["plain"]);
    expect(nameParts("")).toEqual([""]);
  });
});

describe("sweepName and sentence", () => {
  it("names a sweep by its file without the level, as the Results list does", () => {
    expect(sweepName("SmolLM2-135M-Instruct-Q8_0.gguf", "Q8_0")).toBe("SmolLM2-135M-Instruct");
    expect(sweepName("SmolLM2-135M-Instruct.Q4_1.gguf", "Q4_1")).toBe("SmolLM2-135M-Instruct");
    expect(sweepName("model-f16.gguf", "F16")).toBe("model");
    expect(sweepName("org-x-GGUF-Q4_K_M.synth.gguf", "Q4_K_M")).toBe("org-x-GGUF");
    expect(sweepName("notes.gguf", "Q4_0")).toBe("notes");
  });
  it("starts a backend message with a capital", () => {
    expect(sentence("the sweep was cancelled; what was measured is saved")).toBe("The sweep was cancelled; what was measured is saved");
    expect(sentence("")).toBe("");
  });
});
