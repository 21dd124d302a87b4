//! The supervisor of one worker: it turns the worker's events into runs,
//! results and progress, and decides what its end means for the runs.
//!
//! Each worker event has one handler, and so has the worker's end; the loop
//! in [`supervise`] only passes events to them. Everything the handlers
//! share (the runs, the test in flight, what the worker said about itself)
//! lives in [`Supervisor`], so a handler reads as what happens when that
//! event arrives.

use tokio::sync::mpsc;

use super::context::{check_memory, BenchContext, BenchOutcome, PreparedModel};
use super::figures::figures;
use super::plan::BenchRequest;
use super::recorder::Recorder;
use super::{BenchEvent, Flow, Reporter};
use crate::error::{DynoError, Result};
use crate::store::{NewRun, Store, WorkerFacts};
use crate::telemetry::Phase;
use crate::telemetry::{disturbance, sustain};
use crate::vocab::failure::FailureCode;
use crate::vocab::status::{ResultStatus, RunStatus};
use crate::vocab::RunConfig;
use crate::vocab::{Device, Offload, Sample};
use crate::worker::client::{Ended, WorkerFailure};
use crate::worker::protocol::{Event, WorkerPlan, WorkerRequest};

/// Run `runs` (one model load) in one worker. Returns the runs left to do
/// by a fresh worker: those not started when this one crashed.
pub(super) async fn supervise<'c>(
    ctx: &BenchContext<'_>,
    model: &PreparedModel,
    runs: &[&'c RunConfig],
    req: &BenchRequest,
    reporter: &mut dyn Reporter,
    out: &mut BenchOutcome,
    rec: &mut Recorder,
) -> Result<Vec<&'c RunConfig>> {
    let mut sup = Supervisor::new(ctx, model, runs, req, reporter, out, rec);
    sup.announce();
    let memory = if ctx.memory_check {
        match check_memory(model, runs) {
            Ok(left) => left,
            Err(why) => {
                let refused = WorkerFailure::new(FailureCode::InsufficientMemory, why);
                sup.fail_unstarted(&refused).await?;
                return Ok(Vec::new());
            }
        }
    } else {
        None
    };
    let plan = WorkerPlan {
        model_path: model.info.path.clone(),
        model: runs[0].model.clone(),
        jobs: runs.iter().flat_map(|c| c.jobs()).collect(),
        reps: req.reps,
        warmup: req.warmup,
        sustain_ms: req.sustain_s.map(|s| u64::from(s) * 1000),
        memory,
    };

    let (tx, mut rx) = mpsc::unbounded_channel();
    let worker = tokio::spawn(ctx.worker.launch(
        WorkerRequest::Bench(plan),
        ctx.cancel.clone(),
        tx,
    ));
    while let Some(ev) = rx.recv().await {
        // `None`: the event matched nothing in flight and changed nothing.
        let Some(flow) = sup.on_event(ev).await? else {
            continue;
        };
        if flow == Flow::Stop {
            ctx.cancel.cancel();
        }
        sup.flush_telemetry().await?;
    }
    let ended = worker
        .await
        .map_err(|e| DynoError::Worker(format!("the worker supervisor failed: {e}")))?;
    sup.on_end(ended).await
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

/// Per-run bookkeeping inside one worker.
struct RunState<'c> {
    config: &'c RunConfig,
    /// Made when the run's first test starts.
    run_id: Option<i64>,
    /// The first failure, which the run is closed with.
    failure: Option<WorkerFailure>,
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

/// The state of one worker's supervision.
struct Supervisor<'s, 'c> {
    ctx: &'s BenchContext<'s>,
    model: &'s PreparedModel,
    req: &'s BenchRequest,
    reporter: &'s mut dyn Reporter,
    out: &'s mut BenchOutcome,
    rec: &'s mut Recorder,
    states: Vec<RunState<'c>>,
    /// Job `i` of the worker is test `.1` of run `.0`.
    job_map: Vec<(usize, usize)>,
    current: Option<Current>,
    /// What the worker said about itself, stored on every run it makes.
    facts: WorkerFacts,
    each_sample: bool,
    /// The model is loaded with no layer on a GPU: its tests run on the CPU.
    on_cpu: bool,
}

