//! The benchmark's orchestration (the runner, the supervisor, the recorder
//! and the sweep's level loop) driven by a scripted worker instead of llama.cpp: the events a
//! real worker sends, then how it ends (done, a crash, a stall, a cancel).
//! The real store is used, a SQLite file; only the worker is played. The
//! integration tests (`tests/it/faults.rs`) do the same through real worker
//! processes and real models; these reach each ending in milliseconds.

use std::collections::VecDeque;
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use tokio::sync::mpsc;

use super::plan::BenchRequest;
use super::run::{prepare_model, run_model, BenchContext, BenchOutcome};
use super::sweep::{
    run_sweep, LevelPlan, Origin, Resolved, Source, SweepEvent, SweepOutcome, SweepReporter,
    SweepSpec,
};
use super::{Flow, Reporter};
use crate::quantize::QuantizeProgress;
use crate::store::Store;
use crate::vocab::status::{LevelStatus, ResultStatus, RunStatus};
use crate::vocab::Sample;
use crate::worker::client::{Cancel, Ended, Launch};
use crate::worker::protocol::{Event, WorkerRequest};

/// One worker's part: the events it sends, then how it ends.
struct Part {
    events: Vec<Event>,
    ended: Ended,
    /// The person presses Cancel after this many events.
    cancel_after: Option<usize>,
}

impl Part {
    fn new(events: Vec<Event>, ended: Ended) -> Part {
        Part {
            events,
            ended,
            cancel_after: None,
        }
    }
}

/// Workers played from a script, one part per worker started; the requests
/// they were given are kept to be checked.
#[derive(Default)]
struct Scripted {
    parts: Mutex<VecDeque<Part>>,
    asked: Mutex<Vec<WorkerRequest>>,
}

impl Launch for Scripted {
    fn launch(
        &self,
        request: WorkerRequest,
        cancel: Cancel,
        events: mpsc::UnboundedSender<Event>,
    ) -> Pin<Box<dyn Future<Output = Ended> + Send + 'static>> {
        self.asked.lock().unwrap().push(request);
        let part = self.parts.lock().unwrap().pop_front();
        Box::pin(async move {
            let Some(part) = part else {
                return Ended::Crashed("the script has no worker left".into());
            };
            for (i, ev) in part.events.into_iter().enumerate() {
                if part.cancel_after == Some(i) {
                    cancel.cancel();
                }
                // As a real worker is killed when the switch flips.
                if cancel.is_cancelled() {
                    return Ended::Cancelled;
                }
                let _ = events.send(ev);
                tokio::task::yield_now().await;
            }
            part.ended
        })
    }
}

fn ready() -> Event {
    Event::Ready {
        pid: std::process::id(),
        llama_cpp_build: "b0000-scripted".into(),
        backend: "CPU".into(),
        gpu_offload: false,
        devices: Vec::new(),
        system_info: "scripted".into(),
        modules: None,
    }
}

fn loaded() -> Event {
    Event::Loaded {
        load_time_ms: 12.0,
        model_desc: "tiny".into(),
        model_size_bytes: 32,
        n_params: 8,
        n_layer: 1,
        n_gpu_layers: 0,
        offload: None,
        tokens_per_word: None,
    }
}

fn phase(name: &str, job: usize) -> Event {
    Event::Phase {
        phase: name.into(),
        job: Some(job),
    }
}

/// Repetition `rep` of job 0 (pp8: 8 tokens in 1 ms) or job 1 (tg4: 4
/// tokens in 2 ms).
fn sample(job: usize, rep: u32) -> Event {
    let sample = if job == 0 {
        Sample {
            total_ns: 1_000_000,
            prompt_ns: Some(1_000_000),
            gen_ns: None,
            ttft_ns: None,
        }
    } else {
        Sample {
            total_ns: 2_000_000,
            prompt_ns: None,
            gen_ns: Some(2_000_000),
            ttft_ns: None,
        }
    };
    Event::Sample { job, rep, sample }
}

