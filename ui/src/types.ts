// Shapes of the JSON the backend returns. Each matches the `--json` output of
// the CLI command named beside it (docs/json-schema.md, docs/app-api.md).
// Fields the schema marks as possibly unmeasured are `| null`: a figure that
// could not be measured is null, never 0.

/** A summary of samples (`prefill_tokens_per_s`, `ttft_stats_ms`, …). */
export interface Stats {
  samples: number[];
  mean: number;
  stddev: number;
  median: number;
  min: number;
  max: number;
  ci95: number | null;
  outliers: number[];
}

export interface GpuInfo {
  name: string;
  description: string;
  kind: string;
  memory_total_bytes: number;
  memory_free_bytes: number;
}

/** The machine block inside every result document. */
export interface Machine {
  fingerprint: string;
  cpu: string;
  cores: number;
  cores_physical: number;
  memory_bytes: number;
  os: string;
  kernel: string;
  gpus: GpuInfo[];
  backend: string;
  llama_cpp_build: string;
  memory_bandwidth_bytes_per_s: number | null;
}

/** `dyno hw --json` */
export interface Hardware {
  cpu: string;
  cores: number;
  cores_physical: number;
  memory_bytes: number;
  os: string;
  kernel: string;
  memory_bandwidth_bytes_per_s: number | null;
  bandwidth_threads?: number | null;
  bandwidth_measured_at?: string | null;
  gpus: GpuInfo[];
  llama_cpp: {
    backend: string;
    build: string;
    gpu_offload: boolean;
    devices: GpuInfo[];
  };
  telemetry?: { rapl: boolean; nvml: boolean; temperature: boolean };
}

export interface ModelInfo {
  path: string;
  file_name: string;
  sha256: string;
  arch: string | null;
  name: string | null;
  quant: string | null;
  size_bytes: number | null;
  n_params: number | null;
  weight_bytes: number | null;
  bits_per_weight: number | null;
  n_layers: number | null;
  context_length: number | null;
}

export interface RunConfig {
  n_threads: number;
  n_gpu_layers: number;
  n_gpu_layers_requested: number | null;
  n_batch: number;
  n_ubatch: number;
  flash_attn: string;
  cache_type: string;
  use_mmap: boolean | null;
  reps: number;
  warmup: boolean;
  /** Offload controls; absent in documents from before Dyno recorded them. */
  split_mode?: string;
  main_gpu?: number;
  devices?: string[] | null;
  no_kv_offload?: boolean;
  fit_margin_mib?: number | null;
}

/** Where llama.cpp put a run's model, from its own load report. */
export interface Offload {
  layers_offloaded: number | null;
  layers_total: number | null;
  buffers: { name: string; bytes: number }[];
  /** --device names given; null for all llama.cpp sees, [] for none. */
  devices: string[] | null;
  fit: { margin_mib: number; n_gpu_layers: number; tensor_split: number[]; overrides: string[] } | null;
}

/** Prefill and decode against GPU layers: runs differing only in layers. */
export interface OffloadSeries {
  model: string;
  sha256: string;
  conditions: string;
  points: {
    run_id: number;
    n_gpu_layers: number;
    layers_total: number | null;
    status: string;
    tests: { test: string; rate: string; mean_tokens_per_s: number; ci95_tokens_per_s: number | null }[];
  }[];
}

export interface RunTelemetry {
  samples: number;
  cpu_util_mean_pct: number | null;
  rss_peak_bytes: number | null;
  vram_peak_bytes: number | null;
  gpu_power_mean_w: number | null;
  cpu_package_power_mean_w: number | null;
  cpu_temp_max_c: number | null;
  gpu_temp_max_c: number | null;
  energy_j: number | null;
  tokens_per_j: number | null;
  throttled: boolean | null;
  throttle_reasons: unknown;
  unavailable: string[];
}

export interface ResultTelemetry {
  during_timed: {
    samples: number;
    cpu_util_mean_pct: number | null;
    rss_peak_bytes: number | null;
    ram_used_peak_bytes: number | null;
    vram_peak_bytes: number | null;
    gpu_util_mean_pct: number | null;
    gpu_power_mean_w: number | null;
    cpu_package_power_mean_w: number | null;
    [k: string]: unknown;
  } | null;
  energy: {
    energy_j: number | null;
    method: string;
    tokens_per_j: number | null;
    [k: string]: unknown;
  } | null;
}

