//! Predictions as both front ends ask for them: `dyno predict`, the columns
//! of `dyno hub ls` and `dyno models`, and the app's figures beside every
//! level and every model on disk.
//!
//! A target is a GGUF file on disk or a hub repo (`OWNER/NAME`, optionally
//! `:LEVEL`). A hub level's header comes from ranged requests
//! ([`crate::hub::header`]), so nothing is downloaded but the header.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::models::memory_of;
use crate::error::{DynoError, Result};
use crate::hub::files::RepoLevel;
use crate::hub::Hub;
use crate::machine::Machine;
use crate::model::gguf::Header;
use crate::predict::{self, Advice, Calibration, PredictConditions, Prediction, Subject};
use crate::store::Store;

/// What to predict for; unset fields take llama-bench's defaults and this
/// machine's thread count.
#[derive(Debug, Clone, Default, serde::Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct PredictInput {
    /// A GGUF path, or `OWNER/NAME[:LEVEL]` on the hub.
    pub target: String,
    #[cfg_attr(feature = "ts", ts(optional))]
    pub ctx: Option<u64>,
    #[cfg_attr(feature = "ts", ts(optional))]
    pub threads: Option<u32>,
    #[cfg_attr(feature = "ts", ts(optional))]
    pub n_prompt: Option<u64>,
    #[cfg_attr(feature = "ts", ts(optional))]
    pub n_gen: Option<u64>,
    /// `-ngl`; unset offloads everything where the build has a GPU backend.
    #[cfg_attr(feature = "ts", ts(optional))]
    pub gpu_layers: Option<u32>,
    /// Decode rate a level must reach to be advised.
    #[cfg_attr(feature = "ts", ts(optional))]
    pub min_decode: Option<f64>,
}

/// One level's prediction, or why there is none.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct PredictedLevel {
    pub level: String,
    pub size_bytes: u64,
    pub prediction: Option<Prediction>,
    pub error: Option<String>,
}

/// The answer to `dyno predict`.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct PredictOutcome {
    pub target: String,
    /// "file" or "hub".
    pub source: String,
    pub repo: Option<String>,
    pub commit: Option<String>,
    pub levels: Vec<PredictedLevel>,
    /// Which level to take (for a repo of several levels).
    pub advice: Option<Advice>,
    /// Header bytes requested from the hub now, and the files' bytes, so the
    /// saving is visible.
    pub header_bytes_fetched: u64,
    pub file_bytes: u64,
    /// Stored runs the rates were fitted on (0: priors only).
    pub calibration_runs: usize,
}

/// What every prediction of one request shares, read once: this machine's
/// calibration, the conditions asked for, and its RAM and VRAM.
pub struct Prepared {
    pub cal: Calibration,
    pub conditions: PredictConditions,
    pub memory: (u64, u64),
}

/// This machine's id, bandwidth (measured once and cached), calibration
/// and memory, and the conditions `input` asks for.
pub async fn prepare(store: &Store, input: &PredictInput) -> Result<Prepared> {
    let machine = Machine::detect();
    let machine_id = store.upsert_machine(&machine).await?;
    super::hw::ensure_inventory(store, machine_id, &machine, false).await?;
    let threads = input.threads.unwrap_or_else(|| machine.default_threads());
    let cal = predict::calibrate(store, machine_id, threads).await?;
    let conditions = PredictConditions {
        threads,
        // Resolved per model against its layer count.
        gpu_layers: input.gpu_layers.map_or(u64::MAX, u64::from),
        n_prompt: input.n_prompt.unwrap_or(512),
        n_gen: input.n_gen.unwrap_or(128),
        ctx: input.ctx.unwrap_or(predict::DEFAULT_CTX),
    };
    Ok(Prepared {
        cal,
        conditions,
        memory: memory_of(&machine),
    })
}

