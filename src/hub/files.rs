//! A repo's files as levels: GGUF files grouped by quantisation level, split
//! models (`-00001-of-00003.gguf`) as one entry, projectors and importance
//! matrices apart, and whether each level fits this machine.

use serde::{Deserialize, Serialize};

use super::TreeFile;
use crate::quantize::ftype_of;

/// Where a level would run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "snake_case")]
pub enum Fit {
    /// Fits in the GPUs' memory (all layers can be offloaded).
    Vram,
    /// Fits in RAM (CPU, or partial offload).
    Ram,
    /// Larger than RAM: it would page from disk.
    No,
}

impl Fit {
    /// Weights plus 10% for the KV cache and buffers at a modest context.
    pub fn of(size: u64, ram: u64, vram: u64) -> Fit {
        let need = size.saturating_add(size / 10);
        if vram > 0 && need <= vram {
            Fit::Vram
        } else if need <= ram {
            Fit::Ram
        } else {
            Fit::No
        }
    }

    pub fn describe(self) -> &'static str {
        match self {
            Fit::Vram => "fits in VRAM",
            Fit::Ram => "fits in RAM",
            Fit::No => "won't fit",
        }
    }
}

/// One level of a repo: one file, or every part of a split model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[cfg_attr(feature = "ts", ts(rename = "HubLevel"))]
pub struct RepoLevel {
    pub level: String,
    pub files: Vec<TreeFile>,
    pub size_bytes: u64,
    pub fit: Fit,
    /// Where the whole level already is in this machine's hub cache (its
    /// first file's snapshot path, what a benchmark loads), so a list offers
    /// Benchmark… rather than a second download. Null otherwise.
    #[serde(default)]
    #[cfg_attr(feature = "ts", ts(type = "string | null"))]
    pub local_path: Option<std::path::PathBuf>,
    /// Bytes of an interrupted download of it in the cache (its
    /// `.incomplete` files): Resume continues from there, Discard frees them.
    #[serde(default)]
    pub partial_bytes: u64,
}

/// A repo's GGUF files, sorted into levels and the rest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[cfg_attr(feature = "ts", ts(rename = "HubListing"))]
pub struct RepoListing {
    pub repo: String,
    pub commit: String,
    pub levels: Vec<RepoLevel>,
    /// Vision projectors: used beside a model, never a level.
    pub mmproj: Vec<TreeFile>,
    /// Importance matrices, for quantising; never a level.
    pub imatrix: Vec<TreeFile>,
}

fn file_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// `(base, part, of)` for `name-00001-of-00003.gguf`.
pub fn split_part(name: &str) -> Option<(&str, u32, u32)> {
    let stem = name.strip_suffix(".gguf")?;
    let (rest, of) = stem.rsplit_once("-of-")?;
    let (base, part) = rest.rsplit_once('-')?;
    let digits = |s: &str| s.len() == 5 && s.bytes().all(|b| b.is_ascii_digit());
    if !digits(part) || !digits(of) {
        return None;
    }
    Some((base, part.parse().ok()?, of.parse().ok()?))
}

/// The level a file name announces ("…-Q4_K_M.gguf" → "Q4_K_M"), from the
/// last name token that is a llama.cpp type, or looks like one (`Q4_K_XL`).
pub fn level_of(path: &str) -> Option<String> {
    let name = file_name(path);
    let stem = match split_part(name) {
        Some((base, _, _)) => base,
        None => name.strip_suffix(".gguf").unwrap_or(name),
    };
    let tokens: Vec<String> = stem
        .split(['-', '.'])
        .map(|t| t.to_ascii_uppercase())
        .collect();
    if let Some(t) = tokens.iter().rev().find(|t| ftype_of(t).is_some()) {
        return Some(t.clone());
    }
    tokens
        .iter()
        .rev()
        .find(|t| {
            let b = t.as_bytes();
            (b.len() >= 2 && b[0] == b'Q' && b[1].is_ascii_digit())
                || (b.len() >= 3 && t.starts_with("IQ") && b[2].is_ascii_digit())
        })
        .cloned()
}

