//! The quantisation ladder, and local quantisation through llama.cpp's own
//! quantizer (run in a worker process, like everything llama.cpp does).
//!
//! Outputs are cached under `<cache>/quantized/<sha256 of input>/`, one file
//! per target type, so a second sweep of the same base costs nothing. The
//! quantizer writes to a `.partial` name that is renamed only on success and
//! deleted on any failure or cancel, so a cached file is always complete.

use std::path::{Path, PathBuf};

use tokio::sync::mpsc;

use crate::error::{DynoError, Result};
use crate::model::quant::ftype_name;
use crate::units::human_bytes;
use crate::vocab::failure::FailureCode;
use crate::worker::client::{Cancel, Ended, Launch, WorkerFailure};
use crate::worker::protocol::{Event, QuantizePlan, WorkerRequest};

/// The standard ladder, highest precision first.
pub const DEFAULT_LADDER: [&str; 7] = ["F16", "Q8_0", "Q6_K", "Q5_K_M", "Q4_K_M", "Q3_K_M", "Q2_K"];

/// Types llama.cpp refuses to produce without an importance matrix, which
/// Dyno does not compute.
const NEEDS_IMATRIX: [&str; 6] = ["IQ1_S", "IQ1_M", "IQ2_XXS", "IQ2_XS", "IQ2_S", "Q2_K_S"];

/// A `llama_ftype` id by name, in any case ("q4_k_m" → 15).
pub fn ftype_of(name: &str) -> Option<u32> {
    (0..64).find(|&id| ftype_name(id).is_some_and(|n| n.eq_ignore_ascii_case(name)))
}

/// Nominal bits per weight of a level, for ordering levels by precision
/// and estimating an output size. Mixed K-quants are approximate.
pub fn nominal_bpw(name: &str) -> f64 {
    match name.to_ascii_uppercase().as_str() {
        "F32" => 32.0,
        "F16" | "BF16" => 16.0,
        "Q8_0" => 8.5,
        "Q6_K" => 6.56,
        "Q5_1" => 6.0,
        "Q5_K_M" => 5.69,
        "Q5_0" | "Q5_K_S" => 5.5,
        "Q4_1" => 5.0,
        "Q4_K_M" => 4.85,
        "Q4_K_S" | "IQ4_NL" | "Q4_0" => 4.5,
        "IQ4_XS" => 4.25,
        "Q3_K_L" => 4.27,
        "Q3_K_M" => 3.91,
        "IQ3_M" | "IQ3_S" => 3.66,
        "Q3_K_S" => 3.5,
        "IQ3_XS" => 3.3,
        "IQ3_XXS" => 3.06,
        "Q2_K" => 2.96,
        "IQ2_M" => 2.7,
        "IQ2_S" => 2.5,
        "IQ2_XS" => 2.31,
        "IQ2_XXS" => 2.06,
        "IQ1_M" => 1.75,
        "IQ1_S" => 1.56,
        _ => 4.0,
    }
}

/// Parse `--levels` (comma-separated, any case) into canonical names,
/// refusing unknown names and the types that need an importance matrix.
pub fn parse_levels(list: &[String]) -> Result<Vec<String>> {
    let mut out: Vec<String> = Vec::new();
    for raw in list.iter().flat_map(|s| s.split(',')) {
        let raw = raw.trim();
        if raw.is_empty() {
            continue;
        }
        let id = ftype_of(raw).ok_or_else(|| {
            DynoError::BadInput(format!(
                "unknown quantisation level '{raw}'; use names such as {}, Q4_0 or IQ4_XS",
                DEFAULT_LADDER.join(", ")
            ))
        })?;
        let name = ftype_name(id).expect("found by name").to_string();
        if NEEDS_IMATRIX.contains(&name.as_str()) {
            return Err(DynoError::BadInput(format!(
                "{name} needs an importance matrix, which Dyno does not compute; pick another level (IQ3_XXS and up, or Q2_K)"
            )));
        }
        if !out.contains(&name) {
            out.push(name);
        }
    }
    if out.is_empty() {
        return Err(DynoError::BadInput(
            "--levels is empty; give at least one level, e.g. --levels Q8_0,Q4_K_M".into(),
        ));
    }
    Ok(out)
}

/// The cache root: `DYNO_CACHE_DIR`, else the platform data directory.
pub fn cache_root() -> PathBuf {
    if let Some(p) = std::env::var_os("DYNO_CACHE_DIR").filter(|p| !p.is_empty()) {
        return PathBuf::from(p);
    }
    directories::ProjectDirs::from("", "", "dyno")
        .map(|d| d.data_dir().join("cache"))
        .unwrap_or_else(|| PathBuf::from("dyno-cache"))
}

