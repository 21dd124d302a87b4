//! The level loop: each level is obtained (given, or quantised and cached),
//! described, skipped when already measured, and benchmarked in fresh
//! workers; then the measured levels go to the quality pass.
//!
//! A level ends in one of three ways ([`LevelEnd`]), and only a cancel
//! stops the loop: a failed level is stored with its reason and the next
//! one runs.

use std::path::PathBuf;

use super::levels::{LevelPlan, Origin, Resolved};
use super::quality::quality_pass;
use super::spec::SweepSpec;
use super::{SweepEvent, SweepReporter};
use crate::bench::run::{prepare_model, run_model, BenchContext, BenchOutcome, PreparedModel};
use crate::error::{DynoError, Result};
use crate::quantize::{self, Quantized};
use crate::store::{LevelRow, RunRow};
use crate::vocab::failure::FailureCode;
use crate::vocab::status::{LevelStatus, RunStatus};
use crate::worker::client::WorkerFailure;

/// What the sweep did.
#[derive(Debug, Default, Clone)]
pub struct SweepOutcome {
    pub cancelled: bool,
    pub ok: usize,
    pub failed: usize,
    /// Levels that failed because of their file (bad header, load failure).
    pub bad_input: usize,
}

/// Run (or resume) sweep `sweep_id`.
pub async fn run_sweep(
    ctx: &BenchContext<'_>,
    spec: &SweepSpec,
    resolved: &Resolved,
    sweep_id: i64,
    fresh: bool,
    reporter: &mut dyn SweepReporter,
) -> Result<SweepOutcome> {
    let mut out = SweepOutcome::default();
    for w in &resolved.warnings {
        reporter.sweep(&SweepEvent::Warning(w));
    }
    let base = match &resolved.base {
        Some(b) => Some(prepare_model(ctx.store, &b.path).await?),
        None => None,
    };
    let levels = LevelLoop {
        ctx,
        spec,
        sweep_id,
        fresh,
        base,
        cache: quantize::cache_root(),
        n_threads: spec.request.n_threads.first().copied().unwrap_or(1),
    };
    // Levels whose speed is measured, with their model, for the quality pass.
    let mut measured: Vec<(LevelRow, PreparedModel)> = Vec::new();
    let total = resolved.levels.len();
    for (i, lp) in resolved.levels.iter().enumerate() {
        if ctx.cancel.is_cancelled() {
            out.cancelled = true;
            break;
        }
        match levels.level(i, total, lp, reporter).await? {
            LevelEnd::Measured(level) => {
                out.ok += 1;
                measured.push(*level);
            }
            LevelEnd::Failed { bad_input } => {
                out.failed += 1;
                if bad_input {
                    out.bad_input += 1;
                }
            }
            LevelEnd::Cancelled => {
                out.cancelled = true;
                break;
            }
        }
    }

    if let (Some(q), false) = (spec.quality, out.cancelled || ctx.cancel.is_cancelled()) {
        // The reference: the --from input, else the most precise level measured.
        let reference = levels
            .base
            .clone()
            .or_else(|| measured.first().map(|m| m.1.clone()));
        let measured = without_synthetic(ctx, &measured, reference.as_ref(), reporter).await?;
        if let Some(reference) = reference.filter(|r| r.info.synthetic.is_none()) {
            quality_pass(
                ctx,
                spec,
                sweep_id,
                q,
                &reference,
                &measured,
                &levels.cache,
                reporter,
            )
            .await?;
        }
        if ctx.cancel.is_cancelled() {
            out.cancelled = true;
        }
    }
    Ok(out)
}

/// Why a level with synthetic weights has no quality figure.
pub const SYNTHETIC_QUALITY: &str =
    "not measured: the weights are synthetic (dyno synth), so the text they write is noise; measure quality on the real file";

