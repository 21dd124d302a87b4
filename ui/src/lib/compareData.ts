// A comparison (`dyno compare --json`) as chart data and table text: A and B
// side by side per test, prefill and decode apart (they differ by an order
// of magnitude and are different numbers), with each side's 95% interval and
// the change coloured only where the test says it is more than noise. Pure,
// so what the Compare view shows is pinned by tests.

import type { CompareDoc, CompareTest } from "../types";
import type { ResultRow } from "./results";

/** One bar: one side of one test. */
export interface CompareBar {
  /** The test, with its level when the comparison has levels ("tg128 · Q4_K_M"). */
  group: string;
  side: "A" | "B";
  mean: number;
  half: number | null;
  n: number;
}

export function groupName(t: CompareTest): string {
  return t.level ? `${t.test} · ${t.level}` : t.test;
}

/** Bars for one rate ("prefill", or the decode rates). */
export function compareBars(doc: CompareDoc, rates: string[]): CompareBar[] {
  const out: CompareBar[] = [];
  for (const t of doc.tests.filter((x) => rates.includes(x.rate))) {
    if (t.a_tokens_per_s == null || t.b_tokens_per_s == null) continue;
    const g = groupName(t);
    out.push({ group: g, side: "A", mean: t.a_tokens_per_s, half: t.a_ci95_tokens_per_s, n: t.a_reps });
    out.push({ group: g, side: "B", mean: t.b_tokens_per_s, half: t.b_ci95_tokens_per_s, n: t.b_reps });
  }
  return out;
}

/**
 * How a change reads: better and worse only when significant; "same" when
 * the test finds it within the noise; "untested" when a side has fewer than
 * two repetitions, so no test can say either way.
 */
export function changeClass(t: CompareTest): "better" | "worse" | "same" | "untested" {
  if (t.p_value == null) return "untested";
  if (!t.significant || t.change_pct == null) return "same";
  // A latency (time to first token) is better when it falls.
  return t.change_pct > 0 === t.higher_is_better ? "better" : "worse";
}

/**
 * Whether `a` and `b` can be compared: runs and sweeps with each other,
 * server runs with server runs (a server's figures are measured from a
 * client, and its tests are requests, not llama-bench's tests).
 */
export function comparable(a: ResultRow, b: ResultRow): boolean {
  return (a.kind === "serve") === (b.kind === "serve");
}

/** One line that sums the comparison up for a person. */
export function summary(doc: CompareDoc): string {
  const n = doc.tests.length;
  if (n === 0) return "No test is in both. Compare runs of the same preset (Quick, Standard or Thorough).";
  const count = (c: ReturnType<typeof changeClass>) => doc.tests.filter((t) => changeClass(t) === c).length;
  const [better, worse, same, untested] = [count("better"), count("worse"), count("same"), count("untested")];
  const parts = [];
  if (better) parts.push(`B is faster in ${better}`);
  if (worse) parts.push(`slower in ${worse}`);
  if (same) parts.push(`not significantly different in ${same}`);
  if (untested) parts.push(`untestable in ${untested} (fewer than 2 repetitions on a side: measure with more)`);
  const differ = doc.tests.some((t) => t.differs.length > 0);
  return `${n} test${n === 1 ? "" : "s"} compared: ${parts.join(", ")}.${differ ? " Some were measured under different conditions (marked): the change belongs to those as much as to the runs." : ""}`;
}

/**
 * What differs between A and B, once each: the conditions that changed
 * ("threads 1 → 2") over every matched test, so a person sees first
 * whether the two were measured alike.
 */
export function differences(doc: CompareDoc): string[] {
  return [...new Set(doc.tests.flatMap((t) => t.differs))];
}

/** A machine to pick runs by: its label, this machine first and named so. */
export interface MachineChoice {
  machine: string;
  label: string;
}

/** The machines of `rows`, this machine first, then by name. */
export function machineChoices(rows: ResultRow[]): MachineChoice[] {
  const seen = new Map<string, boolean>();
  for (const r of rows) if (r.machine) seen.set(r.machine, (seen.get(r.machine) ?? false) || r.thisMachine);
  return [...seen.entries()]
    .sort(([a, ta], [b, tb]) => Number(tb) - Number(ta) || a.localeCompare(b))
    .map(([machine, here]) => ({ machine, label: here ? `${machine} (this machine)` : machine }));
}

/** What a picker offers: the newest `limit` rows, of one machine when `machine` is set. */
export function pickable(rows: ResultRow[], machine: string, limit = 300): ResultRow[] {
  const of = machine ? rows.filter((r) => r.machine === machine) : rows;
  return of.slice(0, limit);
}