/// Where the `level` quantisation of a base with digest `base_sha256` lives.
/// The file name keeps the base's name so reports stay readable.
pub fn cached_path(root: &Path, base: &Path, base_sha256: &str, level: &str) -> PathBuf {
    let stem = base
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "model".into());
    // "Model.Q4_1" or "model-f16" → "Model", so the level name is not doubled.
    let trimmed = stem
        .char_indices()
        .filter(|&(_, c)| matches!(c, '.' | '-' | '_'))
        .find(|&(i, _)| ftype_of(&stem[i + 1..]).is_some())
        .map(|(i, _)| stem[..i].to_string())
        .unwrap_or(stem);
    root.join("quantized")
        .join(base_sha256)
        .join(format!("{trimmed}-{level}.gguf"))
}

/// Bytes free to this user on the file system holding `dir`.
#[cfg(not(unix))]
pub(crate) fn free_space(_dir: &Path) -> Option<u64> {
    None
}

/// Bytes free to this user on the file system holding `dir`.
#[cfg(unix)]
pub(crate) fn free_space(dir: &Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
    // SAFETY: statvfs is a C struct of integers (and padding), for which
    // all-zero bytes are a valid value.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: `c` is a NUL-terminated path and `st` a struct of the type
    // statvfs writes, both alive for the call.
    let rc = unsafe { libc::statvfs(c.as_ptr(), &mut st) };
    (rc == 0).then(|| st.f_bavail as u64 * st.f_frsize as u64)
}

/// The `.partial` name a quantisation is written under. It carries the
/// process id, so two sweeps making the same file never write into one
/// partial; each renames a complete file into place (the same bytes).
pub fn partial_path(path: &Path) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(format!(".{}.partial", std::process::id()));
    PathBuf::from(s)
}

/// Progress of one quantisation, in bytes written.
pub trait QuantizeProgress {
    fn progress(&mut self, done: u64, total: u64);
}

/// What one quantisation did.
#[derive(Debug, Clone)]
pub struct Quantized {
    pub path: PathBuf,
    /// False when the file came from the cache.
    pub fresh: bool,
    pub elapsed_ms: f64,
}

/// Creates the cache folder, and refuses a quantisation that cannot fit
/// there now rather than after minutes of work.
fn make_room(
    dir: &Path,
    level: &str,
    expected_bytes: u64,
) -> std::result::Result<(), WorkerFailure> {
    let fail = WorkerFailure::new;
    std::fs::create_dir_all(dir).map_err(|e| {
        fail(
            FailureCode::CacheUnwritable,
            format!(
                "cannot create the quantisation cache {}: {e}; set DYNO_CACHE_DIR to a writable folder",
                dir.display()
            ),
        )
    })?;
    let need = expected_bytes + expected_bytes / 20;
    if let Some(free) = free_space(dir).filter(|&f| f < need) {
        return Err(fail(
            FailureCode::DiskFull,
            format!(
                "not enough disk space to make {level}: about {} needed, {} free in {}; free some space or set DYNO_CACHE_DIR to a disk with room",
                human_bytes(need),
                human_bytes(free),
                dir.display()
            ),
        ));
    }
    Ok(())
}

/// Why a quantizer's "success" left an unusable file, if it did. llama.cpp's
/// writer does not check every write, so a disk that fills up can leave a
/// short file behind a success: the header is read back (it checks that
/// every tensor's bytes are in the file) before the file is trusted.
fn unusable_output(partial: &Path, dir: &Path, level: &str) -> Option<WorkerFailure> {
    let fail = WorkerFailure::new;
    crate::model::gguf::read_header(partial).err().map(|e| {
        let full = free_space(dir).is_some_and(|f| f < 1 << 20);
        if full {
            fail(
                FailureCode::DiskFull,
                format!(
                    "the disk filled up while making {level} in {}; free some space or set DYNO_CACHE_DIR to a disk with room",
                    dir.display()
                ),
            )
        } else {
            fail(FailureCode::BadOutput, format!("the quantizer wrote an unusable {level} file: {e}"))
        }
    })
}