export type TestKind = "prompt" | "gen" | "prompt_gen" | "parallel";
export type RunStatus = "ok" | "failed" | "cancelled" | "running";

export interface TestResult {
  test: string;
  kind: TestKind;
  status: string;
  error: string | null;
  n_prompt: number;
  n_gen: number;
  n_depth: number;
  n_parallel: number;
  reps: number;
  rate: "prefill" | "decode" | "decode_total" | string;
  samples_tokens_per_s: number[];
  mean_tokens_per_s: number | null;
  stddev_tokens_per_s: number | null;
  median_tokens_per_s: number | null;
  min_tokens_per_s: number | null;
  max_tokens_per_s: number | null;
  ci95_tokens_per_s: number | null;
  outliers: number[];
  samples_ns: number[];
  prefill_tokens_per_s: Stats | null;
  decode_tokens_per_s: Stats | null;
  decode_per_sequence_tokens_per_s: Stats | null;
  ttft_ms: number | null;
  ttft_stats_ms: Stats | null;
  decode_bytes_per_s: number | null;
  roofline_pct: number | null;
  telemetry: ResultTelemetry | null;
}

export interface Quality {
  ppl: number | null;
  kld_mean: number | null;
  kld_p99: number | null;
  top1_agreement: number | null;
  is_reference: boolean;
  reference_sha256: string;
  n_positions: number;
  text: string;
  chunk_tokens: number;
  n_chunks: number;
  topk: number;
}

export interface WhatThisMeans {
  tokens_per_word: number;
  words_per_s: number;
  decode_tokens_per_s: number;
  ttft_ms: number | null;
  reply_500_words_s: number;
}

export interface Run {
  run_id: number;
  sweep_id: number | null;
  status: RunStatus;
  error: string | null;
  error_code: string | null;
  model: ModelInfo;
  config: RunConfig;
  backend: string;
  llama_cpp_build: string;
  offload?: Offload | null;
  load_time_ms: number | null;
  model_desc: string | null;
  peak_rss_bytes: number | null;
  telemetry: RunTelemetry | null;
  dyno_version: string;
  started_at: string;
  finished_at: string | null;
  results: TestResult[];
  quality?: Quality | null;
  what_this_means?: WhatThisMeans | null;
}

/** `dyno runs --json`, `dyno show ID --json` */
export interface RunsDoc {
  schema_version: number;
  machine: Machine;
  runs: Run[];
  /** Present when the runs (or one run's `dyno bench` siblings) form an offload sweep. */
  offload_sweep?: OffloadSeries[];
}

export interface SweepLevel {
  level: string;
  origin: "file" | "base" | "quantized" | string;
  path: string | null;
  status: "pending" | "ok" | "failed" | "cancelled" | string;
  error_code: string | null;
  error: string | null;
  quality_error: string | null;
  quantize_ms: number | null;
  run_ids: number[];
  pareto: boolean;
}

export interface SweepInfo {
  id: number;
  status: "running" | "ok" | "partial" | "cancelled" | "interrupted" | string;
  source_kind: "files" | "dir" | "from" | "repo" | string;
  spec: {
    source: Record<string, unknown>;
    levels: string[] | null;
    request: Record<string, unknown> & { reps?: number };
    quality: { tokens: number; topk: number } | null;
  };
  created_at: string;
  finished_at: string | null;
  reference_sha256: string | null;
  quality_text: string | null;
  levels: SweepLevel[];
  recommendation: string | null;
}

/** `dyno show-sweep ID --json`; `dyno sweeps --json` is a list of these. */
export interface SweepDoc extends RunsDoc {
  sweep_id: number;
  sweep: SweepInfo;
}

