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
pub mod list;
pub mod offload;
pub mod sweep;
pub mod table;
pub mod telemetry;

pub use build::{build, load, meaning};
pub use conditions::{conditions, Wording};
pub use json::{
    ConfigJson, MachineJson, MeaningJson, ModelJson, QualityJson, Report, ResultJson, RunJson,
    SCHEMA_VERSION,
};

use crate::error::Result;

/// What `dyno export`, `dyno compare` and the app point at: `12` or
/// `run:12` for a run, `sweep:3` for a sweep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    Run(i64),
    Sweep(i64),
}

impl std::str::FromStr for Target {
    type Err = crate::error::DynoError;

    fn from_str(id: &str) -> Result<Target> {
        let bad = || {
            crate::error::DynoError::BadInput(format!(
                "'{id}' is not a run or sweep id; write 12 or run:12 for a run, sweep:3 for a sweep"
            ))
        };
        let (is_sweep, n) = match id.trim().split_once(':') {
            Some(("sweep", n)) => (true, n),
            Some(("run", n)) => (false, n),
            None => (false, id.trim()),
            _ => return Err(bad()),
        };
        let n: i64 = n.parse().map_err(|_| bad())?;
        Ok(if is_sweep {
            Target::Sweep(n)
        } else {
            Target::Run(n)
        })
    }
}

impl Target {
    pub fn is_sweep(self) -> bool {
        matches!(self, Target::Sweep(_))
    }

    /// "run-12" or "sweep-3", for default file names.
    pub fn file_stem(self) -> String {
        match self {
            Target::Run(n) => format!("run-{n}"),
            Target::Sweep(n) => format!("sweep-{n}"),
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

/// Human-readable byte size as llama-bench prints model sizes.
pub fn human_bytes(b: u64) -> String {
    const GIB: f64 = 1024.0 * 1024.0 * 1024.0;
    let b = b as f64;
    if b >= GIB {
        format!("{:.2} GiB", b / GIB)
    } else {
        format!("{:.2} MiB", b / (1024.0 * 1024.0))
    }
}

/// Parameter count as llama-bench prints it ("134.52 M", "6.74 B").
pub fn human_params(n: u64) -> String {
    let n = n as f64;
    if n >= 1e9 {
        format!("{:.2} B", n / 1e9)
    } else {
        format!("{:.2} M", n / 1e6)
    }
}

/// A wait as a person reads it: "45 s", "3 min", "1 h 20 min".
pub fn human_duration(seconds: f64) -> String {
    let s = seconds.max(0.0).round() as u64;
    if s < 90 {
        format!("{s} s")
    } else if s < 3600 {
        format!("{} min", (s + 30) / 60)
    } else {
        let m = (s + 30) / 60;
        format!("{} h {} min", m / 60, m % 60)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_as_waits() {
        assert_eq!(human_duration(44.6), "45 s");
        assert_eq!(human_duration(-1.0), "0 s");
        assert_eq!(human_duration(200.0), "3 min");
        assert_eq!(human_duration(4800.0), "1 h 20 min");
    }

    #[test]
    fn sizes_print_like_llama_bench() {
        assert_eq!(human_bytes(73_100_000), "69.71 MiB");
        assert_eq!(human_bytes(4 * 1024 * 1024 * 1024), "4.00 GiB");
        assert_eq!(human_params(134_515_008), "134.52 M");
        assert_eq!(human_params(6_738_415_616), "6.74 B");
    }
}
