//! Level resolution: a sweep's source turned into levels, highest
//! precision first, by reading headers only. Nothing runs here, so a bad
//! file or a mixed folder is refused before any worker starts.

use std::path::{Path, PathBuf};

use super::spec::{Source, SweepSpec};
use crate::error::{DynoError, Result};
use crate::model::{self, ModelInfo};
use crate::quantize;

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
        // Likewise a shape's levels are written first (`dyno sweep --shape`).
        Source::Shape(shape) => Err(DynoError::BadInput(format!(
            "--shape {shape}: write its levels with synthetic weights first (`dyno sweep --shape` does), then sweep the files"
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
                            crate::units::human_params(f.n_params),
                            path.display(),
                            info.arch,
                            crate::units::human_params(info.n_params)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::plan::BenchRequest;

    #[test]
    fn repo_sources_need_their_files_downloaded_first() {
        let spec = SweepSpec {
            source: Source::Repo("owner/name".into()),
            levels: None,
            request: BenchRequest::defaults(2),
            quality: None,
            shape_only: false,
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
