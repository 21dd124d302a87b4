//! Connects the telemetry sampler to one worker's runs: stamps the phase the
//! worker reports, and stores readings against the run and test they were
//! taken during. It also reads what other processes used while each test
//! was timed ([`crate::telemetry::disturbance`]).

use std::collections::HashMap;

use crate::error::Result;
use crate::store::Store;
use crate::telemetry::disturbance::{self, Contention, Ledger, Snapshot};
use crate::telemetry::sustain::LoadWindow;
use crate::telemetry::{Phase, Reading, Sampler, Sources, INTERVAL};

pub struct Recorder {
    sampler: Option<Sampler>,
    /// Worker job index -> (run id, result id).
    jobs: HashMap<u32, (i64, i64)>,
    /// The run readings without a job (load, idle) belong to: the latest
    /// run started by this worker.
    current_run: Option<i64>,
    /// Readings taken before any run of this worker existed.
    pending: Vec<Reading>,
    /// Reads every process's CPU time at the edges of a timed phase.
    ledger: Option<Ledger>,
    /// The job being timed and the snapshot taken as its timing began.
    timed: Option<(usize, Snapshot)>,
    /// What competed with each job's timed phase, until the supervisor
    /// takes it.
    contention: HashMap<usize, Contention>,
    /// The measuring worker. This process, which hosts it, is not in the
    /// list: its work beside the test (telemetry, storage, and in the app a
    /// sync, a download or the UI) competes with the test like anyone else's.
    own: Vec<u32>,
    /// Sustained decodes also read the others' CPU about once a second,
    /// so a drop can be set beside what started competing.
    sustained: bool,
    /// The last window's end, while a sustained test is timed.
    window: Option<Snapshot>,
    /// What the others used, window by window, per sustained job.
    windows: HashMap<usize, Vec<LoadWindow>>,
    /// The cool-down before this worker.
    cooldown: Option<crate::telemetry::cooldown::CooldownRecord>,
}

impl Recorder {
    /// Start sampling, or do nothing when telemetry is off.
    pub fn start(enabled: bool) -> Recorder {
        Recorder {
            sampler: enabled.then(|| Sampler::start(INTERVAL)),
            jobs: HashMap::new(),
            current_run: None,
            pending: Vec::new(),
            ledger: enabled.then(Ledger::new),
            timed: None,
            contention: HashMap::new(),
            own: Vec::new(),
            sustained: false,
            window: None,
            windows: HashMap::new(),
            cooldown: None,
        }
    }

    /// How the cool-down before this worker went, kept with its runs.
    pub fn set_cooldown(&mut self, r: Option<crate::telemetry::cooldown::CooldownRecord>) {
        self.cooldown = r;
    }

    pub fn cooldown(&self) -> Option<crate::telemetry::cooldown::CooldownRecord> {
        self.cooldown.clone()
    }

    /// This worker's tests are sustained decodes (`--sustain`).
    pub fn set_sustained(&mut self, on: bool) {
        self.sustained = on;
    }

    /// A repetition of `job` arrived: in a sustained decode, close a window
    /// of the others' CPU once a second has passed since the last.
    pub fn sample(&mut self, job: usize) {
        if !self.sustained {
            return;
        }
        let (Some(ledger), Some((j, start)), Some(last)) = (
            self.ledger.as_mut(),
            self.timed.as_ref(),
            self.window.as_ref(),
        ) else {
            return;
        };
        if *j != job || last.at().elapsed() < std::time::Duration::from_secs(1) {
            return;
        }
        let now = ledger.snapshot();
        let w = load_window(start, last, &now, &self.own);
        self.windows.entry(job).or_default().push(w);
        self.window = Some(now);
    }

    /// The windows of a sustained job, once it has ended.
    pub fn take_windows(&mut self, job: usize) -> Vec<LoadWindow> {
        self.windows.remove(&job).unwrap_or_default()
    }

    /// The sources this machine has, stored on each run.
    pub fn sources(&self) -> Option<Sources> {
        self.sampler.as_ref().map(|s| s.sources().clone())
    }

