// Number formatting with units. Every figure the UI shows goes through here so
// rounding and units are the same everywhere. Missing figures (null, NaN) are
// shown as an en dash, never as 0.

export const DASH = "–";

const isNum = (v: number | null | undefined): v is number => typeof v === "number" && Number.isFinite(v);

/** Digits after the point so a rate keeps about 4 significant figures, 1 to 3 decimals. */
function rateDecimals(v: number): number {
  const a = Math.abs(v);
  if (a >= 100) return 1;
  if (a >= 10) return 2;
  return 3;
}

/**
 * One formatter per number of decimals, made once: `toLocaleString` with
 * options builds a new `Intl.NumberFormat` on every call, and a Results page
 * formats a hundred figures at once.
 */
const formatters = new Map<number, Intl.NumberFormat>();

function group(v: number, decimals: number): string {
  let f = formatters.get(decimals);
  if (!f) {
    f = new Intl.NumberFormat("en-US", { minimumFractionDigits: decimals, maximumFractionDigits: decimals });
    formatters.set(decimals, f);
  }
  return f.format(v);
}

/** Tokens per second: "1,234.5 t/s", "73.54 t/s", "0.812 t/s". */
export function fmtRate(v: number | null | undefined, unit = true): string {
  if (!isNum(v)) return DASH;
  const s = group(v, rateDecimals(v));
  return unit ? `${s} t/s` : s;
}

/** Mean ± standard deviation of a rate, with the deviation at the mean's precision. */
export function fmtMeanSd(mean: number | null | undefined, sd: number | null | undefined, unit = "t/s"): string {
  if (!isNum(mean)) return DASH;
  const d = rateDecimals(mean);
  const m = group(mean, d);
  const tail = unit ? ` ${unit}` : "";
  return isNum(sd) ? `${m} ± ${group(sd, d)}${tail}` : `${m}${tail}`;
}

const BYTE_UNITS = ["B", "KiB", "MiB", "GiB", "TiB"];

/** Bytes in binary units: "98.0 MiB", "23.54 GiB". */
export function fmtBytes(v: number | null | undefined): string {
  if (!isNum(v)) return DASH;
  let x = Math.abs(v);
  let i = 0;
  while (x >= 1024 && i < BYTE_UNITS.length - 1) {
    x /= 1024;
    i++;
  }
  const decimals = i === 0 ? 0 : i >= 3 ? 2 : 1;
  return `${v < 0 ? "-" : ""}${x.toFixed(decimals)} ${BYTE_UNITS[i]}`;
}

/** Bandwidth in decimal GB/s, as memory datasheets and the roofline use it. */
export function fmtBandwidth(bytesPerS: number | null | undefined): string {
  if (!isNum(bytesPerS)) return DASH;
  return `${(bytesPerS / 1e9).toFixed(1)} GB/s`;
}

/** A duration in milliseconds: "124.6 ms", "1.25 s", "2 min 05 s". */
export function fmtMs(ms: number | null | undefined): string {
  if (!isNum(ms)) return DASH;
  if (Math.abs(ms) < 1) return `${ms.toFixed(3)} ms`;
  if (Math.abs(ms) < 1000) return `${ms.toFixed(ms < 100 ? 2 : 1)} ms`;
  return fmtSeconds(ms / 1000);
}

/** A duration in seconds: "0.47 s", "10.7 s", "2 min 05 s". */
export function fmtSeconds(s: number | null | undefined): string {
  if (!isNum(s)) return DASH;
  if (s < 10) return `${s.toFixed(2)} s`;
  if (s < 60) return `${s.toFixed(1)} s`;
  const min = Math.floor(s / 60);
  const sec = Math.round(s - min * 60);
  if (sec === 60) return `${min + 1} min 00 s`;
  return `${min} min ${String(sec).padStart(2, "0")} s`;
}

/**
 * Elapsed time as a clock, whole seconds: "0:05", "2:44", "1:02:03". A clock
 * rather than fmtSeconds so the text keeps its width while it ticks.
 */
