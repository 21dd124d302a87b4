//! Model files: GGUF header reading, quant names and identity (sha256).
//!
//! Everything here runs in the parent without llama.cpp, so bad input is
//! caught before a worker is spawned. `synth` draws synthetic weights and
//! lays out their file; the quantising is ggml's, done in a worker through
//! its `Codec` trait (`crate::engine`'s `Ggml`).

pub mod gguf;
pub mod memory;
pub mod quant;
pub mod reshape;
pub mod shape;
pub mod synth;
pub mod template;

use std::io::Read;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::error::{DynoError, GgufError};

/// What Dyno knows about a model file from its header, before loading it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ModelInfo {
    pub path: PathBuf,
    pub file_name: String,
    /// Hex sha256 of the whole file; filled by [`sha256_file`] (cached by the store).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub sha256: String,
    pub arch: String,
    /// `general.name`, when the file has one.
    pub name: Option<String>,
    /// Quantisation level, e.g. "Q4_K_M", from `general.file_type` (or guessed
    /// from the dominant tensor type when the file does not say).
    pub quant: String,
    pub size_bytes: u64,
    /// Bytes of tensor data: what a decode step streams from memory.
    pub weight_bytes: u64,
    pub n_params: u64,
    pub n_layers: Option<u64>,
    pub context_length: Option<u64>,
    pub gguf_version: u32,
    /// What the file's synthetic weights stand for, from its
    /// `dyno.synthetic.*` label ([`synthetic_label`]); `None` for a real
    /// model. Its figures say how fast that shape runs, never how well.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub synthetic: Option<String>,
    /// For a twin of a hub file (its header, synthetic weights): that
    /// file's sha256 ([`twin_of_sha256`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub twin_of_sha256: Option<String>,
}

/// The sha256 of the real file a twin stands for: the hub file named in
/// `dyno.synthetic.source`, when the header is that file's own (a twin, not
/// a resized shape, which stands for no file). `dyno predict` then counts
/// the twin's speed as that file's.
pub fn twin_of_sha256(h: &gguf::Header) -> Option<String> {
    if h.get_str("dyno.synthetic.shape")? != reshape::TWIN {
        return None;
    }
    let (_, sha) = h.get_str("dyno.synthetic.source")?.split_once(" sha256 ")?;
    (sha.len() == 64 && sha.bytes().all(|b| b.is_ascii_hexdigit()))
        .then(|| sha.to_ascii_lowercase())
}

/// The label of a file `dyno synth` wrote, in words: "twin of SmolLM2 135M,
/// seed 1", or "llama-3.1-8b Q4_K_M from SmolLM2 135M's header, seed 1".
/// A header from the hub names its file and the start of its sha256: "twin
/// of SmolLM2 135M (org/x-GGUF/x-Q4_K_M.gguf, sha256 0123456789ab), seed 1".
/// `None` for a file without Dyno's label.
pub fn synthetic_label(h: &gguf::Header) -> Option<String> {
    let shape = h.get_str("dyno.synthetic.shape")?;
    let like = h
        .get_str("dyno.synthetic.like")
        .unwrap_or("an unnamed model");
    let source = h
        .get_str("dyno.synthetic.source")
        .map(|s| match s.split_once(" sha256 ") {
            Some((file, sha)) => {
                let short: String = sha.chars().take(12).collect();
                format!(" ({file}, sha256 {short})")
            }
            None => format!(" ({s})"),
        })
        .unwrap_or_default();
    let seed = h
        .get_u64("dyno.synthetic.seed")
        .map(|s| format!(", seed {s}"))
        .unwrap_or_default();
    Some(if shape == reshape::TWIN {
        format!("twin of {like}{source}{seed}")
    } else if like == template::NAME {
        format!("{shape} from {like} header{source}{seed}")
    } else {
        format!("{shape} from {like}'s header{source}{seed}")
    })
}

impl ModelInfo {
    /// Bits per weight over all tensors.
    pub fn bits_per_weight(&self) -> f64 {
        if self.n_params == 0 {
            return 0.0;
        }
        self.weight_bytes as f64 * 8.0 / self.n_params as f64
    }
}

/// Read a model's header and derive its description. `sha256` is left empty.
pub fn inspect(path: &Path) -> Result<ModelInfo, DynoError> {
    inspect_with_header(path).map(|(info, _)| info)
}

/// [`inspect`], keeping the header for callers that need more of it (the
/// speed prediction's shape), so the file is read once.
pub fn inspect_with_header(path: &Path) -> Result<(ModelInfo, gguf::Header), DynoError> {
    let h = gguf::read_model_header(path).map_err(|e| DynoError::BadModel {
        path: path.to_path_buf(),
        source: e,
    })?;
    let bad = |e: GgufError| DynoError::BadModel {
        path: path.to_path_buf(),
        source: e,
    };
    let arch = h
        .get_str("general.architecture")
        .ok_or_else(|| bad(GgufError::Corrupt("general.architecture is missing".into())))?
        .to_string();
    if h.tensors.is_empty() {
        return Err(bad(GgufError::Corrupt("the file holds no tensors".into())));
    }
    // Saturating: tensors may overlap, so a crafted file can claim more than
    // u64 holds in total even though each tensor fits in the file.
    let n_params = h
        .tensors
        .iter()
        .fold(0u64, |a, t| a.saturating_add(t.n_elements));
    let weight_bytes = h
        .tensors
        .iter()
        .fold(0u64, |a, t| a.saturating_add(t.n_bytes));
    let quant = match h.get_u64("general.file_type") {
        Some(ft) => quant::ftype_name(ft as u32)
            .map(str::to_string)
            .unwrap_or_else(|| format!("ftype {ft}")),
        None => quant::guess_from_tensors(&h.tensors),
    };
    let info = ModelInfo {
        file_name: path
            .file_name()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default(),
        path: path.to_path_buf(),
        sha256: String::new(),
        name: h.get_str("general.name").map(str::to_string),
        quant,
        size_bytes: h.file_size,
        weight_bytes,
        n_params,
        n_layers: h.get_u64(&format!("{arch}.block_count")),
        context_length: h.get_u64(&format!("{arch}.context_length")),
        gguf_version: h.version,
        arch,
        synthetic: synthetic_label(&h),
        twin_of_sha256: twin_of_sha256(&h),
    };
    Ok((info, h))
}

/// Stream a file through sha256. A 7 GB model takes tens of seconds, so the
/// store caches the digest by path, size and modification time.
pub fn sha256_file(path: &Path) -> std::io::Result<String> {
    let mut f = std::fs::File::open(path)?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect())
}

/// Size and modification time, the key under which a digest is cached.
pub fn file_stamp(path: &Path) -> std::io::Result<(u64, i64)> {
    let m = std::fs::metadata(path)?;
    let mtime = m
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map(|d| d.as_nanos() as i64)
        .unwrap_or(0);
    Ok((m.len(), mtime))
}
