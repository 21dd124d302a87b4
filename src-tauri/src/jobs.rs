//! Long work started from the UI: a sweep or a download. Each job has an id
//! the UI chose and a cancel switch; its progress streams to the UI through
//! a Tauri channel as [`JobEvent`]s (docs/app-api.md).
//!
//! The core runs on its own thread with a current-thread runtime, as in the
//! CLI, so the app's runtime never waits on a benchmark and the core's
//! futures need not be `Send`.

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use dyno::app::bench::BenchProgress;
use dyno::bench::sweep::{SweepEvent, SweepReporter};
use dyno::bench::{BenchEvent, Flow, Reporter};
use dyno::error::{DynoError, Result};
use dyno::hub::download::PullProgress;
use dyno::quantize::QuantizeProgress;
use dyno::telemetry::Sampler;
use dyno::vocab::status::LevelStatus;
use dyno::worker::client::Cancel;
use tauri::ipc::Channel;

use crate::error::{AppError, AppResult};
use crate::events::JobEvent;

/// Run `f`'s future on a thread of its own with a current-thread runtime.
pub async fn on_core<T, F, Fut>(f: F) -> AppResult<T>
where
    F: FnOnce() -> Fut + Send + 'static,
    Fut: Future<Output = Result<T>>,
    T: Send + 'static,
{
    tauri::async_runtime::spawn_blocking(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| DynoError::io("cannot start the async runtime", e))?;
        rt.block_on(f())
    })
    .await
    .map_err(|e| AppError::internal(format!("a background task failed: {e}")))?
    .map_err(AppError::from)
}

/// The jobs running now, by the UI's id.
#[derive(Default)]
pub struct Jobs {
    running: Mutex<HashMap<String, (Kind, Cancel)>>,
    /// Up while a benchmark times a test. Downloads hold still then: their
    /// network, hashing and disk writes would run beside llama.cpp and slow
    /// the figure being taken, so they go on only between tests.
    pub timing: Quiet,
}

/// Block the calling thread while `timing` is up (a test is being timed),
/// or until `cancel`. Background work that is not measuring (a download, a
/// team sync) calls this between its steps, so its network, hashing, disk and
/// database work never runs beside llama.cpp while a figure is taken. Called
/// on the job's own thread: with [`with_store`](crate::commands::with_store)
/// that is the job's own runtime, so only this job waits. Returns whether it
/// had to wait.
pub fn hold_while_timed(timing: &Quiet, cancel: &Cancel) -> bool {
    if !timing.load(Ordering::Relaxed) {
        return false;
    }
    while timing.load(Ordering::Relaxed) && !cancel.is_cancelled() {
        std::thread::sleep(Duration::from_millis(100));
    }
    true
}

/// Lowers the timing flag when a benchmark ends however it ends (a test cut
/// short by cancel or a failed worker never reports its end).
pub struct Timing(pub Quiet);

impl Drop for Timing {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Relaxed);
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Measures: one at a time, or they would disturb each other's figures.
    Bench,
    Download,
    /// A team sync: network and the database, never beside itself.
    Sync,
}

/// Removes the job from the table when it ends, however it ends.
pub struct JobGuard {
    jobs: Arc<Jobs>,
    id: String,
}

impl Drop for JobGuard {
    fn drop(&mut self) {
        if let Ok(mut m) = self.jobs.running.lock() {
            m.remove(&self.id);
        }
    }
}

impl Jobs {
    /// Register job `id`; refuses a second benchmark while one runs.
    pub fn start(self: &Arc<Self>, id: &str, kind: Kind) -> AppResult<(JobGuard, Cancel)> {
        let mut m = self
            .running
            .lock()
            .map_err(|_| AppError::internal("the job table is poisoned"))?;
        if m.contains_key(id) {
            return Err(AppError::new(
                crate::error::ErrorCode::BadInput,
                format!("a job with id {id} is already running"),
            ));
        }
        if kind == Kind::Sync && m.values().any(|(k, _)| *k == Kind::Sync) {
            return Err(AppError::new(
                crate::error::ErrorCode::Busy,
                "a sync is already running; wait for it or cancel it first",
            ));
        }
        if kind == Kind::Bench && m.values().any(|(k, _)| *k == Kind::Bench) {
            return Err(AppError::new(
                crate::error::ErrorCode::Busy,
                "a benchmark is already running; wait for it or cancel it first (two at once would slow each other and spoil both results)",
            ));
        }
        let cancel = Cancel::default();
        m.insert(id.to_string(), (kind, cancel.clone()));
        Ok((
            JobGuard {
                jobs: self.clone(),
                id: id.to_string(),
            },
            cancel,
        ))
    }

    /// Flip job `id`'s cancel switch; false when no such job runs.
    pub fn cancel(&self, id: &str) -> bool {
        let m = match self.running.lock() {
            Ok(m) => m,
            Err(_) => return false,
        };
        match m.get(id) {
            Some((_, c)) => {
                c.cancel();
                true
            }
            None => false,
        }
    }
}

