//! Measuring a model before downloading it: `dyno bench OWNER/NAME:LEVEL
//! --shape-only` and `dyno sweep --repo OWNER/NAME --shape-only`.
//!
//! Each hub level is read as far as its header (the ranged requests
//! `dyno predict` makes, cached by sha256), written here as a synthetic twin
//! (`app::synth`: the header byte for byte, made-up weights of each tensor's
//! type), measured like any file, and deleted afterwards unless kept. The
//! twin carries Dyno's label naming the hub file and its sha256, so every
//! figure taken on it says that it is a shape's speed, not the real file's.
//!
//! Everything that can refuse does so before the first byte is written: a
//! level that is not there, a file this machine's memory cannot
//! hold, a disk without room for all of them.

use std::path::{Path, PathBuf};

use super::synth::{synth_listed, DefaultPlace, SynthInput, SynthOutcome};
use crate::error::{DynoError, Result};
use crate::hub::files::RepoListing;
use crate::machine::Machine;
use crate::store::Store;
use crate::units::human_bytes;
use crate::worker::client::Cancel;

/// One level measured by its shape.
#[derive(Debug, Clone)]
pub struct Twin {
    /// What was asked for: OWNER/NAME:LEVEL, or a file.
    pub target: String,
    pub outcome: SynthOutcome,
    /// The file was in Dyno's cache before (an earlier `--keep`, or the
    /// app's "Measure without downloading"), so it stays.
    existed: bool,
}

impl Twin {
    /// "org/x-GGUF:Q4_K_M: its shape measured with synthetic weights; 1.2 MiB
    /// of the 4.58 GiB file read (0.03%)".
    pub fn describe(&self) -> String {
        let o = &self.outcome;
        let read = if o.header_bytes_fetched == 0 {
            "its header was cached".to_string()
        } else {
            format!(
                "{} of the {} file read ({:.2}%)",
                human_bytes(o.header_bytes_fetched),
                human_bytes(o.file_bytes),
                100.0 * o.header_bytes_fetched as f64 / o.file_bytes.max(1) as f64
            )
        };
        if o.source == super::synth::BUILTIN_SOURCE {
            return format!(
                "{}: the shape measured with synthetic weights, from Dyno's built-in llama header; nothing was downloaded",
                self.target
            );
        }
        format!(
            "{}: its shape measured with synthetic weights, not the real file; {read}",
            self.target
        )
    }
}

/// The twins of one measurement. Dropped (after the measurement, or on any
/// error or cancel before it), they are deleted unless kept, so a 5 GB
/// stand-in never outlives the figures it was written for.
#[derive(Debug)]
pub struct Twins {
    pub twins: Vec<Twin>,
    keep: bool,
}

impl Twins {
    /// The files to measure, in the order asked.
    pub fn paths(&self) -> Vec<PathBuf> {
        self.twins.iter().map(|t| t.outcome.path.clone()).collect()
    }

    /// What happens to the files when this is dropped, in words: kept
    /// (`--keep`), deleted, or left where an earlier run had put them.
    pub fn fate(&self) -> String {
        let mut dirs: Vec<String> = self
            .twins
            .iter()
            .filter_map(|t| t.outcome.path.parent())
            .map(|p| p.display().to_string())
            .collect();
        dirs.dedup();
        let dirs = dirs.join(", ");
        let before = self.twins.iter().filter(|t| t.existed).count();
        if self.keep {
            format!("the synthetic files are kept in {dirs}")
        } else if before == 0 {
            "the synthetic files are deleted (--keep keeps them)".into()
        } else if before == self.twins.len() {
            format!("the synthetic files were in {dirs} before this run, so they are left there")
        } else {
            format!(
                "the synthetic files written now are deleted (--keep keeps them); the {before} that were in {dirs} before this run are left there"
            )
        }
    }
}

impl Drop for Twins {
    fn drop(&mut self) {
        if self.keep {
            return;
        }
        for t in self.twins.iter().filter(|t| !t.existed) {
            let _ = std::fs::remove_file(&t.outcome.path);
        }
    }
}

/// Whether `target` names a hub level or a named shape rather than a file
/// here: what `--shape-only` measures.
pub fn is_shape_only_target(target: &str) -> bool {
    super::predict::hub_target(target).is_some_and(|(_, level)| level.is_some())
        || named_shape(target).is_some()
}

