//! The quality pass: each measured level scored on the bundled text
//! against the reference (the `--from` input, else the most precise level),
//! with perplexity, KL divergence and top-1 agreement, each in its own
//! worker. Figures are cached by model, reference, text and settings, so a
//! resumed sweep scores only what is missing.

use std::path::{Path, PathBuf};
use std::time::Instant;

use tokio::sync::mpsc;

use super::spec::{QualitySettings, SweepSpec};
use super::{SweepEvent, SweepReporter};
use crate::bench::run::{BenchContext, PreparedModel};
use crate::error::Result;
use crate::quality;
use crate::quantize;
use crate::store::{LevelRow, QualityKey};
use crate::vocab::failure::FailureCode;
use crate::vocab::{ModelParams, QualityFigures};
use crate::worker::client::{Ended, WorkerFailure};
use crate::worker::protocol::{Event, QualityMode, QualityPlan, WorkerRequest};

/// The reference's file of top-k log-probabilities for these settings.
fn reference_path(cache: &Path, reference_sha: &str, q: QualitySettings) -> PathBuf {
    cache.join("quality").join(format!(
        "{reference_sha}-{}x{}-k{}.ref",
        quality::CHUNK_TOKENS,
        q.n_chunks(),
        q.topk
    ))
}

/// Score every measured level against the reference. Figures already
/// stored for the same model, reference, text and settings are kept; the
/// reference's own top-k file is made first when missing. A failed
/// reference pass marks every level's quality as failed with its reason; a
/// failed level only its own.
#[allow(clippy::too_many_arguments)]
pub(super) async fn quality_pass(
    ctx: &BenchContext<'_>,
    spec: &SweepSpec,
    sweep_id: i64,
    q: QualitySettings,
    reference: &PreparedModel,
    measured: &[(LevelRow, PreparedModel)],
    cache: &Path,
    reporter: &mut dyn SweepReporter,
) -> Result<()> {
    let pass = Pass::new(ctx, spec, q, reference, cache);
    let store = ctx.store;
    store
        .set_sweep_quality(sweep_id, Some(pass.ref_sha), q.tokens, q.topk)
        .await?;
    // Which levels still need a figure (the reference scores itself).
    let mut todo: Vec<&(LevelRow, PreparedModel)> = Vec::new();
    for m in measured {
        if m.1.info.sha256 != pass.ref_sha
            && store.quality(&pass.key(&m.1.info.sha256)).await?.is_some()
        {
            reporter.sweep(&SweepEvent::Skipped {
                level: &m.0.level,
                why: "quality already measured against the same reference",
            });
            continue;
        }
        todo.push(m);
    }
    let ref_missing = store.quality(&pass.key(pass.ref_sha)).await?.is_none();
    let needs_ref_file =
        todo.iter().any(|m| m.1.info.sha256 != pass.ref_sha) && !pass.ref_file.is_file();
    if ref_missing || needs_ref_file {
        let ref_level = measured
            .iter()
            .find(|m| m.1.info.sha256 == pass.ref_sha)
            .map(|m| m.0.level.clone())
            .unwrap_or_else(|| format!("{} (reference)", reference.info.quant));
        if !pass
            .score_reference(&reference.info.path, &ref_level, &todo, reporter)
            .await?
        {
            return Ok(());
        }
    }
    for (row, model) in todo.into_iter().map(|m| (&m.0, &m.1)) {
        if model.info.sha256 == pass.ref_sha {
            store.set_level_quality_error(row.id, None).await?;
            continue;
        }
        if ctx.cancel.is_cancelled() || !pass.score_level(row, model, reporter).await? {
            break;
        }
    }
    Ok(())
}

/// What every worker of one quality pass shares: the reference, the text,
/// the settings and the load configuration.
struct Pass<'a> {
    ctx: &'a BenchContext<'a>,
    q: QualitySettings,
    ref_sha: &'a str,
    text_sha: String,
    /// The reference's top-k log-probabilities, compared against by every
    /// other level.
    ref_file: PathBuf,
    /// Quality is scored once per level, with the first load configuration.
    model_params: ModelParams,
    n_threads: u32,
}

impl<'a> Pass<'a> {
    fn new(
        ctx: &'a BenchContext<'a>,
        spec: &SweepSpec,
        q: QualitySettings,
        reference: &'a PreparedModel,
        cache: &Path,
    ) -> Self {
        let ref_sha = reference.info.sha256.as_str();
        Pass {
            ctx,
            q,
            ref_sha,
            text_sha: quality::text_sha256(),
            ref_file: reference_path(cache, ref_sha, q),
            model_params: spec
                .request
                .groups()
                .into_iter()
                .next()
                .map(|g| g.model)
                .unwrap_or_default(),
            n_threads: spec.request.n_threads.first().copied().unwrap_or(1),
        }
    }

    /// The cache key of `model_sha`'s figures in this pass.
    fn key<'k>(&'k self, model_sha: &'k str) -> QualityKey<'k> {
        QualityKey {
            model_sha256: model_sha,
            reference_sha256: self.ref_sha,
            text_sha256: &self.text_sha,
            chunk_tokens: quality::CHUNK_TOKENS,
            n_chunks: self.q.n_chunks(),
            topk: self.q.topk,
        }
    }

    fn plan(&self, path: &Path, mode: QualityMode) -> QualityPlan {
        QualityPlan {
            model_path: path.to_path_buf(),
            model: self.model_params.clone(),
            n_threads: self.n_threads,
            chunk_tokens: quality::CHUNK_TOKENS,
            n_chunks: self.q.n_chunks(),
            mode,
        }
    }

