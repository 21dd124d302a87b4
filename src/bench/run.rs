//! The orchestrator: runs a plan through worker processes, one per model
//! load, and commits every sample to the store as soon as it arrives.
//!
//! A worker that fails a test cleanly goes on by itself. One that crashes,
//! aborts, hangs or runs out of memory is recorded against the run it was
//! measuring, and a fresh worker takes the runs that had not started. Only a
//! cancel stops the whole benchmark.

use std::path::Path;

pub use super::context::{BenchContext, BenchOutcome, Cooldown, PreparedModel};
use super::plan::BenchRequest;
use super::recorder::Recorder;
use super::Reporter;
use crate::error::{DynoError, Result};
use crate::model;
use crate::store::Store;
use crate::vocab::RunConfig;

/// Describe a model from its header, hash it (reusing the stored digest when
/// path, size and modification time are unchanged) and register it.
pub async fn prepare_model(store: &Store, path: &Path) -> Result<PreparedModel> {
    let (mut info, header) = model::inspect_with_header(path)?;
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
    let shape = crate::model::shape::ModelShape::of(&header);
    store.set_model_shape(model_id, &shape).await?;
    Ok(PreparedModel {
        info,
        model_id,
        header: std::sync::Arc::new(header),
    })
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
        run_all(ctx, model, group.runs.iter().collect(), req, reporter, out).await?;
        if out.cancelled {
            return Ok(());
        }
    }
    Ok(())
}

/// Run `pending` (one model load), starting a fresh worker for the runs a
/// crashed one left, until all are done or the user cancels.
async fn run_all(
    ctx: &BenchContext<'_>,
    model: &PreparedModel,
    mut pending: Vec<&RunConfig>,
    req: &BenchRequest,
    reporter: &mut dyn Reporter,
    out: &mut BenchOutcome,
) -> Result<()> {
    while !pending.is_empty() {
        if ctx.cancel.is_cancelled() {
            out.cancelled = true;
            return Ok(());
        }
        pending = run_worker(ctx, model, &pending, req, reporter, out).await?;
    }
    Ok(())
}

/// Measure `config` once more on `model`: a stored run's configuration cut
/// down to the tests to repeat (`dyno bench --retry-disturbed`). It is a
/// run of its own, so the first measurement is kept beside it.
pub async fn run_config(
    ctx: &BenchContext<'_>,
    model: &PreparedModel,
    config: &RunConfig,
    req: &BenchRequest,
    reporter: &mut dyn Reporter,
    out: &mut BenchOutcome,
) -> Result<()> {
    run_all(ctx, model, vec![config], req, reporter, out).await
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
    let cooled = match &ctx.cooldown {
        Some(c) => c.before_worker(&ctx.cancel, reporter).await,
        None => None,
    };
    let mut rec = Recorder::start(ctx.telemetry);
    rec.set_sustained(req.sustain_s.is_some());
    rec.set_cooldown(cooled);
    let left = super::supervisor::supervise(ctx, model, runs, req, reporter, out, &mut rec).await;
    // Store the last readings whatever happened; a store error in the run
    // itself is the one to report.
    let flushed = rec.finish(ctx.store).await;
    let left = left?;
    flushed?;
    Ok(left)
}