/// A named shape at a level (`llama-3.1-8b:Q4_K_M`), written from Dyno's
/// built-in header: the shape and the level, or `None` for anything else
/// (a file here is always a file).
pub fn named_shape(target: &str) -> Option<(&str, &str)> {
    let (shape, level) = target.split_once(':')?;
    let known = super::synth::builtin_shapes()
        .into_iter()
        .any(|s| s.eq_ignore_ascii_case(shape));
    (known && !Path::new(target).exists()).then_some((shape, level))
}

/// The bad-input error for a hub level given where a file is expected.
pub fn not_a_file(target: &str) -> DynoError {
    if named_shape(target).is_some() {
        return DynoError::BadInput(format!(
            "{target} is a named shape, not a file here: measure it with synthetic weights with --shape-only"
        ));
    }
    DynoError::BadInput(format!(
        "{target} is a level on the hub, not a file here: download it with `dyno hub pull {repo} --quant {level}`, or measure its shape without downloading with --shape-only",
        repo = target.split_once(':').map_or(target, |(r, _)| r),
        level = target.split_once(':').map_or("LEVEL", |(_, l)| l),
    ))
}

/// Write a twin of each target (a hub level OWNER/NAME:LEVEL, or a GGUF
/// file) into Dyno's cache, after checking every one of them: headers
/// fetched, the memory each needs, the disk all of them need.
///
/// `known` is a repo listing the caller already fetched; every other repo
/// is listed once, however many of its levels are asked for.
pub async fn write_twins(
    store: &Store,
    machine: &Machine,
    targets: &[String],
    known: Option<&RepoListing>,
    endpoint: Option<&str>,
    keep: bool,
    cancel: &Cancel,
) -> Result<Twins> {
    if targets.is_empty() {
        return Err(DynoError::BadInput(
            "--shape-only needs a hub level or a named shape to measure, as in OWNER/NAME:Q4_K_M or llama-3.1-8b:Q4_K_M".into(),
        ));
    }
    let input = |target: &str, dry_run: bool| match named_shape(target) {
        Some((shape, level)) => SynthInput {
            shape: Some(shape.to_string()),
            level: Some(level.to_string()),
            replace: true,
            dry_run,
            ..SynthInput::default()
        },
        None => SynthInput {
            like: target.to_string(),
            endpoint: endpoint.map(String::from),
            replace: true,
            dry_run,
            ..SynthInput::default()
        },
    };
    let listings = listings(store, targets, known, endpoint).await?;
    let listing_of = |target: &str| {
        super::predict::hub_target(target)
            .and_then(|(repo, _)| listings.iter().find(|l| l.repo.eq_ignore_ascii_case(repo)))
    };
    // Every header first (the only network traffic), then the checks.
    let mut planned = Vec::new();
    for t in targets {
        let o = synth_listed(
            Some(store),
            &input(t, true),
            listing_of(t),
            DefaultPlace::Cache,
            cancel,
            |_, _| {},
        )
        .await?;
        check_memory(t, &o, machine)?;
        planned.push(o);
    }
    let dir = super::synth::cache_dir()?;
    check_disk(&dir, &planned)?;
    let mut twins = Twins {
        twins: Vec::new(),
        keep,
    };
    for (t, dry) in targets.iter().zip(planned) {
        let path = dir.join(dry.path.file_name().unwrap_or_default());
        let existed = path.is_file();
        let mut o = synth_listed(
            Some(store),
            &SynthInput {
                out: Some(path),
                ..input(t, false)
            },
            listing_of(t),
            DefaultPlace::Cache,
            cancel,
            |_, _| {},
        )
        .await?;
        // The dry run fetched the header; this write read it from the cache.
        o.header_bytes_fetched = dry.header_bytes_fetched;
        twins.twins.push(Twin {
            target: t.clone(),
            outcome: o,
            existed,
        });
    }
    Ok(twins)
}

/// The listing of every repo the targets name, `known` among them, each
/// fetched once. Files here need none.
async fn listings(
    store: &Store,
    targets: &[String],
    known: Option<&RepoListing>,
    endpoint: Option<&str>,
) -> Result<Vec<RepoListing>> {
    let mut out: Vec<RepoListing> = known.into_iter().cloned().collect();
    for t in targets {
        let Some((repo, Some(_))) = super::predict::hub_target(t) else {
            continue;
        };
        if super::expand_home(t).exists() || out.iter().any(|l| l.repo.eq_ignore_ascii_case(repo)) {
            continue;
        }
        let hub = super::hub::open(store, endpoint).await?;
        out.push(super::hub::repo_listing(&hub, repo).await?);
    }
    Ok(out)
}

