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

use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use tokio::sync::mpsc;

use super::plan::BenchRequest;
use super::run::{prepare_model, run_model, BenchContext, BenchOutcome, PreparedModel};
use super::Reporter;
use crate::error::{DynoError, Result};
use crate::model::{self, ModelInfo};
use crate::quality;
use crate::quantize::{self, QuantizeProgress};
use crate::store::{LevelRow, QualityKey};
use crate::worker::client::{self, Ended};
use crate::worker::protocol::{Event, QualityFigures, QualityMode, QualityPlan, WorkerRequest};

/// Where a sweep's levels come from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// GGUF files of one model.
    Files(Vec<PathBuf>),
    /// Every GGUF file in a folder.
    Dir(PathBuf),
    /// One high-precision GGUF, quantised locally into the ladder.
    From(PathBuf),
    /// A Hugging Face repo: its levels are downloaded, then swept as files.
    Repo(String),
}

impl Source {
    pub fn kind(&self) -> &'static str {
        match self {
            Source::Files(_) => "files",
            Source::Dir(_) => "dir",
            Source::From(_) => "from",
            Source::Repo(_) => "repo",
        }
    }
}

/// How quality is measured.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct QualitySettings {
    /// Tokens of text evaluated (rounded up to whole chunks).
    pub tokens: u32,
    /// Reference top-k kept per position; 0 keeps the whole vocabulary.
    pub topk: u32,
}

impl QualitySettings {
    pub fn n_chunks(&self) -> u32 {
        quality::n_chunks(self.tokens)
    }
}

/// Everything that defines a sweep; stored as its `args_json`, so
/// `--resume ID` can run it again.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SweepSpec {
    pub source: Source,
    /// Canonical level names; `None` takes the default ladder (for `from`)
    /// or every file (for `files` and `dir`).
    pub levels: Option<Vec<String>>,
    pub request: BenchRequest,
    /// `None`: `--no-quality`.
    pub quality: Option<QualitySettings>,
}

impl SweepSpec {
    /// Identity of the work on this machine: the same key means the same
    /// sweep, which is then resumed rather than started again.
    pub fn resume_key(&self, machine_fingerprint: &str) -> String {
        let mut h = Sha256::new();
        h.update(serde_json::to_vec(&self.canonical()).expect("spec serialises"));
        h.update(machine_fingerprint.as_bytes());
        h.finalize().iter().map(|b| format!("{b:02x}")).collect()
    }

    /// The spec with absolute paths, so `./a.gguf` and `/x/a.gguf` match.
    pub fn canonical(&self) -> SweepSpec {
        let abs = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
        let mut s = self.clone();
        s.source = match &self.source {
            Source::Files(f) => Source::Files(f.iter().map(|p| abs(p)).collect()),
            Source::Dir(d) => Source::Dir(abs(d)),
            Source::From(b) => Source::From(abs(b)),
            Source::Repo(r) => Source::Repo(r.clone()),
        };
        s
    }
}

/// How a level's file is obtained.
#[derive(Debug, Clone, PartialEq)]
pub enum Origin {
    /// A file the user gave (or found in the folder).
    File,
    /// The `--from` input itself, when its type is one of the levels.
    Base,
    /// Made from the base by llama.cpp's quantizer.
    Quantized,
}

impl Origin {
    pub fn as_str(&self) -> &'static str {
        match self {
            Origin::File => "file",
            Origin::Base => "base",
            Origin::Quantized => "quantized",
        }
    }
}

/// One level as resolved from the source, before anything runs.
#[derive(Debug, Clone)]
pub struct LevelPlan {
    pub level: String,
    pub origin: Origin,
    pub path: Option<PathBuf>,
    /// Bits per weight: the file's own for files, nominal for levels still
    /// to be made. Orders levels by precision.
    pub bpw: f64,
    /// A file whose header is unusable: the level fails with this message.
    pub bad_file: Option<String>,
}