    /// Telemetry sources this machine lacks (empty when telemetry is off).
    pub fn unavailable(&self) -> Vec<&'static str> {
        self.sampler
            .as_ref()
            .map(|s| s.sources().missing())
            .unwrap_or_default()
    }

    /// Whether every core runs one of the test's threads on the CPU; the
    /// sampler then spaces its readings (`telemetry::spaced`).
    pub fn set_crowded(&self, crowded: bool) {
        if let Some(s) = &self.sampler {
            s.set_crowded(crowded);
        }
    }

    pub fn set_pid(&mut self, pid: u32) {
        if let Some(s) = &self.sampler {
            s.set_pid(pid);
        }
        self.own.push(pid);
    }

    /// The worker's phase. Entering the timed phase snapshots every
    /// process's CPU time, and leaving it works out what the others used.
    pub fn phase(&mut self, phase: Phase, job: Option<usize>) {
        if let Some(s) = &self.sampler {
            s.set_phase(phase, job.and_then(|j| u32::try_from(j).ok()));
        }
        let Some(ledger) = self.ledger.as_mut() else {
            return;
        };
        let timing = self.timed.as_ref().map(|(j, _)| *j);
        if phase == Phase::Timed && job.is_some() && timing == job {
            return;
        }
        if let Some((j, start)) = self.timed.take() {
            let end = ledger.snapshot();
            // The sustained decode's last window runs to the end of timing.
            if let Some(last) = self.window.take() {
                let w = load_window(&start, &last, &end, &self.own);
                self.windows.entry(j).or_default().push(w);
            }
            self.contention.insert(
                j,
                disturbance::contention(&start, &end, &self.own, Some(std::process::id())),
            );
        }
        self.window = None;
        if let (Phase::Timed, Some(j)) = (phase, job) {
            let start = ledger.snapshot();
            if self.sustained {
                self.window = Some(start.clone());
            }
            self.timed = Some((j, start));
        }
    }

    /// What competed with job `job` while it was timed, once its timed
    /// phase has ended.
    pub fn take_contention(&mut self, job: usize) -> Option<Contention> {
        self.contention.remove(&job)
    }

    /// A run started by this worker: readings without a job go to it.
    pub fn run_started(&mut self, run_id: i64) {
        self.current_run = Some(run_id);
    }

    pub fn current_run(&self) -> Option<i64> {
        self.current_run
    }

    /// A test started: readings tagged with `job` go to its result.
    pub fn test_started(&mut self, job: usize, run_id: i64, result_id: i64) {
        if let Ok(j) = u32::try_from(job) {
            self.jobs.insert(j, (run_id, result_id));
        }
    }

    /// Store what was read since the last flush.
    pub async fn flush(&mut self, store: &Store) -> Result<()> {
        let Some(s) = &self.sampler else {
            return Ok(());
        };
        let fresh = s.drain();
        self.store_readings(store, fresh).await
    }

    /// Stop sampling and store the rest.
    pub async fn finish(&mut self, store: &Store) -> Result<()> {
        let Some(s) = self.sampler.take() else {
            return Ok(());
        };
        let rest = s.stop();
        self.store_readings(store, rest).await
    }

    async fn store_readings(&mut self, store: &Store, fresh: Vec<Reading>) -> Result<()> {
        self.pending.extend(fresh);
        let mut by_run: HashMap<i64, Vec<(Option<i64>, Reading)>> = HashMap::new();
        let mut keep = Vec::new();
        for r in self.pending.drain(..) {
            let target = match r.job.and_then(|j| self.jobs.get(&j)) {
                Some(&(run, result)) if r.phase != Phase::Idle => Some((run, Some(result))),
                _ => self.current_run.map(|run| (run, None)),
            };
            match target {
                Some((run, result)) => by_run.entry(run).or_default().push((result, r)),
                None => keep.push(r),
            }
        }
        self.pending = keep;
        for (run, rows) in by_run {
            store.insert_telemetry(run, &rows).await?;
        }
        Ok(())
    }
}

/// What other programs used between `a` and `b`, placed on the clock of
/// the timed phase that began at `start`.
fn load_window(start: &Snapshot, a: &Snapshot, b: &Snapshot, own: &[u32]) -> LoadWindow {
    let c = disturbance::contention(a, b, own, Some(std::process::id()));
    LoadWindow {
        start_s: a.at().duration_since(start.at()).as_secs_f64(),
        end_s: b.at().duration_since(start.at()).as_secs_f64(),
        others_cpu_cores: c.others_cpu_cores,
        top: c.top,
    }
}
