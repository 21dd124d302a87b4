// What the backend loads, exports and compares: a run ("12"), a sweep
// ("sweep:3") or a server run ("serve:2"). The type is generated from the
// Rust one (bindings/Target.ts), a template literal, so a view can only
// hand the backend one of these forms; these helpers make and read them
// without string matching spread over the views.

import type { Target, TargetKind } from "../types";

export const runTarget = (id: number): Target => `${id}`;
export const sweepTarget = (id: number): Target => `sweep:${id}`;

/** What `t` names. */
export function targetKind(t: Target): TargetKind {
  if (t.startsWith("sweep:")) return "sweep";
  if (t.startsWith("serve:")) return "serve";
  return "run";
}

/** "run-12", "sweep-3" or "serve-2": the name `dyno export` gives the file. */
export function fileStem(t: Target): string {
  const id = t.slice(t.indexOf(":") + 1);
  return `${targetKind(t)}-${id}`;
}

/** The id a target names (12 for "12", "run:12" and "sweep:12"). */
export function targetId(t: Target): number {
  return Number(t.slice(t.indexOf(":") + 1));
}
