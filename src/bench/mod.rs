//! Benchmarks: plans, statistics, and the orchestrator that runs a plan
//! through worker processes and stores every sample as it arrives.

mod context;
pub mod figures;
pub mod plan;
mod recorder;
pub mod run;
#[cfg(test)]
mod scripted;
pub mod stats;
mod supervisor;
pub mod sweep;

use crate::model::ModelInfo;
use crate::vocab::status::{ResultStatus, RunStatus};
use crate::vocab::RunConfig;
use crate::vocab::TestSpec;

/// Progress of a benchmark, pushed to whoever drives it (the CLI's progress
/// bar, later the app's channel).
#[derive(Debug, Clone)]
pub enum BenchEvent<'a> {
    /// A model's worker is starting (one model load). `unavailable` names
    /// the telemetry sources this machine lacks.
    Loading {
        model: &'a ModelInfo,
        n_runs: usize,
        unavailable: &'a [&'static str],
    },
    /// The model is loaded; `load_time_ms` is reported on its own, never
    /// inside a tokens/s figure.
    Loaded {
        model: &'a ModelInfo,
        load_time_ms: f64,
    },
    RunStarted {
        run_id: i64,
        model: &'a ModelInfo,
        config: &'a RunConfig,
    },
    /// A test began (warm-up first, then repetitions).
    TestStarted { run_id: i64, test: &'a TestSpec },
    /// One timed repetition was measured and stored; `reps` is 0 in a
    /// sustained decode, which repeats for a time rather than a count.
    Sample {
        run_id: i64,
        test: &'a TestSpec,
        rep: u32,
        reps: u32,
    },
    /// A test ended: ok, failed or cancelled.
    TestFinished {
        run_id: i64,
        test: &'a TestSpec,
        status: ResultStatus,
        error: Option<&'a str>,
    },
    RunFinished {
        run_id: i64,
        status: RunStatus,
        error: Option<&'a str>,
    },
    /// `--cooldown`: waiting, up to `limit_s`, for what `still` names to
    /// come back to idle before the next model load.
    CoolingDown { limit_s: u32, still: &'a [String] },
}

/// Receives progress. Returning [`Flow::Stop`] cancels the benchmark as a
/// Ctrl-C would: the worker is killed and what was measured is kept.
pub trait Reporter {
    fn event(&mut self, event: &BenchEvent<'_>) -> Flow;
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    Continue,
    Stop,
}

/// A reporter that ignores everything (for callers that only want the store).
pub struct Silent;

impl Reporter for Silent {
    fn event(&mut self, _: &BenchEvent<'_>) -> Flow {
        Flow::Continue
    }
}