impl<'s, 'c> Supervisor<'s, 'c> {
    fn new(
        ctx: &'s BenchContext<'s>,
        model: &'s PreparedModel,
        runs: &[&'c RunConfig],
        req: &'s BenchRequest,
        reporter: &'s mut dyn Reporter,
        out: &'s mut BenchOutcome,
        rec: &'s mut Recorder,
    ) -> Self {
        let states = runs
            .iter()
            .map(|c| RunState {
                config: c,
                run_id: None,
                failure: None,
                tests_done: 0,
                finished: false,
            })
            .collect();
        let job_map = runs
            .iter()
            .enumerate()
            .flat_map(|(ri, c)| c.jobs().enumerate().map(move |(ti, _)| (ri, ti)))
            .collect();
        // Read as the worker starts: a laptop unplugged mid-benchmark shows
        // on the runs of the next worker.
        let power = crate::telemetry::power::PowerState::now();
        let facts = WorkerFacts {
            telemetry_sources: rec.sources(),
            power: Some(power),
            cooldown: rec.cooldown(),
            ..WorkerFacts::default()
        };
        Supervisor {
            ctx,
            model,
            req,
            reporter,
            out,
            rec,
            states,
            job_map,
            current: None,
            facts,
            each_sample: commit_each_sample(),
            on_cpu: false,
        }
    }

    /// Tell the reporter a worker is starting; a stop cancels at once.
    fn announce(&mut self) {
        let flow = self.reporter.event(&BenchEvent::Loading {
            model: &self.model.info,
            n_runs: self.states.len(),
            unavailable: &self.rec.unavailable(),
        });
        if flow == Flow::Stop {
            self.ctx.cancel.cancel();
        }
    }

    /// Pass one event to its handler. `None` when it matched no test in
    /// flight: it is dropped without a telemetry flush.
    async fn on_event(&mut self, ev: Event) -> Result<Option<Flow>> {
        Ok(match ev {
            Event::Ready {
                pid,
                llama_cpp_build,
                backend,
                devices,
                system_info,
                modules,
                ..
            } => {
                self.on_ready(pid, llama_cpp_build, backend, &devices, system_info);
                // The modules that measured: what a result must name.
                self.facts.modules = modules.map(|m| m.loaded());
                Some(Flow::Continue)
            }
            Event::Loaded {
                load_time_ms,
                model_desc,
                n_gpu_layers,
                tokens_per_word,
                offload,
                ..
            } => Some(self.on_loaded(
                load_time_ms,
                model_desc,
                n_gpu_layers,
                tokens_per_word,
                offload.as_ref(),
            )),
            // A test begins with its warm-up phase, even when warm-up is off.
            Event::Phase {
                phase,
                job: Some(j),
            } if phase == "warmup" => self.on_test_started(j).await?,
            Event::Phase { phase, job } => {
                self.rec.phase(Phase::parse(&phase), job);
                Some(Flow::Continue)
            }
            Event::Sample { job, rep, sample } => self.on_sample(job, rep, sample).await?,
            Event::JobDone { job } if self.current.is_some() => {
                self.on_test_finished(job, None).await?
            }
            Event::JobFailed { job, error } if self.current.is_some() => {
                self.on_test_finished(job, Some(error)).await?
            }
            Event::Done { peak_rss_bytes } => {
                self.on_done(peak_rss_bytes).await?;
                Some(Flow::Continue)
            }
            // The end says the same as a `Fatal` event (see `on_end`); the
            // rest belong to other tasks, or to a test no longer in flight.
            Event::Fatal { .. }
            | Event::JobDone { .. }
            | Event::JobFailed { .. }
            | Event::Progress { .. }
            | Event::Quantized { .. }
            | Event::Quality { .. }
            | Event::Tokens { .. }
            | Event::Synthesised { .. }
            | Event::TensorStats { .. }
            | Event::Routed { .. } => Some(Flow::Continue),
        })
    }

    /// The worker started: what it runs on is kept for every run it makes.
    fn on_ready(
        &mut self,
        pid: u32,
        llama_cpp_build: String,
        backend: String,
        devices: &[Device],
        system_info: String,
    ) {
        self.rec.set_pid(pid);
        self.facts.backend = Some(backend);
        self.facts.llama_cpp_build = Some(llama_cpp_build);
        self.facts.devices = Some(devices.to_vec());
        self.facts.system_info = Some(system_info);
    }

    /// The model is loaded: how, and how long it took, is kept for every
    /// run; the load time is reported on its own.
    fn on_loaded(
        &mut self,
        load_time_ms: f64,
        model_desc: String,
        n_gpu_layers: u32,
        tokens_per_word: Option<f64>,
        offload: Option<&Offload>,
    ) -> Flow {
        self.facts.offload = offload.cloned();
        // RPC servers' devices were registered after the worker said which
        // backend it has: the run names RPC last, as llama-bench does.
        if offload.is_some_and(|o| !o.rpc.is_empty()) {
            self.facts.backend = Some(match self.facts.backend.as_deref() {
                None | Some("CPU") => "RPC".into(),
                Some(b) => format!("{b},RPC"),
            });
        }
        self.facts.tokens_per_word = tokens_per_word;
        self.facts.load_time_ms = Some(load_time_ms);
        self.facts.model_desc = Some(model_desc);
        self.facts.n_gpu_layers = Some(i64::from(n_gpu_layers));
        // Where no layer went to a GPU, the test's threads do all the work
        // on the CPU (llama.cpp's report; the count asked, without one).
        self.on_cpu = offload
            .and_then(|o| o.layers_offloaded)
            .map_or(n_gpu_layers == 0, |l| l == 0);
        self.reporter.event(&BenchEvent::Loaded {
            model: &self.model.info,
            load_time_ms,
        })
    }

    /// The worker finished its jobs: its peak memory goes on every run it
    /// started.
    async fn on_done(&mut self, peak_rss_bytes: u64) -> Result<()> {
        for id in self.states.iter().filter_map(|s| s.run_id) {
            self.ctx.store.set_run_peak_rss(id, peak_rss_bytes).await?;
        }
        Ok(())
    }

    /// Store the telemetry read so far. Held repetitions hold it back too:
    /// then nothing is written in this process while the worker is timing.
    async fn flush_telemetry(&mut self) -> Result<()> {
        if self.current.is_none() || self.each_sample {
            self.rec.flush(self.ctx.store).await?;
        }
        Ok(())
    }

    /// Job `j` starts its warm-up: its run is made if this is the run's
    /// first test, then its result row.
    async fn on_test_started(&mut self, j: usize) -> Result<Option<Flow>> {
        self.rec.phase(Phase::Warmup, Some(j));
        let Some(&(ri, ti)) = self.job_map.get(j) else {
            return Ok(None);
        };
        self.rec.set_crowded(crowded(
            self.on_cpu,
            self.states[ri].config.ctx.n_threads,
            logical_cpus(),
        ));
        let mut flow = Flow::Continue;
        let st = &mut self.states[ri];
        let run_id = match st.run_id {
            Some(id) => id,
            None => {
                let id = create_run(self.ctx, self.model, st.config, &self.facts).await?;
                st.run_id = Some(id);
                self.out.run_ids.push(id);
                self.rec.run_started(id);
                flow = self.reporter.event(&BenchEvent::RunStarted {
                    run_id: id,
                    model: &self.model.info,
                    config: st.config,
                });
                id
            }
        };
        let test = &st.config.tests[ti];
        let result_id = self
            .ctx
            .store
            .start_result(run_id, test, self.req.reps)
            .await?;
        self.rec.test_started(j, run_id, result_id);
        self.current = Some(Current {
            run: ri,
            test: ti,
            result_id,
            samples: Vec::new(),
        });
        if flow == Flow::Continue {
            flow = self
                .reporter
                .event(&BenchEvent::TestStarted { run_id, test });
        }
        Ok(Some(flow))
    }

    /// One repetition of the test in flight: kept, and stored at once
    /// unless repetitions are held.
    async fn on_sample(&mut self, job: usize, rep: u32, sample: Sample) -> Result<Option<Flow>> {
        let Some(cur) = self
            .current
            .as_mut()
            .filter(|c| self.job_map.get(job) == Some(&(c.run, c.test)))
        else {
            return Ok(None);
        };
        cur.samples.push(sample);
        self.rec.sample(job);
        if self.each_sample {
            self.ctx
                .store
                .set_result_samples(cur.result_id, &cur.samples)
                .await?;
        }
        let st = &self.states[cur.run];
        Ok(Some(self.reporter.event(&BenchEvent::Sample {
            run_id: st.run_id.unwrap_or_default(),
            test: &st.config.tests[cur.test],
            rep,
            // 0: a sustained decode has no count of repetitions.
            reps: if self.req.sustain_s.is_some() {
                0
            } else {
                self.req.reps
            },
        })))
    }

    /// The test in flight ended, cleanly or with `error`; its run closes
    /// after its last test. Called only while a test is in flight.
    async fn on_test_finished(
        &mut self,
        job: usize,
        error: Option<String>,
    ) -> Result<Option<Flow>> {
        self.rec.phase(Phase::Idle, None);
        let cur = self.current.take().expect("called with a test in flight");
        if self.job_map.get(job) != Some(&(cur.run, cur.test)) {
            return Ok(None);
        }
        let st = &mut self.states[cur.run];
        let test = &st.config.tests[cur.test];
        let status = if error.is_some() {
            ResultStatus::Failed
        } else {
            ResultStatus::Ok
        };
        let figs = figures(test, &cur.samples).headline;
        let headline = figs.as_ref().map(|f| (f.mean, f.stddev));
        self.ctx
            .store
            .finish_result(
                cur.result_id,
                status,
                error.as_deref(),
                &cur.samples,
                headline,
            )
            .await?;
        let contention = self.rec.take_contention(job);
        let cores = cores_in_use(st.config.ctx.n_threads);
        let sustained = st.config.sustain_s.is_some();
        let verdict = error.is_none().then(|| {
            disturbance::judge(
                contention.as_ref(),
                cores,
                logical_cpus().saturating_sub(cores),
                // A sustained decode's spread is what it measures (a
                // throttling machine's rate falls); only others' CPU and
                // steal disturb it.
                figs.as_ref()
                    .filter(|_| !sustained)
                    .and_then(|f| disturbance::coefficient_of_variation(&f.samples)),
                &disturbance::Thresholds::default(),
            )
        });
        if sustained && error.is_none() {
            let (run_id, n_gen) = (st.run_id.unwrap_or_default(), test.n_gen);
            self.summarise_sustained(run_id, cur.result_id, job, n_gen, &cur.samples, cores)
                .await?;
        }
        let st = &mut self.states[cur.run];
        let test = &st.config.tests[cur.test];
        if let Some(d) = verdict.flatten() {
            self.ctx
                .store
                .set_result_disturbance(cur.result_id, &d)
                .await?;
        }
        if let Some(e) = &error {
            st.failure.get_or_insert_with(|| {
                WorkerFailure::new(FailureCode::TestFailed, format!("{}: {e}", test.name()))
            });
        }
        st.tests_done += 1;
        let run_id = st.run_id.expect("a test ran, so its run exists");
        let mut flow = self.reporter.event(&BenchEvent::TestFinished {
            run_id,
            test,
            status,
            error: error.as_deref(),
        });
        if st.tests_done == st.config.tests.len()
            && finish_run(self.ctx.store, st, None, &mut *self.reporter).await? == Flow::Stop
        {
            flow = Flow::Stop;
        }
        Ok(Some(flow))
    }

    /// The worker is gone. A clean end leaves nothing to do. Otherwise the
    /// test in flight keeps its samples and fails (or is cancelled) with the
    /// reason, as do the runs it had started; the runs it had not started
    /// go back to the caller for a fresh worker, unless the user cancelled
    /// or the model itself failed.
    async fn on_end(mut self, ended: Ended) -> Result<Vec<&'c RunConfig>> {
        let timed_out = matches!(ended, Ended::TimedOut(_));
        if ended == Ended::Cancelled {
            self.out.cancelled = true;
        }
        let Some(mut failure) = ended.failure("worker") else {
            return Ok(Vec::new());
        };
        if timed_out {
            failure
                .message
                .push_str("; a repetition this slow needs a larger --timeout");
        }
        let cancelled = failure.is_cancelled();
        let result_status = if cancelled {
            ResultStatus::Cancelled
        } else {
            ResultStatus::Failed
        };
        let store = self.ctx.store;

        if let Some(cur) = self.current.take() {
            let st = &mut self.states[cur.run];
            let test = &st.config.tests[cur.test];
            let headline = figures(test, &cur.samples)
                .headline
                .map(|f| (f.mean, f.stddev));
            store
                .finish_result(
                    cur.result_id,
                    result_status,
                    Some(&failure.message),
                    &cur.samples,
                    headline,
                )
                .await?;
            st.failure = Some(WorkerFailure::new(
                failure.code.clone(),
                format!("{}: {}", test.name(), failure.message),
            ));
            self.reporter.event(&BenchEvent::TestFinished {
                run_id: st.run_id.expect("a test ran, so its run exists"),
                test,
                status: result_status,
                error: Some(&failure.message),
            });
        }
        // Runs the worker had started and not finished (the one in flight,
        // or one between two of its tests) end with the worker's reason.
        for st in self
            .states
            .iter_mut()
            .filter(|s| s.run_id.is_some() && !s.finished)
        {
            st.failure.get_or_insert_with(|| failure.clone());
            finish_run(store, st, Some(cancelled), &mut *self.reporter).await?;
        }
        if cancelled {
            // Runs never started are not recorded: nothing was measured or tried.
            return Ok(Vec::new());
        }
        if !self.states.iter().any(|s| s.run_id.is_some()) {
            // The model itself failed (load error, crash while loading):
            // every configuration of this load fails for the same reason,
            // and a new worker would only fail again.
            self.fail_unstarted(&failure).await?;
            return Ok(Vec::new());
        }
        Ok(self
            .states
            .iter()
            .filter(|s| s.run_id.is_none())
            .map(|s| s.config)
            .collect())
    }

