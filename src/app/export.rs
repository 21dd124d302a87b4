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

/// The result card of `target` as SVG text; with `vs_team` (a team store
/// URL) a run's card sets it against the team's median.
pub async fn card_svg(
    store: &Store,
    db: &Path,
    target: &str,
    vs_team: Option<&str>,
) -> Result<String> {
    let bytes = match vs_team {
        Some(url) => {
            let r = against_team(store, db, target.parse()?, Some(url)).await?;
            export::export_report(&r, Format::Svg, false)?
        }
        None => export::export(store, db, target.parse()?, Format::Svg, false).await?,
    };
    utf8(bytes, "the card")
}

/// A run's report with the team's median for its model and level set on it.
/// `url` is the team store; without it, `DYNO_TEAM_URL` or the saved one.
pub async fn against_team(
    store: &Store,
    db: &Path,
    t: crate::report::Target,
    url: Option<&str>,
) -> Result<crate::report::Report> {
    let crate::report::Target::Run(_) = t else {
        return Err(DynoError::BadInput(
            "a card against the team's median is one run's card; pick a run, not a sweep".into(),
        ));
    };
    let mut r = crate::report::load(store, db, t).await?.report().clone();
    let url = super::team::team_url(store, url).await?;
    let team = super::team::open(&url).await?;
    let median = super::team::median_for(&team, &r).await;
    team.close().await;
    r.team = Some(median?);
    Ok(r)
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
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[cfg_attr(feature = "ts", ts(rename = "ExportWritten"))]
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
    vs_team: Option<&str>,
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
    let bytes = match vs_team {
        Some(url) => {
            export::export_report(&against_team(store, db, t, Some(url)).await?, f, false)?
        }
        None => export::export(store, db, t, f, false).await?,
    };
    export::write_file(&path, &bytes)?;
    Ok(Written { path })
}

fn utf8(bytes: Vec<u8>, what: &str) -> Result<String> {
    String::from_utf8(bytes).map_err(|e| DynoError::Internal(format!("{what} is not UTF-8: {e}")))
}
