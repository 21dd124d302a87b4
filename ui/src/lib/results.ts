// The Results list: light summary rows (from the backend's `result_list`,
// already newest first), mapped once per load, then filtered and paged, so
// 1,000 runs stay fast. The full documents are loaded only when one is opened.

import type { ResultListRow, Run, RunsDoc, SweepDoc, Target, TargetKind } from "../types";
import { decodeOf, prefillOf } from "./sweepData";
import { runTarget, sweepTarget } from "./target";

export interface ResultRow {
  /** What the backend loads for this row (lib/target.ts). */
  target: Target;
  kind: TargetKind;
  id: number;
  title: string;
  quant: string;
  status: string;
  startedAt: string;
  ppMean: number | null;
  ppTest: string | null;
  tgMean: number | null;
  tgTest: string | null;
  /** The figures above were disturbed by other programs: never shown as clean. */
  ppDisturbed: boolean;
  tgDisturbed: boolean;
  /** Every disturbed test of the row ("tg128"; a sweep's "Q4_0 tg128"). */
  disturbed: string[];
  levels: number;
  /** The machine that measured it, when the list says (null from full documents). */
  machine: string | null;
  thisMachine: boolean;
  /** A server run's server and build ("llama-server b6000"); null otherwise. */
  server: string | null;
  /** What a model with synthetic weights stands for ("twin of SmolLM2 135M, seed 1"); null for a real model. */
  synthetic: string | null;
  /** Lower-case text the filter matches against. */
  haystack: string;
}

/** One `result_list` row as a list row: a copy of a few fields, nothing computed. */
export function listRow(r: ResultListRow): ResultRow {
  return {
    target: r.target,
    kind: r.kind,
    id: r.id,
    title: r.title,
    quant: r.quant,
    status: r.status,
    startedAt: r.started_at,
    ppMean: r.pp_mean,
    ppTest: r.pp_test,
    tgMean: r.tg_mean,
    tgTest: r.tg_test,
    ppDisturbed: r.pp_disturbed,
    tgDisturbed: r.tg_disturbed,
    disturbed: r.disturbed,
    levels: r.levels,
    machine: r.machine,
    thisMachine: r.this_machine,
    server: r.server,
    synthetic: r.synthetic,
    haystack: `${r.title} ${r.file_name} ${r.quant} ${r.arch} ${r.machine}${r.server ? ` ${r.server}` : ""}${r.synthetic ? " synthetic" : ""}`.toLowerCase(),
  };
}

/** `result_list`'s rows in its order (newest first). */
export function rowsFromList(list: ResultListRow[]): ResultRow[] {
  return list.map(listRow);
}

/** From full documents (tests, and anything that already holds them). */
export function runRow(run: Run): ResultRow {
  const pp = prefillOf(run);
  const tg = decodeOf(run);
  // Models are named by their file first (what the person sees on disk).
  const title = run.model.file_name;
  return {
    target: runTarget(run.run_id),
    kind: "run",
    id: run.run_id,
    title,
    quant: run.model.quant ?? "",
    status: run.status,
    startedAt: run.started_at,
    ppMean: pp?.mean ?? null,
    ppTest: pp?.test ?? null,
    tgMean: tg?.mean ?? null,
    tgTest: tg?.test ?? null,
    ppDisturbed: !!pp && run.results.some((x) => x.test === pp.test && x.disturbed),
    tgDisturbed: !!tg && run.results.some((x) => x.test === tg.test && x.disturbed),
    disturbed: disturbedOf([run]),
    levels: 1,
    machine: null,
    thisMachine: false,
    server: null,
    synthetic: run.model.synthetic ?? null,
    haystack: `${title} ${run.model.file_name} ${run.model.quant ?? ""} ${run.model.arch ?? ""}${run.model.synthetic ? " synthetic" : ""}`.toLowerCase(),
  };
}

export function sweepRow(doc: SweepDoc): ResultRow {
  const first = doc.runs[0];
  const title = first ? first.model.name || first.model.file_name : `sweep ${doc.sweep_id}`;
  const levels = doc.sweep.levels.map((l) => l.level);
  return {
    target: sweepTarget(doc.sweep_id),
    kind: "sweep",
    id: doc.sweep_id,
    title,
    quant: levels.join(", "),
    status: doc.sweep.status,
    startedAt: doc.sweep.created_at,
    ppMean: null,
    ppTest: null,
    tgMean: null,
    tgTest: null,
    ppDisturbed: false,
    tgDisturbed: false,
    disturbed: disturbedOf(doc.runs, true),
    levels: levels.length,
    machine: null,
    thisMachine: false,
    server: null,
    synthetic: first?.model.synthetic ?? null,
    haystack: `${title} ${doc.runs.map((r) => r.model.file_name).join(" ")} ${levels.join(" ")}${first?.model.synthetic ? " synthetic" : ""}`.toLowerCase(),
  };
}

/** The finished tests whose figures were disturbed: "tg128", or "Q4_0 tg128" by level. */
export function disturbedOf(runs: Run[], byLevel = false): string[] {
  return runs.flatMap((r) =>
    r.results.filter((x) => x.status === "ok" && x.disturbed).map((x) => (byLevel ? `${r.model.quant ?? ""} ${x.test}`.trim() : x.test)),
  );
}

/**
 * The status a list shows: a run that finished but whose figures other
 * programs disturbed is "disturbed", never a plain green "ok".
 */
export function shownStatus(r: Pick<ResultRow, "status" | "disturbed">): string {
  return r.status === "ok" && r.disturbed.length > 0 ? "disturbed" : r.status;
}

/** A row's name in lists and pickers: "run 12", "sweep 3", "server run 2". */
export function rowName(r: ResultRow): string {
  return r.kind === "sweep" ? `sweep ${r.id}` : r.kind === "serve" ? `server run ${r.id}` : `run ${r.id}`;
}

/** Sweeps and runs together, newest first. */
export function buildRows(runs: RunsDoc | null, sweeps: SweepDoc[] | null): ResultRow[] {
  const rows: ResultRow[] = [];
  for (const s of sweeps ?? []) rows.push(sweepRow(s));
  for (const r of runs?.runs ?? []) rows.push(runRow(r));
  // ISO timestamps sort as strings.
  rows.sort((a, b) => (a.startedAt < b.startedAt ? 1 : a.startedAt > b.startedAt ? -1 : 0));
  return rows;
}

export interface RowFilter {
  text: string;
  status: string; // "" for any
  kind: "" | "run" | "sweep" | "serve";
}

export function filterRows(rows: ResultRow[], f: RowFilter): ResultRow[] {
  const words = f.text.toLowerCase().split(/\s+/).filter(Boolean);
  if (!words.length && !f.status && !f.kind) return rows;
  return rows.filter(
    (r) =>
      (!f.status || shownStatus(r) === f.status) &&
      (!f.kind || r.kind === f.kind) &&
      words.every((w) => r.haystack.includes(w)),
  );
}

export function page<T>(rows: T[], pageIndex: number, pageSize: number): { items: T[]; pages: number; index: number } {
  const pages = Math.max(1, Math.ceil(rows.length / pageSize));
  const index = Math.min(Math.max(0, pageIndex), pages - 1);
  return { items: rows.slice(index * pageSize, (index + 1) * pageSize), pages, index };
}
