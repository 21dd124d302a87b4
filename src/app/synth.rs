//! `dyno synth`: a model file with another file's header and synthetic
//! weights ([`crate::model::synth`] says how the values are chosen and why).
//!
//! The output is written under a `.partial` name and renamed when complete,
//! so a full disk, an error or a kill leaves no file that looks like a model.

use std::fs::{File, OpenOptions};
use std::io::Read;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::error::{DynoError, Result};
use crate::model::gguf::{self, Header};
use crate::model::synth::{self, SynthStats, TensorStat};

/// What `dyno synth` wrote.
#[derive(Debug, Clone, Serialize)]
pub struct SynthOutcome {
    pub source: PathBuf,
    pub path: PathBuf,
    pub arch: String,
    pub seed: u64,
    pub stats: SynthStats,
}

/// Read `like`'s header, check it can be synthesised, and write the file.
pub fn synth_like(
    like: &Path,
    out: &Path,
    seed: u64,
    force: bool,
    progress: impl FnMut(u64, u64),
) -> Result<SynthOutcome> {
    let h = read(like)?;
    let mut header_bytes = vec![0u8; h.data_offset as usize];
    File::open(like)
        .and_then(|mut f| f.read_exact(&mut header_bytes))
        .map_err(|e| DynoError::BadModel {
            path: like.to_path_buf(),
            source: gguf::GgufError::Io(e.to_string()),
        })?;
    let stats = write_file(&header_bytes, &h, out, seed, force, progress)?;
    Ok(SynthOutcome {
        source: like.to_path_buf(),
        path: out.to_path_buf(),
        arch: h.get_str("general.architecture").unwrap_or_default().into(),
        seed,
        stats,
    })
}

fn read(path: &Path) -> Result<Header> {
    gguf::read_header(path).map_err(|source| DynoError::BadModel {
        path: path.to_path_buf(),
        source,
    })
}

/// Write `h` with synthetic data to `out` through a partial file, refusing
/// early when the disk cannot hold it.
pub fn write_file(
    header_bytes: &[u8],
    h: &Header,
    out: &Path,
    seed: u64,
    force: bool,
    progress: impl FnMut(u64, u64),
) -> Result<SynthStats> {
    synth::check(h).map_err(DynoError::BadInput)?;
    if out.exists() && !force {
        return Err(DynoError::Exists(out.to_path_buf()));
    }
    let dir = match out.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    if !dir.is_dir() {
        return Err(DynoError::BadInput(format!(
            "{}: no such folder; create it first or choose another output path",
            dir.display()
        )));
    }
    if let Some(free) = crate::quantize::free_space(&dir).filter(|&f| f < h.file_size) {
        return Err(DynoError::BadInput(format!(
            "{} has {} free and the synthetic file needs {}; free some space or write it elsewhere with -o",
            dir.display(),
            crate::units::human_bytes(free),
            crate::units::human_bytes(h.file_size)
        )));
    }
    let partial = crate::quantize::partial_path(out);
    let result = (|| {
        let mut f = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&partial)?;
        let stats = synth::write(header_bytes, h, &mut f, seed, progress)?;
        std::fs::rename(&partial, out)?;
        Ok::<_, std::io::Error>(stats)
    })();
    result.map_err(|e| {
        let _ = std::fs::remove_file(&partial);
        let what = if e.raw_os_error() == Some(libc::ENOSPC) {
            format!(
                "the disk filled up while writing {} ({} needed); nothing was kept. Free some space or write it elsewhere with -o",
                out.display(),
                crate::units::human_bytes(h.file_size)
            )
        } else {
            format!("writing {}: {e}; nothing was kept", out.display())
        };
        DynoError::BadInput(what)
    })
}

/// Every tensor's value statistics (`dyno synth --stats FILE`).
pub fn stats(path: &Path) -> Result<Vec<TensorStat>> {
    let h = read(path)?;
    synth::measure(path, &h).map_err(|e| DynoError::BadModel {
        path: path.to_path_buf(),
        source: gguf::GgufError::Io(e.to_string()),
    })
}