/// The measured levels whose quality can be scored: a file with synthetic
/// weights has none to score, and records why. With a synthetic reference,
/// no level can be compared, so none is kept.
async fn without_synthetic(
    ctx: &BenchContext<'_>,
    measured: &[(LevelRow, PreparedModel)],
    reference: Option<&PreparedModel>,
    reporter: &mut dyn SweepReporter,
) -> Result<Vec<(LevelRow, PreparedModel)>> {
    let ref_synthetic = reference.is_some_and(|r| r.info.synthetic.is_some());
    let mut keep = Vec::new();
    for m in measured {
        if ref_synthetic || m.1.info.synthetic.is_some() {
            ctx.store
                .set_level_quality_error(m.0.id, Some(SYNTHETIC_QUALITY))
                .await?;
            reporter.sweep(&SweepEvent::Skipped {
                level: &m.0.level,
                why: if m.1.info.synthetic.is_some() {
                    "quality not measured: synthetic weights"
                } else {
                    "quality not measured: the reference has synthetic weights"
                },
            });
        } else {
            keep.push(m.clone());
        }
    }
    Ok(keep)
}

/// How one level ended, for the sweep's counts.
enum LevelEnd {
    /// Measured now or in an earlier attempt: it goes on to the quality pass.
    Measured(Box<(LevelRow, PreparedModel)>),
    /// `bad_input`: the level's file is at fault, not the machine or a run.
    Failed { bad_input: bool },
    /// The user cancelled: the sweep stops here.
    Cancelled,
}

/// What every level of one sweep shares.
struct LevelLoop<'s> {
    ctx: &'s BenchContext<'s>,
    spec: &'s SweepSpec,
    sweep_id: i64,
    /// Measure levels again even when measured before.
    fresh: bool,
    /// The `--from` input, which quantised levels are made from.
    base: Option<PreparedModel>,
    cache: PathBuf,
    n_threads: u32,
}