/// A whole test: its phases, two repetitions, its end.
fn test(job: usize) -> Vec<Event> {
    vec![
        phase("warmup", job),
        phase("timed", job),
        sample(job, 0),
        sample(job, 1),
        Event::JobDone { job },
    ]
}

/// Everything one benchmark needs around the script: a store in a folder of
/// its own, a tiny model, and the plan pp8 and tg4, two repetitions each.
struct Bench {
    _dir: tempfile::TempDir,
    store: Store,
    model: PathBuf,
    machine_id: i64,
}

impl Bench {
    async fn new() -> Bench {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("dyno.db")).await.unwrap();
        let model = dir.path().join("tiny.gguf");
        std::fs::write(&model, crate::model::gguf::tests::tiny_gguf()).unwrap();
        let machine_id = store
            .upsert_machine(&crate::machine::Machine::detect())
            .await
            .unwrap();
        Bench {
            _dir: dir,
            store,
            model,
            machine_id,
        }
    }

    /// Run the plan with workers played by `parts`; the outcome, and the
    /// requests the workers were given.
    async fn run(&self, parts: Vec<Part>, cancel: Cancel) -> (BenchOutcome, Vec<WorkerRequest>) {
        self.run_threads(parts, cancel, &[1]).await
    }

    /// As [`Bench::run`], one run per thread count (one model load).
    async fn run_threads(
        &self,
        parts: Vec<Part>,
        cancel: Cancel,
        threads: &[u32],
    ) -> (BenchOutcome, Vec<WorkerRequest>) {
        let script = Arc::new(Scripted {
            parts: Mutex::new(parts.into()),
            ..Scripted::default()
        });
        let ctx = BenchContext {
            store: &self.store,
            machine_id: self.machine_id,
            sweep_id: None,
            worker: script.clone(),
            cancel,
            telemetry: false,
            memory_check: false,
            cooldown: None,
        };
        let mut req = BenchRequest::defaults(1);
        req.n_prompt = vec![8];
        req.n_gen = vec![4];
        req.reps = 2;
        req.n_threads = threads.to_vec();
        let model = prepare_model(&self.store, &self.model).await.unwrap();
        let mut out = BenchOutcome::default();
        run_model(&ctx, &model, &req, &mut Quiet, &mut out)
            .await
            .unwrap();
        let asked = std::mem::take(&mut *script.asked.lock().unwrap());
        (out, asked)
    }

    /// Each result of run `id`: its status, repetitions kept and error.
    async fn results(&self, id: i64) -> Vec<(ResultStatus, usize, Option<String>)> {
        self.store
            .results(id)
            .await
            .unwrap()
            .into_iter()
            .map(|r| {
                let kept: &[Sample] = r.samples.as_deref().unwrap();
                (r.status, kept.len(), r.error)
            })
            .collect()
    }
}

struct Quiet;

