//! Exports as the app asks for them: the card as SVG text for a preview, an
//! export as text for a Copy button, and an export written to a path a
//! person typed or picked. `dyno export` writes through the same exporters
//! (`report::export`) and the same destination check, so a file the CLI
//! refuses to overwrite is refused here too.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::error::{DynoError, Result};
use crate::report::export::{self, Format};
use crate::report::Target;
use crate::store::Store;

/// The result card of `target` as SVG text.
pub async fn card_svg(store: &Store, db: &Path, target: &str) -> Result<String> {
    let bytes = export::export(store, db, target.parse()?, Format::Svg, false).await?;
    utf8(bytes, "the card")
}

/// An export of `target` as text (md, csv, json, llama-bench-json): the same
/// text [`write`] saves, with paths, user and host names scrubbed.
pub async fn text(store: &Store, db: &Path, target: &str, format: &str) -> Result<String> {
    let (t, f): (Target, Format) = (target.parse()?, format.parse()?);
    if f == Format::Png {
        return Err(DynoError::BadInput(
            "a PNG is not text; save it instead".into(),
        ));
    }
    utf8(export::export(store, db, t, f, false).await?, "the export")
}

/// Where an export was written.
#[derive(Debug, Clone, Serialize, ts_rs::TS)]
#[ts(rename = "ExportWritten")]
pub struct Written {
    pub path: PathBuf,
}

/// Write `target` as `format` to `path` (absolute, or starting with `~`).
/// An existing file is refused with [`DynoError::Exists`] unless
/// `overwrite`: the app asks the person first and calls again.
pub async fn write(
    store: &Store,
    db: &Path,
    target: &str,
    format: &str,
    path: &str,
    overwrite: bool,
) -> Result<Written> {
    let (t, f): (Target, Format) = (target.parse()?, format.parse()?);
    let path = super::expand_home(path.trim());
    if !path.is_absolute() {
        return Err(DynoError::BadInput(format!(
            "{} is not a full path; write one such as ~/Downloads/dyno-{}.{}",
            path.display(),
            t.file_stem(),
            f.extension()
        )));
    }
    // Checked before the export is built: a refusal costs nothing.
    export::check_destination(&path, f, overwrite)?;
    let bytes = export::export(store, db, t, f, false).await?;
    export::write_file(&path, &bytes)?;
    Ok(Written { path })
}

fn utf8(bytes: Vec<u8>, what: &str) -> Result<String> {
    String::from_utf8(bytes).map_err(|e| DynoError::Internal(format!("{what} is not UTF-8: {e}")))
}