/// A twin as large as the machine's memory would only measure swapping.
fn check_memory(target: &str, o: &SynthOutcome, machine: &Machine) -> Result<()> {
    if machine.memory_bytes > 0 && o.weight_bytes >= machine.memory_bytes {
        return Err(DynoError::BadInput(format!(
            "{target} holds {} of weights and this machine has {} of memory; its speed here would be the disk's, so it is not measured",
            human_bytes(o.weight_bytes),
            human_bytes(machine.memory_bytes)
        )));
    }
    Ok(())
}

/// Every twin lives until the measurement ends, so the disk must hold all
/// of them at once.
fn check_disk(dir: &Path, planned: &[SynthOutcome]) -> Result<()> {
    let need: u64 = planned.iter().map(|o| o.file_bytes).sum();
    match crate::quantize::free_space(dir) {
        Some(free) if free < need => Err(DynoError::BadInput(format!(
            "{} has {} free and the synthetic files need {}; free some space or set DYNO_CACHE_DIR to a larger disk{}",
            dir.display(),
            human_bytes(free),
            human_bytes(need),
            if planned.len() > 1 {
                ", or measure fewer levels at once (--levels)"
            } else {
                ""
            }
        ))),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hub_level_given_as_a_file_says_how_to_get_it_or_measure_its_shape() {
        assert!(is_shape_only_target("org/x-GGUF:Q4_K_M"));
        assert!(!is_shape_only_target("org/x-GGUF"));
        assert!(!is_shape_only_target("model.gguf"));
        assert!(is_shape_only_target("llama-3.1-8b:Q4_K_M"));
        assert!(!is_shape_only_target("gemma-3-1b:Q4_K_M"));
        let e = not_a_file("llama-3.1-8b:Q4_K_M").to_string();
        assert!(
            e.contains("named shape") && e.contains("--shape-only"),
            "{e}"
        );
        let e = not_a_file("org/x-GGUF:Q4_K_M").to_string();
        assert!(
            e.contains("dyno hub pull org/x-GGUF --quant Q4_K_M") && e.contains("--shape-only"),
            "{e}"
        );
    }

    fn outcome(path: &str, bytes: u64) -> SynthOutcome {
        SynthOutcome {
            source: "org/x:Q4_0".into(),
            header_bytes_fetched: 0,
            path: path.into(),
            arch: "llama".into(),
            seed: 1,
            shape: None,
            n_params: 1,
            weight_bytes: bytes,
            file_bytes: bytes,
            stats: None,
        }
    }

    #[test]
    fn the_fate_of_the_files_names_what_is_deleted_and_what_was_there_before() {
        // Paths that do not exist: dropping these deletes nothing.
        let fate = |existed: &[bool], keep| {
            Twins {
                twins: existed
                    .iter()
                    .enumerate()
                    .map(|(i, &existed)| Twin {
                        target: format!("org/x:L{i}"),
                        outcome: outcome(&format!("/nonexistent/synth/x{i}.gguf"), 1),
                        existed,
                    })
                    .collect(),
                keep,
            }
            .fate()
        };
        assert_eq!(
            fate(&[true, false], true),
            "the synthetic files are kept in /nonexistent/synth"
        );
        assert!(fate(&[false, false], false).contains("are deleted"));
        let old = fate(&[true, true], false);
        assert!(
            old.contains("before this run") && !old.contains("deleted"),
            "{old}"
        );
        let mixed = fate(&[true, false], false);
        assert!(
            mixed.contains("written now are deleted") && mixed.contains("the 1 that were"),
            "{mixed}"
        );
    }

    #[test]
    fn the_disk_must_hold_every_twin_at_once() {
        let o = |bytes| outcome("x.gguf", bytes);
        let dir = std::env::temp_dir();
        let free = crate::quantize::free_space(&dir).expect("temp has a size");
        assert!(check_disk(&dir, &[o(1), o(1)]).is_ok());
        let e = check_disk(&dir, &[o(free / 2 + 1), o(free / 2 + 1)])
            .unwrap_err()
            .to_string();
        assert!(e.contains("free") && e.contains("DYNO_CACHE_DIR"), "{e}");
    }
}