/// Quantize `base` to `level` unless the cache has it. Partial output is
/// removed however the worker ends.
#[allow(clippy::too_many_arguments)]
pub async fn quantize_cached(
    base: &Path,
    base_sha256: &str,
    base_is_quantized: bool,
    expected_bytes: u64,
    level: &str,
    n_threads: u32,
    root: &Path,
    worker: &dyn Launch,
    cancel: &Cancel,
    progress: &mut dyn QuantizeProgress,
) -> std::result::Result<Quantized, WorkerFailure> {
    let fail = WorkerFailure::new;
    let out = cached_path(root, base, base_sha256, level);
    if out.is_file() {
        return Ok(Quantized {
            path: out,
            fresh: false,
            elapsed_ms: 0.0,
        });
    }
    let ftype = ftype_of(level)
        .ok_or_else(|| fail(FailureCode::BadLevel, format!("unknown level {level}")))?;
    let dir = out.parent().expect("cache path has a parent");
    make_room(dir, level, expected_bytes)?;
    let partial = partial_path(&out);
    let plan = QuantizePlan {
        input: base.to_path_buf(),
        output: partial.clone(),
        ftype,
        n_threads,
        allow_requantize: base_is_quantized,
        expected_bytes,
    };
    let (tx, mut rx) = mpsc::unbounded_channel();
    let handle = tokio::spawn(worker.launch(WorkerRequest::Quantize(plan), cancel.clone(), tx));
    let mut elapsed_ms = 0.0;
    while let Some(ev) = rx.recv().await {
        match ev {
            Event::Progress { done, total } => progress.progress(done, total),
            Event::Quantized {
                elapsed_ms: ms,
                output_bytes,
            } => {
                elapsed_ms = ms;
                progress.progress(output_bytes, output_bytes);
            }
            _ => {}
        }
    }
    let ended = handle
        .await
        .unwrap_or_else(|e| Ended::Crashed(format!("the quantize supervisor failed: {e}")));
    let failure = ended.failure("quantizer");
    let failure = failure.or_else(|| unusable_output(&partial, dir, level));
    if let Some(f) = failure {
        // Never leave half a model where a later run could take it.
        let _ = std::fs::remove_file(&partial);
        return Err(f);
    }
    std::fs::rename(&partial, &out).map_err(|e| {
        let _ = std::fs::remove_file(&partial);
        fail(
            FailureCode::CacheUnwritable,
            format!("cannot move {} into place: {e}", partial.display()),
        )
    })?;
    Ok(Quantized {
        path: out,
        fresh: true,
        elapsed_ms,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn level_names_parse_in_any_case_and_unknown_ones_are_named() {
        let l = parse_levels(&["q8_0,Q4_k_m".into(), "iq4_xs".into(), "Q8_0".into()]).unwrap();
        assert_eq!(l, ["Q8_0", "Q4_K_M", "IQ4_XS"]);
        let e = parse_levels(&["Q9_9".into()]).unwrap_err().to_string();
        assert!(e.contains("Q9_9"), "{e}");
        let e = parse_levels(&["iq2_xxs".into()]).unwrap_err().to_string();
        assert!(e.contains("importance matrix"), "{e}");
        assert!(parse_levels(&[String::new()]).is_err());
    }

    #[test]
    fn the_default_ladder_is_known_and_falls_in_precision() {
        let bpw: Vec<f64> = DEFAULT_LADDER.iter().map(|l| nominal_bpw(l)).collect();
        assert!(bpw.windows(2).all(|w| w[0] > w[1]), "{bpw:?}");
        assert!(DEFAULT_LADDER.iter().all(|l| ftype_of(l).is_some()));
        assert_eq!(ftype_of("q4_k_m"), Some(15));
    }

    #[test]
    fn cache_paths_are_keyed_by_digest_and_level() {
        let root = Path::new("/c");
        let p = cached_path(root, Path::new("/m/SmolLM2-135M.Q4_1.gguf"), "abc", "Q8_0");
        assert_eq!(p, Path::new("/c/quantized/abc/SmolLM2-135M-Q8_0.gguf"));
        let p = cached_path(root, Path::new("/m/model-f16.gguf"), "abc", "Q2_K");
        assert_eq!(p, Path::new("/c/quantized/abc/model-Q2_K.gguf"));
        let p = cached_path(root, Path::new("/m/llama-3.gguf"), "d", "F16");
        assert_eq!(p, Path::new("/c/quantized/d/llama-3-F16.gguf"));
        let partial = partial_path(&p).display().to_string();
        assert!(
            partial.starts_with("/c/quantized/d/llama-3-F16.gguf.")
                && partial.ends_with(".partial"),
            "{partial}"
        );
    }
}
