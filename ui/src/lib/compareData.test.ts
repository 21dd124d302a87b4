import { describe, expect, it } from "vitest";
import fx from "../fixtures/compare.json";
import type { CompareDoc } from "../types";
import { changeClass, comparable, compareBars, machineChoices, pickable, summary } from "./compareData";
import type { ResultRow } from "./results";
import { runTarget } from "./target";

const doc = fx as unknown as CompareDoc;

describe("compare data", () => {
  it("puts A and B side by side per test, prefill apart from decode", () => {
    const pp = compareBars(doc, ["prefill"]);
    expect(pp.map((b) => `${b.group}/${b.side}`)).toEqual(["pp64/A", "pp64/B"]);
    expect(pp[0]).toMatchObject({ mean: doc.tests[0].a_tokens_per_s, half: doc.tests[0].a_ci95_tokens_per_s, n: 3 });
    const tg = compareBars(doc, ["decode", "decode_total"]);
    expect(tg.every((b) => b.group === "tg16")).toBe(true);
  });

  it("colours a change only when it is significant", () => {
    const t = { ...doc.tests[0], significant: true, change_pct: 12 };
    expect(changeClass(t)).toBe("better");
    expect(changeClass({ ...t, change_pct: -3 })).toBe("worse");
    expect(changeClass({ ...t, significant: false })).toBe("same");
    // One repetition on a side: no test, so neither "same" nor a change.
    expect(changeClass({ ...t, p_value: null, p_adjusted: null, significant: false })).toBe("untested");
    const single = { ...doc, tests: doc.tests.map((x) => ({ ...x, p_value: null, p_adjusted: null, significant: false })) };
    expect(summary(single)).toMatch(/^2 tests compared: untestable in 2 \(fewer than 2 repetitions/);
  });

  it("reads a latency the other way round: a falling time to first token is the gain", () => {
    const t = { ...doc.tests[0], rate: "ttft", unit: "ms", higher_is_better: false, significant: true, change_pct: -20 };
    expect(changeClass(t)).toBe("better");
    expect(changeClass({ ...t, change_pct: 15 })).toBe("worse");
    expect(compareBars({ ...doc, tests: [t] }, ["ttft"]).map((b) => b.side)).toEqual(["A", "B"]);
    expect(compareBars({ ...doc, tests: [t] }, ["prefill"])).toEqual([]);
  });

  it("pairs server runs only with server runs", () => {
    const r = (kind: ResultRow["kind"]) => ({ kind }) as ResultRow;
    expect(comparable(r("serve"), r("serve"))).toBe(true);
    expect(comparable(r("run"), r("sweep"))).toBe(true);
    expect(comparable(r("serve"), r("run"))).toBe(false);
    expect(comparable(r("sweep"), r("serve"))).toBe(false);
  });

  it("sums up in words and says when conditions differ", () => {
    const s = summary(doc);
    expect(s).toMatch(/^2 tests compared: B is faster in 2\./);
    expect(s).toMatch(/different conditions/);
    expect(summary({ ...doc, tests: [] })).toMatch(/same preset/);
  });
});

describe("picking by machine", () => {
  const row = (id: number, machine: string | null, here: boolean): ResultRow => ({
    target: runTarget(id),
    kind: "run",
    id,
    title: "m.gguf",
    quant: "Q4_1",
    status: "ok",
    startedAt: `2026-11-2${id}T00:00:00Z`,
    ppMean: 1,
    ppTest: "pp128",
    tgMean: 1,
    tgTest: "tg32",
    ppDisturbed: false,
    tgDisturbed: false,
    disturbed: [],
    levels: 1,
    machine,
    thisMachine: here,
    server: null,
    synthetic: null,
    haystack: "",
  });
  const rows = [row(1, "Zen 4 · 32 threads · 64 GiB", false), row(2, "Xeon · 2 threads · 24 GiB", true), row(3, null, false)];

  it("lists this machine first and says so, each machine once", () => {
    const m = machineChoices([...rows, row(4, "Xeon · 2 threads · 24 GiB", true)]);
    expect(m.map((x) => x.label)).toEqual(["Xeon · 2 threads · 24 GiB (this machine)", "Zen 4 · 32 threads · 64 GiB"]);
  });

  it("offers one machine's runs when one is chosen, and all otherwise", () => {
    expect(pickable(rows, "Zen 4 · 32 threads · 64 GiB").map((r) => r.id)).toEqual([1]);
    expect(pickable(rows, "").map((r) => r.id)).toEqual([1, 2, 3]);
    expect(pickable(rows, "", 2)).toHaveLength(2);
  });
});
