// Predictions in words and numbers: what the Models view shows beside each
// level and file, and what a run shows beside each measured rate. Pure
// functions, so the phrasing is tested without a view.

import type { Basis, PredictedRate, Prediction } from "../types";
import { DASH } from "./format";

/** A rate without decimals noise: "136", "52.9", "7.41". */
export function rateShort(v: number): string {
  if (!Number.isFinite(v)) return DASH;
  if (v >= 100) return v.toFixed(0);
  if (v >= 10) return v.toFixed(1);
  return v.toFixed(2);
}

/** "~52.9 t/s (38.1–73.3)": the value and its 80% interval. */
export function rateWithRange(e: PredictedRate | null | undefined): string {
  if (!e) return DASH;
  return `~${rateShort(e.tokens_per_s)} t/s (${rateShort(e.low)}–${rateShort(e.high)})`;
}

/** A short tag for the basis: "measured here" or "estimate". */
export function basisTag(b: Basis): string {
  if (b.source !== "machine") return "prior";
  if (!b.model_seen) return "from your runs";
  // A twin's run (--shape-only) measured this level without its weights.
  return b.by_shape ? "measured by its shape" : "this file measured";
}

/** The tooltip: the basis in full, both phases, and what the interval means. */
export function basisTitle(p: Prediction): string {
  return [
    `Decode ${p.decode_basis.text}.`,
    `Prefill ${p.prefill_basis.text}.`,
    `At ${p.conditions.threads} threads, pp${p.conditions.n_prompt} and tg${p.conditions.n_gen}; the range is about an 80% interval.`,
  ].join(" ");
}

/** "small loss (prior from another model)" or "measured: 0.0123". */
export function qualityText(p: Prediction): string {
  const q = p.quality;
  if (q.source === "measured") return `${q.words} loss (KLD ${q.kld.toFixed(4)}, measured)`;
  return `${q.words} loss (prior from another model)`;
}

/** Measured against predicted, for a run: "9% faster than predicted (inside the range)". */
export function versusPredicted(measured: number | null | undefined, p: PredictedRate | null | undefined): string | null {
  if (!p || typeof measured !== "number" || !Number.isFinite(measured) || measured <= 0) return null;
  const ratio = measured / p.tokens_per_s;
  const pct = Math.round(Math.abs(ratio - 1) * 100);
  const inside = measured >= p.low && measured <= p.high;
  const range = inside ? "inside the predicted range" : "outside the predicted range";
  if (pct === 0) return `as predicted (${rateShort(p.tokens_per_s)} t/s, ${range})`;
  return `${pct}% ${ratio > 1 ? "faster" : "slower"} than predicted (${rateShort(p.tokens_per_s)} t/s, ${range})`;
}