    /// Record every run of a load that never started as failed with one
    /// reason, so the refusal or load error is stored with its conditions.
    async fn fail_unstarted(&mut self, failure: &WorkerFailure) -> Result<()> {
        for st in self.states.iter_mut() {
            let id = create_run(self.ctx, self.model, st.config, &self.facts).await?;
            st.run_id = Some(id);
            self.out.run_ids.push(id);
            if self.rec.current_run().is_none() {
                self.rec.run_started(id);
            }
            self.reporter.event(&BenchEvent::RunStarted {
                run_id: id,
                model: &self.model.info,
                config: st.config,
            });
            st.failure = Some(failure.clone());
            finish_run(self.ctx.store, st, Some(false), &mut *self.reporter).await?;
        }
        Ok(())
    }
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
    store_prediction(ctx, model, config, id).await?;
    Ok(id)
}

/// Predict the run's tests from this machine's earlier runs and keep the
/// prediction beside it, before any test is measured, so `dyno predict
/// --accuracy` compares what was promised with what came.
async fn store_prediction(
    ctx: &BenchContext<'_>,
    model: &PreparedModel,
    config: &RunConfig,
    run_id: i64,
) -> Result<()> {
    // The model predicts a run on one device; tensors moved by an override
    // split a layer between two, which it cannot price. No prediction is
    // better than a full-GPU one for a run that is not.
    // The default layer count may mean a GPU module loaded at run time,
    // so only an explicit -ngl 0 keeps such a run on one device.
    if config.model.places_tensors() && config.model.n_gpu_layers != Some(0) {
        return Ok(());
    }
    let cal = crate::predict::calibrate(ctx.store, ctx.machine_id, config.ctx.n_threads).await?;
    let p = crate::predict::for_run(&cal, &model.header, &model.info.sha256, config);
    ctx.store.set_run_prediction(run_id, &p).await
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
        (_, Some(true)) => RunStatus::Cancelled,
        (Some(_), _) => RunStatus::Failed,
        (None, _) => RunStatus::Ok,
    };
    let failure = st.failure.as_ref().map(|f| (&f.code, f.message.as_str()));
    store.finish_run(run_id, status, failure, None).await?;
    Ok(reporter.event(&BenchEvent::RunFinished {
        run_id,
        status,
        error: failure.map(|f| f.1),
    }))
}

