//! Building the JSON document ([`super::json`]) from store rows. Every
//! figure is recomputed here from the stored samples, so `dyno bench
//! --json`, `dyno show` and `dyno runs` print the same figures for the same
//! rows, whenever they were measured.

use super::json::{
    ConfigJson, MachineJson, MeaningJson, ModelJson, Report, ResultJson, RunJson, SCHEMA_VERSION,
};
use super::{offload, telemetry};
use crate::bench::figures::figures;
use crate::error::Result;
use crate::machine::Machine;
use crate::store::{MachineRow, ModelRow, ResultRow, RunRow, Store};
use crate::vocab::status::ResultStatus;
use crate::vocab::RunConfig;
use crate::vocab::{Device, Sample, TensorOverride, TestKind, TestSpec};

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

fn result_json(r: &ResultRow) -> ResultJson {
    let samples: &[Sample] = r.samples.as_deref().unwrap_or_default();
    let kind = r.kind;
    let spec = TestSpec {
        kind,
        n_prompt: r.n_prompt as u32,
        n_gen: r.n_gen as u32,
        n_depth: r.n_depth as u32,
        n_parallel: r.n_parallel as u32,
    };
    let f = figures(&spec, samples);
    let h = f.headline.as_ref();
    let disturbance = r.disturbance.clone().into_inner();
    ResultJson {
        test: r.test.clone(),
        kind,
        status: r.status,
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
        disturbed: disturbance.as_ref().is_some_and(|d| d.disturbed),
        disturbance,
        sustained: r.sustain.clone().into_inner(),
        predicted: None,
    }
}

pub(super) async fn run_json(store: &Store, run: &RunRow) -> Result<RunJson> {
    let m = store.model(run.model_id).await?;
    let synthetic = m.synthetic.is_some();
    let rows = store.results(run.id).await?;
    let config = run.config.as_ref();
    let mut results: Vec<ResultJson> = rows.iter().map(result_json).collect();
    let bandwidth = telemetry::weights_bandwidth(
        &store.machine(run.machine_id).await?,
        run.n_gpu_layers,
        m.n_layers,
    )
    .filter(|_| !split_by_pattern(run, config));
    let step_bytes = decode_step_bytes(&m);
    let prediction = run.prediction.clone().into_inner();
    for r in &mut results {
        telemetry::roofline(r, step_bytes, bandwidth);
        r.predicted = prediction
            .as_ref()
            .and_then(|p| p.for_test(&r.test))
            .map(|t| t.estimate);
    }
    let sources = run.telemetry_sources.as_ref();
    let readings = if sources.is_some() {
        store.telemetry(run.id).await?
    } else {
        Vec::new()
    };
    let ids: Vec<i64> = rows.iter().map(|r| r.id).collect();
    let run_telemetry = telemetry::attach(&mut results, &ids, &readings, sources);
    Ok(RunJson {
        run_id: run.id,
        sweep_id: run.sweep_id,
        // Filled in by `build`, which looks each group up once.
        level_sweep_id: None,
        status: run.status,
        error: run.error.clone(),
        error_code: run.error_code.clone(),
        model: model_json(m),
        config: config_json(run, config),
        backend: run.backend.clone(),
        backend_modules: run.modules.clone().into_inner().filter(|m| !m.is_empty()),
        offload: run.offload.clone().into_inner(),
        power: run.power.clone().into_inner(),
        cooldown: run.cooldown.clone().into_inner(),
        llama_cpp_build: run.llama_cpp_build.clone(),
        // A synthetic file was written just now and read from the page
        // cache; its load time says nothing of the real file's.
        load_time_ms: run.load_time_ms.filter(|_| !synthetic),
        model_desc: run.model_desc.clone(),
        peak_rss_bytes: run.peak_rss_bytes.map(|v| v as u64),
        dyno_version: run.dyno_version.clone(),
        started_at: run.started_at.clone(),
        finished_at: run.finished_at.clone(),
        what_this_means: run
            .tokens_per_word
            .and_then(|tpw| what_this_means(tpw, &results)),
        results,
        telemetry: run_telemetry,
        quality: None,
        prediction,
    })
}