fn resolved(c: PredictConditions, h: &Header) -> PredictConditions {
    let n_layers = crate::vocab::MemoryProfile::of(h).n_layers;
    let ngl = (c.gpu_layers != u64::MAX).then(|| c.gpu_layers.min(u64::from(u32::MAX)) as u32);
    PredictConditions {
        gpu_layers: predict::gpu_layers_of(ngl, n_layers),
        ..c
    }
}

/// Predict a file on disk. Its sha256 is looked up (never computed: a big
/// file takes a while) so a measured KLD and its own runs count.
pub async fn predict_file(store: &Store, pre: &Prepared, path: &Path) -> Result<Prediction> {
    let p = path.to_path_buf();
    let header = tokio::task::spawn_blocking(move || crate::model::gguf::read_model_header(&p))
        .await
        .map_err(|e| DynoError::Worker(format!("the header reader failed: {e}")))?
        .map_err(|source| DynoError::BadModel {
            path: path.to_path_buf(),
            source,
        })?;
    let sha = match crate::model::file_stamp(path) {
        Ok((size, mtime)) => store.cached_sha256(path, size, mtime).await?,
        Err(_) => None,
    };
    let kld = match &sha {
        Some(s) => store.measured_kld(s).await?,
        None => None,
    };
    let file = path
        .file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let subject = Subject {
        level: "",
        file: &file,
        sha256: sha.as_deref(),
        header: &header,
        measured_kld: kld,
    };
    Ok(predict::predict(
        &pre.cal,
        &subject,
        resolved(pre.conditions, &header),
        pre.memory,
    ))
}

/// Predict one hub level from its header.
pub async fn predict_level(
    store: &Store,
    hub: &Hub,
    pre: &Prepared,
    repo: &str,
    commit: &str,
    level: &RepoLevel,
) -> (PredictedLevel, u64) {
    let out = |prediction, error, fetched| {
        (
            PredictedLevel {
                level: level.level.clone(),
                size_bytes: level.size_bytes,
                prediction,
                error,
            },
            fetched,
        )
    };
    let fetched = match crate::hub::header::fetch_header(hub, repo, commit, &level.files).await {
        Ok(f) => f,
        Err(e) => return out(None, Some(e.to_string()), 0),
    };
    let first = &level.files[0];
    let sha = first.sha256.clone();
    let kld = match &sha {
        Some(s) => store.measured_kld(s).await.ok().flatten(),
        None => None,
    };
    let subject = Subject {
        level: &level.level,
        file: &first.path,
        sha256: sha.as_deref(),
        header: &fetched.header,
        measured_kld: kld,
    };
    let p = predict::predict(
        &pre.cal,
        &subject,
        resolved(pre.conditions, &fetched.header),
        pre.memory,
    );
    out(Some(p), None, fetched.fetched_bytes)
}

/// `OWNER/NAME[:LEVEL]` split, when `target` is not a file on disk.
pub(crate) fn hub_target(target: &str) -> Option<(&str, Option<&str>)> {
    let (repo, level) = match target.split_once(':') {
        Some((r, l)) => (r, Some(l)),
        None => (target, None),
    };
    (repo.matches('/').count() == 1 && !Path::new(target).exists()).then_some((repo, level))
}

