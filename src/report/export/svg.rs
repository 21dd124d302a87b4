//! The result card as SVG, where its text stays text (see
//! [`crate::report::card`] for how it is drawn).

use super::{Exported, Exporter};
use crate::error::Result;
use crate::report::card;

/// `--format svg`.
pub struct SvgExporter;

impl Exporter for SvgExporter {
    fn serialize(&self, e: &Exported) -> Result<Vec<u8>> {
        Ok(card::svg(&e.report, e.sweep.as_ref().map(|s| &s.sweep)).into_bytes())
    }
}
