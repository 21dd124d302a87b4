//! Models on this machine and the places a person added to find them: a
//! folder searched for GGUF files, or one GGUF file picked on its own (the
//! app's "Open a GGUF…" and a file dropped on its window). `dyno models
//! add|remove|added` and the app's Models view both go through here.
//!
//! A place is checked when it is added (it exists, a file is a readable
//! GGUF) so a typo or a corrupt download is refused with a reason at once,
//! not listed later as a mystery. A place that disappears afterwards (an
//! unplugged drive) stays listed as missing until it is removed: removing it
//! silently would surprise the person who plugs the drive back in.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::error::{DynoError, Result};
use crate::hub::discover::{discover, Found, Roots};
use crate::hub::files::Fit;
use crate::machine::Machine;
use crate::store::Store;

/// What a place is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "snake_case")]
pub enum PlaceKind {
    Folder,
    File,
    /// Gone since it was added (a moved folder, an unplugged drive).
    Missing,
}

/// A folder or file added to the places Dyno searches.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct ModelPlace {
    pub path: PathBuf,
    pub kind: PlaceKind,
}

impl ModelPlace {
    fn at(path: PathBuf) -> ModelPlace {
        let kind = if path.is_dir() {
            PlaceKind::Folder
        } else if path.is_file() {
            PlaceKind::File
        } else {
            PlaceKind::Missing
        };
        ModelPlace { path, kind }
    }
}

/// The answer to adding a place.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[cfg_attr(feature = "ts", ts(rename = "PlaceAdded"))]
pub struct Added {
    pub place: ModelPlace,
    /// False when the place was already there (adding twice is harmless).
    pub added: bool,
    /// The models found under it now, so the caller can say "3 models".
    pub models: Vec<LocalModel>,
}

/// A model file on disk, as the CLI's `dyno models --json` and the app list
/// it. Named by its file first (what a person sees in their file manager),
/// with the model's own name from its header second.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct LocalModel {
    /// "hf-cache", "lm-studio", "ollama" or "folder".
    pub origin: &'static str,
    /// The name its tool uses: `owner/repo/file` for the HF cache and LM
    /// Studio, `model:tag` for Ollama, the file name for added places.
    pub name: String,
    /// The file's own name.
    pub file_name: String,
    /// `general.name` from the header, when the file has one.
    pub model_name: Option<String>,
    pub path: PathBuf,
    pub arch: Option<String>,
    pub quant: Option<String>,
    pub size_bytes: Option<u64>,
    pub n_params: Option<u64>,
    pub fit: Option<Fit>,
    /// What a file `dyno synth` wrote stands for ("twin of SmolLM2 135M,
    /// seed 1"); null for a real model.
    pub synthetic: Option<String>,
    /// Why the header could not be read, for a file that is listed anyway.
    pub error: Option<String>,
    /// Predicted speed, fit and quality on this machine
    /// ([`crate::app::predict`]); null until asked for, or when the header
    /// could not be read.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub prediction: Option<crate::predict::Prediction>,
}

/// Total RAM and the GPUs' VRAM, for fit badges.
pub fn memory() -> (u64, u64) {
    memory_of(&Machine::detect())
}

/// [`memory`] for a machine already read.
pub fn memory_of(machine: &Machine) -> (u64, u64) {
    let vram = crate::telemetry::gpu::inventory()
        .iter()
        .filter_map(|g| g.memory_total_bytes)
        .sum();
    (machine.memory_bytes, vram)
}

fn local(f: &Found, (ram, vram): (u64, u64)) -> LocalModel {
    let file_name = f
        .path
        .file_name()
        .unwrap_or_default()
        .to_string_lossy()
        .into_owned();
    LocalModel {
        origin: f.origin.as_str(),
        name: f.name.clone(),
        file_name,
        model_name: f.info.as_ref().and_then(|i| i.name.clone()),
        path: f.path.clone(),
        arch: f.info.as_ref().map(|i| i.arch.clone()),
        quant: f.info.as_ref().map(|i| i.quant.clone()),
        size_bytes: f.info.as_ref().map(|i| i.size_bytes),
        n_params: f.info.as_ref().map(|i| i.n_params),
        fit: f.info.as_ref().map(|i| Fit::of(i.size_bytes, ram, vram)),
        synthetic: f.info.as_ref().and_then(|i| i.synthetic.clone()),
        error: f.error.clone(),
        prediction: None,
    }
}