/// A source resolved into levels.
#[derive(Debug, Clone)]
pub struct Resolved {
    pub levels: Vec<LevelPlan>,
    /// The `--from` input.
    pub base: Option<ModelInfo>,
    pub warnings: Vec<String>,
}

fn is_gguf_level_file(p: &Path) -> bool {
    let name = p
        .file_name()
        .map(|n| n.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    // Projectors and importance matrices live beside models but are not
    // quantisation levels.
    name.ends_with(".gguf") && !name.contains("mmproj") && !name.contains("imatrix")
}

/// Turn a source into levels, highest precision first. Reads headers only.
pub fn resolve(spec: &SweepSpec) -> Result<Resolved> {
    match &spec.source {
        Source::Files(files) => resolve_files(files, spec.levels.as_deref()),
        Source::Dir(dir) => {
            let rd = std::fs::read_dir(dir).map_err(|e| {
                DynoError::BadInput(format!(
                    "cannot read the folder {}: {e}; check the path given to --dir",
                    dir.display()
                ))
            })?;
            let mut files: Vec<PathBuf> = rd
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.is_file() && is_gguf_level_file(p))
                .collect();
            files.sort();
            if files.is_empty() {
                return Err(DynoError::BadInput(format!(
                    "no .gguf model files in {}; put the levels there or use --files",
                    dir.display()
                )));
            }
            resolve_files(&files, spec.levels.as_deref())
        }
        Source::From(base) => resolve_from(base, spec.levels.as_deref()),
        // Resolving a repo needs the network: the caller downloads its
        // levels (`cli::sweep` does, through `hub`) and resolves the files.
        Source::Repo(repo) => Err(DynoError::BadInput(format!(
            "--repo {repo}: download the repo's levels first (`dyno sweep --repo` does), then sweep the files"
        ))),
    }
}

/// Levels from files of one model (also the downloaded files of a repo).
pub fn resolve_files(files: &[PathBuf], only: Option<&[String]>) -> Result<Resolved> {
    let mut levels: Vec<LevelPlan> = Vec::new();
    let mut first: Option<ModelInfo> = None;
    for path in files {
        match model::inspect(path) {
            Ok(info) => {
                let level = info.quant.to_ascii_uppercase();
                if only.is_some_and(|o| !o.iter().any(|l| l.eq_ignore_ascii_case(&level))) {
                    continue;
                }
                if let Some(f) = &first {
                    if f.arch != info.arch || f.n_params != info.n_params {
                        return Err(DynoError::BadInput(format!(
                            "{} ({} {}) and {} ({} {}) are different models; a sweep compares the levels of one model",
                            f.path.display(),
                            f.arch,
                            crate::report::human_params(f.n_params),
                            path.display(),
                            info.arch,
                            crate::report::human_params(info.n_params)
                        )));
                    }
                }
                if let Some(dup) = levels.iter().find(|l| l.level == level) {
                    return Err(DynoError::BadInput(format!(
                        "{} and {} are both {level}; give one file per level",
                        dup.path.as_deref().unwrap_or(Path::new("?")).display(),
                        path.display()
                    )));
                }
                levels.push(LevelPlan {
                    level,
                    origin: Origin::File,
                    path: Some(path.clone()),
                    bpw: info.bits_per_weight(),
                    bad_file: None,
                });
                first.get_or_insert(info);
            }
            Err(e) => {
                // The level fails, the others still run; it is named by its
                // file since its header cannot say what it is.
                let name = path
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_else(|| path.display().to_string());
                levels.push(LevelPlan {
                    level: name,
                    origin: Origin::File,
                    path: Some(path.clone()),
                    bpw: 0.0,
                    bad_file: Some(e.to_string()),
                });
            }
        }
    }
    if levels.is_empty() {
        return Err(DynoError::BadInput(
            "none of the files is one of the levels asked for with --levels".into(),
        ));
    }
    levels.sort_by(|a, b| b.bpw.total_cmp(&a.bpw));
    Ok(Resolved {
        levels,
        base: None,
        warnings: Vec::new(),
    })
}

