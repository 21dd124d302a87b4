//! `dyno import FILE.json`: a shared result file (`dyno export --format
//! json`, or `--json` output) stored as runs of the machine that measured
//! them, so `dyno compare` can set them beside local runs. Importing the
//! same file twice adds nothing.
//!
//! A file comes from someone else, so nothing in it is trusted: its size and
//! counts are bounded, unknown test kinds are refused, headline figures are
//! recomputed from the samples, and it never changes a stored machine or
//! model.

use std::path::Path;

use sha2::{Digest, Sha256};

use super::json::{ConfigJson, MachineJson, ModelJson};
use super::{Report, ResultJson, RunJson, SCHEMA_VERSION};
use crate::bench::figures::{figures, Figures};
use crate::error::{DynoError, Result};
use crate::machine::Machine;
use crate::model::ModelInfo;
use crate::store::{ImportedResult, ImportedRun, Store};
use crate::vocab::RunConfig;
use crate::vocab::{ContextParams, FlashAttn, ModelParams, Sample, TensorOverride, TestSpec};

/// Largest result file `dyno import` reads. A sweep of a dozen levels with
/// telemetry is well under 1 MiB; the bound keeps a wrong or hostile file
/// from filling memory before a single check has run.
pub const MAX_FILE_BYTES: u64 = 64 * 1024 * 1024;
/// Most runs one file may hold (a `dyno bench` over every combination of a
/// few options makes hundreds).
pub const MAX_RUNS: usize = 10_000;
/// Most results one run may hold.
pub const MAX_RESULTS: usize = 1_000;
/// Most repetitions (samples) one result may hold.
pub const MAX_SAMPLES: usize = 10_000;

/// Read a result file, refusing one larger than [`MAX_FILE_BYTES`] before
/// reading it (and, should it grow meanwhile, while reading it).
pub fn read(path: &Path) -> Result<String> {
    use std::io::Read;
    let io = |e| DynoError::BadInput(format!("cannot read {}: {e}", path.display()));
    let file = std::fs::File::open(path).map_err(io)?;
    let too_big = |n: u64| {
        DynoError::BadInput(format!(
            "{} is {:.1} MiB; Dyno imports result files up to {} MiB. Export fewer runs per file (`dyno export ID --format json` for one run or sweep) and import them one by one",
            path.display(),
            n as f64 / (1024.0 * 1024.0),
            MAX_FILE_BYTES / (1024 * 1024)
        ))
    };
    let len = file.metadata().map_err(io)?.len();
    if len > MAX_FILE_BYTES {
        return Err(too_big(len));
    }
    let mut bytes = Vec::with_capacity(len as usize);
    file.take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(io)?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(too_big(bytes.len() as u64));
    }
    String::from_utf8(bytes).map_err(|_| {
        DynoError::BadInput(format!(
            "{} is not text, so it is not a result file; import a file from `dyno export --format json`",
            path.display()
        ))
    })
}

/// Just the version, read before the whole document so a file from a newer
/// Dyno is named as such rather than as one with wrong fields.
#[derive(serde::Deserialize)]
struct Head {
    #[serde(default)]
    schema_version: Option<serde_json::Value>,
}

