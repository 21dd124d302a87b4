//! What Dyno shows and exports, built from the store (never from memory), so
//! `dyno bench --json`, `dyno show` and `dyno runs` print the same figures
//! for the same rows, and a printed figure always comes with its conditions.
//!
//! The JSON shape here is the stable contract documented in
//! `docs/json-schema.md`; change it only by adding fields.

pub mod card;
pub mod compare;
pub mod export;
pub mod import;
pub mod list;
pub mod offload;
pub mod sweep;
pub mod table;
pub mod telemetry;

use serde::{Deserialize, Serialize};

use crate::bench::figures::{figures, Figures, Rate};
use crate::error::Result;
use crate::machine::Machine;
use crate::store::{MachineRow, ResultRow, RunRow, Store};
use crate::vocab::RunConfig;
use crate::vocab::{Device, Sample, TestKind, TestSpec};

/// What `dyno export`, `dyno compare` and the app point at: `12` or
/// `run:12` for a run, `sweep:3` for a sweep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    Run(i64),
    Sweep(i64),
}

impl std::str::FromStr for Target {
    type Err = crate::error::DynoError;

    fn from_str(id: &str) -> Result<Target> {
        let bad = || {
            crate::error::DynoError::BadInput(format!(
                "'{id}' is not a run or sweep id; write 12 or run:12 for a run, sweep:3 for a sweep"
            ))
        };
        let (is_sweep, n) = match id.trim().split_once(':') {
            Some(("sweep", n)) => (true, n),
            Some(("run", n)) => (false, n),
            None => (false, id.trim()),
            _ => return Err(bad()),
        };
        let n: i64 = n.parse().map_err(|_| bad())?;
        Ok(if is_sweep {
            Target::Sweep(n)
        } else {
            Target::Run(n)
        })
    }
}

impl Target {
    pub fn is_sweep(self) -> bool {
        matches!(self, Target::Sweep(_))
    }

    /// "run-12" or "sweep-3", for default file names.
    pub fn file_stem(self) -> String {
        match self {
            Target::Run(n) => format!("run-{n}"),
            Target::Sweep(n) => format!("sweep-{n}"),
        }
    }
}

/// A run's report, or a sweep's with its levels. Built once per command and
/// never moved in bulk, so the variants' size difference costs nothing.
#[derive(Debug, Clone)]
#[allow(clippy::large_enum_variant)]
pub enum Loaded {
    Run(Report),
    Sweep(sweep::SweepReport),
}

impl Loaded {
    pub fn report(&self) -> &Report {
        match self {
            Loaded::Run(r) => r,
            Loaded::Sweep(s) => &s.report,
        }
    }
}

/// Build the report `t` points at from the store.
pub async fn load(store: &Store, db: &std::path::Path, t: Target) -> Result<Loaded> {
    let here = Machine::detect();
    match t {
        Target::Sweep(n) => Ok(Loaded::Sweep(sweep::build(store, n, &here).await?)),
        Target::Run(n) => {
            let row = store.run(n).await?.ok_or_else(|| {
                crate::error::DynoError::NotFound(format!(
                    "no run {n} in {}; `dyno runs` lists the stored runs",
                    db.display()
                ))
            })?;
            let mut report = build(store, std::slice::from_ref(&row), &here).await?;
            // A run from a `dyno bench` offload sweep shows its curve.
            if let Some(sweep_id) = row.sweep_id {
                let siblings = store.sweep_runs(sweep_id).await?;
                if siblings.len() > 1 {
                    let mut runs = Vec::with_capacity(siblings.len());
                    for r in &siblings {
                        runs.push(run_json(store, r).await?);
                    }
                    report.offload_sweep = offload::series(&runs)
                        .into_iter()
                        .filter(|s| s.points.iter().any(|p| p.run_id == n))
                        .collect();
                }
            }
            Ok(Loaded::Run(report))
        }
    }
}

/// Version of the JSON document's shape.
pub const SCHEMA_VERSION: u32 = 1;

#[derive(Debug, Clone, Serialize, Deserialize, ts_rs::TS)]
#[ts(rename = "RunsDoc")]
pub struct Report {
    pub schema_version: u32,
    pub machine: MachineJson,
    pub runs: Vec<RunJson>,
    /// Prefill and decode against GPU layers, when the runs (or, for one
    /// run, its `dyno bench` siblings) differ only in their layer count.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub offload_sweep: Vec<offload::OffloadSeries>,
}

#[derive(Debug, Clone, Serialize, Deserialize, ts_rs::TS)]
#[ts(rename = "Machine")]
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

#[derive(Debug, Clone, Serialize, Deserialize, ts_rs::TS)]
#[ts(rename = "ModelInfo")]
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
}

#[derive(Debug, Clone, Serialize, Deserialize, ts_rs::TS)]
#[ts(rename = "RunConfig")]
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

#[derive(Debug, Clone, Default, Serialize, Deserialize, ts_rs::TS)]
#[ts(rename = "TestResult")]
pub struct ResultJson {
    pub test: String,
    pub kind: String,
    pub status: String,
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
}