/// Whether tensors placed by pattern split the weights between host and
/// device memory, so that no one bandwidth bounds decode (no roofline, as
/// for a partial offload). llama.cpp's count of the tensors it moved says
/// whether any were; without its report, the options do.
fn split_by_pattern(run: &RunRow, config: Option<&RunConfig>) -> bool {
    let moved = run
        .offload
        .as_ref()
        .map(|o| o.tensors_overridden.unwrap_or(0) > 0);
    run.n_gpu_layers != Some(0)
        && moved.unwrap_or_else(|| config.is_some_and(|c| c.model.places_tensors()))
}

/// The bytes of weights one decode step reads: all of them, except that a
/// mixture of experts reads only the experts it routes to.
fn decode_step_bytes(m: &ModelRow) -> u64 {
    m.shape
        .as_ref()
        .filter(|s| s.n_expert > 0)
        .map_or(m.weight_bytes.max(0) as u64, |s| s.decode_bytes_per_token)
}

/// The model's row as exported, with its bits per weight.
fn model_json(m: ModelRow) -> ModelJson {
    let n_params = m.n_params.max(0) as u64;
    let weight_bytes = m.weight_bytes.max(0) as u64;
    ModelJson {
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
        synthetic: m.synthetic,
    }
}

/// The run's settings as exported: the stored columns, and from the stored
/// plan what has no column.
fn config_json(run: &RunRow, config: Option<&RunConfig>) -> ConfigJson {
    ConfigJson {
        n_threads: run.n_threads as u32,
        n_gpu_layers: run.n_gpu_layers.map(|v| v as u32),
        n_gpu_layers_requested: config.and_then(|c| c.model.n_gpu_layers),
        n_batch: run.n_batch as u32,
        n_ubatch: run.n_ubatch as u32,
        flash_attn: run.flash_attn.clone(),
        cache_type: run.cache_type.clone(),
        use_mmap: run.use_mmap,
        reps: run.reps as u32,
        warmup: config.is_none_or(|c| c.warmup),
        split_mode: config
            .as_ref()
            .map_or("layer", |c| c.model.split_mode.as_str())
            .to_string(),
        main_gpu: config.map_or(0, |c| c.model.main_gpu),
        devices: config.and_then(|c| c.model.devices.clone()),
        no_kv_offload: config.is_some_and(|c| c.ctx.no_kv_offload),
        fit_margin_mib: config.and_then(|c| c.model.fit_margin_mib),
        sustain_s: config.and_then(|c| c.sustain_s),
        n_cpu_moe: config
            .as_ref()
            .map(|c| c.model.n_cpu_moe)
            .filter(|&n| n > 0),
        tensor_overrides: config
            .as_ref()
            .filter(|c| !c.model.tensor_overrides.is_empty())
            .map(|c| TensorOverride::label(&c.model.tensor_overrides)),
        rpc: config
            .map(|c| c.model.rpc.clone())
            .filter(|r| !r.is_empty()),
    }
}

/// What the run means in words per second: the first prefill-and-decode
/// test gives TTFT and its own decode; else a decode test.
fn what_this_means(tokens_per_word: f64, results: &[ResultJson]) -> Option<MeaningJson> {
    let pg = results
        .iter()
        .find(|r| r.kind == TestKind::PromptGen && r.status == ResultStatus::Ok);
    let tg = results
        .iter()
        .find(|r| r.kind == TestKind::Gen && r.status == ResultStatus::Ok);
    let decode = pg
        .and_then(|r| r.decode_tokens_per_s.as_ref().map(|f| f.mean))
        .or_else(|| tg.and_then(|r| r.mean_tokens_per_s))?;
    Some(meaning(tokens_per_word, decode, pg.and_then(|r| r.ttft_ms)))
}

fn machine_json(m: &MachineRow, run: Option<&RunRow>) -> MachineJson {
    let devices: Vec<Device> = run
        .and_then(|r| r.devices.clone().into_inner())
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
    // Whether each run's group is a sweep of levels, read once per group.
    let mut level_sweeps: std::collections::HashMap<i64, Option<i64>> = Default::default();
    for r in runs {
        let mut run = run_json(store, r).await?;
        if let Some(id) = r.sweep_id {
            run.level_sweep_id = match level_sweeps.get(&id) {
                Some(known) => *known,
                None => {
                    let kind = store.sweep(id).await?.map(|s| s.kind);
                    let level = (kind.as_deref() == Some("sweep")).then_some(id);
                    level_sweeps.insert(id, level);
                    level
                }
            };
        }
        out.push(run);
    }
    Ok(Report {
        schema_version: SCHEMA_VERSION,
        machine,
        offload_sweep: offload::series(&out),
        team: None,
        runs: out,
    })
}
