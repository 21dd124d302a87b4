//! The JSON document Dyno writes and reads back: `dyno bench --json`,
//! `dyno show --json`, `dyno export --format json`, imports and the app all
//! speak these types, so they are the contract documented in
//! `docs/json-schema.md`. They are kept apart from the code that fills them
//! ([`super::build`]) so a change to the contract is a change to this file
//! alone; change it only by adding fields.

use serde::{Deserialize, Serialize};

use super::{offload, telemetry};
use crate::bench::figures::{Figures, Rate};
use crate::vocab::{Device, TestKind};

/// Version of the JSON document's shape.
pub const SCHEMA_VERSION: u32 = 1;

#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[cfg_attr(feature = "ts", ts(rename = "RunsDoc"))]
pub struct Report {
    pub schema_version: u32,
    pub machine: MachineJson,
    pub runs: Vec<RunJson>,
    /// Prefill and decode against GPU layers, when the runs (or, for one
    /// run, its `dyno bench` siblings) differ only in their layer count.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub offload_sweep: Vec<offload::OffloadSeries>,
    /// The team's median for this run's model and level, when the card was
    /// asked to show it (`--vs-team`); absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub team: Option<TeamMedian>,
}

/// The team store's median of per-machine medians for one model file and
/// level: what one machine's card sets itself against.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct TeamMedian {
    /// Machines with a successful run of that file and level.
    pub machines: u32,
    pub decode_tps: Option<f64>,
    pub prefill_tps: Option<f64>,
    /// The test sizes the medians are of: this run's own decode (tgN) and
    /// prefill (ppN) tests, so the run is set against the same test.
    pub n_gen: Option<u32>,
    pub n_prompt: Option<u32>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[cfg_attr(feature = "ts", ts(rename = "Machine"))]
