//! Models already on disk: the Hugging Face cache, LM Studio's folders,
//! Ollama's store (manifests resolved to blobs, named as Ollama names them)
//! and folders the user adds. Headers only: nothing is copied or loaded.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::model::{self, ModelInfo};

/// Where a model was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Origin {
    HfCache,
    LmStudio,
    Ollama,
    UserDir,
}

impl Origin {
    pub fn as_str(self) -> &'static str {
        match self {
            Origin::HfCache => "hf-cache",
            Origin::LmStudio => "lm-studio",
            Origin::Ollama => "ollama",
            Origin::UserDir => "folder",
        }
    }
}

/// A model file found on disk, with its header or why it is unreadable.
#[derive(Debug, Clone, Serialize)]
pub struct Found {
    pub origin: Origin,
    /// The name its tool uses: `owner/repo/file` for the HF cache and LM
    /// Studio, `model:tag` for Ollama, the file name for folders.
    pub name: String,
    pub path: PathBuf,
    pub info: Option<ModelInfo>,
    pub error: Option<String>,
}

/// The roots to search, from the environment and the user's folders.
#[derive(Debug, Clone)]
pub struct Roots {
    pub hf_cache: PathBuf,
    pub lm_studio: Vec<PathBuf>,
    pub ollama: PathBuf,
    pub user_dirs: Vec<PathBuf>,
}

impl Roots {
    pub fn from_env(user_dirs: Vec<PathBuf>) -> Roots {
        let home = directories::BaseDirs::new()
            .map(|d| d.home_dir().to_path_buf())
            .unwrap_or_default();
        let ollama = std::env::var_os("OLLAMA_MODELS")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .unwrap_or_else(|| home.join(".ollama").join("models"));
        Roots {
            hf_cache: super::hub_cache(),
            lm_studio: vec![
                home.join(".lmstudio").join("models"),
                home.join(".cache").join("lm-studio").join("models"),
            ],
            ollama,
            user_dirs,
        }
    }

    /// Only the user's places, none of the tools' own folders.
    pub fn only(user_dirs: Vec<PathBuf>) -> Roots {
        Roots {
            hf_cache: PathBuf::new(),
            lm_studio: Vec::new(),
            ollama: PathBuf::new(),
            user_dirs,
        }
    }
}

/// GGUF model files under `dir` (not projectors, not split parts after
/// the first), at most `depth` folders down. Follows file links (the HF
/// cache's snapshots are links) but not folder links, so it cannot loop.
fn gguf_files(dir: &Path, depth: usize, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = rd.flatten().collect();
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let p = e.path();
        let Ok(ft) = e.file_type() else { continue };
        if ft.is_dir() {
            if depth > 0 {
                gguf_files(&p, depth - 1, out);
            }
            continue;
        }
        let name = e.file_name().to_string_lossy().to_ascii_lowercase();
        if !name.ends_with(".gguf") || name.contains("mmproj") {
            continue;
        }
        if super::files::split_part(&name).is_some_and(|(_, part, _)| part != 1) {
            continue;
        }
        out.push(p);
    }
}

fn found(origin: Origin, name: String, path: PathBuf) -> Found {
    match model::inspect(&path) {
        Ok(info) => Found {
            origin,
            name,
            path,
            info: Some(info),
            error: None,
        },
        Err(e) => Found {
            origin,
            name,
            path,
            info: None,
            error: Some(e.to_string()),
        },
    }
}

fn hf_cache(root: &Path, out: &mut Vec<Found>) {
    let Ok(rd) = std::fs::read_dir(root) else {
        return;
    };
    let mut repos: Vec<_> = rd.flatten().map(|e| e.path()).collect();
    repos.sort();
    for repo in repos {
        let folder = repo
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        let Some(id) = folder.strip_prefix("models--") else {
            continue;
        };
        let id = id.replacen("--", "/", 1);
        // The snapshot refs/main names; else every snapshot.
        let snapshots = repo.join("snapshots");
        let main = std::fs::read_to_string(repo.join("refs").join("main"))
            .ok()
            .map(|c| snapshots.join(c.trim()))
            .filter(|p| p.is_dir());
        let dirs: Vec<PathBuf> = match main {
            Some(m) => vec![m],
            None => std::fs::read_dir(&snapshots)
                .map(|rd| rd.flatten().map(|e| e.path()).collect())
                .unwrap_or_default(),
        };
        for d in dirs {
            let mut files = Vec::new();
            gguf_files(&d, 4, &mut files);
            for f in files {
                // A link whose blob is missing (a partial Python download).
                if !f.is_file() {
                    continue;
                }
                let rel = f
                    .strip_prefix(&d)
                    .unwrap_or(&f)
                    .to_string_lossy()
                    .into_owned();
                out.push(found(Origin::HfCache, format!("{id}/{rel}"), f));
            }
        }
    }
}

