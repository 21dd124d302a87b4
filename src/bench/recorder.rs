//! Connects the telemetry sampler to one worker's runs: stamps the phase the
//! worker reports, and stores readings against the run and test they were
//! taken during.

use std::collections::HashMap;

use crate::error::Result;
use crate::store::Store;
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
}

impl Recorder {
    /// Start sampling, or do nothing when telemetry is off.
    pub fn start(enabled: bool) -> Recorder {
        Recorder {
            sampler: enabled.then(|| Sampler::start(INTERVAL)),
            jobs: HashMap::new(),
            current_run: None,
            pending: Vec::new(),
        }
    }

    /// JSON of the sources this machine has, stored on each run.
    pub fn sources_json(&self) -> Option<String> {
        self.sampler.as_ref().map(|s| {
            let src: &Sources = s.sources();
            serde_json::to_string(src).expect("sources serialise")
        })
    }

    /// Telemetry sources this machine lacks (empty when telemetry is off).
    pub fn unavailable(&self) -> Vec<&'static str> {
        self.sampler
            .as_ref()
            .map(|s| s.sources().missing())
            .unwrap_or_default()
    }

    pub fn set_pid(&self, pid: u32) {
        if let Some(s) = &self.sampler {
            s.set_pid(pid);
        }
    }

    pub fn phase(&self, phase: Phase, job: Option<usize>) {
        if let Some(s) = &self.sampler {
            s.set_phase(phase, job.and_then(|j| u32::try_from(j).ok()));
        }
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