    /// Score the reference and write its top-k file (into a partial, moved
    /// into place only when whole). Returns false when it failed: then every
    /// level in `todo` records why, and a cancel stops the sweep.
    async fn score_reference(
        &self,
        path: &Path,
        ref_level: &str,
        todo: &[&(LevelRow, PreparedModel)],
        reporter: &mut dyn SweepReporter,
    ) -> Result<bool> {
        reporter.sweep(&SweepEvent::Quality {
            level: ref_level,
            reference: true,
        });
        let partial = quantize::partial_path(&self.ref_file);
        let made = self.make_reference_file(path, &partial, reporter).await;
        let _ = std::fs::remove_file(&partial);
        let store = self.ctx.store;
        match made {
            Ok((figures, ms, rss)) => {
                store
                    .put_quality(&self.key(self.ref_sha), &figures, ms, rss)
                    .await?;
                reporter.sweep(&SweepEvent::QualityDone {
                    level: ref_level,
                    figures: Some(&figures),
                    error: None,
                });
                Ok(true)
            }
            Err(f) => {
                let why = format!("the reference pass on {ref_level} failed: {}", f.message);
                for m in todo {
                    store.set_level_quality_error(m.0.id, Some(&why)).await?;
                }
                reporter.sweep(&SweepEvent::QualityDone {
                    level: ref_level,
                    figures: None,
                    error: Some(&why),
                });
                if f.is_cancelled() {
                    self.ctx.cancel.cancel();
                }
                Ok(false)
            }
        }
    }

    async fn make_reference_file(
        &self,
        path: &Path,
        partial: &Path,
        reporter: &mut dyn SweepReporter,
    ) -> std::result::Result<Scored, WorkerFailure> {
        let dir = self.ref_file.parent().expect("has a parent");
        std::fs::create_dir_all(dir).map_err(|e| {
            WorkerFailure::new(
                FailureCode::CacheUnwritable,
                format!(
                    "cannot create {}: {e}; set DYNO_CACHE_DIR to a writable folder",
                    dir.display()
                ),
            )
        })?;
        let mode = QualityMode::Reference {
            output: partial.to_path_buf(),
            topk: self.q.topk,
        };
        let scored = run_quality_worker(self.ctx, self.plan(path, mode), reporter).await?;
        std::fs::rename(partial, &self.ref_file).map_err(|e| {
            WorkerFailure::new(
                FailureCode::CacheUnwritable,
                format!("cannot move the reference into place: {e}"),
            )
        })?;
        Ok(scored)
    }

    /// Score one level against the reference's file and store the figures
    /// or the reason it failed. Returns false when the user cancelled.
    async fn score_level(
        &self,
        row: &LevelRow,
        model: &PreparedModel,
        reporter: &mut dyn SweepReporter,
    ) -> Result<bool> {
        reporter.sweep(&SweepEvent::Quality {
            level: &row.level,
            reference: false,
        });
        let mode = QualityMode::Compare {
            reference: self.ref_file.clone(),
        };
        let r = run_quality_worker(self.ctx, self.plan(&model.info.path, mode), reporter).await;
        let store = self.ctx.store;
        match r {
            Ok((figures, ms, rss)) => {
                store
                    .put_quality(&self.key(&model.info.sha256), &figures, ms, rss)
                    .await?;
                store.set_level_quality_error(row.id, None).await?;
                reporter.sweep(&SweepEvent::QualityDone {
                    level: &row.level,
                    figures: Some(&figures),
                    error: None,
                });
                Ok(true)
            }
            Err(f) => {
                store
                    .set_level_quality_error(row.id, Some(&f.message))
                    .await?;
                reporter.sweep(&SweepEvent::QualityDone {
                    level: &row.level,
                    figures: None,
                    error: Some(&f.message),
                });
                Ok(!f.is_cancelled())
            }
        }
    }
}

/// A quality worker's figures, wall time (ms) and peak memory.
type Scored = (QualityFigures, f64, Option<u64>);

/// One quality worker: its figures, wall time (ms) and peak memory, or why
/// it failed.
async fn run_quality_worker(
    ctx: &BenchContext<'_>,
    plan: QualityPlan,
    reporter: &mut dyn SweepReporter,
) -> std::result::Result<Scored, WorkerFailure> {
    let t0 = Instant::now();
    let (tx, mut rx) = mpsc::unbounded_channel();
    let handle = tokio::spawn(ctx.worker.launch(
        WorkerRequest::Quality(plan),
        ctx.cancel.clone(),
        tx,
    ));
    let mut figures = None;
    let mut rss = None;
    while let Some(ev) = rx.recv().await {
        match ev {
            Event::Progress { done, total } => {
                reporter.sweep(&SweepEvent::QualityProgress { done, total })
            }
            Event::Quality { figures: f } => figures = Some(f),
            Event::Done { peak_rss_bytes } => rss = Some(peak_rss_bytes),
            _ => {}
        }
    }
    let ended = handle
        .await
        .unwrap_or_else(|e| Ended::Crashed(format!("the quality supervisor failed: {e}")));
    let ms = t0.elapsed().as_secs_f64() * 1e3;
    match (ended.failure("quality pass"), figures) {
        (None, Some(f)) => Ok((f, ms, rss)),
        (None, None) => Err(WorkerFailure::new(
            FailureCode::QualityFailed,
            "the worker finished without figures",
        )),
        (Some(failure), _) => Err(failure),
    }
}
