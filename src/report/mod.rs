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

/// The form `FromStr` reads and the UI holds: "12" for a run (as the CLI
/// prints run ids), "sweep:3", "serve:2".
impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Target::Run(n) => write!(f, "{n}"),
            Target::Sweep(n) => write!(f, "sweep:{n}"),
            Target::Server(n) => write!(f, "serve:{n}"),
        }
    }
}

/// Crosses to the UI as its text, so a target is one value there too.
impl serde::Serialize for Target {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for Target {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Target, D::Error> {
        String::deserialize(d)?
            .parse()
            .map_err(serde::de::Error::custom)
    }
}

/// What a target names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "snake_case")]
pub enum TargetKind {
    Run,
    Sweep,
    Serve,
}

/// The UI's twin: a template-literal type that only the forms above fill,
/// so a view cannot hand the backend "Sweep 3" or a bare name (written by
/// hand: ts-rs cannot derive it from the text form).
#[cfg(feature = "ts")]
impl ts_rs::TS for Target {
    type WithoutGenerics = Target;
    type OptionInnerType = Target;

    fn docs() -> Option<String> {
        Some(
            "/**\n * A result the backend can load: \"12\" (or \"run:12\") for a run, \"sweep:3\" for a\n * sweep, \"serve:2\" for a server run.\n */\n"
                .into(),
        )
    }

    fn name(_: &ts_rs::Config) -> String {
        "Target".into()
    }

    fn inline(_: &ts_rs::Config) -> String {
        "`${number}` | `run:${number}` | `sweep:${number}` | `serve:${number}`".into()
    }

    fn decl(cfg: &ts_rs::Config) -> String {
        format!("type Target = {};", Self::inline(cfg))
    }

    fn decl_concrete(cfg: &ts_rs::Config) -> String {
        Self::decl(cfg)
    }

    fn output_path() -> Option<std::path::PathBuf> {
        Some("Target.ts".into())
    }
}

impl Target {
    pub fn is_sweep(self) -> bool {
        matches!(self, Target::Sweep(_))
    }

    pub fn kind(self) -> TargetKind {
        match self {
            Target::Run(_) => TargetKind::Run,
            Target::Sweep(_) => TargetKind::Sweep,
            Target::Server(_) => TargetKind::Serve,
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_target_reads_back_as_it_is_written_and_crosses_as_its_text() {
        for t in [Target::Run(12), Target::Sweep(3), Target::Server(2)] {
            assert_eq!(t.to_string().parse::<Target>().unwrap(), t);
            let json = serde_json::to_string(&t).unwrap();
            assert_eq!(json, format!("\"{t}\""));
            assert_eq!(serde_json::from_str::<Target>(&json).unwrap(), t);
        }
        assert_eq!("run:12".parse::<Target>().unwrap(), Target::Run(12));
        let bad = serde_json::from_str::<Target>("\"Sweep 3\"").unwrap_err();
        assert!(bad.to_string().contains("sweep:3 for a sweep"), "{bad}");
    }

    #[cfg(feature = "ts")]
    #[test]
    fn the_uis_target_type_names_every_form_the_text_takes() {
        let ts = <Target as ts_rs::TS>::inline(&ts_rs::Config::new());
        for form in [
            "`${number}`",
            "`run:${number}`",
            "`sweep:${number}`",
            "`serve:${number}`",
        ] {
            assert!(ts.contains(form), "{ts}");
        }
    }
}
