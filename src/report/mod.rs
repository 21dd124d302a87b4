//! What Dyno shows and exports, built from the store (never from memory), so
//! `dyno bench --json`, `dyno show` and `dyno runs` print the same figures
//! for the same rows, and a printed figure always comes with its conditions.
//!
//! [`json`] is the document (the stable contract in `docs/json-schema.md`),
//! [`build`] fills it from store rows, and the other modules turn it into
//! what people read: tables, the card, exports, comparisons.

pub mod build;
pub mod card;
pub mod compare;
pub mod conditions;
pub mod export;
pub mod import;
pub mod json;
pub mod laptop;
pub mod list;
mod load;
pub mod offload;
pub mod serve_card;
pub mod sweep;
pub mod table;
pub mod team;
pub mod telemetry;

pub use build::{build, meaning};
pub use conditions::{conditions, Wording};
pub use json::{
    ConfigJson, MachineJson, MeaningJson, ModelJson, QualityJson, Report, ResultJson, RunJson,
    SCHEMA_VERSION,
};
pub use load::load;

use crate::error::Result;

/// What `dyno export`, `dyno compare` and the app point at: `12` or
/// `run:12` for a run, `sweep:3` for a sweep, `serve:2` for a server run
/// (exports only).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    Run(i64),
    Sweep(i64),
    Server(i64),
}

impl std::str::FromStr for Target {
    type Err = crate::error::DynoError;

    fn from_str(id: &str) -> Result<Target> {
        let bad = || {
            crate::error::DynoError::BadInput(format!(
                "'{id}' is not a run or sweep id; write 12 or run:12 for a run, sweep:3 for a sweep, serve:2 for a server run"
            ))
        };
        let (make, n): (fn(i64) -> Target, &str) = match id.trim().split_once(':') {
            Some(("sweep", n)) => (Target::Sweep, n),
            Some(("run", n)) => (Target::Run, n),
            Some(("serve", n)) => (Target::Server, n),
            None => (Target::Run, id.trim()),
            _ => return Err(bad()),
        };
        Ok(make(n.parse().map_err(|_| bad())?))
    }
}

impl Target {
    pub fn is_sweep(self) -> bool {
        matches!(self, Target::Sweep(_))
    }

    /// "run-12", "sweep-3" or "serve-2", for default file names.
    pub fn file_stem(self) -> String {
        match self {
            Target::Run(n) => format!("run-{n}"),
            Target::Sweep(n) => format!("sweep-{n}"),
            Target::Server(n) => format!("serve-{n}"),
        }
    }
}

/// A run's report, or a sweep's with its levels. Built once per command and
/// never moved in bulk, so the variants' size difference costs nothing.
#[derive(Debug, Clone)]
#[allow(clippy::large_enum_variant)]
pub enum Loaded {
    Run(Report),
    Sweep(sweep::SweepReport),
}

impl Loaded {
    pub fn report(&self) -> &Report {
        match self {
            Loaded::Run(r) => r,
            Loaded::Sweep(s) => &s.report,
        }
    }
}
