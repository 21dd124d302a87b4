//! The result card as a 1200×630 PNG, the picture link previews and forums
//! show: the SVG card rendered with the bundled fonts.

use super::{Exported, Exporter};
use crate::error::Result;
use crate::report::card;

/// `--format png`.
pub struct PngExporter;

impl Exporter for PngExporter {
    fn serialize(&self, e: &Exported) -> Result<Vec<u8>> {
        card::png(&card::svg(&e.report, e.sweep.as_ref().map(|s| &s.sweep)))
    }
}