/// The places added so far, oldest first.
pub async fn places(store: &Store) -> Result<Vec<ModelPlace>> {
    Ok(store
        .model_dirs()
        .await?
        .into_iter()
        .map(|p| ModelPlace::at(PathBuf::from(p)))
        .collect())
}

async fn discover_in(dirs: Vec<PathBuf>, with_default_roots: bool) -> Result<Vec<Found>> {
    tokio::task::spawn_blocking(move || {
        let roots = if with_default_roots {
            Roots::from_env(dirs)
        } else {
            Roots::only(dirs)
        };
        discover(&roots)
    })
    .await
    .map_err(|e| DynoError::Internal(format!("model discovery failed: {e}")))
}

/// Every model on disk: the Hugging Face cache, LM Studio, Ollama and the
/// added places.
pub async fn found(store: &Store) -> Result<Vec<Found>> {
    let dirs = places(store).await?.into_iter().map(|p| p.path).collect();
    discover_in(dirs, true).await
}

/// [`found`], with each model's fit on this machine.
pub async fn local_models(store: &Store) -> Result<Vec<LocalModel>> {
    let found = found(store).await?;
    Ok(rows(&found, memory()))
}

/// Rows for `found` at the given (RAM, VRAM).
pub fn rows(found: &[Found], memory: (u64, u64)) -> Vec<LocalModel> {
    found.iter().map(|f| local(f, memory)).collect()
}

/// Add a folder to search, or one GGUF file to list. The path is made
/// absolute and resolved, so the same place typed two ways is added once.
pub async fn add_place(store: &Store, path: &Path) -> Result<Added> {
    let typed = path.display().to_string();
    if typed.trim().is_empty() {
        return Err(DynoError::BadInput(
            "no path given; choose a folder that holds .gguf files, or a .gguf file".into(),
        ));
    }
    let abs = std::fs::canonicalize(path).map_err(|e| {
        DynoError::BadInput(format!(
            "cannot add {typed}: {e}; choose an existing folder or .gguf file"
        ))
    })?;
    if abs.is_file() {
        let is_gguf = abs
            .extension()
            .is_some_and(|x| x.eq_ignore_ascii_case("gguf"));
        if !is_gguf {
            return Err(DynoError::BadInput(format!(
                "{} is not a .gguf file; choose a GGUF model file, or the folder that holds them",
                abs.display()
            )));
        }
        // A corrupt or truncated file is refused now, with the reader's reason.
        crate::model::inspect(&abs).map_err(|e| {
            DynoError::BadInput(format!(
                "{} is not a readable GGUF model ({e}); download it again or choose another file",
                abs.display()
            ))
        })?;
    } else if !abs.is_dir() {
        return Err(DynoError::BadInput(format!(
            "{} is neither a folder nor a file; choose a folder that holds .gguf files",
            abs.display()
        )));
    }
    let added = store.add_model_dir(&abs.display().to_string()).await?;
    let found = discover_in(vec![abs.clone()], false).await?;
    Ok(Added {
        place: ModelPlace::at(abs),
        added,
        models: rows(&found, memory()),
    })
}

/// Stop searching a place. `path` is matched as stored, else resolved, so a
/// place that no longer exists can still be removed. False when it was not
/// there.
pub async fn remove_place(store: &Store, path: &Path) -> Result<bool> {
    let typed = path.display().to_string();
    if store.remove_model_dir(&typed).await? {
        return Ok(true);
    }
    match std::fs::canonicalize(path) {
        Ok(abs) => store.remove_model_dir(&abs.display().to_string()).await,
        Err(_) => Ok(false),
    }
}
