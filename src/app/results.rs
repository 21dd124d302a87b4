//! Stored results as the front ends read them: the runs document, the light
//! list rows, one run or sweep's report, every sweep's report, and each run's
//! telemetry over time. `dyno runs|show|sweeps|show-sweep` and the app's
//! Results views print or draw the same values, so a figure never differs
//! between the terminal and the window.

use serde::Serialize;

use crate::error::Result;
use crate::machine::Machine;
use crate::report::list::ListRow;
use crate::report::sweep::SweepReport;
use crate::report::telemetry::TimelinePoint;
use crate::report::{self, Loaded, Report, Target};
use crate::store::Store;

/// The newest `limit` runs as one document (`dyno runs --json`).
pub async fn runs(store: &Store, limit: i64) -> Result<Report> {
    let rows = store.runs(limit.max(0)).await?;
    report::build(store, &rows, &Machine::detect()).await
}

/// Runs and sweeps as list rows with their headline figures, newest first:
/// a list of 1,000 runs without loading 1,000 documents.
pub async fn list(store: &Store, limit: i64) -> Result<Vec<ListRow>> {
    report::list::build(store, limit).await
}

/// One run's document (`dyno show ID --json`), with its offload curve when
/// it belongs to one.
pub async fn run(store: &Store, db: &std::path::Path, id: i64) -> Result<Report> {
    match report::load(store, db, Target::Run(id)).await? {
        Loaded::Run(r) => Ok(r),
        Loaded::Sweep(s) => Ok(s.report),
    }
}

/// One sweep's report (`dyno show-sweep ID --json`).
pub async fn sweep(store: &Store, id: i64) -> Result<SweepReport> {
    report::sweep::build(store, id, &Machine::detect()).await
}

/// The newest `limit` sweeps' reports (`dyno sweeps --json`).
pub async fn sweeps(store: &Store, limit: i64) -> Result<Vec<SweepReport>> {
    let machine = Machine::detect();
    let mut all = Vec::new();
    for r in &store.sweeps(limit.max(0)).await? {
        all.push(report::sweep::build(store, r.id, &machine).await?);
    }
    Ok(all)
}

/// One run's stored telemetry over time, thinned for a chart.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct RunTimeline {
    pub run_id: i64,
    /// Empty when the run was measured without telemetry.
    pub points: Vec<TimelinePoint>,
}

/// The timelines of `run_ids`, in that order: a sweep's detail draws its
/// levels' runs on one time axis.
pub async fn timelines(store: &Store, run_ids: &[i64]) -> Result<Vec<RunTimeline>> {
    let mut all = Vec::with_capacity(run_ids.len());
    for &run_id in run_ids {
        all.push(RunTimeline {
            run_id,
            points: report::telemetry::timeline(store, run_id).await?,
        });
    }
    Ok(all)
}
