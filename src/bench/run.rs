//! The orchestrator: runs a plan through worker processes, one per model
//! load, and commits every sample to the store as soon as it arrives.
//!
//! A worker that fails a test cleanly goes on by itself. One that crashes,
//! aborts, hangs or runs out of memory is recorded against the run it was
//! measuring, and a fresh worker takes the runs that had not started. Only a
//! cancel stops the whole benchmark.

use std::path::Path;

use tokio::sync::mpsc;

use super::figures::figures;
use super::plan::{BenchRequest, RunConfig};
use super::recorder::Recorder;
use super::{BenchEvent, Flow, Reporter};
use crate::error::{DynoError, Result};
use crate::model::{self, ModelInfo};
use crate::store::{NewRun, Store, WorkerFacts};
use crate::telemetry::Phase;
use crate::worker::client::{self, Cancel, Ended, WorkerOptions};
use crate::worker::protocol::{Event, MemoryCheck, Sample, WorkerPlan, WorkerRequest};

/// What a benchmark needs besides its plan.
pub struct BenchContext<'a> {
    pub store: &'a Store,
    pub machine_id: i64,
    pub sweep_id: Option<i64>,
    pub worker: WorkerOptions,
    pub cancel: Cancel,
    /// Sample CPU, memory, energy and GPUs alongside every run.
    pub telemetry: bool,
    /// Refuse a model or a test whose estimated memory exceeds what is free
    /// (see [`crate::model::memory`]).
    pub memory_check: bool,
}

/// A model file described, hashed and registered in the store.
#[derive(Debug, Clone)]
pub struct PreparedModel {
    pub info: ModelInfo,
    pub model_id: i64,
}

/// Describe a model from its header, hash it (reusing the stored digest when
/// path, size and modification time are unchanged) and register it.
pub async fn prepare_model(store: &Store, path: &Path) -> Result<PreparedModel> {
    let mut info = model::inspect(path)?;
    let io_err = |e| DynoError::io(format!("cannot read {}", path.display()), e);
    let (size, mtime_ns) = model::file_stamp(path).map_err(io_err)?;
    info.sha256 = match store.cached_sha256(path, size, mtime_ns).await? {
        Some(s) => s,
        None => {
            let p = path.to_path_buf();
            tokio::task::spawn_blocking(move || model::sha256_file(&p))
                .await
                .map_err(|e| DynoError::Worker(format!("hashing thread failed: {e}")))?
                .map_err(io_err)?
        }
    };
    let model_id = store.upsert_model(&info, mtime_ns).await?;
    Ok(PreparedModel { info, model_id })
}

/// Run ids made so far, and whether the user cancelled.
#[derive(Debug, Default, Clone)]
pub struct BenchOutcome {
    pub run_ids: Vec<i64>,
    pub cancelled: bool,
}

/// Per-run bookkeeping inside one worker.
struct RunState<'c> {
    config: &'c RunConfig,
    run_id: Option<i64>,
    failure: Option<(String, String)>,
    tests_done: usize,
    finished: bool,
}

/// The test in flight.
struct Current {
    run: usize,
    test: usize,
    result_id: i64,
    samples: Vec<Sample>,
}

/// Run every configuration of `req` on one model.
pub async fn run_model(
    ctx: &BenchContext<'_>,
    model: &PreparedModel,
    req: &BenchRequest,
    reporter: &mut dyn Reporter,
    out: &mut BenchOutcome,
) -> Result<()> {
    for group in req.groups() {
        let mut pending: Vec<&RunConfig> = group.runs.iter().collect();
        while !pending.is_empty() {
            if ctx.cancel.is_cancelled() {
                out.cancelled = true;
                return Ok(());
            }
            pending = run_worker(ctx, model, &pending, req, reporter, out).await?;
        }
    }
    Ok(())
}