impl LevelLoop<'_> {
    /// Level `i` of `total`, from its row to its end.
    async fn level(
        &self,
        i: usize,
        total: usize,
        lp: &LevelPlan,
        reporter: &mut dyn SweepReporter,
    ) -> Result<LevelEnd> {
        let store = self.ctx.store;
        let path_str = lp.path.as_ref().map(|p| p.display().to_string());
        let row = store
            .upsert_level(
                self.sweep_id,
                i,
                &lp.level,
                lp.origin.as_str(),
                path_str.as_deref(),
            )
            .await?;
        reporter.sweep(&SweepEvent::Level {
            level: &lp.level,
            index: i,
            total,
        });
        if let Some(why) = &lp.bad_file {
            let failure = WorkerFailure::new(FailureCode::BadFile, why.clone());
            return self.fail(row.id, lp, &failure, true, reporter).await;
        }

        // The level's file: given, the base itself, or quantised (cached).
        let mut quantize_ms = None;
        let path = match (&lp.origin, &self.base) {
            (Origin::Quantized, Some(b)) => match self.quantize(lp, b, reporter).await {
                Ok(q) => {
                    if q.fresh {
                        quantize_ms = Some(q.elapsed_ms);
                    }
                    q.path
                }
                Err(f) => return self.fail(row.id, lp, &f, false, reporter).await,
            },
            _ => lp.path.clone().expect("files and the base have a path"),
        };

        let model = match prepare_model(store, &path).await {
            Ok(m) => m,
            Err(e @ (DynoError::BadModel { .. } | DynoError::Io { .. })) => {
                let failure = WorkerFailure::new(FailureCode::BadFile, e.to_string());
                return self.fail(row.id, lp, &failure, true, reporter).await;
            }
            Err(e) => return Err(e),
        };
        let measured_sha = match row.model_id {
            Some(id) if row.status == LevelStatus::Ok => Some(store.model(id).await?.sha256),
            _ => None,
        };
        if !self.fresh && measured_sha.as_deref() == Some(model.info.sha256.as_str()) {
            reporter.sweep(&SweepEvent::Skipped {
                level: &lp.level,
                why: "already measured in this sweep with the same file (sha256), plan and machine",
            });
            return Ok(LevelEnd::Measured(Box::new((row, model))));
        }
        let row = store
            .start_level(
                row.id,
                &path.display().to_string(),
                model.model_id,
                quantize_ms,
            )
            .await?;
        let mut bench_out = BenchOutcome::default();
        run_model(
            self.ctx,
            &model,
            &self.spec.request,
            reporter,
            &mut bench_out,
        )
        .await?;
        let runs = store.level_runs(&row).await?;
        let (status, failure) = level_status(&bench_out, &runs);
        self.finish(row.id, lp, status, failure.as_ref(), reporter)
            .await?;
        Ok(match status {
            LevelStatus::Ok => LevelEnd::Measured(Box::new((row, model))),
            LevelStatus::Cancelled => LevelEnd::Cancelled,
            LevelStatus::Failed | LevelStatus::Pending => LevelEnd::Failed {
                bad_input: failure.is_some_and(|f| f.code.blames_the_model()),
            },
        })
    }

    /// Records level `lp` as ended by `failure` before it was measured:
    /// cancelled, or failed (by its own file when `bad_input`).
    async fn fail(
        &self,
        row_id: i64,
        lp: &LevelPlan,
        failure: &WorkerFailure,
        bad_input: bool,
        reporter: &mut dyn SweepReporter,
    ) -> Result<LevelEnd> {
        let cancelled = failure.is_cancelled();
        let status = if cancelled {
            LevelStatus::Cancelled
        } else {
            LevelStatus::Failed
        };
        self.finish(row_id, lp, status, Some(failure), reporter)
            .await?;
        Ok(if cancelled {
            LevelEnd::Cancelled
        } else {
            LevelEnd::Failed { bad_input }
        })
    }

    /// Make level `lp` from the base, or take it from the cache.
    async fn quantize(
        &self,
        lp: &LevelPlan,
        base: &PreparedModel,
        reporter: &mut dyn SweepReporter,
    ) -> std::result::Result<Quantized, WorkerFailure> {
        reporter.sweep(&SweepEvent::Quantizing { level: &lp.level });
        let expected = (base.info.n_params as f64 * quantize::nominal_bpw(&lp.level) / 8.0) as u64;
        let q = quantize::quantize_cached(
            &base.info.path,
            &base.info.sha256,
            !matches!(base.info.quant.as_str(), "F32" | "F16" | "BF16"),
            expected,
            &lp.level,
            self.n_threads,
            &self.cache,
            &*self.ctx.worker,
            &self.ctx.cancel,
            reporter,
        )
        .await?;
        reporter.sweep(&SweepEvent::Quantized {
            level: &lp.level,
            path: &q.path,
            cached: !q.fresh,
        });
        Ok(q)
    }

    /// Store the level's end and tell the driver.
    async fn finish(
        &self,
        row_id: i64,
        lp: &LevelPlan,
        status: LevelStatus,
        failure: Option<&WorkerFailure>,
        reporter: &mut dyn SweepReporter,
    ) -> Result<()> {
        // The store keeps the code as its text.
        self.ctx
            .store
            .finish_level(
                row_id,
                status,
                failure.map(|f| (&f.code, f.message.as_str())),
            )
            .await?;
        reporter.sweep(&SweepEvent::LevelFinished {
            level: &lp.level,
            status,
            error: failure.map(|f| f.message.as_str()),
        });
        Ok(())
    }
}

/// A benchmarked level's status: failed with the reason of its first
/// failed run, failed when nothing ran, cancelled when the user cancelled.
fn level_status(bench: &BenchOutcome, runs: &[RunRow]) -> (LevelStatus, Option<WorkerFailure>) {
    if bench.cancelled {
        (LevelStatus::Cancelled, None)
    } else if let Some(r) = runs.iter().find(|r| r.status != RunStatus::Ok) {
        let code = r.error_code.clone().unwrap_or(FailureCode::Failed);
        let message = r.error.clone().unwrap_or_default();
        (LevelStatus::Failed, Some(WorkerFailure::new(code, message)))
    } else if runs.is_empty() {
        (
            LevelStatus::Failed,
            Some(WorkerFailure::new(FailureCode::NoRuns, "nothing was run")),
        )
    } else {
        (LevelStatus::Ok, None)
    }
}
