//! `dyno synth`: a model file with another file's header (or that header
//! resized to another shape) and synthetic weights ([`crate::model::synth`]
//! says how the values are chosen and why, [`crate::model::reshape`] how a
//! header is resized).
//!
//! The header is prepared and checked here, so bad input is refused before
//! anything starts; the weights are quantised and written by a worker,
//! because ggml's quantisers abort the process on what they do not expect.
//! The output is written under a `.partial` name and renamed when complete,
//! so a full disk, an error or a kill leaves no file that looks like a model.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;
use tokio::sync::mpsc;

use crate::error::{DynoError, Result};
use crate::model::gguf;
use crate::model::reshape::{Origin, ShapeRequest};
use crate::model::synth::{self, PrepareError, Prepared, SynthStats, TensorStat};
use crate::worker::client::{self, Cancel, WorkerOptions};
use crate::worker::protocol::{Event, SynthPlan, WorkerRequest};

/// The `source` of a file written from Dyno's built-in llama header.
pub const BUILTIN_SOURCE: &str = "Dyno's built-in llama header";

/// What `dyno synth` wrote (or, with `dry_run`, would write).
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct SynthOutcome {
    /// The file or hub level whose header was used.
    pub source: String,
    /// Bytes of header fetched from the hub now (0 for a file, or a header
    /// already cached).
    pub header_bytes_fetched: u64,
    #[cfg_attr(feature = "ts", ts(type = "string"))]
    pub path: PathBuf,
    pub arch: String,
    pub seed: u64,
    /// The shape asked for (`llama-3.1-8b Q4_0`); absent for `--like` alone,
    /// whose header is the source's with Dyno's label added.
    pub shape: Option<String>,
    /// Parameters, and bytes of tensor data (what llama.cpp calls the
    /// model's size).
    pub n_params: u64,
    pub weight_bytes: u64,
    pub file_bytes: u64,
    /// Absent for a dry run.
    pub stats: Option<SynthStats>,
}

/// What to write, resolved from a [`SynthInput`].
#[derive(Debug, Clone)]
struct SynthRequest {
    /// A GGUF file, or OWNER/NAME:LEVEL on the hub (only its header is
    /// fetched).
    pub like: String,
    /// Hub address, for a mirror (a hub `like` only).
    pub endpoint: Option<String>,
    pub shape: Option<ShapeRequest>,
    pub out: PathBuf,
    pub seed: u64,
    pub force: bool,
    /// Prepare and check the header, write nothing.
    pub dry_run: bool,
    /// The hub repo's listing, when the caller already has it: a sweep of
    /// N levels then lists the repo once, not once per level and pass.
    pub listing: Option<crate::hub::files::RepoListing>,
}

/// Where `like`'s header is, found by [`locate`].
struct Located {
    /// The file itself, or a hub level's header in the header cache.
    header: PathBuf,
    /// The size of the file `header` is the front of (a hub level).
    size: Option<u64>,
    /// Bytes fetched from the hub now.
    fetched: u64,
    /// A hub level's `OWNER/NAME/FILE` and sha256, for the label.
    source: Option<String>,
}