/// One worker over `runs`, with its telemetry. Returns the runs left to do
/// by a fresh worker (those not started when this one crashed); empty when
/// nothing is left.
async fn run_worker<'c>(
    ctx: &BenchContext<'_>,
    model: &PreparedModel,
    runs: &[&'c RunConfig],
    req: &BenchRequest,
    reporter: &mut dyn Reporter,
    out: &mut BenchOutcome,
) -> Result<Vec<&'c RunConfig>> {
    let mut rec = Recorder::start(ctx.telemetry);
    let left = supervise(ctx, model, runs, req, reporter, out, &mut rec).await;
    // Store the last readings whatever happened; a store error in the run
    // itself is the one to report.
    let flushed = rec.finish(ctx.store).await;
    let left = left?;
    flushed?;
    Ok(left)
}

/// Whether every repetition is written to SQLite as it arrives (the
/// default) rather than held until its test ends (`DYNO_HOLD_SAMPLES=1`).
///
/// Written as they arrive, a kill -9 loses nothing measured: the test in
/// progress keeps its repetitions and is marked interrupted. Holding them
/// keeps the parent from writing while the worker times, but measured here
/// it bought nothing: Dyno holding against Dyno writing each, alternated
/// over 8 rounds on both test models, differed by less than the rounds'
/// spread (docs/method.md, "Fidelity"). The variable stays so
/// `HOLD_SAMPLES=1 scripts/bench/vs-llama-bench.sh` can measure it again on
/// other hardware, where a slow disk might change the answer.
fn commit_each_sample() -> bool {
    std::env::var_os("DYNO_HOLD_SAMPLES").is_none_or(|v| v != "1")
}

