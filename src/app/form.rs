//! What the app's Benchmark… buttons and its Benchmark form ask to measure
//! as one benchmark: a file with a preset, a run's disturbed tests again, or
//! the form's one file with its own options. Each becomes an `app::bench`
//! input, so it is measured and stored as `dyno bench` would (one result,
//! its runs); a sweep of levels is `app::sweep`. It sits above both because
//! the form's fields are the sweep's ([`SweepInput`]).

use serde::Deserialize;

use super::bench::DEFAULT_TIMEOUT_S;
use super::bench::{again, run, worker, BenchInput, BenchProgress, Benched, Measuring};
use super::presets::Preset;
use super::sweep::SweepInput;
use crate::error::Result;
use crate::machine::Machine;
use crate::store::Store;
use crate::worker::client::Cancel;

/// One benchmark the app asks for (docs/app-api.md).
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum BenchForm {
    /// One file with a preset (a model's Benchmark… button).
    Preset {
        path: String,
        preset: Preset,
        /// Measure disturbed tests again, up to this many times.
        #[serde(default)]
        #[cfg_attr(feature = "ts", ts(optional))]
        retry_disturbed: Option<u32>,
    },
    /// The tests of run `run_id` that were flagged as disturbed, measured
    /// again with the same file and setup ("Measure these again").
    Again { run_id: i64 },
    /// The Benchmark form with one file and no quality: its plan, layers,
    /// placement, servers and cool-down, as one benchmark.
    Form { order: SweepInput },
}

/// Measure what `form` asks for on this machine, with the default worker
/// settings.
pub async fn run_form(
    store: &Store,
    form: BenchForm,
    cancel: Cancel,
    progress: &mut dyn BenchProgress,
) -> Result<Benched> {
    let machine = Machine::detect();
    let input = match form {
        BenchForm::Preset {
            path,
            preset,
            retry_disturbed,
        } => {
            let path = super::expand_home(path.trim());
            let mut input = BenchInput::preset(path, preset, &machine);
            input.retry_disturbed = retry_disturbed.unwrap_or(0);
            input
        }
        BenchForm::Form { order } => order.bench_input(machine.default_threads())?,
        BenchForm::Again { run_id } => {
            let (how, worker) = (Measuring::default(), worker(DEFAULT_TIMEOUT_S)?);
            return again(store, &machine, run_id, how, worker, cancel, progress).await;
        }
    };
    let worker = worker(DEFAULT_TIMEOUT_S)?;
    run(store, &machine, &input, worker, cancel, progress).await
}