/// Sort a tree into levels (highest precision first), projectors and
/// importance matrices. `ram` and `vram` are the machine's totals in bytes.
pub fn listing(repo: &str, commit: &str, tree: &[TreeFile], ram: u64, vram: u64) -> RepoListing {
    let mut out = RepoListing {
        repo: repo.into(),
        commit: commit.into(),
        levels: Vec::new(),
        mmproj: Vec::new(),
        imatrix: Vec::new(),
    };
    // (level, base name) → files, so two models of one level stay apart.
    let mut groups: Vec<(String, String, Vec<TreeFile>)> = Vec::new();
    for f in tree {
        let name = file_name(&f.path).to_ascii_lowercase();
        if name.contains("imatrix") {
            out.imatrix.push(f.clone());
            continue;
        }
        if !name.ends_with(".gguf") {
            continue;
        }
        if name.contains("mmproj") {
            out.mmproj.push(f.clone());
            continue;
        }
        let level = level_of(&f.path).unwrap_or_else(|| "unknown".into());
        let base = match split_part(file_name(&f.path)) {
            Some((b, _, _)) => format!(
                "{}{b}",
                f.path.strip_suffix(file_name(&f.path)).unwrap_or("")
            ),
            None => f.path.clone(),
        };
        match groups.iter_mut().find(|g| g.0 == level && g.1 == base) {
            Some(g) => g.2.push(f.clone()),
            None => groups.push((level, base, vec![f.clone()])),
        }
    }
    for (level, _, mut files) in groups {
        files.sort_by(|a, b| a.path.cmp(&b.path));
        let size: u64 = files.iter().map(|f| f.size).sum();
        out.levels.push(RepoLevel {
            level,
            size_bytes: size,
            fit: Fit::of(size, ram, vram),
            files,
            local_path: None,
            partial_bytes: 0,
        });
    }
    out.levels.sort_by(|a, b| {
        crate::quantize::nominal_bpw(&b.level)
            .total_cmp(&crate::quantize::nominal_bpw(&a.level))
            .then(b.size_bytes.cmp(&a.size_bytes))
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(path: &str, size: u64) -> TreeFile {
        TreeFile {
            path: path.into(),
            size,
            sha256: Some("ab".into()),
        }
    }

    #[test]
    fn levels_come_from_file_names() {
        assert_eq!(
            level_of("Llama-3.2-1B-Instruct-Q4_K_M.gguf").as_deref(),
            Some("Q4_K_M")
        );
        assert_eq!(
            level_of("gemma-3-270m-q4_k_m.gguf").as_deref(),
            Some("Q4_K_M")
        );
        assert_eq!(
            level_of("SmolLM2-135M-Instruct.Q4_1.gguf").as_deref(),
            Some("Q4_1")
        );
        assert_eq!(
            level_of("model-bf16-00001-of-00002.gguf").as_deref(),
            Some("BF16")
        );
        assert_eq!(
            level_of("Qwen3-8B-UD-Q4_K_XL.gguf").as_deref(),
            Some("Q4_K_XL")
        );
        assert_eq!(
            level_of("IQ4_XS/model-IQ4_XS.gguf").as_deref(),
            Some("IQ4_XS")
        );
        assert_eq!(level_of("model.gguf"), None);
    }

    #[test]
    fn split_parts_are_one_level_and_extras_stay_apart() {
        let tree = [
            f("README.md", 10),
            f("m-Q8_0.gguf", 800),
            f("m-F16-00002-of-00002.gguf", 700),
            f("m-F16-00001-of-00002.gguf", 900),
            f("mmproj-m-f16.gguf", 50),
            f("m.imatrix.gguf", 5),
            f("imatrix.dat", 5),
            f("m-Q2_K.gguf", 300),
        ];
        let l = listing("o/m", "c0ffee", &tree, 1000, 0);
        let names: Vec<&str> = l.levels.iter().map(|l| l.level.as_str()).collect();
        assert_eq!(names, ["F16", "Q8_0", "Q2_K"]);
        let f16 = &l.levels[0];
        assert_eq!(f16.files.len(), 2);
        assert_eq!(f16.files[0].path, "m-F16-00001-of-00002.gguf");
        assert_eq!(f16.size_bytes, 1600);
        assert_eq!(f16.fit, Fit::No);
        assert_eq!(l.levels[1].fit, Fit::Ram, "800 + 10% fits 1000");
        assert_eq!(l.mmproj.len(), 1);
        assert_eq!(l.imatrix.len(), 2);
    }

    #[test]
    fn fit_prefers_vram_then_ram() {
        assert_eq!(Fit::of(100, 1000, 200), Fit::Vram);
        assert_eq!(Fit::of(500, 1000, 200), Fit::Ram);
        assert_eq!(Fit::of(5000, 1000, 200), Fit::No);
        assert_eq!(split_part("a-00001-of-00003.gguf"), Some(("a", 1, 3)));
        assert_eq!(split_part("a-1-of-3.gguf"), None);
    }
}