async fn supervise<'c>(
    ctx: &BenchContext<'_>,
    model: &PreparedModel,
    runs: &[&'c RunConfig],
    req: &BenchRequest,
    reporter: &mut dyn Reporter,
    out: &mut BenchOutcome,
    rec: &mut Recorder,
) -> Result<Vec<&'c RunConfig>> {
    let store = ctx.store;
    let mut states: Vec<RunState> = runs
        .iter()
        .map(|c| RunState {
            config: c,
            run_id: None,
            failure: None,
            tests_done: 0,
            finished: false,
        })
        .collect();
    // Job i of the worker is test `.1` of run `.0`.
    let mut job_map = Vec::new();
    let mut jobs = Vec::new();
    for (ri, c) in runs.iter().enumerate() {
        for (ti, job) in c.jobs().enumerate() {
            job_map.push((ri, ti));
            jobs.push(job);
        }
    }
    if reporter.event(&BenchEvent::Loading {
        model: &model.info,
        n_runs: runs.len(),
        unavailable: &rec.unavailable(),
    }) == Flow::Stop
    {
        ctx.cancel.cancel();
    }
    let mut facts = WorkerFacts {
        telemetry_sources: rec.sources_json(),
        ..WorkerFacts::default()
    };
    let memory = if ctx.memory_check {
        match check_memory(model, runs) {
            Ok(left) => left,
            Err(why) => {
                let failure = ("insufficient_memory".to_string(), why);
                fail_unstarted(
                    ctx,
                    model,
                    &mut states,
                    &failure,
                    &facts,
                    rec,
                    reporter,
                    out,
                )
                .await?;
                return Ok(Vec::new());
            }
        }
    } else {
        None
    };
    let plan = WorkerPlan {
        model_path: model.info.path.clone(),
        model: runs[0].model.clone(),
        jobs,
        reps: req.reps,
        warmup: req.warmup,
        memory,
    };

    let (tx, mut rx) = mpsc::unbounded_channel();
    let worker = tokio::spawn(client::run(
        WorkerRequest::Bench(plan),
        ctx.worker.clone(),
        ctx.cancel.clone(),
        tx,
    ));
    let mut current: Option<Current> = None;
    let mut fatal: Option<(String, String)> = None;
    let each_sample = commit_each_sample();

    while let Some(ev) = rx.recv().await {
        let mut flow = Flow::Continue;
        match ev {
            Event::Ready {
                pid,
                llama_cpp_build,
                backend,
                devices,
                system_info,
                ..
            } => {
                rec.set_pid(pid);
                facts.backend = Some(backend);
                facts.llama_cpp_build = Some(llama_cpp_build);
                facts.devices_json =
                    Some(serde_json::to_string(&devices).expect("devices serialise"));
                facts.system_info = Some(system_info);
            }
            Event::Loaded {
                load_time_ms,
                model_desc,
                n_gpu_layers,
                tokens_per_word,
                offload,
                ..
            } => {
                facts.offload_json = offload
                    .as_ref()
                    .map(|o| serde_json::to_string(o).expect("offload serialises"));
                facts.tokens_per_word = tokens_per_word;
                facts.load_time_ms = Some(load_time_ms);
                facts.model_desc = Some(model_desc);
                facts.n_gpu_layers = Some(i64::from(n_gpu_layers));
                flow = reporter.event(&BenchEvent::Loaded {
                    model: &model.info,
                    load_time_ms,
                });
            }
            Event::Phase { phase, job: None } => rec.phase(Phase::parse(&phase), None),
            Event::Phase {
                phase,
                job: Some(j),
            } if phase != "warmup" => {
                rec.phase(Phase::parse(&phase), Some(j));
            }
            Event::Phase { job: Some(j), .. } => {
                rec.phase(Phase::Warmup, Some(j));
                let Some(&(ri, ti)) = job_map.get(j) else {
                    continue;
                };
                let st = &mut states[ri];
                let run_id = match st.run_id {
                    Some(id) => id,
                    None => {
                        let id = create_run(ctx, model, st.config, &facts).await?;
                        st.run_id = Some(id);
                        out.run_ids.push(id);
                        rec.run_started(id);
                        flow = reporter.event(&BenchEvent::RunStarted {
                            run_id: id,
                            model: &model.info,
                            config: st.config,
                        });
                        id
                    }
                };
                let test = &st.config.tests[ti];
                let result_id = store.start_result(run_id, test, req.reps).await?;
                rec.test_started(j, run_id, result_id);
                current = Some(Current {
                    run: ri,
                    test: ti,
                    result_id,
                    samples: Vec::new(),
                });
                if flow == Flow::Continue {
                    flow = reporter.event(&BenchEvent::TestStarted { run_id, test });
                }
            }
            Event::Sample { job, rep, sample } => {
                let Some(cur) = current
                    .as_mut()
                    .filter(|c| job_map.get(job) == Some(&(c.run, c.test)))
                else {
                    continue;
                };
                cur.samples.push(sample);
                if each_sample {
                    store
                        .set_result_samples(cur.result_id, &cur.samples)
                        .await?;
                }
                let st = &states[cur.run];
                flow = reporter.event(&BenchEvent::Sample {
                    run_id: st.run_id.unwrap_or_default(),
                    test: &st.config.tests[cur.test],
                    rep,
                    reps: req.reps,
                });
            }
            Event::JobDone { job } | Event::JobFailed { job, .. } if current.is_some() => {
                rec.phase(Phase::Idle, None);
                let error = match &ev {
                    Event::JobFailed { error, .. } => Some(error.clone()),
                    _ => None,
                };
                let cur = current.take().expect("checked above");
                if job_map.get(job) != Some(&(cur.run, cur.test)) {
                    continue;
                }
                let st = &mut states[cur.run];
                let test = &st.config.tests[cur.test];
                let status = if error.is_some() { "failed" } else { "ok" };
                let headline = figures(test, &cur.samples)
                    .headline
                    .map(|f| (f.mean, f.stddev));
                store
                    .finish_result(
                        cur.result_id,
                        status,
                        error.as_deref(),
                        &cur.samples,
                        headline,
                    )
                    .await?;
                if let Some(e) = &error {
                    st.failure.get_or_insert_with(|| {
                        ("test_failed".into(), format!("{}: {e}", test.name()))
                    });
                }
                st.tests_done += 1;
                let run_id = st.run_id.expect("a test ran, so its run exists");
                flow = reporter.event(&BenchEvent::TestFinished {
                    run_id,
                    test,
                    status,
                    error: error.as_deref(),
                });
                if st.tests_done == st.config.tests.len() {
                    let f = finish_run(store, st, None, reporter).await?;
                    if f == Flow::Stop {
                        flow = f;
                    }
                }
            }
            Event::JobDone { .. }
            | Event::JobFailed { .. }
            | Event::Progress { .. }
            | Event::Quantized { .. }
            | Event::Quality { .. } => {}
            Event::Fatal { code, message } => fatal = Some((code, message)),
            Event::Done { peak_rss_bytes } => {
                for id in states.iter().filter_map(|s| s.run_id) {
                    store.set_run_peak_rss(id, peak_rss_bytes).await?;
                }
            }
        }
        if flow == Flow::Stop {
            ctx.cancel.cancel();
        }
        // Held repetitions hold the telemetry back too: then nothing is
        // written in this process while the worker is timing.
        if current.is_none() || each_sample {
            rec.flush(store).await?;
        }
    }

    let ended = worker
        .await
        .map_err(|e| DynoError::Worker(format!("the worker supervisor failed: {e}")))?;
    let (code, message) = match ended {
        Ended::Done => return Ok(Vec::new()),
        Ended::Fatal { code, message } => (code, message),
        Ended::Crashed(why) => match fatal.take() {
            Some(f) => f,
            None => ("crashed".to_string(), why),
        },
        Ended::TimedOut(d) => (
            "timed_out".to_string(),
            format!(
                "the worker reported nothing for {} s and was killed; a repetition this slow needs a larger --timeout",
                d.as_secs()
            ),
        ),
        Ended::Cancelled => {
            out.cancelled = true;
            ("cancelled".to_string(), "cancelled by the user".to_string())
        }
    };
    let cancelled = code == "cancelled";
    let result_status = if cancelled { "cancelled" } else { "failed" };

    // The test in flight keeps the samples it got; its run fails (or is
    // cancelled) with the reason.
    if let Some(cur) = current.take() {
        let st = &mut states[cur.run];
        let test = &st.config.tests[cur.test];
        let headline = figures(test, &cur.samples)
            .headline
            .map(|f| (f.mean, f.stddev));
        store
            .finish_result(
                cur.result_id,
                result_status,
                Some(&message),
                &cur.samples,
                headline,
            )
            .await?;
        st.failure = Some((code.clone(), format!("{}: {message}", test.name())));
        reporter.event(&BenchEvent::TestFinished {
            run_id: st.run_id.expect("a test ran, so its run exists"),
            test,
            status: result_status,
            error: Some(&message),
        });
    }
    // Runs the worker had started and not finished (the one in flight, or
    // one between two of its tests) end with the worker's reason.
    for st in states
        .iter_mut()
        .filter(|s| s.run_id.is_some() && !s.finished)
    {
        st.failure
            .get_or_insert_with(|| (code.clone(), message.clone()));
        finish_run(store, st, Some(cancelled), reporter).await?;
    }
    let started_any = states.iter().any(|s| s.run_id.is_some());
    if cancelled {
        // Runs never started are not recorded: nothing was measured or tried.
        return Ok(Vec::new());
    }
    if !started_any {
        // The model itself failed (load error, crash while loading): every
        // configuration of this load fails for the same reason, and a new
        // worker would only fail again.
        let failure = (code, message);
        fail_unstarted(
            ctx,
            model,
            &mut states,
            &failure,
            &facts,
            rec,
            reporter,
            out,
        )
        .await?;
        return Ok(Vec::new());
    }
    Ok(states
        .iter()
        .filter(|s| s.run_id.is_none())
        .map(|s| s.config)
        .collect())
}