pub struct MachineJson {
    pub fingerprint: String,
    pub cpu: String,
    /// Logical cores.
    pub cores: u64,
    pub cores_physical: Option<u64>,
    pub memory_bytes: u64,
    pub os: Option<String>,
    pub kernel: Option<String>,
    /// GPUs llama.cpp saw (empty on a CPU-only machine or build).
    pub gpus: Vec<Device>,
    /// llama.cpp backends in use, as llama-bench names them ("CPU", "CUDA").
    pub backend: Option<String>,
    pub llama_cpp_build: Option<String>,
    /// Measured memory read bandwidth (`dyno hw`), the decode roofline.
    pub memory_bandwidth_bytes_per_s: Option<u64>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[cfg_attr(feature = "ts", ts(rename = "ModelInfo"))]
pub struct ModelJson {
    pub path: String,
    pub file_name: String,
    pub sha256: String,
    pub arch: String,
    pub name: Option<String>,
    pub quant: String,
    pub size_bytes: u64,
    pub n_params: u64,
    /// Bytes of tensor data, what one decode step streams.
    pub weight_bytes: u64,
    pub bits_per_weight: f64,
    pub n_layers: Option<u64>,
    pub context_length: Option<u64>,
    /// Set when the file has synthetic weights (`dyno synth`): what they
    /// stand for ("twin of SmolLM2 135M, seed 1"). Its figures are that
    /// shape's speed here; its text and quality mean nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub synthetic: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[cfg_attr(feature = "ts", ts(rename = "RunConfig"))]
pub struct ConfigJson {
    pub n_threads: u32,
    /// Layers offloaded to a GPU in this run (0 on CPU).
    pub n_gpu_layers: Option<u32>,
    /// What was asked: a number, or null for "all when a GPU is present".
    pub n_gpu_layers_requested: Option<u32>,
    pub n_batch: u32,
    pub n_ubatch: u32,
    pub flash_attn: String,
    pub cache_type: String,
    /// true: mmap, false: read into memory, null: llama.cpp chose (auto).
    pub use_mmap: Option<bool>,
    pub reps: u32,
    pub warmup: bool,
    /// How layers were spread over GPUs: "none", "layer" (llama.cpp's
    /// default) or "row".
    #[serde(default = "default_split_mode")]
    pub split_mode: String,
    #[serde(default)]
    pub main_gpu: u32,
    /// The backend devices asked for by name; null: every device llama.cpp
    /// saw; empty: none (CPU only).
    #[serde(default)]
    pub devices: Option<Vec<String>>,
    /// KV cache and attention kept on the CPU (llama-bench's `-nkvo 1`).
    #[serde(default)]
    pub no_kv_offload: bool,
    /// `--fit`: llama.cpp chose the offload, leaving this much free per
    /// device (MiB); null when the layers were given.
    #[serde(default)]
    pub fit_margin_mib: Option<u32>,
    /// `--sustain`: the test was decoded back to back for this many
    /// seconds rather than `reps` times; absent for ordinary runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub sustain_s: Option<u32>,
    /// `--n-cpu-moe`: the first N layers' experts were kept on the CPU;
    /// absent when none were.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub n_cpu_moe: Option<u32>,
    /// `--override-tensor` as llama-bench writes it (`PATTERN=BUFFER;...`);
    /// absent when no tensor was placed by hand.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub tensor_overrides: Option<String>,
    /// `--rpc`: the RPC servers (HOST:PORT) whose devices took layers, in
    /// the order given; absent when none did. Their devices are in the
    /// run's `offload.rpc`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub rpc: Option<Vec<String>>,
}

impl ConfigJson {
    /// The devices as llama-bench's `-dev` writes them: "auto", "none", or
    /// names joined by '/'.
    pub fn devices_label(&self) -> String {
        match &self.devices {
            None => "auto".into(),
            Some(d) if d.is_empty() => "none".into(),
            Some(d) => d.join("/"),
        }
    }
}

fn default_split_mode() -> String {
    "layer".into()
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[cfg_attr(feature = "ts", ts(rename = "TestResult"))]
pub struct ResultJson {
    pub test: String,
    pub kind: TestKind,
    pub status: crate::vocab::status::ResultStatus,
    pub error: Option<String>,
    pub n_prompt: u32,
    pub n_gen: u32,
    pub n_depth: u32,
    pub n_parallel: u32,
    pub reps: u32,
    /// What the `*_tokens_per_s` headline fields measure.
    pub rate: Rate,
    pub samples_tokens_per_s: Vec<f64>,
    pub mean_tokens_per_s: Option<f64>,
    pub stddev_tokens_per_s: Option<f64>,
    pub median_tokens_per_s: Option<f64>,
    pub min_tokens_per_s: Option<f64>,
    pub max_tokens_per_s: Option<f64>,
    /// Half-width of the 95% confidence interval of the mean.
    pub ci95_tokens_per_s: Option<f64>,
    /// Indices of repetitions flagged as outliers (modified Z-score > 3.5).
    pub outliers: Vec<usize>,
    /// Each repetition's whole timed region, as llama-bench's `samples_ns`.
    pub samples_ns: Vec<u64>,
    pub prefill_tokens_per_s: Option<Figures>,
    pub decode_tokens_per_s: Option<Figures>,
    pub decode_per_sequence_tokens_per_s: Option<Figures>,
    /// Mean time to first token (prefill plus picking the first token):
    /// from an empty cache when `n_depth` is 0, else with `n_depth` tokens
    /// already in the cache (restored before the clock starts), as a reply
    /// deep into a conversation waits.
    pub ttft_ms: Option<f64>,
    pub ttft_stats_ms: Option<Figures>,
    /// Memory traffic decode needs: weight bytes × decode steps per second.
    pub decode_bytes_per_s: Option<f64>,
    /// `decode_bytes_per_s` as a share of the machine's measured memory
    /// bandwidth (host RAM; null when the weights sit on a GPU or the
    /// bandwidth is unknown).
    pub roofline_pct: Option<f64>,
    /// The machine during the timed repetitions, and their energy; null when
    /// telemetry was off.
    pub telemetry: Option<telemetry::ResultTelemetryJson>,
    /// True when something else competed with the timed repetitions (other
    /// processes' CPU, steal time) or they spread more than a quiet machine
    /// spreads them: the figure is then not this machine's clean speed.
    /// `disturbance` says why.
    #[serde(default)]
    pub disturbed: bool,
    /// What was read to decide `disturbed`, with the reasons and the busiest
    /// other programs; null when it was not read (telemetry off, a failed
    /// test, or a run measured before Dyno recorded it).
    #[serde(default)]
    pub disturbance: Option<crate::telemetry::disturbance::Disturbance>,
    /// A sustained decode (`--sustain`): the rate second by second beside
    /// clocks, temperatures and other programs, the burst and sustained
    /// rates, and when and why it dropped; absent for ordinary tests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub sustained: Option<crate::telemetry::sustain::Sustained>,
    /// The rate Dyno predicted for this test before measuring it (`dyno
    /// predict`), with its 80% interval; absent for tests it does not
    /// predict and runs measured before predictions were kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub predicted: Option<crate::predict::Estimate>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[cfg_attr(feature = "ts", ts(rename = "Run"))]
pub struct RunJson {
    pub run_id: i64,
    /// The group the run was measured in: a benchmark's own, or a sweep's.
    pub sweep_id: Option<i64>,
    /// The sweep of a model's levels the run belongs to (`dyno show-sweep`),
    /// when it is one: a benchmark's own group is not, so a reader is never
    /// sent to a "sweep" that is one benchmark.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub level_sweep_id: Option<i64>,
    pub status: crate::vocab::status::RunStatus,
    pub error: Option<String>,
    /// Why the run failed, as a [`crate::vocab::FailureCode`]'s text (a code
    /// this build does not know is kept as written).
    #[cfg_attr(feature = "ts", ts(type = "string | null"))]
    pub error_code: Option<crate::vocab::failure::FailureCode>,
    pub model: ModelJson,
    pub config: ConfigJson,
    pub backend: Option<String>,
    pub llama_cpp_build: Option<String>,
    /// The llama.cpp backend modules that measured this run, each with its
    /// file's sha256 (a `dynamic-backends` build); absent where llama.cpp
    /// was linked into Dyno, and for runs before Dyno recorded them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub backend_modules: Option<Vec<crate::vocab::ModuleRef>>,
    /// Where llama.cpp put the model (layers offloaded, weight buffers per
    /// device, what `--fit` chose), from its own load report; null for runs
    /// measured before Dyno recorded it, and for imported runs.
    #[serde(default)]
    pub offload: Option<crate::vocab::Offload>,
    /// AC or battery, the CPU governor and the platform profile as the
    /// run's worker started; null for runs measured before Dyno recorded
    /// them.
    #[serde(default)]
    pub power: Option<crate::telemetry::power::PowerState>,
    /// How long Dyno waited for the machine to cool before this run's model
    /// load (`--cooldown`); absent when it did not wait.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub cooldown: Option<crate::telemetry::cooldown::CooldownRecord>,
    /// Model load, measured on its own; never part of a tokens/s figure.
    /// Absent for synthetic weights: that file was written just now, and
    /// its load says nothing of the real file's.
    pub load_time_ms: Option<f64>,
    /// llama.cpp's own description of the model ("llama 135M Q4_1").
    pub model_desc: Option<String>,
    pub peak_rss_bytes: Option<u64>,
    pub dyno_version: String,
    pub started_at: String,
    pub finished_at: Option<String>,
    pub results: Vec<ResultJson>,
    /// What the machine did during the run; null when telemetry was off.
    pub telemetry: Option<telemetry::RunTelemetryJson>,
    /// Quality of this run's model against its sweep's reference (`dyno
    /// sweep`); null for `dyno bench` runs and when quality was skipped.
    #[serde(default)]
    pub quality: Option<QualityJson>,
    /// Speed in words and reply times; null without a decode figure.
    #[serde(default)]
    pub what_this_means: Option<MeaningJson>,
    /// What Dyno predicted for this run before measuring it, with the basis
    /// of each figure; absent for runs measured before predictions were kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub prediction: Option<crate::predict::RunPrediction>,
}

/// Tokens are not words: the run's speed as a reader meets it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[cfg_attr(feature = "ts", ts(rename = "WhatThisMeans"))]
pub struct MeaningJson {
    /// Tokens per English word with this model's tokenizer (bundled text).
    pub tokens_per_word: f64,
    /// Decode speed in words per second.
    pub words_per_s: f64,
    /// Time to first token plus a 500-word reply at the decode speed; null
    /// when the run has no pp+tg test (no TTFT).
    pub reply_500_words_s: Option<f64>,
    pub ttft_ms: Option<f64>,
    pub decode_tokens_per_s: f64,
}

/// Perplexity, KL divergence and top-1 agreement of a model against the
/// sweep's reference, on the bundled text. Never blended with speed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[cfg_attr(feature = "ts", ts(rename = "Quality"))]
pub struct QualityJson {
    pub ppl: f64,
    /// Mean KL divergence from the reference, per token (nats).
    pub kld_mean: f64,
    pub kld_p99: f64,
    /// Share of positions where the model's most likely token is the
    /// reference's (0 to 1).
    pub top1_agreement: f64,
    /// True for the reference itself (divergence 0 by definition).
    pub is_reference: bool,
    pub reference_sha256: String,
    pub n_positions: u64,
    pub text: String,
    pub chunk_tokens: u32,
    pub n_chunks: u32,
    /// Reference top-k kept per position; 0: the whole vocabulary (exact).
    pub topk: u32,
}