/// Where `like`'s header is: the file itself, or a hub level's header in
/// the header cache (fetched with ranged requests if it is not there).
async fn locate(store: Option<&crate::store::Store>, req: &SynthRequest) -> Result<Located> {
    if req.like.is_empty() {
        return Ok(Located {
            header: builtin_header()?,
            size: None,
            fetched: 0,
            source: None,
        });
    }
    let path = super::expand_home(&req.like);
    let hub_target = super::predict::hub_target(&req.like);
    if path.exists() || hub_target.is_none() {
        return Ok(Located {
            header: path,
            size: None,
            fetched: 0,
            source: None,
        });
    }
    let (repo, level) = hub_target.expect("checked above");
    let Some(want) = level else {
        return Err(DynoError::BadInput(format!(
            "{repo}: name one level, as in {repo}:Q4_K_M (dyno hub levels {repo} lists them)"
        )));
    };
    let store =
        store.ok_or_else(|| DynoError::Internal("a hub header needs the settings store".into()))?;
    let hub = super::hub::open(store, req.endpoint.as_deref()).await?;
    let listing = match &req.listing {
        Some(l) if l.repo.eq_ignore_ascii_case(repo) => l.clone(),
        _ => super::hub::repo_listing(&hub, repo).await?,
    };
    let l = listing
        .levels
        .iter()
        .find(|l| l.level.eq_ignore_ascii_case(want))
        .ok_or_else(|| {
            let have: Vec<&str> = listing.levels.iter().map(|l| l.level.as_str()).collect();
            DynoError::BadInput(format!(
                "{repo} has no level {want}; it has {}",
                if have.is_empty() {
                    "no GGUF files".into()
                } else {
                    have.join(", ")
                }
            ))
        })?;
    let mut shas = Vec::with_capacity(l.files.len());
    for f in &l.files {
        shas.push(f.sha256.clone().ok_or_else(|| {
            DynoError::BadInput(format!(
                "{repo}/{}: the hub gives no sha256 for it, so its header cannot be cached; download it instead",
                f.path
            ))
        })?);
    }
    let fetched =
        crate::hub::header::fetch_header(&hub, &listing.repo, &listing.commit, &l.files).await?;
    let cached: Vec<PathBuf> = shas
        .iter()
        .map(|sha| crate::hub::header::cache_dir().join(format!("{sha}.gguf-header")))
        .collect();
    if let Some(missing) = cached.iter().find(|c| !c.is_file()) {
        return Err(DynoError::BadInput(format!(
            "could not keep {repo}:{want}'s header in {}; make that folder writable (DYNO_CACHE_DIR)",
            missing.display()
        )));
    }
    let first = &l.files[0];
    let (header, size) = match cached.as_slice() {
        [one] => (one.clone(), Some(first.size)),
        parts => (joined_header(repo, want, parts, &l.files, &shas[0])?, None),
    };
    Ok(Located {
        header,
        size,
        fetched: fetched.fetched_bytes,
        source: Some(format!(
            "{}/{} sha256 {}",
            listing.repo, first.path, shas[0]
        )),
    })
}

/// Dyno's built-in llama header ([`crate::model::template`]), kept as a
/// `.gguf-header` in Dyno's cache (`templates/`, apart from the synthetic
/// models), because the synthesiser (and its worker) read a template from a
/// file. Written again each time: it is a few kilobytes, and a file left by
/// another version must not be taken.
fn builtin_header() -> Result<PathBuf> {
    let (bytes, _) = crate::model::template::header();
    let out = cache_folder("templates")?.join("builtin-llama.gguf-header");
    keep_header(&out, &bytes, "Dyno's built-in header")?;
    Ok(out)
}

/// Write a header Dyno made into the cache at `out`, whole or not at all:
/// under a name of this process's own (two Dyno processes may write the
/// same header at once), then renamed into place. `what` names it in the
/// error.
fn keep_header(out: &Path, bytes: &[u8], what: &str) -> Result<()> {
    let partial = out.with_extension(format!("{}.partial", std::process::id()));
    std::fs::write(&partial, bytes)
        .and_then(|_| std::fs::rename(&partial, out))
        .map_err(|e| {
            let _ = std::fs::remove_file(&partial);
            DynoError::io(
                format!(
                    "could not keep {what} in {}; make that folder writable (DYNO_CACHE_DIR)",
                    out.display()
                ),
                e,
            )
        })
}