/** `dyno compare A B --json` */
/** One matched test of `dyno compare A B --json` (src/report/compare.rs). */
export interface CompareTest {
  level: string;
  test: string;
  rate: string;
  /** A's conditions: "threads 2, ngl auto, batch 2048/512, fa auto, kv f16, mmap auto". */
  conditions: string;
  /** Where B's conditions differ from A's ("threads 1 → 2"); empty when alike. */
  differs: string[];
  a_tokens_per_s: number | null;
  b_tokens_per_s: number | null;
  a_ci95_tokens_per_s: number | null;
  b_ci95_tokens_per_s: number | null;
  a_reps: number;
  b_reps: number;
  ratio: number | null;
  change_pct: number | null;
  p_value: number | null;
  /** Holm-adjusted over the comparison's tests. */
  p_adjusted: number | null;
  significant: boolean;
}

/** A result of one side with no counterpart, and why. */
export interface CompareUnmatched {
  side: "A" | "B";
  level: string;
  test: string;
  rate: string;
  conditions: string;
  reason: string;
}

export interface CompareDoc {
  a: string;
  b: string;
  a_machine: string;
  b_machine: string;
  tests: CompareTest[];
  unmatched: CompareUnmatched[];
  /** How "significant" was decided, in words. */
  method: string;
}

export type Fit = "vram" | "ram" | "no";

/** One entry of `dyno models --json`; an unreadable file has `error` and nulls. */
export interface LocalModel {
  origin: "hf-cache" | "lm-studio" | "ollama" | "folder" | string;
  /** The name its tool uses (owner/repo/file, model:tag, the file name). */
  name: string;
  /** The file's own name: what the UI shows first. */
  file_name: string;
  /** `general.name` from the header, shown second. */
  model_name: string | null;
  path: string;
  arch: string | null;
  quant: string | null;
  size_bytes: number | null;
  n_params: number | null;
  fit: Fit | null;
  error: string | null;
}

/** A folder or single file added to the places searched (`dyno models added --json`). */
export interface ModelPlace {
  path: string;
  kind: "folder" | "file" | "missing";
}

/** The answer to adding a place (`dyno models add PATH --json`). */
export interface PlaceAdded {
  place: ModelPlace;
  /** False when it was there already. */
  added: boolean;
  /** The models under it now. */
  models: LocalModel[];
}

/** One entry of `dyno hub search Q --json`. */
export interface HubRepo {
  id: string;
  downloads: number;
  likes: number;
  lastModified: string | null;
}

export interface HubFile {
  path: string;
  size: number;
  sha256: string | null;
}

/** `dyno hub ls REPO --json` */
export interface HubListing {
  repo: string;
  commit: string;
  levels: { level: string; files: HubFile[]; size_bytes: number; fit: Fit }[];
  mmproj: HubFile[];
  imatrix: HubFile[];
}

export interface PullResult {
  path: string;
  sha256: string;
  size_bytes: number;
}

/** `app_info`: `downloads` is the user's Downloads folder (or home), or null. */
export interface AppInfo {
  version: string;
  db: string;
  downloads: string | null;
}

export type SweepSource =
  | { kind: "files"; files: string[] }
  | { kind: "from"; base: string; levels?: string[] }
  | { kind: "dir"; dir: string };

/** One plan for every button (src/app/presets.rs); runs of one preset always compare. */
export type Preset = "quick" | "standard" | "thorough";

/** A preset's plan and how long it should take on one model (`dyno presets MODEL --json`). */
export interface PresetEstimate {
  plan: { preset: Preset; label: string; about: string; n_prompt: number[]; n_gen: number[]; reps: number };
  /** "pp512", "tg128", "pp512+tg128". */
  tests: string[];
  seconds: number;
  seconds_low: number;
  seconds_high: number;
  /** Learnt from this machine's stored runs, or rough priors. */
  basis: "stored_runs" | "prior";
  runs_used: number;
}

export interface SweepInput {
  source: SweepSource;
  /** A preset replaces prompt, gen and reps. */
  preset?: Preset;
  prompt?: number;
  gen?: number;
  reps?: number;
  /** GPU layers as `--ngl` takes them: "99", "0,8,16,99", "0-32+8" (an offload sweep). */
  ngl?: string;
  quality?: boolean;
  /**
   * Measure every level again. Without it (the backend's default), running the
   * same sweep again resumes it and skips the levels already measured.
   */
  fresh?: boolean;
}

/**
 * One light row of `result_list` (docs/app-api.md): a run or a sweep, newest
 * first, with just what the Results list shows, so the list never loads the
 * full documents.
 */