#[derive(Debug, Clone, Serialize, Deserialize, ts_rs::TS)]
#[ts(rename = "Run")]
pub struct RunJson {
    pub run_id: i64,
    pub sweep_id: Option<i64>,
    pub status: String,
    pub error: Option<String>,
    pub error_code: Option<String>,
    pub model: ModelJson,
    pub config: ConfigJson,
    pub backend: Option<String>,
    pub llama_cpp_build: Option<String>,
    /// Where llama.cpp put the model (layers offloaded, weight buffers per
    /// device, what `--fit` chose), from its own load report; null for runs
    /// measured before Dyno recorded it, and for imported runs.
    #[serde(default)]
    pub offload: Option<crate::vocab::Offload>,
    /// Model load, measured on its own; never part of a tokens/s figure.
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
}

/// Tokens are not words: the run's speed as a reader meets it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
#[ts(rename = "WhatThisMeans")]
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

/// Speed in words, and a 500-word reply: TTFT plus its tokens at the decode rate.
pub fn meaning(tokens_per_word: f64, decode_tps: f64, ttft_ms: Option<f64>) -> MeaningJson {
    let reply = 500.0 * tokens_per_word / decode_tps;
    MeaningJson {
        tokens_per_word,
        words_per_s: decode_tps / tokens_per_word,
        reply_500_words_s: ttft_ms.map(|t| t / 1e3 + reply),
        ttft_ms,
        decode_tokens_per_s: decode_tps,
    }
}

/// Perplexity, KL divergence and top-1 agreement of a model against the
/// sweep's reference, on the bundled text. Never blended with speed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
#[ts(rename = "Quality")]
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

fn result_json(r: &ResultRow) -> ResultJson {
    let samples: Vec<Sample> = serde_json::from_str(&r.samples_json).unwrap_or_default();
    let kind: TestKind = serde_json::from_value(serde_json::Value::String(r.kind.clone()))
        .unwrap_or(TestKind::Prompt);
    let spec = TestSpec {
        kind,
        n_prompt: r.n_prompt as u32,
        n_gen: r.n_gen as u32,
        n_depth: r.n_depth as u32,
        n_parallel: r.n_parallel as u32,
    };
    let f = figures(&spec, &samples);
    let h = f.headline.as_ref();
    ResultJson {
        test: r.test.clone(),
        kind: r.kind.clone(),
        status: r.status.clone(),
        error: r.error.clone(),
        n_prompt: spec.n_prompt,
        n_gen: spec.n_gen,
        n_depth: spec.n_depth,
        n_parallel: spec.n_parallel,
        reps: r.reps as u32,
        rate: f.rate,
        samples_tokens_per_s: h.map(|h| h.samples.clone()).unwrap_or_default(),
        mean_tokens_per_s: h.map(|h| h.mean),
        stddev_tokens_per_s: h.map(|h| h.stddev),
        median_tokens_per_s: h.map(|h| h.median),
        min_tokens_per_s: h.map(|h| h.min),
        max_tokens_per_s: h.map(|h| h.max),
        ci95_tokens_per_s: h.and_then(|h| h.ci95),
        outliers: h.map(|h| h.outliers.clone()).unwrap_or_default(),
        samples_ns: samples.iter().map(|s| s.total_ns).collect(),
        ttft_ms: f.ttft_ms.as_ref().map(|t| t.mean),
        prefill_tokens_per_s: f.prefill_tokens_per_s,
        decode_tokens_per_s: f.decode_tokens_per_s,
        decode_per_sequence_tokens_per_s: f.decode_per_sequence_tokens_per_s,
        ttft_stats_ms: f.ttft_ms,
        decode_bytes_per_s: None,
        roofline_pct: None,
        telemetry: None,
    }
}

