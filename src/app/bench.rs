//! A benchmark of one or more model files: `dyno bench` and the app's
//! Benchmark… buttons both run [`run`], so a benchmark is set up, measured,
//! re-measured when disturbed and reported one way, and makes one result (a
//! run per model and setup) whichever front end started it. A sweep of a
//! model's levels is `app::sweep`.

use std::path::{Path, PathBuf};

use super::presets::Preset;
use crate::bench::plan::{BenchRequest, Plan};
use crate::bench::run::{prepare_model, run_config, run_model, BenchContext, BenchOutcome};
use crate::bench::Reporter;
use crate::error::{DynoError, Result};
use crate::machine::Machine;
use crate::report::{self, Report};
use crate::store::Store;
use crate::telemetry::power::{PowerSource, PowerState};
use crate::vocab::request::BenchGroup;
use crate::vocab::status::{LevelStatus, RunStatus};
use crate::vocab::RunConfig;
use crate::worker::client::{Cancel, WorkerOptions};

/// What one benchmark measures and how, in the core's own types: the CLI
/// fills it from its options, the app from `app::form::BenchForm`.
#[derive(Debug, Clone)]
pub struct BenchInput {
    pub models: Vec<PathBuf>,
    pub request: BenchRequest,
    /// Measure the tests flagged as disturbed again, up to this many times.
    pub retry_disturbed: u32,
    pub measuring: Measuring,
}

/// How the figures are taken, whatever is measured.
#[derive(Debug, Clone)]
pub struct Measuring {
    pub telemetry: bool,
    pub memory_check: bool,
    /// Wait up to this many seconds for idle temperatures and clocks before
    /// each model load after the first.
    pub cooldown_s: Option<u32>,
}

impl Default for Measuring {
    fn default() -> Measuring {
        Measuring {
            telemetry: true,
            memory_check: true,
            cooldown_s: None,
        }
    }
}

impl Measuring {
    /// The context a benchmark's or a sweep's runs are measured in.
    pub fn context<'s>(
        &self,
        store: &'s Store,
        machine_id: i64,
        sweep_id: i64,
        worker: WorkerOptions,
        cancel: Cancel,
    ) -> BenchContext<'s> {
        BenchContext {
            store,
            machine_id,
            sweep_id: Some(sweep_id),
            worker: std::sync::Arc::new(worker),
            cancel,
            telemetry: self.telemetry,
            memory_check: self.memory_check,
            cooldown: self.cooldown_s.map(crate::bench::run::Cooldown::new),
        }
    }
}

impl BenchInput {
    /// One file with a preset's plan and llama-bench's defaults for the rest
    /// (what every Benchmark… button measures, so its runs compare).
    pub fn preset(path: PathBuf, preset: Preset, machine: &Machine) -> BenchInput {
        let mut request = BenchRequest::defaults(machine.default_threads());
        preset.apply(&mut request);
        BenchInput {
            models: vec![path],
            request,
            retry_disturbed: 0,
            measuring: Measuring::default(),
        }
    }

    /// Check the plan and read every header before anything runs (the
    /// database included), so a bad file fails in milliseconds rather than
    /// after an hour of other models, and leaves nothing behind.
    pub fn check(&self) -> Result<()> {
        if self.models.is_empty() {
            return Err(DynoError::BadInput(
                "no model to benchmark; give the path of a .gguf file".into(),
            ));
        }
        self.request.validate()?;
        for m in &self.models {
            crate::model::inspect(m)?;
        }
        Ok(())
    }
}

/// Progress of a benchmark, beyond each run's own events.
pub trait BenchProgress: Reporter {
    /// `samples` timed repetitions are planned in all (it grows when
    /// disturbed tests are measured again).
    fn planned(&mut self, samples: u64);
    /// A sentence for the person between runs: the battery, a retry.
    fn note(&mut self, text: &str);
    /// Model `index` (from 0) of `total` is next; `name` is its file name.
    fn model(&mut self, _index: usize, _total: usize, _name: &str) {}
    /// That model's runs have ended.
    fn model_done(&mut self, _name: &str, _status: LevelStatus) {}
}

/// A finished (or cancelled) benchmark: its runs as a report.
pub struct Benched {
    /// The group its runs are stored under (a `bench` sweep row).
    pub sweep_id: i64,
    pub report: Report,
    pub outcome: BenchOutcome,
}

/// How long a worker may stay silent (one repetition) unless told
/// (`--timeout`'s default).
pub const DEFAULT_TIMEOUT_S: u64 = 600;