/// Sends a job's progress to the UI. A closed channel (the window went
/// away) is ignored: the job still finishes and stores its results.
///
/// While a test is being timed the UI is kept quiet: per-repetition events
/// are not sent and live telemetry is held back (see [`LiveTelemetry`]), so
/// the webview does not repaint and take CPU from llama.cpp mid-measurement.
/// The UI hears `test_started`, then `test_finished` with the outcome.
pub struct ToUi {
    channel: Channel<JobEvent>,
    cancel: Cancel,
    /// The current run's repetitions and warm-up, from `RunStarted`: told
    /// with each `test_started` so the view knows what the silence holds.
    plan: (u32, bool),
    /// The file being downloaded: its size and the bytes on disk so far.
    pull: (u64, u64),
    quiet: Quiet,
    /// For a download: the benchmark's timing flag, waited out between
    /// chunks (see [`Jobs::timing`]).
    hold: Option<Quiet>,
}

/// Set while a test is timed; shared by the job's [`ToUi`] and its
/// [`LiveTelemetry`].
pub type Quiet = Arc<AtomicBool>;

impl ToUi {
    pub fn new(channel: Channel<JobEvent>, cancel: Cancel) -> ToUi {
        ToUi::quieted(channel, cancel, Quiet::default())
    }

    /// A reporter that raises `quiet` while each test is timed.
    pub fn quieted(channel: Channel<JobEvent>, cancel: Cancel, quiet: Quiet) -> ToUi {
        ToUi {
            channel,
            cancel,
            plan: (0, false),
            pull: (0, 0),
            quiet,
            hold: None,
        }
    }

    /// A download's reporter that holds the download still while `timing`
    /// is up, telling the UI it waits.
    pub fn download(channel: Channel<JobEvent>, cancel: Cancel, timing: Quiet) -> ToUi {
        ToUi {
            hold: Some(timing),
            ..ToUi::new(channel, cancel)
        }
    }

    /// Block while a test is timed (or until cancelled). Called between
    /// chunks, on the download's own thread.
    pub fn wait_for_quiet(&self) {
        let Some(hold) = &self.hold else { return };
        if !hold.load(Ordering::Relaxed) {
            return;
        }
        self.send(JobEvent::DownloadPaused);
        hold_while_timed(hold, &self.cancel);
        self.send(JobEvent::DownloadResumed);
    }

    pub fn send(&self, e: JobEvent) {
        let _ = self.channel.send(e);
    }
}

impl Reporter for ToUi {
    fn event(&mut self, e: &BenchEvent<'_>) -> Flow {
        let sent = match e {
            BenchEvent::Loading { model, .. } => Some(JobEvent::Loading {
                model: model.file_name.clone(),
            }),
            BenchEvent::RunStarted { config, .. } => {
                // A sustained decode repeats for a time: no count to show.
                let reps = if config.sustain_s.is_some() {
                    0
                } else {
                    config.reps
                };
                self.plan = (reps, config.warmup);
                None
            }
            BenchEvent::CoolingDown { limit_s, still } => Some(JobEvent::Warning {
                message: format!(
                    "cooling down before the next level ({}), up to {limit_s} s",
                    still.join(", ")
                ),
            }),
            // Held back: a repaint per repetition is what quiet avoids.
            BenchEvent::Loaded { .. } | BenchEvent::Sample { .. } => None,
            BenchEvent::TestStarted { run_id, test } => {
                self.quiet.store(true, Ordering::Relaxed);
                Some(JobEvent::TestStarted {
                    run_id: *run_id,
                    test: test.name(),
                    quiet: true,
                    reps: self.plan.0,
                    warmup: self.plan.1,
                })
            }
            BenchEvent::TestFinished {
                run_id,
                test,
                status,
                error,
            } => {
                self.quiet.store(false, Ordering::Relaxed);
                Some(JobEvent::TestFinished {
                    run_id: *run_id,
                    test: test.name(),
                    status: *status,
                    error: error.map(str::to_string),
                })
            }
            BenchEvent::RunFinished {
                run_id,
                status,
                error,
            } => Some(JobEvent::RunFinished {
                run_id: *run_id,
                status: *status,
                error: error.map(str::to_string),
            }),
        };
        if let Some(e) = sent {
            self.send(e);
        }
        if self.cancel.is_cancelled() {
            Flow::Stop
        } else {
            Flow::Continue
        }
    }
}

/// A benchmark's models are shown as the levels of its plan, so the one
/// progress view follows a benchmark and a sweep alike.
impl BenchProgress for ToUi {
    /// The page plans from the preset it started.
    fn planned(&mut self, _: u64) {}

    fn note(&mut self, text: &str) {
        self.send(JobEvent::Warning {
            message: text.to_string(),
        });
    }

    fn model(&mut self, index: usize, total: usize, name: &str) {
        self.send(JobEvent::Level {
            level: name.to_string(),
            index: index as u32,
            total: total as u32,
        });
    }

    fn model_done(&mut self, name: &str, status: LevelStatus) {
        self.send(JobEvent::LevelFinished {
            level: name.to_string(),
            status,
            error: None,
        });
    }
}

impl QuantizeProgress for ToUi {
    fn progress(&mut self, done: u64, total: u64) {
        self.send(JobEvent::QuantizeProgress { done, total });
    }
}