/// Read and check a result file: its schema version, then the document
/// (deserialised straight into the report, with no copy as a JSON tree),
/// then its counts and test kinds.
pub fn parse(text: &str, name: &str) -> Result<Report> {
    use serde_json::error::Category;
    let not_json = |e: serde_json::Error| {
        DynoError::BadInput(format!(
            "{name} is not JSON ({e}); import a file from `dyno export --format json`"
        ))
    };
    let head: Head = serde_json::from_str(text).map_err(|e| match e.classify() {
        Category::Data => DynoError::BadInput(format!(
            "{name} has no schema_version, so it is not a Dyno result file; import a file from `dyno export --format json`"
        )),
        _ => not_json(e),
    })?;
    match head.schema_version.as_ref().and_then(|s| s.as_u64()) {
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
    let report: Report = serde_json::from_str(text).map_err(|e| match e.classify() {
        Category::Data => DynoError::BadInput(format!(
            "{name} is a Dyno result file with missing or wrong fields ({e})"
        )),
        _ => not_json(e),
    })?;
    check(&report, name)?;
    Ok(report)
}

/// Refuse a file whose counts are beyond any real benchmark's, or that
/// holds a test kind this Dyno does not know (which it would otherwise
/// store under a wrong meaning).
pub fn check(r: &Report, name: &str) -> Result<()> {
    let bad = |what: String| {
        Err(DynoError::BadInput(format!(
            "{name}: {what}. A file from `dyno export --format json` stays well within this; split a larger file into one export per run or sweep"
        )))
    };
    if r.runs.len() > MAX_RUNS {
        return bad(format!(
            "{} runs, where Dyno imports at most {MAX_RUNS} from one file",
            r.runs.len()
        ));
    }
    for run in &r.runs {
        if run.results.len() > MAX_RESULTS {
            return bad(format!(
                "run {} holds {} results, where Dyno imports at most {MAX_RESULTS} per run",
                run.run_id,
                run.results.len()
            ));
        }
        for res in &run.results {
            let figures = [
                &res.prefill_tokens_per_s,
                &res.decode_tokens_per_s,
                &res.decode_per_sequence_tokens_per_s,
                &res.ttft_stats_ms,
            ];
            let n = figures
                .iter()
                .filter_map(|f| f.as_ref().map(|f| f.samples.len().max(f.outliers.len())))
                .chain([
                    res.samples_ns.len(),
                    res.samples_tokens_per_s.len(),
                    res.outliers.len(),
                    res.reps as usize,
                ])
                .max()
                .unwrap_or(0);
            if n > MAX_SAMPLES {
                return bad(format!(
                    "run {}'s {} holds {n} samples, where Dyno imports at most {MAX_SAMPLES} repetitions per test",
                    run.run_id, res.test
                ));
            }
        }
    }
    Ok(())
}

/// A run's identity wherever it travels: the sha256 of its machine's
/// fingerprint, its model's sha256, its start time and its id on the
/// machine that measured it. An import keys on it, and the team store uses
/// it as the run's uid, so a run is stored once however often it is sent.
pub fn key(r: &Report, run: &RunJson) -> String {
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

/// The test a result measured. A kind this Dyno does not know never gets
/// here: reading the file refuses it (`TestKind`'s own reader), since read
/// as another kind its figures would be stored under the wrong meaning.
fn spec(r: &ResultJson) -> TestSpec {
    TestSpec {
        kind: r.kind,
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
///
/// A file's machine and models are added when the database does not know
/// them and never change a record it has: a file can claim any fingerprint,
/// and one claiming this machine's must not rewrite what was detected here.
/// This machine's record, if the file names it first, is made from
/// detecting it, not from the file.
pub async fn import(store: &Store, report: &Report) -> Result<(usize, usize)> {
    import_with(store, report, &Machine::detect(), None).await
}

/// The machine a file names: this machine as detected here when the file
/// claims its fingerprint, else the file's record.
fn file_machine(m: &MachineJson, here: &Machine) -> Machine {
    if m.fingerprint == here.fingerprint {
        return here.clone();
    }
    Machine {
        fingerprint: m.fingerprint.clone(),
        hostname: None,
        os: m.os.clone(),
        kernel: m.kernel.clone(),
        cpu: m.cpu.clone(),
        cores_physical: m.cores_physical.map(|c| c as usize),
        cores_logical: m.cores as usize,
        memory_bytes: m.memory_bytes,
    }
}

/// A file's model as a model record. The file's path means nothing on this
/// disk; keeping only the file name also keeps it from matching a local
/// model's path.
fn model_info(model: &ModelJson) -> ModelInfo {
    let file_path = model.path.rsplit(['/', '\\']).next().unwrap_or_default();
    ModelInfo {
        path: file_path.into(),
        file_name: model.file_name.clone(),
        sha256: model.sha256.clone(),
        arch: model.arch.clone(),
        name: model.name.clone(),
        quant: model.quant.clone(),
        size_bytes: model.size_bytes,
        weight_bytes: model.weight_bytes,
        n_params: model.n_params,
        n_layers: model.n_layers,
        context_length: model.context_length,
        gguf_version: 3,
        synthetic: model.synthetic.clone(),
        // An imported run predicts nothing here: it was measured elsewhere.
        twin_of_sha256: None,
    }
}

/// A file's settings as the plan a local run stores.
fn run_config(c: &ConfigJson, specs: &[TestSpec]) -> Result<RunConfig> {
    Ok(RunConfig {
        model: ModelParams {
            n_gpu_layers: c.n_gpu_layers_requested,
            use_mmap: c.use_mmap,
            split_mode: serde_json::from_value(serde_json::Value::String(c.split_mode.clone()))
                .unwrap_or_default(),
            main_gpu: c.main_gpu,
            devices: c.devices.clone(),
            fit_margin_mib: c.fit_margin_mib,
            n_cpu_moe: c.n_cpu_moe.unwrap_or(0),
            tensor_overrides: match c.tensor_overrides.as_deref() {
                None | Some("none") => Vec::new(),
                Some(s) => TensorOverride::parse_group(s)
                    .map_err(|e| DynoError::BadInput(format!("a run's tensor_overrides: {e}")))?,
            },
            rpc: c.rpc.clone().unwrap_or_default(),
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
        tests: specs.to_vec(),
        sustain_s: c.sustain_s,
    })
}

/// A run pulled from a team store: its key is its team uid, and it is marked
/// as pulled from `from` so no push sends it back.
pub struct Pulled<'a> {
    pub uid: &'a str,
    pub from: &'a str,
}

/// [`import`], with this machine detected once by the caller (a pull of
/// 10,000 runs asks once, not 10,000 times), and for a run from a team
/// store its uid as the key.
pub async fn import_with(
    store: &Store,
    report: &Report,
    here: &Machine,
    pulled: Option<&Pulled<'_>>,
) -> Result<(usize, usize)> {
    check(report, "the file")?;
    let machine = file_machine(&report.machine, here);
    let machine_id = store.add_machine_if_absent(&machine).await?;
    let (mut added, mut skipped) = (0, 0);
    for run in &report.runs {
        let model_id = store.add_model_if_absent(&model_info(&run.model)).await?;
        let specs: Vec<TestSpec> = run.results.iter().map(spec).collect();
        let c = &run.config;
        let config = run_config(c, &specs)?;
        let results: Vec<ImportedResult> = run
            .results
            .iter()
            .zip(&specs)
            .map(|(r, t)| {
                let samples = samples(r, t);
                // The headline the file states is not trusted: it is what the
                // samples say, computed as for a local run.
                let headline = figures(t, &samples).headline.map(|f| (f.mean, f.stddev));
                ImportedResult {
                    test: t,
                    kind: r.kind,
                    status: r.status,
                    error: r.error.as_deref(),
                    reps: r.reps,
                    samples,
                    headline,
                    disturbance: r.disturbance.as_ref(),
                    sustained: r.sustained.as_ref(),
                }
            })
            .collect();
        let k = pulled.map_or_else(|| key(report, run), |p| p.uid.to_string());
        let stored = store
            .import_run(
                &ImportedRun {
                    key: &k,
                    machine_id,
                    model_id,
                    model_sha256: &run.model.sha256,
                    status: run.status,
                    error: run.error.as_deref(),
                    error_code: run.error_code.as_ref(),
                    config: &config,
                    n_threads: c.n_threads,
                    n_gpu_layers: c.n_gpu_layers,
                    n_batch: c.n_batch,
                    n_ubatch: c.n_ubatch,
                    flash_attn: &c.flash_attn,
                    cache_type: &c.cache_type,
                    use_mmap: c.use_mmap,
                    reps: c.reps,
                    backend: run.backend.as_deref(),
                    llama_cpp_build: run.llama_cpp_build.as_deref(),
                    modules: run.backend_modules.as_deref(),
                    load_time_ms: run.load_time_ms,
                    model_desc: run.model_desc.as_deref(),
                    peak_rss_bytes: run.peak_rss_bytes,
                    dyno_version: &run.dyno_version,
                    started_at: &run.started_at,
                    finished_at: run.finished_at.as_deref(),
                    pulled_from: pulled.map(|p| p.from),
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