/// Record every run of a load that never started as failed with one reason,
/// so the refusal or load error is stored with its conditions.
#[allow(clippy::too_many_arguments)]
async fn fail_unstarted(
    ctx: &BenchContext<'_>,
    model: &PreparedModel,
    states: &mut [RunState<'_>],
    failure: &(String, String),
    facts: &WorkerFacts,
    rec: &mut Recorder,
    reporter: &mut dyn Reporter,
    out: &mut BenchOutcome,
) -> Result<()> {
    for st in states.iter_mut() {
        let id = create_run(ctx, model, st.config, facts).await?;
        st.run_id = Some(id);
        out.run_ids.push(id);
        if rec.current_run().is_none() {
            rec.run_started(id);
        }
        reporter.event(&BenchEvent::RunStarted {
            run_id: id,
            model: &model.info,
            config: st.config,
        });
        st.failure = Some(failure.clone());
        finish_run(ctx.store, st, Some(false), reporter).await?;
    }
    Ok(())
}

/// Estimate what loading `model` for `runs` takes against free memory (and
/// free GPU memory when layers go to an NVIDIA GPU). `Err` says why it will
/// not fit and what to change; `Ok` gives the profile and the bytes left for
/// each test's context, which the worker checks test by test.
fn check_memory(
    model: &PreparedModel,
    runs: &[&RunConfig],
) -> std::result::Result<Option<MemoryCheck>, String> {
    use crate::model::memory::{Budget, MemoryProfile};
    let Ok(profile) = MemoryProfile::read(&model.info.path) else {
        // The header was read moments ago; if it cannot be now, the load
        // will say why.
        return Ok(None);
    };
    let budget = Budget::now()?;
    if let Some(why) = profile.refuse_load(&model.info.file_name, &budget) {
        return Err(why);
    }
    // `--fit` sizes the offload itself and `--device none` uses no GPU. NVML's
    // free memory is the sum over all GPUs, so the check only holds when
    // llama.cpp may spread layers over all of them (no device named, split
    // by layer).
    let m = &runs[0].model;
    let gpu_in_use = m.fit_margin_mib.is_none()
        && m.devices.is_none()
        && m.split_mode == crate::worker::protocol::SplitMode::Layer;
    if cfg!(feature = "cuda") && gpu_in_use {
        if let Some(free) = crate::telemetry::gpu::free_vram_bytes() {
            let ngl = runs[0]
                .model
                .n_gpu_layers
                .map_or(profile.n_layers + 1, u64::from);
            let (kv, compute) = runs
                .iter()
                .flat_map(|r| r.jobs())
                // With --nkvo 1 the KV cache stays in host memory.
                .map(|j| {
                    let (kv, compute) = profile.context_bytes(&j.test, &j.ctx);
                    (if j.ctx.no_kv_offload { 0 } else { kv }, compute)
                })
                .max_by_key(|(k, c)| k.saturating_add(*c))
                .unwrap_or((0, 0));
            let need = profile.gpu_bytes(ngl, kv, compute);
            if ngl > 0 && need > free {
                let fit = profile.layers_that_fit(free, kv, compute);
                return Err(format!(
                    "{} with {ngl} layers on the GPU needs about {} of GPU memory but {} is free; \
                     offload fewer layers (--ngl {fit} should fit), pick a smaller level, \
                     or pass --no-memory-check to try anyway",
                    model.info.file_name,
                    crate::report::human_bytes(need),
                    crate::report::human_bytes(free),
                ));
            }
        }
    }
    let left = budget.bytes.saturating_sub(profile.load_bytes());
    Ok(Some(MemoryCheck { profile, left }))
}

async fn create_run(
    ctx: &BenchContext<'_>,
    model: &PreparedModel,
    config: &RunConfig,
    facts: &WorkerFacts,
) -> Result<i64> {
    let id = ctx
        .store
        .create_run(&NewRun {
            sweep_id: ctx.sweep_id,
            machine_id: ctx.machine_id,
            model_id: model.model_id,
            config,
        })
        .await?;
    ctx.store.set_worker_facts(id, facts).await?;
    Ok(id)
}

/// Close a run: ok when every test passed, else failed (or cancelled) with
/// its first failure.
async fn finish_run(
    store: &Store,
    st: &mut RunState<'_>,
    cancelled: Option<bool>,
    reporter: &mut dyn Reporter,
) -> Result<Flow> {
    if st.finished {
        return Ok(Flow::Continue);
    }
    st.finished = true;
    let run_id = st.run_id.expect("only started runs are finished");
    let status = match (&st.failure, cancelled) {
        (_, Some(true)) => "cancelled",
        (Some(_), _) => "failed",
        (None, _) => "ok",
    };
    let failure = st.failure.as_ref().map(|(c, m)| (c.as_str(), m.as_str()));
    store.finish_run(run_id, status, failure, None).await?;
    Ok(reporter.event(&BenchEvent::RunFinished {
        run_id,
        status,
        error: failure.map(|f| f.1),
    }))
}