export function fmtClock(ms: number | null | undefined): string {
  if (!isNum(ms)) return DASH;
  const total = Math.max(0, Math.floor(ms / 1000));
  const h = Math.floor(total / 3600);
  const m = Math.floor((total % 3600) / 60);
  const sec = String(total % 60).padStart(2, "0");
  return h ? `${h}:${String(m).padStart(2, "0")}:${sec}` : `${m}:${sec}`;
}

/**
 * A time still to go, rounded as far as an estimate deserves: "under 10 s",
 * "about 40 s", "about 3 min", "about 1 h 05 min".
 */
export function fmtAbout(ms: number | null | undefined): string {
  if (!isNum(ms)) return DASH;
  const s = Math.max(0, ms / 1000);
  if (s < 10) return "under 10 s";
  if (s < 60) return `about ${Math.round(s / 5) * 5} s`;
  const min = Math.round(s / 60);
  if (min < 60) return `about ${min} min`;
  return `about ${Math.floor(min / 60)} h ${String(min % 60).padStart(2, "0")} min`;
}

/** A percentage: "78.9%". */
export function fmtPct(v: number | null | undefined, decimals = 1): string {
  if (!isNum(v)) return DASH;
  return `${v.toFixed(decimals)}%`;
}

/** A signed change: "+2.6%", "-12.0%". */
export function fmtChange(v: number | null | undefined): string {
  if (!isNum(v)) return DASH;
  return `${v > 0 ? "+" : ""}${v.toFixed(1)}%`;
}

/**
 * A parameter count as llama-bench, the CLI's tables and the result card
 * write it ("134.52 M", "1.24 B"; `units::human_params`), so one model
 * reads the same everywhere.
 */
export function fmtParams(v: number | null | undefined): string {
  if (!isNum(v)) return DASH;
  if (v >= 1e9) return `${(v / 1e9).toFixed(2)} B`;
  return `${(v / 1e6).toFixed(2)} M`;
}

/** A plain count with thousands separators. */
export function fmtCount(v: number | null | undefined): string {
  if (!isNum(v)) return DASH;
  return group(Math.round(v), 0);
}

/** A number with `sig` significant digits (KLD, perplexity, p-values). */
export function fmtSig(v: number | null | undefined, sig = 3): string {
  if (!isNum(v)) return DASH;
  if (v === 0) return "0";
  const a = Math.abs(v);
  if (a < 1e-4 || a >= 1e6) return v.toExponential(sig - 1);
  return String(Number(v.toPrecision(sig)));
}

/** An ISO timestamp as local "YYYY-MM-DD HH:MM". */
/**
 * A backend message (written as the CLI prints it, after "dyno: ", in lower
 * case) as a sentence that stands alone.
 */
export function sentence(m: string): string {
  return m ? m.charAt(0).toUpperCase() + m.slice(1) : m;
}

/**
 * A sweep's name: a level's file name without its level and extension
 * ("SmolLM2-135M-Instruct" for "SmolLM2-135M-Instruct-Q8_0.gguf"), as the
 * Results list names it (report::list::sweep_title), so a sweep is named by
 * file as its runs are.
 */
export function sweepName(fileName: string, quant: string): string {
  // A synthetic twin's ".synth" is said by its badge, not its name.
  const stem = fileName.replace(/\.gguf$/i, "").replace(/\.synth$/i, "");
  const at = quant ? stem.toUpperCase().lastIndexOf(quant.toUpperCase()) : -1;
  return at > 0 && "-._".includes(stem[at - 1]) ? stem.slice(0, at - 1) + stem.slice(at + quant.length) : stem;
}

export function fmtDate(iso: string | null | undefined): string {
  if (!iso) return DASH;
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  const p = (n: number) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}`;
}

/** The last component of a path, for either separator. */
export function baseName(path: string): string {
  const parts = path.split(/[\\/]/);
  return parts[parts.length - 1] || path;
}

/**
 * A file or model name cut after each `-`, `.` and `_` (kept), so a narrow
 * column breaks a long name between its parts, "SmolLM2-135M-" / "Instruct.",
 * rather than in the middle of one.
 */
export function nameParts(name: string): string[] {
  const parts = name.match(/[^-._]*[-._]*/g)?.filter(Boolean) ?? [];
  return parts.length ? parts : [name];
}