impl SweepReporter for ToUi {
    fn sweep(&mut self, e: &SweepEvent<'_>) {
        let e = match e {
            SweepEvent::Warning(m) | SweepEvent::Info(m) => JobEvent::Warning {
                message: m.to_string(),
            },
            SweepEvent::Level {
                level,
                index,
                total,
            } => JobEvent::Level {
                level: level.to_string(),
                index: *index as u32,
                total: *total as u32,
            },
            SweepEvent::Skipped { level, why } => JobEvent::Skipped {
                level: level.to_string(),
                why: why.to_string(),
            },
            SweepEvent::Quantizing { level } => JobEvent::Quantizing {
                level: level.to_string(),
            },
            SweepEvent::Quantized { .. } => return,
            SweepEvent::LevelFinished {
                level,
                status,
                error,
            } => JobEvent::LevelFinished {
                level: level.to_string(),
                status: *status,
                error: error.map(str::to_string),
            },
            SweepEvent::Quality { level, reference } => JobEvent::Quality {
                level: level.to_string(),
                reference: *reference,
            },
            SweepEvent::QualityProgress { done, total } => JobEvent::QualityProgress {
                done: *done,
                total: *total,
            },
            // Its figures, or why it failed, are in the sweep's report.
            SweepEvent::QualityDone { level, .. } => JobEvent::QualityDone {
                level: level.to_string(),
            },
        };
        self.send(e);
    }
}

impl PullProgress for ToUi {
    fn start(&mut self, path: &str, total: u64, already: u64) {
        self.pull = (total, already);
        self.send(JobEvent::DownloadStart {
            path: path.to_string(),
            total,
            already,
        });
    }

    fn advance(&mut self, bytes: u64) {
        self.wait_for_quiet();
        self.pull.1 += bytes;
        let (total, done) = self.pull;
        self.send(JobEvent::DownloadProgress { done, total });
    }

    fn finish(&mut self, path: &str) {
        self.send(JobEvent::DownloadFinished {
            path: path.to_string(),
        });
    }
}

/// Live telemetry for the Sweep view, once a second while a job runs: the
/// machine as a whole (the stored per-test telemetry is the core's own).
/// Readings taken while `quiet` is up are kept and sent together when it
/// drops, so the chart has no gap and the webview no work mid-test.
pub struct LiveTelemetry {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl LiveTelemetry {
    pub fn start(channel: Channel<JobEvent>, quiet: Quiet) -> LiveTelemetry {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            let sampler = Sampler::start(Duration::from_secs(1));
            let mut held = Vec::new();
            while !flag.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(250));
                held.extend(sampler.drain());
                if quiet.load(Ordering::Relaxed) {
                    continue;
                }
                for r in held.drain(..) {
                    let _ = channel.send(JobEvent::Telemetry {
                        t_s: r.t_ms / 1e3,
                        cpu_pct: r.cpu_util_pct,
                        ram_used_bytes: r.ram_used_bytes,
                        gpu_pct: r.gpu_util_pct,
                        power_w: r.gpu_power_mw.map(|mw| mw as f64 / 1e3),
                        vram_bytes: r.gpu_mem_used_bytes,
                    });
                }
            }
            drop(sampler.stop());
        });
        LiveTelemetry {
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for LiveTelemetry {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn channel() -> (Channel<JobEvent>, Arc<Mutex<Vec<String>>>) {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let sink = seen.clone();
        let ch = Channel::new(move |body| {
            if let tauri::ipc::InvokeResponseBody::Json(j) = body {
                sink.lock().unwrap().push(j);
            }
            Ok(())
        });
        (ch, seen)
    }

    #[test]
    fn a_download_holds_still_while_a_test_is_timed() {
        let timing = Quiet::default();
        let (ch, seen) = channel();
        let mut ui = ToUi::download(ch, Cancel::default(), timing.clone());
        // Nothing timed: the chunk goes through at once.
        ui.advance(10);
        timing.store(true, Ordering::Relaxed);
        let t = std::thread::spawn(move || {
            let t0 = std::time::Instant::now();
            ui.advance(10);
            t0.elapsed()
        });
        std::thread::sleep(Duration::from_millis(400));
        assert!(!t.is_finished(), "the chunk waited while a test was timed");
        // The benchmark ends (its Timing guard lowers the flag).
        drop(Timing(timing));
        let waited = t.join().unwrap();
        assert!(waited >= Duration::from_millis(400), "{waited:?}");
        let seen = seen.lock().unwrap().join("\n");
        assert!(seen.contains("download_paused"), "{seen}");
        assert!(seen.contains("download_resumed"), "{seen}");
    }

    #[test]
    fn a_cancelled_download_stops_waiting() {
        let timing = Quiet::new(AtomicBool::new(true));
        let cancel = Cancel::default();
        let (ch, _) = channel();
        let mut ui = ToUi::download(ch, cancel.clone(), timing);
        let t = std::thread::spawn(move || ui.advance(1));
        std::thread::sleep(Duration::from_millis(200));
        cancel.cancel();
        t.join().unwrap();
    }
}