fn resolve_from(base: &Path, only: Option<&[String]>) -> Result<Resolved> {
    let info = model::inspect(base)?;
    let base_quant = info.quant.to_ascii_uppercase();
    let names: Vec<String> = match only {
        Some(l) => l.to_vec(),
        None => quantize::DEFAULT_LADDER
            .iter()
            .map(|s| s.to_string())
            .collect(),
    };
    let mut warnings = Vec::new();
    if !matches!(base_quant.as_str(), "F32" | "F16" | "BF16") {
        warnings.push(format!(
            "{} is already quantised ({base_quant}): the levels are requantised from it, and their quality is measured against {base_quant}, not the original weights. For true figures start from an F16, BF16 or F32 file.",
            base.display()
        ));
    }
    let mut levels: Vec<LevelPlan> = names
        .into_iter()
        .map(|level| {
            let is_base = level.eq_ignore_ascii_case(&base_quant);
            LevelPlan {
                bpw: if is_base {
                    info.bits_per_weight()
                } else {
                    quantize::nominal_bpw(&level)
                },
                origin: if is_base {
                    Origin::Base
                } else {
                    Origin::Quantized
                },
                path: is_base.then(|| base.to_path_buf()),
                level,
                bad_file: None,
            }
        })
        .collect();
    levels.sort_by(|a, b| b.bpw.total_cmp(&a.bpw));
    Ok(Resolved {
        levels,
        base: Some(info),
        warnings,
    })
}

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
        status: &'a str,
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

/// What the sweep did.
#[derive(Debug, Default, Clone)]
pub struct SweepOutcome {
    pub cancelled: bool,
    pub ok: usize,
    pub failed: usize,
    /// Levels that failed because of their file (bad header, load failure).
    pub bad_input: usize,
}