/// The worker settings every benchmark uses: a repetition silent for longer
/// than `timeout_s` is a hung worker.
pub fn worker(timeout_s: u64) -> Result<WorkerOptions> {
    WorkerOptions::current(std::time::Duration::from_secs(timeout_s.max(1)))
        .map_err(|e| DynoError::io("cannot find Dyno's executable to start a worker", e))
}

/// Measure `input` (checked first) on this machine, then read its runs back
/// as the report: the whole of a benchmark but the printing.
pub async fn run(
    store: &Store,
    machine: &Machine,
    input: &BenchInput,
    worker: WorkerOptions,
    cancel: Cancel,
    progress: &mut dyn BenchProgress,
) -> Result<Benched> {
    input.check()?;
    let plan = Plan {
        models: input.models.clone(),
        request: input.request.clone(),
    };
    let args = BenchGroup {
        models: input.models.clone(),
        again: None,
        request: input.request.clone(),
    };
    let (ctx, sweep_id) = start(store, machine, input, &args, worker, cancel).await?;
    let mut planned = plan.total_samples();
    progress.planned(planned);
    warn_on_battery(progress);
    let mut out = BenchOutcome::default();
    let total = plan.models.len();
    for (index, path) in plan.models.iter().enumerate() {
        if out.cancelled || ctx.cancel.is_cancelled() {
            out.cancelled = true;
            break;
        }
        let model = prepare_model(store, path).await?;
        let name = model.info.file_name.clone();
        progress.model(index, total, &name);
        let before = out.run_ids.len();
        run_model(&ctx, &model, &plan.request, progress, &mut out).await?;
        let status = model_status(store, &out, before).await?;
        progress.model_done(&name, status);
    }
    let mut last = out.run_ids.clone();
    for attempt in 1..=input.retry_disturbed {
        if out.cancelled || ctx.cancel.is_cancelled() {
            break;
        }
        let todo = flagged(store, &last).await?;
        if todo.is_empty() {
            break;
        }
        let n: usize = todo.iter().map(|(_, c)| c.tests.len()).sum();
        planned += n as u64 * u64::from(plan.request.reps);
        progress.planned(planned);
        progress.note(&format!(
            "re-measuring {n} disturbed test{} (attempt {attempt} of {})",
            if n == 1 { "" } else { "s" },
            input.retry_disturbed
        ));
        let before = out.run_ids.len();
        measure_configs(&ctx, &todo, &plan.request, progress, &mut out).await?;
        last = out.run_ids[before..].to_vec();
    }
    finish(store, machine, sweep_id, out).await
}

/// Measure again the tests of run `run_id` that were flagged as disturbed,
/// on the same file with the same setup and plan, as a run of its own: the
/// first figures are kept beside the new ones.
pub async fn again(
    store: &Store,
    machine: &Machine,
    run_id: i64,
    measuring: Measuring,
    worker: WorkerOptions,
    cancel: Cancel,
    progress: &mut dyn BenchProgress,
) -> Result<Benched> {
    let row = store
        .run(run_id)
        .await?
        .ok_or_else(|| DynoError::NotFound(format!("no run {run_id}; `dyno runs` lists them")))?;
    let todo = flagged(store, &[run_id]).await?;
    let Some((path, config)) = todo.first() else {
        return Err(DynoError::BadInput(format!(
            "run {run_id} has no disturbed test to measure again"
        )));
    };
    crate::model::inspect(Path::new(path))?;
    // The plan the run was measured under: its group stores the request
    // (a benchmark's and a sweep's alike); llama-bench's defaults if not.
    let request = match row.sweep_id {
        Some(id) => store
            .sweep(id)
            .await?
            .and_then(|s| Some(s.args.as_ref()?.request().clone())),
        None => None,
    }
    .unwrap_or_else(|| BenchRequest::defaults(config.ctx.n_threads));
    // The supervisor times with the request's repetitions, warm-up and
    // sustain, so they are the run's own whatever the group stored (an
    // imported run has none, and an older request may no longer parse).
    let mut request = request;
    request.reps = config.reps;
    request.warmup = config.warmup;
    request.sustain_s = config.sustain_s;
    let input = BenchInput {
        models: vec![PathBuf::from(path)],
        request,
        retry_disturbed: 0,
        measuring,
    };
    let args = BenchGroup {
        models: Vec::new(),
        again: Some(run_id),
        request: input.request.clone(),
    };
    let (ctx, sweep_id) = start(store, machine, &input, &args, worker, cancel).await?;
    progress.planned(config.tests.len() as u64 * u64::from(input.request.reps));
    warn_on_battery(progress);
    let mut out = BenchOutcome::default();
    let name = Path::new(path)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.clone());
    progress.model(0, 1, &name);
    measure_configs(&ctx, &todo, &input.request, progress, &mut out).await?;
    let status = model_status(store, &out, 0).await?;
    progress.model_done(&name, status);
    finish(store, machine, sweep_id, out).await
}