/// A split level's parts, each a header in the cache, joined into one
/// header ([`crate::model::reshape::join_parts`] says how and why) and
/// kept beside them as `<first part's sha256>.joined.gguf-header`, which
/// [`synth::prepare`] reads as the front of one file.
fn joined_header(
    repo: &str,
    level: &str,
    parts: &[PathBuf],
    files: &[crate::hub::TreeFile],
    first_sha: &str,
) -> Result<PathBuf> {
    let read = parts
        .iter()
        .zip(files)
        .map(|(p, f)| {
            gguf::read_front(p, Some(f.size)).map_err(|e| {
                DynoError::BadInput(format!(
                    "{repo}/{}: its cached header ({}) could not be read ({e}); delete it and try again",
                    f.path,
                    p.display()
                ))
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let (bytes, _) = crate::model::reshape::join_parts(&read)
        .map_err(|why| DynoError::BadInput(format!("{repo}:{level}: {why}")))?;
    let out = crate::hub::header::cache_dir().join(format!("{first_sha}.joined.gguf-header"));
    keep_header(&out, &bytes, &format!("{repo}:{level}'s joined header"))?;
    Ok(out)
}

fn prepared(
    like: &Path,
    like_size: Option<u64>,
    shape: Option<&ShapeRequest>,
    origin: &Origin,
) -> Result<Prepared> {
    synth::prepare(like, like_size, shape, origin).map_err(|e| match e {
        PrepareError::Read(source) => DynoError::BadModel {
            path: like.to_path_buf(),
            source,
        },
        PrepareError::Refused(why) => DynoError::BadInput(why),
    })
}

/// Prepare the header, check the output can be written, and have a worker
/// write the file. `progress` hears bytes written and the total.
///
/// `store` holds the hub settings; it is needed only for a hub `like`.
async fn synth(
    store: Option<&crate::store::Store>,
    req: &SynthRequest,
    cancel: &Cancel,
    progress: impl FnMut(u64, u64),
) -> Result<SynthOutcome> {
    let Located {
        header: like,
        size: like_size,
        fetched,
        source,
    } = locate(store, req).await?;
    let origin = Origin {
        seed: req.seed,
        source,
    };
    let p = prepared(&like, like_size, req.shape.as_ref(), &origin)?;
    let h = &p.header;
    let mut outcome = SynthOutcome {
        source: if req.like.is_empty() {
            BUILTIN_SOURCE.into()
        } else {
            req.like.clone()
        },
        header_bytes_fetched: fetched,
        path: req.out.clone(),
        arch: h.get_str("general.architecture").unwrap_or_default().into(),
        seed: req.seed,
        shape: p.shape_label.clone(),
        n_params: h.tensors.iter().map(|t| t.n_elements).sum(),
        weight_bytes: h.tensors.iter().map(|t| t.n_bytes).sum(),
        file_bytes: h.file_size,
        stats: None,
    };
    if req.dry_run {
        return Ok(outcome);
    }
    check_output(req, h.file_size)?;
    let plan = SynthPlan {
        like,
        like_size,
        shape: req.shape.clone(),
        output: crate::quantize::partial_path(&req.out),
        seed: req.seed,
        source: origin.source,
        check_routing: decodes_here(h),
    };
    outcome.stats = Some(write(plan, &req.out, h.file_size, cancel, progress).await?);
    Ok(outcome)
}

/// Whether the written file is a mixture of experts whose weights take at
/// most half of this machine's memory: then the synthesiser decodes it to
/// report how its routers spread tokens (about 20 s at most). A larger one
/// would only measure the disk.
fn decodes_here(h: &gguf::Header) -> bool {
    let arch = h.get_str("general.architecture").unwrap_or_default();
    let experts = h.get_u64(&format!("{arch}.expert_count")).unwrap_or(0);
    let weights: u64 = h.tensors.iter().map(|t| t.n_bytes).sum();
    let (ram, _) = super::models::memory();
    experts > 0 && ram > 0 && weights <= ram / 2
}

/// Refuse, before any work, an output that exists (unless it may be
/// replaced), a folder that is not there, or a disk without room.
fn check_output(req: &SynthRequest, file_size: u64) -> Result<()> {
    if req.out.exists() && !req.force {
        return Err(DynoError::Exists(req.out.clone()));
    }
    let dir = match req.out.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    if !dir.is_dir() {
        return Err(DynoError::BadInput(format!(
            "{}: no such folder; create it first or choose another output path",
            dir.display()
        )));
    }
    if let Some(free) = crate::quantize::free_space(&dir).filter(|&f| f < file_size) {
        return Err(DynoError::BadInput(format!(
            "{} has {} free and the synthetic file needs {}; free some space or write it elsewhere with -o",
            dir.display(),
            crate::units::human_bytes(free),
            crate::units::human_bytes(file_size)
        )));
    }
    Ok(())
}

/// Have a worker write `plan` (to its `.partial` name) and move the file to
/// `out` when it is complete; on any failure nothing is left behind.
async fn write(
    plan: SynthPlan,
    out: &Path,
    file_size: u64,
    cancel: &Cancel,
    mut progress: impl FnMut(u64, u64),
) -> Result<SynthStats> {
    let partial = plan.output.clone();
    let _ = std::fs::remove_file(&partial);
    let opts = WorkerOptions::current(Duration::from_secs(60))
        .map_err(|e| DynoError::io("cannot find Dyno's executable to start a worker", e))?;
    let (tx, mut rx) = mpsc::unbounded_channel();
    let handle = tokio::spawn(client::run(
        WorkerRequest::Synth(plan),
        opts,
        cancel.clone(),
        tx,
    ));
    let mut stats = None;
    let mut disk_full = false;
    while let Some(ev) = rx.recv().await {
        match ev {
            Event::Progress { done, total } => progress(done, total),
            Event::Synthesised { stats: s } => stats = Some(s),
            Event::Fatal { code, .. } => {
                disk_full = code == crate::vocab::failure::FailureCode::DiskFull
            }
            _ => {}
        }
    }
    let ended = handle
        .await
        .map_err(|e| DynoError::Internal(format!("the synth task failed: {e}")))?;
    let failure = ended.failure("synthesiser");
    let renamed = match (failure, stats) {
        (None, Some(s)) => std::fs::rename(&partial, out).map(|_| s).map_err(|e| {
            DynoError::BadInput(format!("cannot move {} into place: {e}", partial.display()))
        }),
        (Some(_), _) if disk_full => Err(DynoError::BadInput(format!(
            "the disk filled up while writing {} ({} needed); nothing was kept. Free some space or write it elsewhere with -o",
            out.display(),
            crate::units::human_bytes(file_size)
        ))),
        (Some(f), _) => Err(DynoError::BadInput(format!(
            "writing {}: {}; nothing was kept",
            out.display(),
            f.message
        ))),
        (None, None) => Err(DynoError::Internal(
            "the synthesiser ended without reporting its file".into(),
        )),
    };
    if renamed.is_err() {
        // Never leave half a model where a later run could take it.
        let _ = std::fs::remove_file(&partial);
    }
    renamed
}

/// Every tensor's value statistics (`dyno synth --stats FILE`), measured by
/// a worker (dequantising is ggml's).
pub async fn stats(path: &Path) -> Result<Vec<TensorStat>> {
    // A missing or broken file gets the usual message before a worker starts.
    gguf::read_header(path).map_err(|source| DynoError::BadModel {
        path: path.to_path_buf(),
        source,
    })?;
    let plan = WorkerRequest::TensorStats {
        path: path.to_path_buf(),
    };
    ask_worker(path, plan, "statistics", |ev| match ev {
        Event::TensorStats { stats } => Some(stats),
        _ => None,
    })
    .await
}

/// How a mixture-of-experts file's routers spread a decode of `tokens`
/// random tokens (`dyno synth --routing --like FILE`), counted by a worker
/// as the synthesiser counts its own files: for setting a twin beside its
/// real file.
pub async fn routing(path: &Path, tokens: u32) -> Result<crate::model::synth::Routing> {
    let h = gguf::read_header(path).map_err(|source| DynoError::BadModel {
        path: path.to_path_buf(),
        source,
    })?;
    let arch = h.get_str("general.architecture").unwrap_or_default();
    if h.get_u64(&format!("{arch}.expert_count")).unwrap_or(0) == 0 {
        return Err(DynoError::BadInput(format!(
            "{}: a dense model ({arch}, no experts in its header) has no routers to count; --routing is for a mixture of experts",
            path.display()
        )));
    }
    let plan = WorkerRequest::Routing {
        path: path.to_path_buf(),
        tokens,
    };
    ask_worker(path, plan, "routing", |ev| match ev {
        Event::Routed { routing } => Some(routing),
        _ => None,
    })
    .await
}

/// Run one request about the file at `path` in a worker (llama.cpp may
/// abort on a bad file; the worker dies, not Dyno) and return what `pick`
/// takes from its events. A worker's failure is the file's error.
async fn ask_worker<T>(
    path: &Path,
    plan: WorkerRequest,
    what: &str,
    pick: impl Fn(Event) -> Option<T>,
) -> Result<T> {
    let opts = WorkerOptions::current(Duration::from_secs(300))
        .map_err(|e| DynoError::io("cannot find Dyno's executable to start a worker", e))?;
    let (tx, mut rx) = mpsc::unbounded_channel();
    let handle = tokio::spawn(client::run(plan, opts, Cancel::default(), tx));
    let mut answer = None;
    while let Some(ev) = rx.recv().await {
        if let Some(a) = pick(ev) {
            answer = Some(a);
        }
    }
    let ended = handle
        .await
        .map_err(|e| DynoError::Internal(format!("the {what} task failed: {e}")))?;
    match (ended.failure(&format!("{what} worker")), answer) {
        (None, Some(a)) => Ok(a),
        (Some(f), _) => Err(DynoError::BadInput(format!(
            "{}: {}",
            path.display(),
            f.message
        ))),
        (None, None) => Err(DynoError::Internal(format!(
            "the {what} worker ended without figures"
        ))),
    }
}

/// Dyno's folder for synthetic files, beside quantised levels, created if
/// it is missing: the app writes there unless the person chooses a path.
pub fn cache_dir() -> Result<PathBuf> {
    cache_folder("synth")
}

/// A folder of Dyno's cache, created if it is missing.
fn cache_folder(name: &str) -> Result<PathBuf> {
    let dir = crate::quantize::cache_root().join(name);
    std::fs::create_dir_all(&dir).map_err(|e| {
        DynoError::io(
            format!(
                "cannot create {}; set DYNO_CACHE_DIR to a writable folder",
                dir.display()
            ),
            e,
        )
    })?;
    Ok(dir)
}

/// The name a synthetic file gets when no path is given: the template's
/// name (a hub level's `OWNER-NAME-LEVEL`), then the shape and level asked
/// for, then `.synth.gguf`. One rule for both front ends, so the file the
/// CLI writes and the one the app writes from the same request are named
/// alike.
pub fn default_name(like: &str, shape: Option<&str>, level: Option<&str>) -> String {
    let safe = |s: &str| {
        s.replace(
            |c: char| !c.is_ascii_alphanumeric() && !"._-".contains(c),
            "_",
        )
    };
    let stem = if like.is_empty() {
        // The built-in header: the shape names the file.
        String::new()
    } else if super::predict::hub_target(like).is_some() && !super::expand_home(like).exists() {
        like.replace(['/', ':'], "-")
    } else {
        Path::new(like)
            .file_name()
            .map(|n| {
                n.to_string_lossy()
                    .trim_end_matches(".gguf-header")
                    .trim_end_matches(".gguf")
                    .to_string()
            })
            .unwrap_or_else(|| "model".into())
    };
    let tag: Vec<&str> = [shape, level].into_iter().flatten().collect();
    if stem.is_empty() {
        format!("{}.synth.gguf", safe(&tag.join("-")))
    } else if tag.is_empty() {
        format!("{}.synth.gguf", safe(&stem))
    } else {
        format!("{}.{}.synth.gguf", safe(&stem), safe(&tag.join("-")))
    }
}

/// What the app's "Synthetic model…" form may choose: the named shapes with
/// their architecture (a shape needs a template of the same one), and the
/// levels `--type` writes.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct SynthOptions {
    pub shapes: Vec<SynthShape>,
    pub levels: Vec<String>,
    /// The shapes Dyno's built-in header writes with no template (a blank
    /// `like`): those of its architecture.
    pub builtin_shapes: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct SynthShape {
    pub name: String,
    pub arch: String,
}

/// The named shapes the built-in header can be resized to: those of its
/// architecture.
pub fn builtin_shapes() -> Vec<&'static str> {
    crate::model::reshape::PRESETS
        .iter()
        .filter(|p| p.arch == crate::model::template::ARCH)
        .map(|p| p.name)
        .collect()
}

pub fn options() -> SynthOptions {
    SynthOptions {
        shapes: crate::model::reshape::PRESETS
            .iter()
            .map(|p| SynthShape {
                name: p.name.into(),
                arch: p.arch.into(),
            })
            .collect(),
        levels: crate::model::reshape::level_names()
            .into_iter()
            .map(String::from)
            .collect(),
        builtin_shapes: builtin_shapes().into_iter().map(String::from).collect(),
    }
}

/// `dyno synth` and the app's "Synthetic model…" form: `--like FILE
/// [--shape S] [--type T] [-o OUT] [--seed N] [--dry-run]`.
#[derive(Debug, Clone, Default, serde::Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct SynthInput {
    /// The template: a GGUF file (or a `.gguf-header`), OWNER/NAME:LEVEL
    /// on the hub (only its header is fetched), or empty for Dyno's
    /// built-in llama header (then `shape` is needed).
    #[serde(default)]
    pub like: String,
    /// Hub address, for a mirror (a hub `like` only).
    #[cfg_attr(feature = "ts", ts(optional))]
    #[serde(default)]
    pub endpoint: Option<String>,
    /// A named shape or `key=value` pairs; the template's own when absent.
    #[cfg_attr(feature = "ts", ts(optional))]
    #[serde(default)]
    pub shape: Option<String>,
    /// A `--type` level; the template's own types when absent.
    #[cfg_attr(feature = "ts", ts(optional))]
    #[serde(default)]
    pub level: Option<String>,
    /// Where to write; see [`DefaultPlace`] when absent. A path, so a
    /// name the shell passed that is not UTF-8 reaches the file system as
    /// given; a leading `~/` (typed in the app) is the home folder.
    #[cfg_attr(feature = "ts", ts(optional))]
    #[serde(default)]
    pub out: Option<PathBuf>,
    /// Replace `out` if it exists: `--force`, or a path the app's save
    /// dialog has already asked about. A file named by default is always
    /// replaced, since the same request and seed write the same bytes.
    #[serde(default)]
    pub replace: bool,
    /// Seed of the values (1 when absent): the same seed writes the same
    /// bytes.
    #[cfg_attr(feature = "ts", ts(optional))]
    #[serde(default)]
    pub seed: Option<u64>,
    /// Describe the file (parameters, size) without writing it.
    #[serde(default)]
    pub dry_run: bool,
}

/// The level asked for, by its canonical name (`q4_k_m` is `Q4_K_M`).
fn level_name(input: &SynthInput) -> Result<Option<String>> {
    input
        .level
        .as_deref()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(|l| crate::model::reshape::level(l).map(|l| l.name.to_string()))
        .transpose()
        .map_err(DynoError::BadInput)
}

/// The file name `synth_file` gives `input` when no `out` is asked for,
/// offered by the app's save dialog so both name files by one rule. A level
/// it does not know is named as typed; writing will refuse it.
pub fn suggested_name(input: &SynthInput) -> String {
    fn trimmed(o: &Option<String>) -> Option<&str> {
        o.as_deref().map(str::trim).filter(|s| !s.is_empty())
    }
    let level = level_name(input)
        .ok()
        .flatten()
        .or_else(|| trimmed(&input.level).map(String::from));
    default_name(input.like.trim(), trimmed(&input.shape), level.as_deref())
}

/// Where a file with no `out` goes: the CLI writes beside the template (the
/// current folder for a hub level), the app into [`cache_dir`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DefaultPlace {
    BesideTemplate,
    Cache,
}

/// Write (or, as a dry run, describe) the synthetic file asked for, after
/// the same checks for either front end. `progress` hears bytes written
/// and the total; `store` holds the hub settings, needed only for a hub
/// `like`.
pub async fn synth_file(
    store: Option<&crate::store::Store>,
    input: &SynthInput,
    place: DefaultPlace,
    cancel: &Cancel,
    progress: impl FnMut(u64, u64),
) -> Result<SynthOutcome> {
    synth_listed(store, input, None, place, cancel, progress).await
}

/// [`synth_file`] of a hub level whose repo listing the caller already
/// holds (`listing`), so it is not fetched again.
pub(crate) async fn synth_listed(
    store: Option<&crate::store::Store>,
    input: &SynthInput,
    listing: Option<&crate::hub::files::RepoListing>,
    place: DefaultPlace,
    cancel: &Cancel,
    progress: impl FnMut(u64, u64),
) -> Result<SynthOutcome> {
    let blank = |o: &Option<String>| {
        o.as_deref()
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(String::from)
    };
    let (shape, level) = (blank(&input.shape), level_name(input)?);
    let like = input.like.trim();
    if like.is_empty() && shape.is_none() {
        return Err(DynoError::BadInput(format!(
            "choose the GGUF file whose header the synthetic model takes, or a named {arch} shape ({}) to write from Dyno's built-in {arch} header",
            builtin_shapes().join(", "),
            arch = crate::model::template::ARCH,
        )));
    }
    let out = input
        .out
        .as_deref()
        .filter(|p| p.to_str().is_none_or(|s| !s.trim().is_empty()));
    let (out, force) = match out {
        Some(o) => match o.to_str() {
            Some(s) => (super::expand_home(s.trim()), input.replace),
            None => (o.to_path_buf(), input.replace),
        },
        None => {
            let name = default_name(like, shape.as_deref(), level.as_deref());
            let dir = match place {
                DefaultPlace::Cache if !input.dry_run => cache_dir()?,
                DefaultPlace::Cache => crate::quantize::cache_root().join("synth"),
                DefaultPlace::BesideTemplate => match super::expand_home(like).parent() {
                    Some(p) if super::expand_home(like).exists() => p.to_path_buf(),
                    _ => PathBuf::new(),
                },
            };
            // The CLI never replaced a file it named itself without
            // --force; the app's cache is its own.
            let force = input.replace || place == DefaultPlace::Cache;
            (dir.join(name), force)
        }
    };
    let req = SynthRequest {
        like: like.to_string(),
        endpoint: blank(&input.endpoint),
        shape: (shape.is_some() || level.is_some()).then(|| ShapeRequest {
            spec: shape.unwrap_or_default(),
            level,
        }),
        out,
        seed: input.seed.unwrap_or(1),
        force,
        dry_run: input.dry_run,
        listing: listing.cloned(),
    };
    synth(store, &req, cancel, progress).await
}
