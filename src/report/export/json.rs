//! The full JSON document (`docs/json-schema.md`), scrubbed, with the
//! `exported_by` header: what `dyno import` reads back.

use super::{Exported, Exporter};
use crate::error::Result;

/// `--format json`.
pub struct JsonExporter;

impl Exporter for JsonExporter {
    fn serialize(&self, e: &Exported) -> Result<Vec<u8>> {
        Ok((serde_json::to_string_pretty(&e.doc).expect("serialises") + "\n").into_bytes())
    }
}