export interface ResultListRow {
  /** "12" for a run, "sweep:3" for a sweep. */
  target: string;
  kind: "run" | "sweep";
  id: number;
  /** Model name, else file name. */
  title: string;
  /** For a sweep: its first level's file. */
  file_name: string;
  /** For a sweep: its levels joined with ", ". */
  quant: string;
  arch: string;
  status: string;
  /** ISO, UTC; a sweep's created_at. */
  started_at: string;
  /** First ok prompt test of a run (null for sweeps). */
  pp_mean: number | null;
  pp_test: string | null;
  /** First ok gen test of a run (null for sweeps). */
  tg_mean: number | null;
  tg_test: string | null;
  /** 1 for a run. */
  levels: number;
  /** The sweep a run belongs to. */
  sweep_id: number | null;
  /** The machine that measured it: "CPU · 16 threads · 32 GiB". */
  machine: string;
  /** Whether that machine is this one (imported runs come from others). */
  this_machine: boolean;
}

export type ExportFormat = "png" | "svg" | "md" | "csv" | "json" | "llama-bench-json";
/** The formats `export_text` returns as text (every format but the PNG card). */
export type TextFormat = "md" | "csv" | "json" | "llama-bench-json";

/** Progress pushed by a job through its channel (docs/app-api.md). */
export type JobEvent =
  | { kind: "warning"; message: string }
  | { kind: "level"; level: string; index: number; total: number }
  | { kind: "skipped"; level: string; why: string }
  | { kind: "quantizing"; level: string }
  | { kind: "quantize_progress"; done: number; total: number }
  | { kind: "level_finished"; level: string; status: "ok" | "failed" | "cancelled"; error?: string | null }
  | { kind: "quality"; level: string; reference: boolean }
  | { kind: "quality_progress"; done: number; total: number }
  | { kind: "loading"; model: string }
  /** `quiet`: no per-repetition events or live telemetry until the test ends. */
  | { kind: "test_started"; run_id: number; test: string; quiet?: boolean }
  /** Not sent by the app while a test is timed (it keeps the view still); kept for other senders. */
  | { kind: "sample"; run_id: number; test: string; rep: number; reps: number }
  | { kind: "test_finished"; run_id: number; test: string; status: string; error?: string | null }
  | { kind: "run_finished"; run_id: number; status: string; error?: string | null }
  | {
      /** The whole machine, about once a second while a job runs. */
      kind: "telemetry";
      t_s: number;
      cpu_pct: number | null;
      /** System RAM in use (whole machine), not the worker's RSS. */
      ram_used_bytes: number | null;
      gpu_pct: number | null;
      power_w: number | null;
      vram_bytes: number | null;
    }
  | { kind: "download_start"; path: string; total: number; already: number }
  /** `done`: bytes on disk so far, resumed bytes included; `total`: the file's size. */
  | { kind: "download_progress"; done: number; total: number }
  | { kind: "download_finished"; path: string }
  /** A benchmark is timing a test: the download holds still until it ends. */
  | { kind: "download_paused" }
  | { kind: "download_resumed" };

export type ErrorCode = "bad_input" | "not_found" | "network" | "cancelled" | "busy" | "failed" | "internal";

/** Every rejected command is normalised to this shape by api.ts. */
export interface ApiError {
  code: ErrorCode | string;
  message: string;
}

/** Where a hub setting in force came from (`dyno settings --json`). */
export type SettingSource = "flag" | "env" | "saved" | "file" | "default";

/** `dyno settings --json`: the hub endpoint and token as they stand (never the token itself). */
export interface HubSettings {
  endpoint: string;
  endpoint_source: SettingSource;
  saved_endpoint: string | null;
  default_endpoint: string;
  token: {
    present: boolean;
    source: SettingSource | null;
    /** "hf_…x7Qz" */
    masked: string | null;
    file: string;
    file_exists: boolean;
  };
  cache_dir: string;
}

/** `dyno settings check --json` */
export interface HubCheck {
  endpoint: string;
  reachable: boolean;
  user: string | null;
  message: string;
}

/** `dyno hub discard REPO --file F --json` */
export interface Discarded {
  repo: string;
  path: string;
  freed_bytes: number;
}
