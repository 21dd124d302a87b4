//! The standard quantisation sweep: one model's quantisation levels, each
//! measured with the same plan in fresh workers, then scored for quality
//! against the sweep's highest-precision member.
//!
//! The source of the levels is pluggable ([`Source`]): files, a folder, one
//! high-precision file quantised locally, or (with the hub support of issue
//! D) a Hugging Face repo. A failed level (bad file, quantizer error, crash,
//! out of memory, timeout) is recorded with its reason and the sweep goes on.
//! Running the same sweep again resumes it: levels already measured under the
//! same conditions (model sha256, plan, machine) are skipped.
//!
//! In the order a sweep goes: [`spec`] is what the user asked for,
//! [`levels`] turns its source into levels, [`run`] measures them one by
//! one, and [`quality`] scores the measured levels against the reference.
//! The events below are what all of them tell the driver.

mod levels;
mod quality;
mod run;
mod spec;

use std::path::Path;

use super::Reporter;
use crate::quantize::QuantizeProgress;
use crate::vocab::status::LevelStatus;
use crate::vocab::QualityFigures;

pub use levels::{resolve, resolve_files, LevelPlan, Origin, Resolved};
pub use run::{run_sweep, SweepOutcome};
pub use spec::{QualitySettings, Source, SweepSpec};

/// What a sweep tells its driver besides the benchmark events.
#[derive(Debug, Clone)]
pub enum SweepEvent<'a> {
    Warning(&'a str),
    /// Something the user should know that is not a problem.
    Info(&'a str),
    /// Level `index` of `total` begins.
    Level {
        level: &'a str,
        index: usize,
        total: usize,
    },
    /// The level was measured before under the same conditions.
    Skipped {
        level: &'a str,
        why: &'a str,
    },
    Quantizing {
        level: &'a str,
    },
    Quantized {
        level: &'a str,
        path: &'a Path,
        cached: bool,
    },
    LevelFinished {
        level: &'a str,
        status: LevelStatus,
        error: Option<&'a str>,
    },
    /// A quality pass starts; `reference` for the reference's own pass.
    Quality {
        level: &'a str,
        reference: bool,
    },
    QualityProgress {
        done: u64,
        total: u64,
    },
    QualityDone {
        level: &'a str,
        figures: Option<&'a QualityFigures>,
        error: Option<&'a str>,
    },
}

/// The driver of a sweep: benchmark progress, quantisation progress and
/// the sweep's own events.
pub trait SweepReporter: Reporter + QuantizeProgress {
    fn sweep(&mut self, event: &SweepEvent<'_>);

    /// The sweep is about to run `samples` timed repetitions in all (for a
    /// bar's length; skipped levels make it an upper bound).
    fn planned(&mut self, _samples: u64) {}
}