impl Reporter for Quiet {
    fn event(&mut self, _: &super::BenchEvent<'_>) -> Flow {
        Flow::Continue
    }
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn a_worker_that_finishes_stores_each_test_with_its_figures_and_facts() {
    rt().block_on(async {
        let b = Bench::new().await;
        let mut events = vec![ready(), loaded()];
        events.extend(test(0));
        events.extend(test(1));
        events.push(Event::Done {
            peak_rss_bytes: 1 << 20,
        });
        let (out, asked) = b
            .run(vec![Part::new(events, Ended::Done)], Cancel::default())
            .await;
        assert!(!out.cancelled);
        assert_eq!(out.run_ids.len(), 1);
        let WorkerRequest::Bench(plan) = &asked[0] else {
            panic!("a benchmark asks for a bench plan");
        };
        assert_eq!((plan.jobs.len(), plan.reps), (2, 2));
        let run = b.store.run(out.run_ids[0]).await.unwrap().unwrap();
        assert_eq!(run.status, RunStatus::Ok);
        assert_eq!(run.llama_cpp_build.as_deref(), Some("b0000-scripted"));
        assert_eq!(run.load_time_ms, Some(12.0));
        assert_eq!(run.peak_rss_bytes, Some(1 << 20));
        let rows = b.store.results(out.run_ids[0]).await.unwrap();
        let rates: Vec<Option<f64>> = rows.iter().map(|r| r.mean_tokens_per_s).collect();
        // pp8 in 1 ms is 8,000 t/s; tg4 in 2 ms is 2,000 t/s.
        assert_eq!(rates, [Some(8000.0), Some(2000.0)]);
        assert!(rows.iter().all(|r| r.status == ResultStatus::Ok));
    });
}

#[test]
fn a_crash_mid_test_keeps_the_finished_test_and_fails_the_rest_with_the_reason() {
    rt().block_on(async {
        let b = Bench::new().await;
        let mut events = vec![ready(), loaded()];
        events.extend(test(0));
        events.extend([phase("warmup", 1), phase("timed", 1), sample(1, 0)]);
        let (out, asked) = b
            .run(
                vec![Part::new(
                    events,
                    Ended::Crashed("the worker was killed by signal 11".into()),
                )],
                Cancel::default(),
            )
            .await;
        // The run had started, so no fresh worker measures it again.
        assert_eq!(asked.len(), 1);
        let id = out.run_ids[0];
        let run = b.store.run(id).await.unwrap().unwrap();
        assert_eq!(run.status, RunStatus::Failed);
        assert!(run.error.unwrap().contains("signal 11"));
        let results = b.results(id).await;
        assert_eq!(results[0], (ResultStatus::Ok, 2, None));
        // The repetition already measured is kept beside the failure.
        assert_eq!((results[1].0, results[1].1), (ResultStatus::Failed, 1));
        assert!(results[1].2.as_deref().unwrap().contains("signal 11"));
    });
}

/// The model itself failed (a worker that never loaded it): its runs fail
/// with the reason, and no fresh worker tries again only to fail alike.
#[test]
fn a_worker_that_dies_before_loading_fails_the_run_and_the_reason_is_kept() {
    rt().block_on(async {
        let b = Bench::new().await;
        let (out, asked) = b
            .run(
                vec![Part::new(
                    vec![ready()],
                    Ended::TimedOut(std::time::Duration::from_secs(600)),
                )],
                Cancel::default(),
            )
            .await;
        assert_eq!(asked.len(), 1);
        let run = b.store.run(out.run_ids[0]).await.unwrap().unwrap();
        assert_eq!(run.status, RunStatus::Failed);
        let error = run.error.unwrap();
        assert!(error.contains("600"), "{error}");
        assert!(b
            .results(out.run_ids[0])
            .await
            .iter()
            .all(|r| r.0 == ResultStatus::Failed && r.1 == 0));
    });
}

#[test]
fn a_cancel_mid_test_stops_the_benchmark_keeps_what_was_measured_and_says_so() {
    rt().block_on(async {
        let b = Bench::new().await;
        let mut events = vec![ready(), loaded()];
        events.extend(test(0));
        events.extend([phase("warmup", 1), phase("timed", 1), sample(1, 0)]);
        let n = events.len();
        let part = Part {
            events,
            // Cancel pressed while tg4's second repetition runs.
            cancel_after: Some(n - 1),
            ..Part::new(Vec::new(), Ended::Done)
        };
        let (out, _) = b.run(vec![part], Cancel::default()).await;
        assert!(out.cancelled);
        let id = out.run_ids[0];
        let run = b.store.run(id).await.unwrap().unwrap();
        assert_eq!(run.status, RunStatus::Cancelled);
        let results = b.results(id).await;
        assert_eq!(results[0], (ResultStatus::Ok, 2, None));
        assert_eq!(results[1].0, ResultStatus::Cancelled);
    });
}

#[test]
fn runs_a_crashed_worker_never_started_go_to_a_fresh_worker() {
    rt().block_on(async {
        let b = Bench::new().await;
        // Two runs share the load (1 and 2 threads): jobs 0-1, then 2-3.
        let mut first = vec![ready(), loaded()];
        first.extend(test(0));
        first.extend([phase("warmup", 1), phase("timed", 1), sample(1, 0)]);
        let mut second = vec![ready(), loaded()];
        second.extend(test(0));
        second.extend(test(1));
        second.push(Event::Done { peak_rss_bytes: 1 });
        let (out, asked) = b
            .run_threads(
                vec![
                    Part::new(first, Ended::Crashed("aborted".into())),
                    Part::new(second, Ended::Done),
                ],
                Cancel::default(),
                &[1, 2],
            )
            .await;
        let jobs: Vec<(usize, Vec<u32>)> = asked
            .iter()
            .map(|a| match a {
                WorkerRequest::Bench(p) => (
                    p.jobs.len(),
                    p.jobs.iter().map(|j| j.ctx.n_threads).collect(),
                ),
                _ => panic!("a benchmark asks for bench plans"),
            })
            .collect();
        // The fresh worker is given only the run the first never started.
        assert_eq!(jobs, [(4, vec![1, 1, 2, 2]), (2, vec![2, 2])]);
        let mut statuses = Vec::new();
        for id in &out.run_ids {
            let run = b.store.run(*id).await.unwrap().unwrap();
            statuses.push((run.n_threads, run.status));
        }
        statuses.sort_by_key(|s| s.0);
        assert_eq!(statuses, [(1, RunStatus::Failed), (2, RunStatus::Ok)]);
    });
}

// The sweep's level loop over the same scripted workers: a failed level is
// recorded and the next one runs, a second attempt resumes, a cancel stops.

impl QuantizeProgress for Quiet {
    fn progress(&mut self, _: u64, _: u64) {}
}

impl SweepReporter for Quiet {
    fn sweep(&mut self, _: &SweepEvent<'_>) {}
}

/// A whole worker: loads, measures pp8 and tg4, ends.
fn whole() -> Part {
    let mut events = vec![ready(), loaded()];
    events.extend(test(0));
    events.extend(test(1));
    events.push(Event::Done { peak_rss_bytes: 1 });
    Part::new(events, Ended::Done)
}

/// A worker that crashes in pp8's first repetition.
fn crashing() -> Part {
    Part::new(
        vec![ready(), loaded(), phase("warmup", 0), phase("timed", 0)],
        Ended::Crashed("the worker was killed by signal 11".into()),
    )
}

/// A sweep of the levels Q8_0 and Q4_0 (each a copy of the tiny model, the
/// second `bad` when asked: a file whose header does not read).
struct SweepBench {
    b: Bench,
    sweep_id: i64,
    levels: Vec<LevelPlan>,
}

impl SweepBench {
    async fn new(bad_second: bool) -> SweepBench {
        let b = Bench::new().await;
        let dir = b.model.parent().unwrap().to_path_buf();
        let mut levels = Vec::new();
        for (level, bpw) in [("Q8_0", 8.5), ("Q4_0", 4.5)] {
            let path = dir.join(format!("tiny-{level}.gguf"));
            std::fs::copy(&b.model, &path).unwrap();
            levels.push(LevelPlan {
                level: level.into(),
                origin: Origin::File,
                path: Some(path),
                bpw,
                bad_file: None,
            });
        }
        if bad_second {
            levels[1].bad_file = Some("the header ends early".into());
        }
        let spec = SweepSpec {
            source: Source::Files(levels.iter().filter_map(|l| l.path.clone()).collect()),
            levels: None,
            request: BenchRequest::defaults(1),
            quality: None,
            shape_only: false,
        };
        let sweep_id = b
            .store
            .create_quant_sweep(b.machine_id, &spec, spec.source.kind(), "scripted")
            .await
            .unwrap();
        SweepBench {
            b,
            sweep_id,
            levels,
        }
    }