/// The machine and its inventory stored, the group the runs go under, and
/// the context they are measured in.
async fn start<'s>(
    store: &'s Store,
    machine: &Machine,
    input: &BenchInput,
    args: &BenchGroup,
    worker: WorkerOptions,
    cancel: Cancel,
) -> Result<(BenchContext<'s>, i64)> {
    let machine_id = store.upsert_machine(machine).await?;
    // The decode roofline needs the memory bandwidth: measured once per
    // machine (about a second) and then read from the database.
    super::hw::ensure_inventory(store, machine_id, machine, false).await?;
    let sweep_id = store.create_bench_group(machine_id, args).await?;
    let ctx = input
        .measuring
        .context(store, machine_id, sweep_id, worker, cancel);
    Ok((ctx, sweep_id))
}

/// Laptops run slower unplugged: said before anything is timed, so a
/// battery figure is never taken for an AC one. `None` on AC power or on a
/// machine without a battery.
pub fn battery_note() -> Option<String> {
    let power = PowerState::now();
    (power.source == Some(PowerSource::Battery)).then(|| format!(
        "measuring {}: laptops usually run slower unplugged, so these figures compare only with other battery runs; plug in for AC figures",
        power.describe().unwrap_or_else(|| "on battery".into())
    ))
}

fn warn_on_battery(progress: &mut dyn BenchProgress) {
    if let Some(note) = battery_note() {
        progress.note(&note);
    }
}

/// The file and the cut-down configuration of each of `runs` that has
/// tests flagged as disturbed: only those tests, with everything else as
/// the run had it. The verdicts are stored with each result.
async fn flagged(store: &Store, runs: &[i64]) -> Result<Vec<(String, RunConfig)>> {
    let mut todo = Vec::new();
    for id in runs {
        let Some(row) = store.run(*id).await? else {
            continue;
        };
        let flagged: Vec<String> = store
            .results(*id)
            .await?
            .into_iter()
            .filter(|r| r.disturbance.as_ref().is_some_and(|d| d.disturbed))
            .map(|r| r.test)
            .collect();
        let Some(mut config) = row.config.into_inner() else {
            continue;
        };
        config.tests.retain(|t| flagged.contains(&t.name()));
        if !config.tests.is_empty() {
            todo.push((store.model(row.model_id).await?.path, config));
        }
    }
    Ok(todo)
}

/// Measure each configuration, as a run of its own.
async fn measure_configs(
    ctx: &BenchContext<'_>,
    todo: &[(String, RunConfig)],
    request: &BenchRequest,
    progress: &mut dyn BenchProgress,
    out: &mut BenchOutcome,
) -> Result<()> {
    for (path, config) in todo {
        if out.cancelled || ctx.cancel.is_cancelled() {
            out.cancelled = true;
            break;
        }
        let model = prepare_model(ctx.store, Path::new(path)).await?;
        run_config(ctx, &model, config, request, progress, out).await?;
    }
    Ok(())
}

/// How a model's runs (those after `before` in `out`) ended, as one word.
async fn model_status(store: &Store, out: &BenchOutcome, before: usize) -> Result<LevelStatus> {
    if out.cancelled {
        return Ok(LevelStatus::Cancelled);
    }
    let mut any_ok = false;
    for id in &out.run_ids[before..] {
        any_ok |= store
            .run(*id)
            .await?
            .is_some_and(|r| r.status == RunStatus::Ok);
    }
    Ok(if any_ok {
        LevelStatus::Ok
    } else {
        LevelStatus::Failed
    })
}

/// Read the group's runs back as the report.
async fn finish(
    store: &Store,
    machine: &Machine,
    sweep_id: i64,
    out: BenchOutcome,
) -> Result<Benched> {
    let rows = store.sweep_runs(sweep_id).await?;
    let report = report::build(store, &rows, machine).await?;
    Ok(Benched {
        sweep_id,
        report,
        outcome: out,
    })
}