/// sha256 of the bundled quality text, part of every quality key.
pub fn text_sha256() -> String {
    Sha256::digest(quality::TEXT.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
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
    let store = ctx.store;
    let mut out = SweepOutcome::default();
    for w in &resolved.warnings {
        reporter.sweep(&SweepEvent::Warning(w));
    }
    let cache = quantize::cache_root();
    let n_threads = spec.request.n_threads.first().copied().unwrap_or(1);
    // Levels whose speed is measured, with their model, for the quality pass.
    let mut measured: Vec<(LevelRow, PreparedModel)> = Vec::new();
    let base = match &resolved.base {
        Some(b) => Some(prepare_model(store, &b.path).await?),
        None => None,
    };
    let total = resolved.levels.len();
    for (i, lp) in resolved.levels.iter().enumerate() {
        if ctx.cancel.is_cancelled() {
            out.cancelled = true;
            break;
        }
        let path_str = lp.path.as_ref().map(|p| p.display().to_string());
        let row = store
            .upsert_level(
                sweep_id,
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
            store
                .finish_level(row.id, "failed", Some(("bad_file", why)))
                .await?;
            reporter.sweep(&SweepEvent::LevelFinished {
                level: &lp.level,
                status: "failed",
                error: Some(why),
            });
            out.failed += 1;
            out.bad_input += 1;
            continue;
        }

        // The level's file: given, the base itself, or quantised (cached).
        let mut quantize_ms = None;
        let path = match (&lp.origin, &base) {
            (Origin::Quantized, Some(b)) => {
                reporter.sweep(&SweepEvent::Quantizing { level: &lp.level });
                let expected =
                    (b.info.n_params as f64 * quantize::nominal_bpw(&lp.level) / 8.0) as u64;
                let q = quantize::quantize_cached(
                    &b.info.path,
                    &b.info.sha256,
                    !matches!(b.info.quant.as_str(), "F32" | "F16" | "BF16"),
                    expected,
                    &lp.level,
                    n_threads,
                    &cache,
                    &ctx.worker,
                    &ctx.cancel,
                    reporter,
                )
                .await;
                match q {
                    Ok(q) => {
                        reporter.sweep(&SweepEvent::Quantized {
                            level: &lp.level,
                            path: &q.path,
                            cached: !q.fresh,
                        });
                        if q.fresh {
                            quantize_ms = Some(q.elapsed_ms);
                        }
                        q.path
                    }
                    Err(f) => {
                        let status = if f.cancelled { "cancelled" } else { "failed" };
                        store
                            .finish_level(row.id, status, Some((&f.code, &f.message)))
                            .await?;
                        reporter.sweep(&SweepEvent::LevelFinished {
                            level: &lp.level,
                            status,
                            error: Some(&f.message),
                        });
                        if f.cancelled {
                            out.cancelled = true;
                            break;
                        }
                        out.failed += 1;
                        continue;
                    }
                }
            }
            _ => lp.path.clone().expect("files and the base have a path"),
        };

        let model = match prepare_model(store, &path).await {
            Ok(m) => m,
            Err(e @ (DynoError::BadModel { .. } | DynoError::Io { .. })) => {
                let msg = e.to_string();
                store
                    .finish_level(row.id, "failed", Some(("bad_file", &msg)))
                    .await?;
                reporter.sweep(&SweepEvent::LevelFinished {
                    level: &lp.level,
                    status: "failed",
                    error: Some(&msg),
                });
                out.failed += 1;
                out.bad_input += 1;
                continue;
            }
            Err(e) => return Err(e),
        };
        let measured_sha = match row.model_id {
            Some(id) if row.status == "ok" => Some(store.model(id).await?.sha256),
            _ => None,
        };
        if !fresh && measured_sha.as_deref() == Some(model.info.sha256.as_str()) {
            reporter.sweep(&SweepEvent::Skipped {
                level: &lp.level,
                why: "already measured in this sweep with the same file (sha256), plan and machine",
            });
            out.ok += 1;
            measured.push((row, model));
            continue;
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
        run_model(ctx, &model, &spec.request, reporter, &mut bench_out).await?;
        let runs = store.level_runs(&row).await?;
        let failed = runs.iter().find(|r| r.status != "ok");
        let (status, failure) = if bench_out.cancelled {
            ("cancelled", None)
        } else if let Some(r) = failed {
            (
                "failed",
                Some((
                    r.error_code.clone().unwrap_or_else(|| "failed".into()),
                    r.error.clone().unwrap_or_default(),
                )),
            )
        } else if runs.is_empty() {
            ("failed", Some(("no_runs".into(), "nothing was run".into())))
        } else {
            ("ok", None)
        };
        store
            .finish_level(
                row.id,
                status,
                failure.as_ref().map(|(c, m)| (c.as_str(), m.as_str())),
            )
            .await?;
        reporter.sweep(&SweepEvent::LevelFinished {
            level: &lp.level,
            status,
            error: failure.as_ref().map(|f| f.1.as_str()),
        });
        match status {
            "ok" => {
                out.ok += 1;
                measured.push((row, model));
            }
            "cancelled" => {
                out.cancelled = true;
                break;
            }
            _ => {
                out.failed += 1;
                if failure.as_ref().is_some_and(|f| {
                    matches!(f.0.as_str(), "load_failed" | "unsupported_architecture")
                }) {
                    out.bad_input += 1;
                }
            }
        }
    }

    if let (Some(q), false) = (spec.quality, out.cancelled || ctx.cancel.is_cancelled()) {
        // The reference: the --from input, else the most precise level measured.
        let reference = base
            .clone()
            .or_else(|| measured.first().map(|m| m.1.clone()));
        if let Some(reference) = reference {
            quality_pass(
                ctx, spec, sweep_id, q, &reference, &measured, &cache, reporter,
            )
            .await?;
        }
        if ctx.cancel.is_cancelled() {
            out.cancelled = true;
        }
    }
    Ok(out)
}

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
async fn quality_pass(
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
    let text_sha = text_sha256();
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
            Err(e) => Err((
                "cache_unwritable".to_string(),
                format!(
                    "cannot create {}: {e}; set DYNO_CACHE_DIR to a writable folder",
                    dir.display()
                ),
                false,
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
                            (
                                "cache_unwritable".to_string(),
                                format!("cannot move the reference into place: {e}"),
                                false,
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
            Err((_, message, cancelled)) => {
                let why = format!("the reference pass on {ref_level} failed: {message}");
                for m in &todo {
                    store.set_level_quality_error(m.0.id, Some(&why)).await?;
                }
                reporter.sweep(&SweepEvent::QualityDone {
                    level: &ref_level,
                    figures: None,
                    error: Some(&why),
                });
                if cancelled {
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
            Err((_, message, cancelled)) => {
                store
                    .set_level_quality_error(row.id, Some(&message))
                    .await?;
                reporter.sweep(&SweepEvent::QualityDone {
                    level: &row.level,
                    figures: None,
                    error: Some(&message),
                });
                if cancelled {
                    break;
                }
            }
        }
    }
    Ok(())
}

/// One quality worker: its figures, wall time (ms) and peak memory, or
/// (code, message, cancelled).
async fn run_quality_worker(
    ctx: &BenchContext<'_>,
    plan: QualityPlan,
    reporter: &mut dyn SweepReporter,
) -> std::result::Result<(QualityFigures, f64, Option<u64>), (String, String, bool)> {
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
    match (ended, figures) {
        (Ended::Done, Some(f)) => Ok((f, ms, rss)),
        (Ended::Done, None) => Err((
            "quality_failed".into(),
            "the worker finished without figures".into(),
            false,
        )),
        (Ended::Fatal { code, message }, _) => Err((code, message, false)),
        (Ended::Crashed(why), _) => Err(("crashed".into(), why, false)),
        (Ended::TimedOut(d), _) => Err((
            "timed_out".into(),
            format!(
                "the quality pass reported nothing for {} s and was killed",
                d.as_secs()
            ),
            false,
        )),
        (Ended::Cancelled, _) => Err(("cancelled".into(), "cancelled by the user".into(), true)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_spec_has_the_same_key_and_a_different_plan_another() {
        let spec = SweepSpec {
            source: Source::From("/nonexistent/base.gguf".into()),
            levels: Some(vec!["Q8_0".into()]),
            request: BenchRequest::defaults(2),
            quality: Some(QualitySettings {
                tokens: 2048,
                topk: 64,
            }),
        };
        let k = spec.resume_key("machine-a");
        assert_eq!(k, spec.clone().resume_key("machine-a"));
        assert_ne!(k, spec.resume_key("machine-b"), "another machine");
        let mut other = spec.clone();
        other.request.reps = 3;
        assert_ne!(k, other.resume_key("machine-a"), "another plan");
        let mut no_q = spec.clone();
        no_q.quality = None;
        assert_ne!(k, no_q.resume_key("machine-a"));
    }

    #[test]
    fn specs_round_trip_through_json_for_resume() {
        let spec = SweepSpec {
            source: Source::Files(vec!["a.gguf".into(), "b.gguf".into()]),
            levels: None,
            request: BenchRequest::defaults(4),
            quality: None,
        };
        let back: SweepSpec = serde_json::from_str(&serde_json::to_string(&spec).unwrap()).unwrap();
        assert_eq!(back.source, spec.source);
        assert_eq!(back.request.n_threads, [4]);
    }

    #[test]
    fn repo_sources_need_their_files_downloaded_first() {
        let spec = SweepSpec {
            source: Source::Repo("owner/name".into()),
            levels: None,
            request: BenchRequest::defaults(2),
            quality: None,
        };
        let e = resolve(&spec).unwrap_err().to_string();
        assert!(e.contains("download the repo's levels first"), "{e}");
    }

    #[test]
    fn projector_and_imatrix_files_are_not_levels() {
        assert!(is_gguf_level_file(Path::new("/m/model-Q4_K_M.gguf")));
        assert!(!is_gguf_level_file(Path::new("/m/mmproj-model-f16.gguf")));
        assert!(!is_gguf_level_file(Path::new("/m/model.imatrix.gguf")));
        assert!(!is_gguf_level_file(Path::new("/m/notes.txt")));
    }
}