impl Supervisor<'_, '_> {
    /// A sustained decode ended: its repetitions, set beside the telemetry
    /// and other programs' CPU over the same seconds, become its summary.
    async fn summarise_sustained(
        &mut self,
        run_id: i64,
        result_id: i64,
        job: usize,
        n_gen: u32,
        samples: &[Sample],
        cores: u32,
    ) -> Result<()> {
        // The readings so far must be in the store to be read back.
        self.rec.flush(self.ctx.store).await?;
        let readings: Vec<_> = self
            .ctx
            .store
            .telemetry(run_id)
            .await?
            .into_iter()
            .filter(|(r, _)| *r == Some(result_id))
            .map(|(_, r)| r)
            .collect();
        let mut end_ns = 0u64;
        let reps: Vec<sustain::Rep> = samples
            .iter()
            .map(|s| {
                end_ns += s.total_ns;
                sustain::Rep {
                    end_s: end_ns as f64 / 1e9,
                    tokens: n_gen,
                    decode_s: s.gen_ns.unwrap_or(s.total_ns) as f64 / 1e9,
                }
            })
            .collect();
        let windows = self.rec.take_windows(job);
        if let Some(summary) = sustain::analyse(&reps, &readings, &windows, cores) {
            self.ctx
                .store
                .set_result_sustain(result_id, &summary)
                .await?;
        }
        Ok(())
    }
}

