//! `dyno import FILE.json`: a shared result file (`dyno export --format
//! json`, or `--json` output) stored as runs of the machine that measured
//! them, so `dyno compare` can set them beside local runs. Importing the
//! same file twice adds nothing.

use sha2::{Digest, Sha256};

use super::{Report, ResultJson, RunJson, SCHEMA_VERSION};
use crate::bench::figures::Figures;
use crate::bench::plan::RunConfig;
use crate::error::{DynoError, Result};
use crate::machine::Machine;
use crate::model::ModelInfo;
use crate::store::{ImportedResult, ImportedRun, Store};
use crate::worker::protocol::{ContextParams, FlashAttn, ModelParams, Sample, TestKind, TestSpec};

/// Read and check a result file.
pub fn parse(text: &str, name: &str) -> Result<Report> {
    let v: serde_json::Value = serde_json::from_str(text).map_err(|e| {
        DynoError::BadInput(format!(
            "{name} is not JSON ({e}); import a file from `dyno export --format json`"
        ))
    })?;
    match v.get("schema_version").and_then(|s| s.as_u64()) {
        None => {
            return Err(DynoError::BadInput(format!(
                "{name} has no schema_version, so it is not a Dyno result file; import a file from `dyno export --format json`"
            )))
        }
        Some(s) if s != u64::from(SCHEMA_VERSION) => {
            return Err(DynoError::BadInput(format!(
                "{name} uses result schema {s}, which this Dyno (schema {SCHEMA_VERSION}) does not know; update Dyno to import it"
            )))
        }
        Some(_) => {}
    }
    serde_json::from_value(v).map_err(|e| {
        DynoError::BadInput(format!(
            "{name} is a Dyno result file with missing or wrong fields ({e})"
        ))
    })
}

fn key(r: &Report, run: &RunJson) -> String {
    let mut h = Sha256::new();
    for part in [
        r.machine.fingerprint.as_str(),
        run.model.sha256.as_str(),
        run.started_at.as_str(),
        &run.run_id.to_string(),
    ] {
        h.update(part.as_bytes());
        h.update([0]);
    }
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

fn spec(r: &ResultJson) -> TestSpec {
    TestSpec {
        kind: serde_json::from_value(serde_json::Value::String(r.kind.clone()))
            .unwrap_or(TestKind::Prompt),
        n_prompt: r.n_prompt,
        n_gen: r.n_gen,
        n_depth: r.n_depth,
        n_parallel: r.n_parallel,
    }
}

/// The raw samples back from the figures a file carries: each phase's time
/// is its tokens over its rate, exactly as the rate was computed.
fn samples(r: &ResultJson, t: &TestSpec) -> Vec<Sample> {
    let seqs = f64::from(t.n_parallel.max(1));
    let ns = |tokens: f64, f: &Option<Figures>, i: usize| {
        f.as_ref()
            .and_then(|f| f.samples.get(i))
            .filter(|ts| **ts > 0.0)
            .map(|ts| (tokens / ts * 1e9).round() as u64)
    };
    (0..r.samples_ns.len())
        .map(|i| Sample {
            total_ns: r.samples_ns[i],
            prompt_ns: ns(f64::from(t.n_prompt) * seqs, &r.prefill_tokens_per_s, i),
            gen_ns: ns(f64::from(t.n_gen) * seqs, &r.decode_tokens_per_s, i),
            ttft_ns: r
                .ttft_stats_ms
                .as_ref()
                .and_then(|f| f.samples.get(i))
                .map(|ms| (ms * 1e6).round() as u64),
        })
        .collect()
}

/// Store every run of `report`; returns (imported, already there).
pub async fn import(store: &Store, report: &Report) -> Result<(usize, usize)> {
    let m = &report.machine;
    let machine = Machine {
        fingerprint: m.fingerprint.clone(),
        hostname: None,
        os: m.os.clone(),
        kernel: m.kernel.clone(),
        cpu: m.cpu.clone(),
        cores_physical: m.cores_physical.map(|c| c as usize),
        cores_logical: m.cores as usize,
        memory_bytes: m.memory_bytes,
    };
    let machine_id = store.upsert_machine(&machine).await?;
    let (mut added, mut skipped) = (0, 0);
    for run in &report.runs {
        let info = ModelInfo {
            path: run.model.path.clone().into(),
            file_name: run.model.file_name.clone(),
            sha256: run.model.sha256.clone(),
            arch: run.model.arch.clone(),
            name: run.model.name.clone(),
            quant: run.model.quant.clone(),
            size_bytes: run.model.size_bytes,
            weight_bytes: run.model.weight_bytes,
            n_params: run.model.n_params,
            n_layers: run.model.n_layers,
            context_length: run.model.context_length,
            gguf_version: 3,
        };
        let model_id = store.upsert_model(&info, 0).await?;
        let specs: Vec<TestSpec> = run.results.iter().map(spec).collect();
        let c = &run.config;
        let config = RunConfig {
            model: ModelParams {
                n_gpu_layers: c.n_gpu_layers_requested,
                use_mmap: c.use_mmap,
                split_mode: serde_json::from_value(serde_json::Value::String(c.split_mode.clone()))
                    .unwrap_or_default(),
                main_gpu: c.main_gpu,
                devices: c.devices.clone(),
                fit_margin_mib: c.fit_margin_mib,
            },
            ctx: ContextParams {
                n_threads: c.n_threads,
                n_batch: c.n_batch,
                n_ubatch: c.n_ubatch,
                flash_attn: serde_json::from_value(serde_json::Value::String(c.flash_attn.clone()))
                    .unwrap_or(FlashAttn::Auto),
                cache_type: c.cache_type.clone(),
                no_kv_offload: c.no_kv_offload,
            },
            reps: c.reps,
            warmup: c.warmup,
            tests: specs.clone(),
        };
        let results: Vec<ImportedResult> = run
            .results
            .iter()
            .zip(&specs)
            .map(|(r, t)| ImportedResult {
                test: t,
                kind: &r.kind,
                status: &r.status,
                error: r.error.as_deref(),
                reps: r.reps,
                samples: samples(r, t),
                headline: r.mean_tokens_per_s.zip(r.stddev_tokens_per_s),
            })
            .collect();
        let k = key(report, run);
        let stored = store
            .import_run(
                &ImportedRun {
                    key: &k,
                    machine_id,
                    model_id,
                    run,
                    config_json: serde_json::to_string(&config).expect("config serialises"),
                },
                &results,
            )
            .await?;
        match stored {
            Some(_) => added += 1,
            None => skipped += 1,
        }
    }
    Ok((added, skipped))
}