    /// Run (or resume) the sweep with workers played by `parts`: its
    /// outcome and how many workers were started.
    async fn run(&self, parts: Vec<Part>, cancel: Cancel) -> (SweepOutcome, usize) {
        let script = Arc::new(Scripted {
            parts: Mutex::new(parts.into()),
            ..Scripted::default()
        });
        let ctx = BenchContext {
            store: &self.b.store,
            machine_id: self.b.machine_id,
            sweep_id: Some(self.sweep_id),
            worker: script.clone(),
            cancel,
            telemetry: false,
            memory_check: false,
            cooldown: None,
        };
        let mut request = BenchRequest::defaults(1);
        request.n_prompt = vec![8];
        request.n_gen = vec![4];
        request.reps = 2;
        let spec = SweepSpec {
            source: Source::Files(self.levels.iter().filter_map(|l| l.path.clone()).collect()),
            levels: None,
            request,
            quality: None,
            shape_only: false,
        };
        let resolved = Resolved {
            levels: self.levels.clone(),
            base: None,
            warnings: Vec::new(),
        };
        let out = run_sweep(&ctx, &spec, &resolved, self.sweep_id, false, &mut Quiet)
            .await
            .unwrap();
        let started = script.asked.lock().unwrap().len();
        (out, started)
    }