async fn run_json(store: &Store, run: &RunRow) -> Result<RunJson> {
    let m = store.model(run.model_id).await?;
    let rows = store.results(run.id).await?;
    let config: Option<RunConfig> = serde_json::from_str(&run.config_json).ok();
    let n_params = m.n_params.max(0) as u64;
    let weight_bytes = m.weight_bytes.max(0) as u64;
    let mut results: Vec<ResultJson> = rows.iter().map(result_json).collect();
    let bandwidth = telemetry::weights_bandwidth(
        &store.machine(run.machine_id).await?,
        run.n_gpu_layers,
        m.n_layers,
    );
    for r in &mut results {
        telemetry::roofline(r, weight_bytes, bandwidth);
    }
    let sources: Option<crate::telemetry::Sources> = run
        .telemetry_sources
        .as_deref()
        .and_then(|s| serde_json::from_str(s).ok());
    let readings = if sources.is_some() {
        store.telemetry(run.id).await?
    } else {
        Vec::new()
    };
    let ids: Vec<i64> = rows.iter().map(|r| r.id).collect();
    let run_telemetry = telemetry::attach(&mut results, &ids, &readings, sources.as_ref());
    Ok(RunJson {
        run_id: run.id,
        sweep_id: run.sweep_id,
        status: run.status.clone(),
        error: run.error.clone(),
        error_code: run.error_code.clone(),
        model: ModelJson {
            path: m.path,
            file_name: m.file_name,
            sha256: m.sha256,
            arch: m.arch,
            name: m.name,
            quant: m.quant,
            size_bytes: m.size_bytes.max(0) as u64,
            n_params,
            weight_bytes,
            bits_per_weight: if n_params == 0 {
                0.0
            } else {
                weight_bytes as f64 * 8.0 / n_params as f64
            },
            n_layers: m.n_layers.map(|v| v as u64),
            context_length: m.context_length.map(|v| v as u64),
        },
        config: ConfigJson {
            n_threads: run.n_threads as u32,
            n_gpu_layers: run.n_gpu_layers.map(|v| v as u32),
            n_gpu_layers_requested: config.as_ref().and_then(|c| c.model.n_gpu_layers),
            n_batch: run.n_batch as u32,
            n_ubatch: run.n_ubatch as u32,
            flash_attn: run.flash_attn.clone(),
            cache_type: run.cache_type.clone(),
            use_mmap: run.use_mmap,
            reps: run.reps as u32,
            warmup: config.as_ref().is_none_or(|c| c.warmup),
            split_mode: config
                .as_ref()
                .map_or("layer", |c| c.model.split_mode.as_str())
                .to_string(),
            main_gpu: config.as_ref().map_or(0, |c| c.model.main_gpu),
            devices: config.as_ref().and_then(|c| c.model.devices.clone()),
            no_kv_offload: config.as_ref().is_some_and(|c| c.ctx.no_kv_offload),
            fit_margin_mib: config.as_ref().and_then(|c| c.model.fit_margin_mib),
        },
        backend: run.backend.clone(),
        offload: run
            .offload_json
            .as_deref()
            .and_then(|s| serde_json::from_str(s).ok()),
        llama_cpp_build: run.llama_cpp_build.clone(),
        load_time_ms: run.load_time_ms,
        model_desc: run.model_desc.clone(),
        peak_rss_bytes: run.peak_rss_bytes.map(|v| v as u64),
        dyno_version: run.dyno_version.clone(),
        started_at: run.started_at.clone(),
        finished_at: run.finished_at.clone(),
        what_this_means: run.tokens_per_word.and_then(|tpw| {
            // The first pp+tg test gives TTFT and its own decode; else tg.
            let pg = results
                .iter()
                .find(|r| r.kind == "prompt_gen" && r.status == "ok");
            let tg = results.iter().find(|r| r.kind == "gen" && r.status == "ok");
            let decode = pg
                .and_then(|r| r.decode_tokens_per_s.as_ref().map(|f| f.mean))
                .or_else(|| tg.and_then(|r| r.mean_tokens_per_s))?;
            Some(meaning(tpw, decode, pg.and_then(|r| r.ttft_ms)))
        }),
        results,
        telemetry: run_telemetry,
        quality: None,
    })
}

fn machine_json(m: &MachineRow, run: Option<&RunRow>) -> MachineJson {
    let devices: Vec<Device> = run
        .and_then(|r| r.devices_json.as_deref())
        .and_then(|d| serde_json::from_str(d).ok())
        .unwrap_or_default();
    MachineJson {
        fingerprint: m.fingerprint.clone(),
        cpu: m.cpu.clone(),
        cores: m.cores_logical as u64,
        cores_physical: m.cores_physical.map(|c| c as u64),
        memory_bytes: m.memory_bytes as u64,
        os: m.os.clone(),
        kernel: m.kernel.clone(),
        gpus: devices
            .into_iter()
            .filter(|d| d.kind == "gpu" || d.kind == "igpu")
            .collect(),
        backend: run.and_then(|r| r.backend.clone()),
        llama_cpp_build: run.and_then(|r| r.llama_cpp_build.clone()),
        memory_bandwidth_bytes_per_s: m.memory_bandwidth_bytes_per_s.map(|b| b as u64),
    }
}

/// Build the report for `runs` (in the order given). The machine is the one
/// the first run was measured on, or `here` when there are no runs.
pub async fn build(store: &Store, runs: &[RunRow], here: &Machine) -> Result<Report> {
    let machine = match runs.first() {
        Some(r) => {
            // Backend and build come from the first run that reached a worker.
            let facts = runs
                .iter()
                .find(|r| r.llama_cpp_build.is_some())
                .unwrap_or(r);
            machine_json(&store.machine(r.machine_id).await?, Some(facts))
        }
        None => MachineJson {
            fingerprint: here.fingerprint.clone(),
            cpu: here.cpu.clone(),
            cores: here.cores_logical as u64,
            cores_physical: here.cores_physical.map(|c| c as u64),
            memory_bytes: here.memory_bytes,
            os: here.os.clone(),
            kernel: here.kernel.clone(),
            gpus: Vec::new(),
            backend: None,
            llama_cpp_build: None,
            memory_bandwidth_bytes_per_s: None,
        },
    };
    let mut out = Vec::with_capacity(runs.len());
    for r in runs {
        out.push(run_json(store, r).await?);
    }
    Ok(Report {
        schema_version: SCHEMA_VERSION,
        machine,
        offload_sweep: offload::series(&out),
        runs: out,
    })
}
