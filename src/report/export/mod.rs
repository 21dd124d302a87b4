//! Exports of a run or a sweep: Markdown for forum posts, CSV with every
//! condition a column, the full JSON document, llama-bench's JSON field
//! names (so llama.cpp's `compare-llama-bench.py` reads Dyno's results), and
//! the result card as SVG or PNG.
//!
//! Laid out as hyperfine's `src/export/`: one [`Exporter`] per format, a
//! file each, and [`Format::exporter`] the one place that maps a format to
//! its exporter. Every export is made from the document after
//! [`scrub::scrub`] has run over it, so no format can show what the JSON
//! export leaves out.

pub mod csv;
pub mod json;
pub mod llama_bench;
pub mod markdown;
pub mod png;
pub mod scrub;
pub mod serve;
pub mod svg;

use std::path::Path;

use serde_json::Value;

pub use self::csv::csv;
pub use self::llama_bench::llama_bench_json;
pub use self::markdown::markdown;
pub use self::scrub::{document, scrub, Private};
use super::{sweep, Loaded, Report, Target};
use crate::error::{DynoError, Result};
use crate::store::Store;
use crate::vocab::Named;

/// What `dyno export` and the app's Export view write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Md,
    Csv,
    Json,
    LlamaBenchJson,
    /// The result card, 1200×630.
    Png,
    /// The result card as SVG (text stays text).
    Svg,
}

impl Named for Format {
    const VALUES: &'static [Format] = &[
        Format::Md,
        Format::Csv,
        Format::Json,
        Format::LlamaBenchJson,
        Format::Png,
        Format::Svg,
    ];

    fn name(self) -> &'static str {
        match self {
            Format::Md => "md",
            Format::Csv => "csv",
            Format::Json => "json",
            Format::LlamaBenchJson => "llama-bench-json",
            Format::Png => "png",
            Format::Svg => "svg",
        }
    }

    fn help(self) -> Option<&'static str> {
        match self {
            Format::LlamaBenchJson => Some("llama-bench's own -o json, to compare with its tools"),
            Format::Png => Some("the result card, 1200×630"),
            Format::Svg => Some("the result card as SVG (text stays text)"),
            _ => None,
        }
    }
}

impl Format {
    /// How this format is written. The one place a format meets its code.
    pub fn exporter(self) -> &'static dyn Exporter {
        match self {
            Format::Md => &markdown::MarkdownExporter,
            Format::Csv => &csv::CsvExporter,
            Format::Json => &json::JsonExporter,
            Format::LlamaBenchJson => &llama_bench::LlamaBenchExporter,
            Format::Png => &png::PngExporter,
            Format::Svg => &svg::SvgExporter,
        }
    }

    /// Binary or picture formats go to a file, never to a terminal.
    pub fn is_image(self) -> bool {
        matches!(self, Format::Png | Format::Svg)
    }

    pub fn extension(self) -> &'static str {
        match self {
            Format::Md => "md",
            Format::Csv => "csv",
            Format::Json | Format::LlamaBenchJson => "json",
            Format::Png => "png",
            Format::Svg => "svg",
        }
    }
}

impl std::str::FromStr for Format {
    type Err = DynoError;

    fn from_str(s: &str) -> Result<Format> {
        Format::from_name(s).ok_or_else(|| {
            DynoError::BadInput(format!(
                "'{s}' is not an export format; use {}",
                Format::names()
            ))
        })
    }
}

/// What every exporter is given: the scrubbed document, and the report (and
/// the sweep, for a sweep) read back from it, so the typed views hold
/// nothing the document does not.
#[derive(Debug, Clone)]
pub struct Exported {
    /// The scrubbed JSON document, with its `exported_by` header.
    pub doc: Value,
    pub report: Report,
    /// The sweep and its levels, when the export is of a sweep.
    pub sweep: Option<sweep::SweepReport>,
}

