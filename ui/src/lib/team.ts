// The Team view's pure helpers: the store URL with and without its password,
// a sync's progress and summary, and the machines ranking's options, rows and
// order. Kept out of the component so each is tested on its own.
//
// The URL is handled as text, not with `new URL`: postgres:// is not a scheme
// browsers know, and WebKit and jsdom have disagreed on how much of such a URL
// they parse. The rules here are RFC 3986's authority, which is what libpq and
// sqlx read.

import { DASH, fmtPct, fmtRate, fmtSeconds } from "./format";
import type { Fraction } from "./progress";
import type { SyncProgress, SyncReport, TeamMachineRank, TeamModelLevel } from "../types";

/** scheme://authority, then the path, query and fragment. */
const URL_PARTS = /^([a-z][a-z0-9+.-]*:\/\/)([^/?#]*)(.*)$/is;

/** A URL split at its authority's userinfo; null when it has no `scheme://`. */
function parts(url: string): { scheme: string; user: string | null; password: string | null; host: string; rest: string } | null {
  const m = URL_PARTS.exec(url.trim());
  if (!m) return null;
  const [, scheme, authority, rest] = m;
  // The last @ ends the userinfo: a raw @ may only stand in an unencoded password.
  const at = authority.lastIndexOf("@");
  if (at < 0) return { scheme, user: null, password: null, host: authority, rest };
  const info = authority.slice(0, at);
  const colon = info.indexOf(":");
  return {
    scheme,
    user: colon < 0 ? info : info.slice(0, colon),
    password: colon < 0 ? null : info.slice(colon + 1),
    host: authority.slice(at + 1),
    rest,
  };
}

/**
 * A password as userinfo holds it: percent-encoded, including the characters
 * `encodeURIComponent` leaves (`!'()*`), so no password can end the userinfo
 * or be read differently by another parser.
 */
export function encodePassword(password: string): string {
  return encodeURIComponent(password).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

/**
 * The URL to connect with: `url` with `password` set in its userinfo (over
 * any password already there). A URL without a user gets `:PASSWORD@`, which
 * libpq and sqlx read as the default user with that password. With no
 * password typed, `url` is returned as it is, for PGPASSWORD or ~/.pgpass.
 */
export function withPassword(url: string, password: string): string {
  const u = url.trim();
  if (!password) return u;
  const p = parts(u);
  // No host (sqlite:///file.db): nothing to log in to.
  if (!p || !p.host) return u;
  return `${p.scheme}${p.user ?? ""}:${encodePassword(password)}@${p.host}${p.rest}`;
}

/**
 * `url` without a password in its userinfo, and the password it held (decoded),
 * if any: what the page may show and save, and what goes to the password field.
 */
export function splitPassword(url: string): { url: string; password: string } {
  const u = url.trim();
  const p = parts(u);
  if (!p || p.password === null) return { url: u, password: "" };
  let password = p.password;
  try {
    password = decodeURIComponent(p.password);
  } catch {
    /* not percent-encoded: kept as typed */
  }
  const user = p.user ? `${p.user}@` : "";
  return { url: `${p.scheme}${user}${p.host}${p.rest}`, password };
}

/** Whether `url` names a team store: the backend's own test (`is_team_url`), to refuse a typo before a round trip. */
export function isTeamUrl(url: string): boolean {
  return /^(postgres|postgresql):\/\/|^sqlite:/i.test(url.trim());
}

/** A count with its noun: "1 run", "3 runs". */
export function plural(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`;
}

/** Where a sync stands, from the events it streamed so far. */
export interface SyncState {
  /** The store's URL without its password, once connected. */
  store: string | null;
  push: Fraction | null;
  pull: Fraction | null;
}

export const initialSync = (): SyncState => ({ store: null, push: null, pull: null });

export function reduceSync(s: SyncState, e: SyncProgress): SyncState {
  switch (e.phase) {
    case "connected":
      return { ...s, store: e.store };
    case "pushing":
      return { ...s, push: { done: e.done, total: e.total } };
    case "pulling":
      return { ...s, pull: { done: e.done, total: e.total } };
  }
}

/** Runs or bytes per second, or null when the time is too short to divide by. */
function perSecond(n: number, seconds: number): number | null {
  return seconds > 0.0005 ? n / seconds : null;
}

/**
 * A sync in one sentence: "Pushed 12 runs (3 already there) in 0.84 s — 17.9
 * runs/s, 0.41 MB/s; pulled 4 runs of other machines; the store holds 30 runs
 * from 3 machines." The rates count every run sent, those the store already
 * had included, since each crossed the network.
 */
export function syncSummary(r: SyncReport): string {
  const sent = r.pushed + r.already_there;
  const runsPerS = perSecond(sent, r.push_seconds);
  const mbPerS = perSecond(r.push_bytes / 1e6, r.push_seconds);
  const rate = sent === 0 ? "" : ` — ${runsPerS === null ? DASH : runsPerS.toFixed(1)} runs/s, ${mbPerS === null ? DASH : mbPerS.toFixed(2)} MB/s`;
  return (
    `Pushed ${plural(r.pushed, "run")} (${r.already_there} already there) in ${fmtSeconds(r.push_seconds)}${rate}; ` +
    `pulled ${plural(r.pulled, "run")} of other machines; ` +
    `the store holds ${plural(r.team_runs, "run")} from ${plural(r.team_machines, "machine")}.`
  );
}

/** What a sync's summary leaves out, when it happened: telemetry sent, runs left for later. */
export function syncNotes(r: SyncReport): string[] {
  const out: string[] = [];
  if (r.tls_warning) out.push(r.tls_warning);
  if (r.telemetry_pushed > 0) out.push(`${plural(r.telemetry_pushed, "telemetry series", "telemetry series")} sent.`);
  if (r.left_running > 0) out.push(`${plural(r.left_running, "run")} still being measured, left for the next sync.`);
  if (r.skipped > 0) {
    const first = r.skipped_runs[0];
    out.push(
      `${plural(r.skipped, "run")} of other machines skipped: this Dyno cannot read ${r.skipped === 1 ? "it" : "them"} (update Dyno; the next sync tries again). ` +
        (first ? `${first.uid.slice(0, 12)}: ${first.reason}` : ""),
    );
  }
  return out;
}

/** A model and level as the picker's value: its sha256 and level, which the backend's filters take. */
export const levelKey = (l: Pick<TeamModelLevel, "model_sha256" | "quant">) => `${l.model_sha256}|${l.quant}`;

/** "SmolLM2-135M-Instruct.Q4_1.gguf Q4_1 — 2 machines". */
export const levelLabel = (l: TeamModelLevel) => `${l.file_name} ${l.quant} — ${plural(l.machines, "machine")}`;

/** The picker's options, in the backend's order (most machines first). */
export function levelOptions(choices: TeamModelLevel[]): { value: string; label: string }[] {
  return choices.map((l) => ({ value: levelKey(l), label: levelLabel(l) }));
}

/** The picker's value back to the backend's filters. */
export function levelQuery(key: string): { model: string | null; quant: string | null } {
  const bar = key.lastIndexOf("|");
  if (!key || bar < 0) return { model: null, quant: null };
  return { model: key.slice(0, bar) || null, quant: key.slice(bar + 1) || null };
}

/**
 * The distinct values of a comma-separated column ("CPU, CUDA"), sorted,
 * joined with those already known: the filters' options grow as rankings
 * load, so a filter chosen earlier stays offered even when the rows it
 * narrowed to no longer show the others.
 */
export function columnValues(rows: TeamMachineRank[], field: "backends" | "dyno_versions", known: string[] = []): string[] {
  const seen = new Set(known);
  for (const r of rows) {
    for (const v of r[field].split(",")) if (v.trim()) seen.add(v.trim());
  }
  return [...seen].sort((a, b) => a.localeCompare(b, "en", { numeric: true }));
}

export type MachineSort = "rank" | "decode" | "prefill" | "ttft";

/**
 * Machines in the order asked for, best first: the backend's rank, the
 * highest decode or prefill, the lowest TTFT (a latency). Missing figures go
 * last; ties keep the rank.
 */
export function sortMachines(rows: TeamMachineRank[], by: MachineSort): TeamMachineRank[] {
  const value = (r: TeamMachineRank): number | null => {
    if (by === "decode") return r.decode_tps;
    if (by === "prefill") return r.prefill_tps;
    if (by === "ttft") return r.ttft_ms;
    return r.rank;
  };
  const ascending = by === "rank" || by === "ttft";
  return [...rows].sort((a, b) => {
    const va = value(a);
    const vb = value(b);
    if (va === null || vb === null) return va === vb ? a.rank - b.rank : va === null ? 1 : -1;
    return (ascending ? va - vb : vb - va) || a.rank - b.rank;
  });
}

/** "3", or "3 (+1 busy)" when runs timed on a busy machine were left out. */
export function runsCell(r: TeamMachineRank): string {
  return r.disturbed_runs > 0 ? `${r.runs} (+${r.disturbed_runs} busy)` : String(r.runs);
}

/** Decode as a share of the best machine's: "100%", "62.3%". */
export function shareOfBest(r: TeamMachineRank): string {
  if (r.decode_vs_best === null) return DASH;
  const pct = r.decode_vs_best * 100;
  return pct >= 99.95 ? "100%" : fmtPct(pct);
}

/** The width of the decode bar, 0 to 100 (%). */
export function barWidth(r: TeamMachineRank): number {
  const v = r.decode_vs_best;
  return v === null || !Number.isFinite(v) ? 0 : Math.max(0, Math.min(100, v * 100));
}

/** "Team median: decode 61.2 t/s · prefill 410.5 t/s". */
export function medianLine(decode: number | null, prefill: number | null): string {
  return `Team median: decode ${fmtRate(decode)} · prefill ${fmtRate(prefill)}`;
}

/** A TTFT in whole or tenth milliseconds, without the unit (the column says ms). */
export function fmtTtft(ms: number | null): string {
  if (ms === null || !Number.isFinite(ms)) return DASH;
  return ms < 100 ? ms.toFixed(1) : String(Math.round(ms));
}
