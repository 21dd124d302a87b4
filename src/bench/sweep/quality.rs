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
use crate::vocab::QualityFigures;
use crate::worker::client::{self, Ended, WorkerFailure};
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
    let store = ctx.store;
    let text_sha = quality::text_sha256();
    let ref_sha = reference.info.sha256.as_str();
    store
        .set_sweep_quality(sweep_id, Some(ref_sha), q.tokens, q.topk)
        .await?;
    fn key<'k>(
        model_sha: &'k str,
        ref_sha: &'k str,
        text_sha: &'k str,
        q: QualitySettings,
    ) -> QualityKey<'k> {
        QualityKey {
            model_sha256: model_sha,
            reference_sha256: ref_sha,
            text_sha256: text_sha,
            chunk_tokens: quality::CHUNK_TOKENS,
            n_chunks: q.n_chunks(),
            topk: q.topk,
        }
    }
    let qkey = |model_sha| key(model_sha, ref_sha, &text_sha, q);
    // Which levels still need a figure (the reference scores itself).
    let mut todo: Vec<&(LevelRow, PreparedModel)> = Vec::new();
    for m in measured {
        if m.1.info.sha256 != ref_sha && store.quality(&qkey(&m.1.info.sha256)).await?.is_some() {
            reporter.sweep(&SweepEvent::Skipped {
                level: &m.0.level,
                why: "quality already measured against the same reference",
            });
            continue;
        }
        todo.push(m);
    }
    let ref_missing = store.quality(&qkey(ref_sha)).await?.is_none();
    let ref_file = reference_path(cache, ref_sha, q);
    let needs_ref_file = todo.iter().any(|m| m.1.info.sha256 != ref_sha) && !ref_file.is_file();
    // Quality is scored once per level, with the first load configuration.
    let model_params = spec
        .request
        .groups()
        .into_iter()
        .next()
        .map(|g| g.model)
        .unwrap_or_default();
    let n_threads = spec.request.n_threads.first().copied().unwrap_or(1);
    let plan = |path: &Path, mode: QualityMode| QualityPlan {
        model_path: path.to_path_buf(),
        model: model_params.clone(),
        n_threads,
        chunk_tokens: quality::CHUNK_TOKENS,
        n_chunks: q.n_chunks(),
        mode,
    };
    let ref_level = measured
        .iter()
        .find(|m| m.1.info.sha256 == ref_sha)
        .map(|m| m.0.level.clone())
        .unwrap_or_else(|| format!("{} (reference)", reference.info.quant));

    if ref_missing || needs_ref_file {
        reporter.sweep(&SweepEvent::Quality {
            level: &ref_level,
            reference: true,
        });
        let dir = ref_file.parent().expect("has a parent");
        let partial = quantize::partial_path(&ref_file);
        let made = match std::fs::create_dir_all(dir) {
            Err(e) => Err(WorkerFailure::new(
                FailureCode::CacheUnwritable,
                format!(
                    "cannot create {}: {e}; set DYNO_CACHE_DIR to a writable folder",
                    dir.display()
                ),
            )),
            Ok(()) => {
                let r = run_quality_worker(
                    ctx,
                    plan(
                        &reference.info.path,
                        QualityMode::Reference {
                            output: partial.clone(),
                            topk: q.topk,
                        },
                    ),
                    reporter,
                )
                .await;
                match r {
                    Ok(v) => std::fs::rename(&partial, &ref_file)
                        .map(|_| v)
                        .map_err(|e| {
                            WorkerFailure::new(
                                FailureCode::CacheUnwritable,
                                format!("cannot move the reference into place: {e}"),
                            )
                        }),
                    Err(e) => Err(e),
                }
            }
        };
        let _ = std::fs::remove_file(&partial);
        match made {
            Ok((figures, ms, rss)) => {
                store.put_quality(&qkey(ref_sha), &figures, ms, rss).await?;
                reporter.sweep(&SweepEvent::QualityDone {
                    level: &ref_level,
                    figures: Some(&figures),
                    error: None,
                });
            }
            Err(f) => {
                let why = format!("the reference pass on {ref_level} failed: {}", f.message);
                for m in &todo {
                    store.set_level_quality_error(m.0.id, Some(&why)).await?;
                }
                reporter.sweep(&SweepEvent::QualityDone {
                    level: &ref_level,
                    figures: None,
                    error: Some(&why),
                });
                if f.is_cancelled() {
                    ctx.cancel.cancel();
                }
                return Ok(());
            }
        }
    }
    for (row, model) in todo.into_iter().map(|m| (&m.0, &m.1)) {
        if model.info.sha256 == ref_sha {
            store.set_level_quality_error(row.id, None).await?;
            continue;
        }
        if ctx.cancel.is_cancelled() {
            break;
        }
        reporter.sweep(&SweepEvent::Quality {
            level: &row.level,
            reference: false,
        });
        let r = run_quality_worker(
            ctx,
            plan(
                &model.info.path,
                QualityMode::Compare {
                    reference: ref_file.clone(),
                },
            ),
            reporter,
        )
        .await;
        match r {
            Ok((figures, ms, rss)) => {
                store
                    .put_quality(&qkey(&model.info.sha256), &figures, ms, rss)
                    .await?;
                store.set_level_quality_error(row.id, None).await?;
                reporter.sweep(&SweepEvent::QualityDone {
                    level: &row.level,
                    figures: Some(&figures),
                    error: None,
                });
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
                if f.is_cancelled() {
                    break;
                }
            }
        }
    }
    Ok(())
}

/// One quality worker: its figures, wall time (ms) and peak memory, or why
/// it failed.
async fn run_quality_worker(
    ctx: &BenchContext<'_>,
    plan: QualityPlan,
    reporter: &mut dyn SweepReporter,
) -> std::result::Result<(QualityFigures, f64, Option<u64>), WorkerFailure> {
    let t0 = Instant::now();
    let (tx, mut rx) = mpsc::unbounded_channel();
    let handle = tokio::spawn(client::run(
        WorkerRequest::Quality(plan),
        ctx.worker.clone(),
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