impl Exported {
    /// Read the typed report (and sweep, when `is_sweep`) back from `doc`.
    pub fn read_back(doc: Value, is_sweep: bool) -> Result<Exported> {
        let back = |e: serde_json::Error| DynoError::Internal(format!("a scrubbed report: {e}"));
        let report: Report = serde_json::from_value(doc.clone()).map_err(back)?;
        let sweep = if is_sweep {
            Some(serde_json::from_value(doc.clone()).map_err(back)?)
        } else {
            None
        };
        Ok(Exported { doc, report, sweep })
    }
}

/// One export format: turns what is exported into the file's bytes.
pub trait Exporter {
    fn serialize(&self, e: &Exported) -> Result<Vec<u8>>;
}

/// Export `target` from the store in `format`. Everything is built from the
/// scrubbed document, so no format can leak what the JSON leaves out.
pub async fn export(
    store: &Store,
    db: &Path,
    target: Target,
    format: Format,
    include_host: bool,
) -> Result<Vec<u8>> {
    if let Target::Server(id) = target {
        return serve::export(store, id, format, include_host).await;
    }
    let private = Private::here();
    let loaded = super::load(store, db, target).await?;
    let doc = match &loaded {
        Loaded::Run(r) => document(r, include_host, &private),
        Loaded::Sweep(s) => document(s, include_host, &private),
    };
    let exported = Exported::read_back(doc, matches!(loaded, Loaded::Sweep(_)))?;
    format.exporter().serialize(&exported)
}

/// Export one run's report already in hand (a team store's run, or a run
/// with the team median set on it) in `format`, through the same scrubbed
/// document as [`export`].
pub fn export_report(report: &Report, format: Format, include_host: bool) -> Result<Vec<u8>> {
    let doc = document(report, include_host, &Private::here());
    let exported = Exported::read_back(doc, false)?;
    format.exporter().serialize(&exported)
}

/// Check where an export will go before anything is written. The file's
/// extension must be the format's, since a PNG named `.json` opens as
/// garbage and a mistyped format would otherwise go unnoticed until it is
/// shared; and an existing file is replaced only when `overwrite` says so,
/// because the person asked for it (`--force`, or Replace in the app).
pub fn check_destination(path: &Path, format: Format, overwrite: bool) -> Result<()> {
    let want = format.extension();
    let ext = path
        .extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase());
    let fits = ext.as_deref() == Some(want) || (want == "md" && ext.as_deref() == Some("markdown"));
    if !fits {
        let stem = path.with_extension(want);
        return Err(DynoError::BadInput(format!(
            "{} does not end in .{want}, the extension of a {} export; name it {}",
            path.display(),
            format.name(),
            stem.display()
        )));
    }
    if !overwrite && std::fs::symlink_metadata(path).is_ok() {
        return Err(DynoError::Exists(path.to_path_buf()));
    }
    if path.is_dir() {
        return Err(DynoError::BadInput(format!(
            "{} is a folder; give a file name inside it",
            path.display()
        )));
    }
    Ok(())
}

/// Write an export next to its destination and rename it into place, so a
/// full disk or a crash never leaves a half-written file under the name.
pub fn write_file(path: &Path, bytes: &[u8]) -> Result<()> {
    use std::io::Write;
    let name = path
        .file_name()
        .ok_or_else(|| DynoError::BadInput(format!("{} is not a file name", path.display())))?;
    let mut tmp_name = std::ffi::OsString::from(".");
    tmp_name.push(name);
    tmp_name.push(format!(".{}.partial", std::process::id()));
    let tmp = path.with_file_name(tmp_name);
    let res = std::fs::File::create(&tmp)
        .and_then(|mut f| {
            f.write_all(bytes)?;
            f.sync_all()
        })
        .and_then(|()| std::fs::rename(&tmp, path));
    res.map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        DynoError::io(format!("cannot write {}", path.display()), e)
    })
}