#[derive(Deserialize)]
struct Manifest {
    #[serde(default)]
    layers: Vec<Layer>,
}

#[derive(Deserialize)]
struct Layer {
    #[serde(rename = "mediaType")]
    media_type: String,
    digest: String,
}

/// Ollama: `manifests/<host>/<namespace>/<model>/<tag>` → the model layer's
/// blob `blobs/sha256-<hex>`, named `model:tag` for the default registry.
fn ollama(root: &Path, out: &mut Vec<Found>) {
    let manifests = root.join("manifests");
    let mut stack = vec![(manifests.clone(), 0usize)];
    let mut tags = Vec::new();
    while let Some((dir, depth)) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            match e.file_type() {
                Ok(t) if t.is_dir() && depth < 5 => stack.push((p, depth + 1)),
                Ok(t) if t.is_file() => tags.push(p),
                _ => {}
            }
        }
    }
    tags.sort();
    for tag_path in tags {
        let Ok(rel) = tag_path.strip_prefix(&manifests) else {
            continue;
        };
        let parts: Vec<String> = rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        if parts.len() < 4 {
            continue;
        }
        let (tag, model) = (&parts[parts.len() - 1], &parts[parts.len() - 2]);
        let prefix = &parts[..parts.len() - 2];
        let name = if prefix == ["registry.ollama.ai", "library"] {
            format!("{model}:{tag}")
        } else {
            format!("{}/{model}:{tag}", prefix.join("/"))
        };
        let Some(manifest) = std::fs::read(&tag_path)
            .ok()
            .and_then(|b| serde_json::from_slice::<Manifest>(&b).ok())
        else {
            continue;
        };
        let Some(layer) = manifest
            .layers
            .iter()
            .find(|l| l.media_type == "application/vnd.ollama.image.model")
        else {
            continue;
        };
        let digest = layer.digest.replacen(':', "-", 1);
        if !digest.starts_with("sha256-") || digest.contains(['/', '\\']) {
            continue;
        }
        let blob = root.join("blobs").join(digest);
        if blob.is_file() {
            out.push(found(Origin::Ollama, name, blob));
        }
    }
}

/// Every model under the roots, each file once (the first place wins).
pub fn discover(roots: &Roots) -> Vec<Found> {
    let mut out = Vec::new();
    // An empty root (Roots::only) is no root: never the current folder.
    let set = |p: &Path| !p.as_os_str().is_empty();
    if set(&roots.hf_cache) {
        hf_cache(&roots.hf_cache, &mut out);
    }
    for root in &roots.lm_studio {
        let mut files = Vec::new();
        gguf_files(root, 4, &mut files);
        for f in files {
            let rel = f
                .strip_prefix(root)
                .unwrap_or(&f)
                .to_string_lossy()
                .into_owned();
            out.push(found(Origin::LmStudio, rel, f));
        }
    }
    if set(&roots.ollama) {
        ollama(&roots.ollama, &mut out);
    }
    for dir in &roots.user_dirs {
        let mut files = Vec::new();
        // A place is a folder to search, or one file added on its own.
        if dir.is_file() {
            files.push(dir.clone());
        } else {
            gguf_files(dir, 4, &mut files);
        }
        for f in files {
            let name = f
                .file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned();
            out.push(found(Origin::UserDir, name, f));
        }
    }
    // The same file reached twice (a folder added inside LM Studio's, a
    // link) is listed once.
    // The folder is resolved, the file itself is not: Ollama's blob and LM
    // Studio's file may be links to one model, and each tool still has it.
    let key = |p: &Path| {
        let dir = p.parent().and_then(|d| std::fs::canonicalize(d).ok());
        match (dir, p.file_name()) {
            (Some(d), Some(n)) => d.join(n),
            _ => p.to_path_buf(),
        }
    };
    let mut seen = std::collections::HashSet::new();
    out.retain(|f| seen.insert(key(&f.path)));
    out
}