    /// Each level's name, status and error, in order.
    async fn levels(&self) -> Vec<(String, LevelStatus, Option<String>)> {
        self.b
            .store
            .levels(self.sweep_id)
            .await
            .unwrap()
            .into_iter()
            .map(|l| (l.level, l.status, l.error))
            .collect()
    }
}

#[test]
fn a_level_whose_worker_crashes_is_recorded_with_the_reason_and_the_next_level_runs() {
    rt().block_on(async {
        let s = SweepBench::new(false).await;
        let (out, started) = s.run(vec![crashing(), whole()], Cancel::default()).await;
        assert_eq!((out.ok, out.failed, out.bad_input), (1, 1, 0));
        assert!(!out.cancelled);
        assert_eq!(started, 2);
        let levels = s.levels().await;
        assert_eq!(levels[0].1, LevelStatus::Failed);
        assert!(levels[0].2.as_deref().unwrap().contains("signal 11"));
        assert_eq!(
            (levels[1].1, levels[1].2.as_deref()),
            (LevelStatus::Ok, None)
        );
    });
}

#[test]
fn running_the_sweep_again_measures_only_the_level_that_failed() {
    rt().block_on(async {
        let s = SweepBench::new(false).await;
        s.run(vec![crashing(), whole()], Cancel::default()).await;
        // The second attempt: Q8_0 again, Q4_0 skipped (same file, plan and
        // machine), so one worker is enough.
        let (out, started) = s.run(vec![whole()], Cancel::default()).await;
        assert_eq!(started, 1);
        assert_eq!((out.ok, out.failed), (2, 0));
        let statuses: Vec<LevelStatus> = s.levels().await.into_iter().map(|l| l.1).collect();
        assert_eq!(statuses, [LevelStatus::Ok, LevelStatus::Ok]);
    });
}

#[test]
fn a_level_with_a_bad_file_fails_without_a_worker_and_blames_the_file() {
    rt().block_on(async {
        let s = SweepBench::new(true).await;
        let (out, started) = s.run(vec![whole()], Cancel::default()).await;
        assert_eq!(started, 1, "only the good level starts a worker");
        assert_eq!((out.ok, out.failed, out.bad_input), (1, 1, 1));
        let levels = s.levels().await;
        assert_eq!(levels[1].1, LevelStatus::Failed);
        assert!(levels[1]
            .2
            .as_deref()
            .unwrap()
            .contains("header ends early"));
    });
}

#[test]
fn a_cancel_in_the_first_level_stops_the_sweep_before_the_next() {
    rt().block_on(async {
        let s = SweepBench::new(false).await;
        let mut first = whole();
        // Cancel pressed while tg4 runs.
        first.cancel_after = Some(first.events.len() - 3);
        let (out, started) = s.run(vec![first, whole()], Cancel::default()).await;
        assert!(out.cancelled);
        assert_eq!(started, 1, "no worker starts after the cancel");
        let statuses: Vec<LevelStatus> = s.levels().await.into_iter().map(|l| l.1).collect();
        assert_eq!(statuses, [LevelStatus::Cancelled]);
    });
}
