//! The GGUF reader's error. It sits at the bottom of the crate with the other
//! errors, yet depends on nothing but std and thiserror, so the fuzz target
//! (`fuzz/`) builds it and the reader (`model/gguf.rs`) alone, from the
//! app's own source.

/// Why a file is not a usable GGUF model, as the header reader
/// (`model::gguf`) finds it.
#[derive(Debug, Clone, thiserror::Error, PartialEq)]
pub enum GgufError {
    #[error("file not found; check the path")]
    NotFound,
    #[error("is a directory; pass the .gguf file inside it")]
    IsDirectory,
    #[error("file is empty; download it again")]
    Empty,
    #[error("not a GGUF file (bad magic number); Dyno runs GGUF models, convert others with llama.cpp's convert_hf_to_gguf.py")]
    NotGguf,
    #[error("GGUF version {0} is not supported (versions 2 and 3 are); re-convert the model with a current llama.cpp")]
    UnsupportedVersion(u32),
    #[error("truncated: {0}; the download is probably incomplete, download it again")]
    Truncated(String),
    #[error("corrupt header: {0}; download the file again")]
    Corrupt(String),
    #[error("cannot read: {0}")]
    Io(String),
    /// A split model's parts do not add up: one missing, misnamed, or a
    /// later part given instead of the first. The message says which.
    #[error("{0}")]
    Split(String),
}