/// `dyno predict TARGET`.
pub async fn predict(
    store: &Store,
    hub_flag: Option<&str>,
    input: &PredictInput,
) -> Result<PredictOutcome> {
    let pre = prepare(store, input).await?;
    let calibration_runs = pre
        .cal
        .fits
        .values()
        .flat_map(|f| f.runs.iter().copied())
        .collect::<std::collections::BTreeSet<i64>>()
        .len();
    let min_decode = input.min_decode.unwrap_or(predict::DEFAULT_MIN_DECODE);
    let path = super::expand_home(&input.target);
    if path.is_file() || hub_target(&input.target).is_none() {
        if !path.exists() {
            return Err(DynoError::BadInput(format!(
                "{} is neither a file nor OWNER/NAME[:LEVEL]; give a GGUF path or a hub repo such as \
                 bartowski/Llama-3.2-1B-Instruct-GGUF:Q4_K_M",
                input.target
            )));
        }
        let p = predict_file(store, &pre, &path).await?;
        let size = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
        return Ok(PredictOutcome {
            target: input.target.clone(),
            source: "file".into(),
            repo: None,
            commit: None,
            levels: vec![PredictedLevel {
                level: p.level.clone(),
                size_bytes: size,
                prediction: Some(p),
                error: None,
            }],
            advice: None,
            header_bytes_fetched: 0,
            file_bytes: size,
            calibration_runs,
        });
    }
    let (repo, want) = hub_target(&input.target).expect("checked above");
    let hub = super::hub::open(store, hub_flag).await?;
    let listing = super::hub::repo_listing(&hub, repo).await?;
    let levels: Vec<&RepoLevel> = listing
        .levels
        .iter()
        .filter(|l| want.is_none_or(|w| l.level.eq_ignore_ascii_case(w)))
        .collect();
    if levels.is_empty() {
        let have: Vec<&str> = listing.levels.iter().map(|l| l.level.as_str()).collect();
        return Err(DynoError::BadInput(match want {
            Some(w) => format!(
                "{repo} has no level {w}; it has {}",
                if have.is_empty() {
                    "no GGUF files".into()
                } else {
                    have.join(", ")
                }
            ),
            None => format!("{repo} has no GGUF files to predict"),
        }));
    }
    let mut out = Vec::new();
    let mut fetched = 0;
    let mut file_bytes = 0;
    for l in levels {
        let (p, n) = predict_level(store, &hub, &pre, &listing.repo, &listing.commit, l).await;
        fetched += n;
        file_bytes += l.size_bytes;
        out.push(p);
    }
    let preds: Vec<Prediction> = out.iter().filter_map(|l| l.prediction.clone()).collect();
    let advice = (preds.len() > 1).then(|| predict::advise(&preds, min_decode));
    Ok(PredictOutcome {
        target: input.target.clone(),
        source: "hub".into(),
        repo: Some(listing.repo.clone()),
        commit: Some(listing.commit.clone()),
        levels: out,
        advice,
        header_bytes_fetched: fetched,
        file_bytes,
        calibration_runs,
    })
}

/// One file on disk, predicted.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct PredictedFile {
    pub path: PathBuf,
    pub prediction: Option<Prediction>,
    /// Why there is none (the header could not be read).
    pub error: Option<String>,
}

/// Predictions for files on disk (the models list), with one calibration
/// for them all; a file that cannot be read gets an error instead.
pub async fn predict_files(
    store: &Store,
    paths: &[PathBuf],
    input: &PredictInput,
) -> Result<Vec<PredictedFile>> {
    let pre = prepare(store, input).await?;
    let mut out = Vec::new();
    for p in paths {
        let r = predict_file(store, &pre, p).await;
        out.push(PredictedFile {
            path: p.clone(),
            error: r.as_ref().err().map(|e| e.to_string()),
            prediction: r.ok(),
        });
    }
    Ok(out)
}

/// `dyno predict --accuracy [--include-disturbed]`.
pub async fn accuracy(
    store: &Store,
    include_disturbed: bool,
) -> Result<predict::accuracy::AccuracyReport> {
    let rows = store.predicted_results().await?;
    Ok(predict::accuracy::report(&rows, include_disturbed))
}

/// Fill each readable model's prediction (one calibration for them all):
/// the rows of `dyno models --json`.
pub async fn fill_models(store: &Store, rows: &mut [super::models::LocalModel]) -> Result<()> {
    let paths: Vec<std::path::PathBuf> = rows
        .iter()
        .filter(|r| r.error.is_none())
        .map(|r| r.path.clone())
        .collect();
    let input = PredictInput::default();
    for f in predict_files(store, &paths, &input).await? {
        if let Some(r) = rows.iter_mut().find(|r| r.path == f.path) {
            r.prediction = f.prediction;
        }
    }
    Ok(())
}