/// The cores this process may run on.
fn logical_cpus() -> u32 {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    u32::try_from(cpus).unwrap_or(u32::MAX)
}

/// Whether the sampler must space its readings (`telemetry::spaced`): a test
/// on the CPU with a thread on every core of a machine of 8 cores or more.
/// On 16 cores the readings cost CPU decode 5–15%; on 2 cores Dyno and
/// llama-bench agree within the noise with every core busy, and a test
/// there keeps its readings every 100 ms.
fn crowded(on_cpu: bool, n_threads: u32, cpus: u32) -> bool {
    on_cpu && cpus >= 8 && n_threads >= cpus
}

/// The cores a test keeps busy: its threads, at most the machine's.
fn cores_in_use(n_threads: u32) -> u32 {
    n_threads.clamp(1, logical_cpus())
}

#[cfg(test)]
mod tests {
    use super::crowded;

    #[test]
    fn readings_are_spaced_only_for_a_cpu_test_on_every_core_of_a_large_machine() {
        assert!(crowded(true, 16, 16));
        assert!(crowded(true, 32, 16));
        // A core left free, layers on a GPU, or a small machine: every 100 ms.
        assert!(!crowded(true, 15, 16));
        assert!(!crowded(false, 16, 16));
        assert!(!crowded(true, 2, 2));
    }
}
