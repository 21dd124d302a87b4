//! A quantisation sweep, from either front end: `dyno sweep`'s options and
//! the app's Sweep form ([`SweepInput`]) each become a [`SweepOrder`] in the
//! core's own types, and [`execute`] runs it: the whole of a sweep but the
//! printing. The form's text fields go through the same parsers as the
//! CLI's flags (`app::options`), so both refuse a value alike, and a sweep
//! started in one resumes in the other.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::bench::{BenchInput, Measuring, DEFAULT_TIMEOUT_S};
use super::options;
use super::presets::Preset;
use crate::bench::plan::{BenchRequest, Plan};
use crate::bench::sweep::{
    resolve, resolve_files, run_sweep, QualitySettings, Source, SweepEvent, SweepOutcome,
    SweepReporter, SweepSpec,
};
use crate::error::{DynoError, Result};
use crate::hub::download::PullProgress;
use crate::machine::Machine;
use crate::quantize::{parse_levels, DEFAULT_LADDER};
use crate::report::sweep::SweepReport;
use crate::store::Store;
use crate::vocab::request::GroupArgs;
use crate::vocab::status::SweepStatus;
use crate::worker::client::{Cancel, WorkerOptions};

/// The app's Sweep form (docs/app-api.md).
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[cfg_attr(feature = "ts", ts(optional_fields))]
pub struct SweepInput {
    pub source: SourceInput,
    /// Quick, Standard or Thorough; `prompt`, `gen` and `reps` are then
    /// ignored (a preset is one plan, so its runs always compare).
    #[serde(default)]
    pub preset: Option<Preset>,
    pub prompt: Option<u32>,
    pub gen: Option<u32>,
    pub reps: Option<u32>,
    /// GPU layers as `--ngl` takes them ("99", "0,8,16,99", "0-32+8");
    /// a list makes an offload sweep of each level.
    #[serde(default)]
    pub ngl: Option<String>,
    /// Layers whose experts stay on the CPU, as `--n-cpu-moe` takes them
    /// ("8", "0,8,16"); a list sweeps them.
    #[serde(default)]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub n_cpu_moe: Option<String>,
    /// Tensor overrides as `--override-tensor` takes them ("exps=CPU").
    #[serde(default)]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub override_tensor: Option<String>,
    /// RPC servers whose devices take layers too, as `--rpc` takes them
    /// ("192.168.1.20:50052,192.168.1.21:50052").
    #[serde(default)]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub rpc: Option<String>,
    pub quality: Option<bool>,
    /// Measure every level again instead of resuming the same sweep.
    #[serde(default)]
    #[cfg_attr(feature = "ts", ts(as = "Option<_>", optional))]
    pub fresh: bool,
    /// Minutes of sustained decode per level (`--sustain`) instead of the
    /// preset or the lengths above.
    #[serde(default)]
    pub sustain_min: Option<f64>,
    /// Wait for idle temperatures and clocks before each level after the
    /// first (`--cooldown`, up to 120 s).
    #[serde(default)]
    #[cfg_attr(feature = "ts", ts(as = "Option<_>", optional))]
    pub cooldown: bool,
}

/// Where the form's levels come from.
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[cfg_attr(feature = "ts", ts(rename = "SweepSource"))]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum SourceInput {
    Files {
        files: Vec<String>,
    },
    From {
        base: String,
        #[cfg_attr(feature = "ts", ts(optional))]
        levels: Option<Vec<String>>,
    },
    Dir {
        dir: String,
    },
    /// A Hugging Face repo's levels: downloaded first (verified,
    /// resumable), or with `shape_only` measured from their headers alone
    /// with synthetic weights (`--repo --shape-only`).
    Repo {
        repo: String,
        #[cfg_attr(feature = "ts", ts(optional))]
        levels: Option<Vec<String>>,
        #[serde(default)]
        #[cfg_attr(feature = "ts", ts(as = "Option<_>", optional))]
        shape_only: bool,
        /// Keep the synthetic files in Dyno's cache afterwards (`--keep`).
        #[serde(default)]
        #[cfg_attr(feature = "ts", ts(as = "Option<_>", optional))]
        keep: bool,
    },
    /// A named shape's levels, each written from Dyno's built-in header
    /// with synthetic weights (`--shape`): nothing to download or own.
    Shape {
        shape: String,
        #[cfg_attr(feature = "ts", ts(optional))]
        levels: Option<Vec<String>>,
        /// Keep the synthetic files in Dyno's cache afterwards (`--keep`).
        #[serde(default)]
        #[cfg_attr(feature = "ts", ts(as = "Option<_>", optional))]
        keep: bool,
    },
}

impl SourceInput {
    /// Where the levels come from, and the levels asked for; a blank path or
    /// repo is refused with what to type.
    fn source(&self) -> Result<(Source, Vec<String>)> {
        let need = |what: &str| {
            DynoError::BadInput(format!(
                "{what} is empty; type the full path of a .gguf file or folder"
            ))
        };
        let given = |l: &Option<Vec<String>>| l.clone().unwrap_or_default();
        Ok(match self {
            SourceInput::Files { files } => {
                let files: Vec<PathBuf> = files
                    .iter()
                    .map(|f| f.trim())
                    .filter(|f| !f.is_empty())
                    .map(PathBuf::from)
                    .collect();
                if files.is_empty() {
                    return Err(need("the list of files"));
                }
                (Source::Files(files), Vec::new())
            }
            SourceInput::From { base, levels } => {
                if base.trim().is_empty() {
                    return Err(need("the base model"));
                }
                (Source::From(base.trim().into()), given(levels))
            }
            SourceInput::Dir { dir } => {
                if dir.trim().is_empty() {
                    return Err(need("the folder"));
                }
                (Source::Dir(dir.trim().into()), Vec::new())
            }
            SourceInput::Repo { repo, levels, .. } => {
                if repo.trim().is_empty() {
                    return Err(DynoError::BadInput(
                        "the repo is empty; type it as OWNER/NAME, as the hub search lists it"
                            .into(),
                    ));
                }
                (Source::Repo(repo.trim().to_string()), given(levels))
            }
            SourceInput::Shape { shape, levels, .. } => {
                if shape.trim().is_empty() {
                    return Err(DynoError::BadInput(format!(
                        "choose a shape: {}",
                        super::synth::builtin_shapes().join(", ")
                    )));
                }
                (Source::Shape(shape.trim().to_string()), given(levels))
            }
        })
    }
}

impl SweepInput {
    /// The sweep this form asks for, with llama-bench's defaults (and
    /// `default_threads`) for what it leaves out. Each text field takes the
    /// syntax of its `dyno sweep` option and is refused in the same words.
    pub fn order(&self, default_threads: u32) -> Result<SweepOrder> {
        let (source, levels) = self.source.source()?;
        let (shape_only, keep) = match self.source {
            SourceInput::Repo {
                shape_only, keep, ..
            } => (shape_only, shape_only && keep),
            SourceInput::Shape { keep, .. } => (true, keep),
            _ => (false, false),
        };
        let request = self.request(default_threads)?;
        let quality = (self.quality != Some(false)).then(QualitySettings::default);
        Ok(SweepOrder {
            what: SweepWhat::New(Box::new(spec(
                source, &levels, request, quality, shape_only,
            )?)),
            endpoint: None,
            keep,
            fresh: self.fresh,
            measuring: self.measuring(),
            timeout_s: DEFAULT_TIMEOUT_S,
        })
    }

    /// The form as one benchmark, as `dyno bench FILE` with the same options
    /// would measure it: one file without quality is one result (its runs),
    /// not a sweep of one level shown twice. Quality and several files or
    /// levels are a sweep's ([`SweepInput::order`]).
    pub fn bench_input(&self, default_threads: u32) -> Result<BenchInput> {
        let file = match &self.source {
            SourceInput::Files { files } => {
                let files: Vec<&str> = files
                    .iter()
                    .map(|f| f.trim())
                    .filter(|f| !f.is_empty())
                    .collect();
                match files[..] {
                    [one] => one,
                    _ => {
                        return Err(DynoError::BadInput(format!(
                            "a benchmark measures one file and {} were given; \
                             several files of a model are a sweep",
                            files.len()
                        )))
                    }
                }
            }
            _ => {
                return Err(DynoError::BadInput(
                    "a benchmark measures one file; levels from a base file, a folder or a \
                     repo are a sweep"
                        .into(),
                ))
            }
        };
        if self.quality == Some(true) {
            return Err(DynoError::BadInput(
                "quality is scored against a sweep's most precise level; untick Quality \
                 to benchmark one file, or sweep its levels"
                    .into(),
            ));
        }
        let mut request = self.request(default_threads)?;
        // As a sweep of the same form measures it (and the form's plan lists it).
        first_pair(&mut request);
        Ok(BenchInput {
            models: vec![super::expand_home(file)],
            request,
            retry_disturbed: 0,
            measuring: self.measuring(),
        })
    }

    /// How the figures are taken: the defaults, and the Cool down box.
    fn measuring(&self) -> Measuring {
        Measuring {
            cooldown_s: self.cooldown.then_some(COOLDOWN_S),
            ..Measuring::default()
        }
    }

    /// What each file or level is measured with: the plan (a preset, the
    /// lengths, or a sustained decode) and the placement fields, with
    /// llama-bench's defaults for what is left out.
    fn request(&self, default_threads: u32) -> Result<BenchRequest> {
        fn bad(field: &'static str) -> impl Fn(String) -> DynoError {
            move |e| DynoError::BadInput(format!("{field}: {e}"))
        }
        let mut request = BenchRequest::defaults(default_threads);
        if let Some(m) = self.sustain_min {
            request.sustain_s = Some(options::sustain_seconds(m).map_err(bad("sustained decode"))?);
        } else if let Some(p) = self.preset {
            p.apply(&mut request);
        } else {
            request.n_prompt = self.prompt.map_or(request.n_prompt, |p| vec![p]);
            request.n_gen = self.gen.map_or(request.n_gen, |n| vec![n]);
            request.reps = self.reps.unwrap_or(request.reps);
        }
        let text = |t: &Option<String>| t.as_deref().unwrap_or("").to_string();
        if let Some(n) = options::ngl_list(&text(&self.ngl)).map_err(bad("GPU layers"))? {
            request.n_gpu_layers = n;
        }
        if let Some(n) =
            options::count_list(&text(&self.n_cpu_moe)).map_err(bad("expert layers on the CPU"))?
        {
            request.n_cpu_moe = n;
        }
        if let Some(o) =
            options::override_list(&text(&self.override_tensor)).map_err(bad("tensor overrides"))?
        {
            request.tensor_overrides = o;
        }
        request.rpc = options::rpc_list(&text(&self.rpc).split_whitespace().collect::<String>());
        Ok(request)
    }
}

/// The longest wait for idle temperatures and clocks a form's Cool down
/// box asks for (`--cooldown`'s default).
pub const COOLDOWN_S: u32 = 120;

/// What one sweep does, in the core's own types: `dyno sweep` fills it
/// from its options, the app from [`SweepInput`], and [`execute`] runs it.
#[derive(Debug, Clone)]
pub struct SweepOrder {
    pub what: SweepWhat,
    /// The hub address for a repo's levels, for a mirror (else the
    /// settings', or `HF_ENDPOINT`).
    pub endpoint: Option<String>,
    /// Keep a shape-only sweep's synthetic files in Dyno's cache.
    pub keep: bool,
    /// Measure every level again instead of resuming the same sweep.
    pub fresh: bool,
    pub measuring: Measuring,
    /// Longest a worker may stay silent (one repetition) before it is killed.
    pub timeout_s: u64,
}

/// A new sweep, or one stored to carry on with its own plan.
#[derive(Debug, Clone)]
pub enum SweepWhat {
    New(Box<SweepSpec>),
    Resume(i64),
}

/// The time to first token measured on the first prompt and generation
/// lengths, unless the request names its own pairs.
fn first_pair(request: &mut BenchRequest) {
    if request.prompt_gen.is_empty() {
        if let (Some(&p), Some(&n)) = (request.n_prompt.first(), request.n_gen.first()) {
            request.prompt_gen = vec![(p, n)];
        }
    }
}

/// A sweep's spec from its parts, checked: `levels` as typed (any case,
/// commas allowed; none means every file, or the default ladder), and the
/// time to first token measured on the first pp and tg unless the request
/// names its own pairs. A shape-only sweep measures no quality, since
/// synthetic weights' text is noise.
pub fn spec(
    source: Source,
    levels: &[String],
    mut request: BenchRequest,
    quality: Option<QualitySettings>,
    shape_only: bool,
) -> Result<SweepSpec> {
    let levels = if levels.is_empty() {
        None
    } else {
        Some(parse_levels(levels)?)
    };
    first_pair(&mut request);
    // A named shape has no real file: it is only ever measured by its shape.
    let shape_only = shape_only || matches!(source, Source::Shape(_));
    let quality = quality.filter(|_| !shape_only);
    if quality.is_some_and(|q| q.tokens == 0) {
        return Err(DynoError::BadInput(
            "--quality-tokens must be at least 1; use --no-quality to skip quality".into(),
        ));
    }
    Ok(SweepSpec {
        source,
        levels,
        request,
        quality,
        shape_only,
    })
}

/// Run (or resume) the sweep `order` asks for and build its report; `None`
/// when it was cancelled before a level ran.
pub async fn run(
    store: &Store,
    db: &Path,
    order: &SweepOrder,
    cancel: Cancel,
    reporter: &mut dyn SweepReporter,
    pull: &mut dyn PullProgress,
) -> Result<Option<SweepReport>> {
    let worker = super::bench::worker(order.timeout_s)?;
    match execute(store, db, order, worker, cancel, reporter, pull).await? {
        Some(done) => Ok(Some(super::results::sweep(store, done.sweep_id).await?)),
        None => Ok(None),
    }
}

/// What a sweep run did: its id and outcome ([`execute`] gives `None`
/// instead when it was cancelled while a repo's levels were downloading).
pub struct Executed {
    pub sweep_id: i64,
    pub outcome: SweepOutcome,
}

/// Run (or resume) the sweep `order` asks for, reporting to `reporter` (and
/// a repo's downloads to `pull`): the whole of `dyno sweep` but the
/// printing, shared by the CLI and the app.
pub async fn execute(
    store: &Store,
    db: &Path,
    order: &SweepOrder,
    worker: WorkerOptions,
    cancel: Cancel,
    reporter: &mut dyn SweepReporter,
    pull: &mut dyn PullProgress,
) -> Result<Option<Executed>> {
    let machine = Machine::detect();
    let machine_id = store.upsert_machine(&machine).await?;
    let (spec, resume) = match &order.what {
        SweepWhat::Resume(id) => (stored_spec(store, db, *id, machine_id).await?, Some(*id)),
        SweepWhat::New(spec) => ((**spec).clone().canonical(), None),
    };
    spec.request.validate()?;
    // Headers first: a bad --from base or folder fails in milliseconds. A
    // repo's missing levels are downloaded first (verified, resumable).
    // Twins of a shape-only sweep live until it ends, then are deleted.
    let mut twins = None;
    let resolved = match &spec.source {
        Source::Repo(repo) if spec.shape_only => {
            let made = repo_twins(store, &machine, repo, &spec, order, &cancel, reporter).await?;
            let paths = made.paths();
            twins = Some(made);
            resolve_files(&paths, None)?
        }
        Source::Shape(shape) => {
            let made = shape_twins(store, &machine, shape, &spec, order, &cancel, reporter).await?;
            let paths = made.paths();
            twins = Some(made);
            resolve_files(&paths, None)?
        }
        Source::Repo(repo) => {
            let files = pull_repo_levels(
                store,
                repo,
                spec.levels.as_deref(),
                order.endpoint.as_deref(),
                &cancel,
                reporter,
                pull,
            )
            .await?;
            let Some(files) = files else {
                return Ok(None);
            };
            resolve_files(&files, None)?
        }
        _ => resolve(&spec)?,
    };
    super::hw::ensure_inventory(store, machine_id, &machine, false).await?;
    let key = spec.resume_key(&machine.fingerprint);
    let sweep_id = match resume {
        Some(id) => id,
        None => find_or_create(store, machine_id, &spec, &key, order.fresh, reporter).await?,
    };
    if !store.reopen_sweep(sweep_id).await? {
        return Err(DynoError::BadInput(format!(
            "sweep {sweep_id} was just taken by another Dyno process; wait for it to finish"
        )));
    }

    let ctx = order
        .measuring
        .context(store, machine_id, sweep_id, worker, cancel.clone());
    if let Some(note) = super::bench::battery_note() {
        reporter.sweep(&SweepEvent::Info(&note));
    }
    let plan = Plan {
        models: resolved
            .levels
            .iter()
            .map(|l| l.path.clone().unwrap_or_else(|| l.level.clone().into()))
            .collect(),
        request: spec.request.clone(),
    };
    reporter.planned(plan.total_samples());
    let out = run_sweep(&ctx, &spec, &resolved, sweep_id, order.fresh, reporter).await;
    if let Some(t) = twins {
        reporter.sweep(&SweepEvent::Info(&t.fate()));
    }
    let status = match &out {
        Ok(o) if o.cancelled => SweepStatus::Cancelled,
        Ok(o) if o.failed == 0 => SweepStatus::Ok,
        Ok(_) => SweepStatus::Partial,
        Err(_) => SweepStatus::Failed,
    };
    store.finish_sweep(sweep_id, status).await?;
    Ok(Some(Executed {
        sweep_id,
        outcome: out?,
    }))
}

/// The stored plan of sweep `id`, to resume: refused while another process
/// runs it, when it was measured on another machine, or when another Dyno
/// version stored it.
async fn stored_spec(store: &Store, db: &Path, id: i64, machine_id: i64) -> Result<SweepSpec> {
    let row = store
        .sweep(id)
        .await?
        .filter(|s| s.kind == "sweep")
        .ok_or_else(|| {
            DynoError::NotFound(format!(
                "no sweep {id} in {}; `dyno sweeps` lists them",
                db.display()
            ))
        })?;
    if row.status == Some(SweepStatus::Running) {
        return Err(DynoError::BadInput(format!(
            "sweep {id} is running in another Dyno process (pid {}); wait for it to finish",
            row.owner_pid.unwrap_or_default()
        )));
    }
    if row.machine_id != Some(machine_id) {
        return Err(DynoError::BadInput(format!(
            "sweep {id} was measured on another machine; run the sweep afresh here"
        )));
    }
    match row.args.into_inner() {
        Some(GroupArgs::Sweep(spec)) => Ok(spec),
        _ => Err(DynoError::BadInput(format!(
            "sweep {id} was stored by another Dyno version and cannot be resumed; run it afresh"
        ))),
    }
}

/// The sweep with the same levels, plan and machine to resume (unless
/// `fresh`), else a new one. One still running belongs to a live process:
/// measuring beside it would only disturb both.
async fn find_or_create(
    store: &Store,
    machine_id: i64,
    spec: &SweepSpec,
    key: &str,
    fresh: bool,
    reporter: &mut dyn SweepReporter,
) -> Result<i64> {
    Ok(match store.find_sweep(key).await? {
        // A sweep still 'running' after orphans were closed belongs to a
        // live process: measuring beside it would only disturb both.
        Some(s) if s.status == Some(SweepStatus::Running) => {
            return Err(DynoError::BadInput(format!(
                "sweep {} with the same levels and plan is running in another Dyno process (pid {}); wait for it, or stop it and run this again to resume",
                s.id,
                s.owner_pid.unwrap_or_default()
            )));
        }
        Some(s) if !fresh => {
            reporter.sweep(&SweepEvent::Info(&format!(
                "resuming sweep {} (same levels, plan and machine); levels already measured are skipped, --fresh measures them again",
                s.id
            )));
            s.id
        }
        _ => {
            store
                .create_quant_sweep(machine_id, spec, spec.source.kind(), key)
                .await?
        }
    })
}

/// `--repo --shape-only`: a synthetic twin of each of the sweep's levels,
/// written from its header alone and deleted when the sweep is done.
async fn repo_twins(
    store: &Store,
    machine: &Machine,
    repo: &str,
    spec: &SweepSpec,
    order: &SweepOrder,
    cancel: &Cancel,
    reporter: &mut dyn SweepReporter,
) -> Result<super::shape_only::Twins> {
    let hub = super::hub::open(store, order.endpoint.as_deref()).await?;
    let listing = super::hub::repo_listing(&hub, repo).await?;
    let targets: Vec<String> = choose_levels(&listing, repo, spec.levels.as_deref(), reporter)?
        .iter()
        .map(|l| format!("{repo}:{}", l.level))
        .collect();
    reporter.sweep(&SweepEvent::Info(
        "measuring the levels' shapes with synthetic weights (--shape-only): nothing is downloaded, and quality needs the real weights, so it is not measured",
    ));
    let twins = super::shape_only::write_twins(
        store,
        machine,
        &targets,
        Some(&listing),
        order.endpoint.as_deref(),
        order.keep,
        cancel,
    )
    .await?;
    for t in &twins.twins {
        reporter.sweep(&SweepEvent::Info(&t.describe()));
    }
    Ok(twins)
}

/// `--shape`: a synthetic file of the shape at each of the sweep's levels,
/// written from Dyno's built-in header and deleted when the sweep is done.
/// The default ladder's levels whose tensor types Dyno cannot write yet are
/// left out, in words.
async fn shape_twins(
    store: &Store,
    machine: &Machine,
    shape: &str,
    spec: &SweepSpec,
    order: &SweepOrder,
    cancel: &Cancel,
    reporter: &mut dyn SweepReporter,
) -> Result<super::shape_only::Twins> {
    let known = super::synth::builtin_shapes();
    let Some(shape) = known.iter().find(|s| s.eq_ignore_ascii_case(shape)) else {
        return Err(DynoError::BadInput(format!(
            "{shape}: no such shape; Dyno knows {}",
            known.join(", ")
        )));
    };
    let writable = crate::model::reshape::level_names();
    let levels: Vec<String> = match spec.levels.as_deref() {
        Some(l) => l.to_vec(),
        None => {
            let (some, left): (Vec<&str>, Vec<&str>) = DEFAULT_LADDER
                .iter()
                .partition(|l| writable.iter().any(|w| w.eq_ignore_ascii_case(l)));
            if !left.is_empty() {
                reporter.sweep(&SweepEvent::Info(&format!(
                    "{} left out: Dyno cannot write those levels' tensor types yet (it writes {})",
                    left.join(", "),
                    writable.join(", ")
                )));
            }
            some.into_iter().map(String::from).collect()
        }
    };
    let targets: Vec<String> = levels.iter().map(|l| format!("{shape}:{l}")).collect();
    reporter.sweep(&SweepEvent::Info(&format!(
        "measuring the shape {shape} with synthetic weights from Dyno's built-in llama header: nothing is downloaded, and quality needs real weights, so it is not measured"
    )));
    let twins =
        super::shape_only::write_twins(store, machine, &targets, None, None, order.keep, cancel)
            .await?;
    for t in &twins.twins {
        reporter.sweep(&SweepEvent::Info(&t.describe()));
    }
    Ok(twins)
}

/// The repo's levels the sweep measures, in the order asked: the default
/// ladder unless `levels` names some (a repo in BF16 stands in for F16).
fn choose_levels<'l>(
    listing: &'l crate::hub::files::RepoListing,
    repo: &str,
    levels: Option<&[String]>,
    reporter: &mut dyn SweepReporter,
) -> Result<Vec<&'l crate::hub::files::RepoLevel>> {
    let wanted: Vec<String> = match levels {
        Some(l) => l.to_vec(),
        None => DEFAULT_LADDER.iter().map(|s| s.to_string()).collect(),
    };
    let find = |name: &str| {
        listing
            .levels
            .iter()
            .find(|v| v.level.eq_ignore_ascii_case(name))
    };
    let mut chosen = Vec::new();
    for w in &wanted {
        // A repo published in BF16 rather than F16 still has a top level.
        let level = find(w).or_else(|| (w == "F16").then(|| find("BF16")).flatten());
        match level {
            Some(v)
                if !chosen
                    .iter()
                    .any(|c: &&crate::hub::files::RepoLevel| c.level == v.level) =>
            {
                chosen.push(v)
            }
            Some(_) => {}
            None => reporter.sweep(&SweepEvent::Info(&format!(
                "{repo} has no {w} files; that level is left out"
            ))),
        }
    }
    if chosen.is_empty() {
        return Err(DynoError::BadInput(format!(
            "{repo} has none of the levels {}; it has {}. Pick some with --levels",
            wanted.join(", "),
            listing
                .levels
                .iter()
                .map(|v| v.level.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    Ok(chosen)
}

/// Download the repo's files for the sweep's levels (those already in the
/// cache cost nothing) and return the first file of each level. `None`
/// once cancelled.
async fn pull_repo_levels(
    store: &Store,
    repo: &str,
    levels: Option<&[String]>,
    endpoint: Option<&str>,
    cancel: &Cancel,
    reporter: &mut dyn SweepReporter,
    pull: &mut dyn PullProgress,
) -> Result<Option<Vec<PathBuf>>> {
    let hub = super::hub::open(store, endpoint).await?;
    let listing = super::hub::repo_listing(&hub, repo).await?;
    let chosen = choose_levels(&listing, repo, levels, reporter)?;
    let mut out = Vec::new();
    for v in chosen {
        let mut first = None;
        for f in &v.files {
            match super::hub::pull_recorded(
                store,
                &hub,
                &listing.repo,
                &listing.commit,
                f,
                cancel,
                pull,
            )
            .await
            {
                Ok(p) => {
                    first.get_or_insert(p.local_path);
                }
                Err(e) if cancel.is_cancelled() => {
                    reporter.sweep(&SweepEvent::Info(&e.to_string()));
                    return Ok(None);
                }
                Err(e) => return Err(e),
            }
        }
        out.extend(first);
    }
    Ok(Some(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(source: SourceInput) -> SweepInput {
        SweepInput {
            source,
            preset: None,
            prompt: Some(64),
            gen: Some(16),
            reps: Some(2),
            ngl: None,
            n_cpu_moe: None,
            override_tensor: None,
            rpc: None,
            quality: Some(false),
            fresh: false,
            sustain_min: None,
            cooldown: false,
        }
    }

    fn new(order: SweepOrder) -> SweepSpec {
        match order.what {
            SweepWhat::New(spec) => *spec,
            SweepWhat::Resume(_) => panic!("a form never resumes"),
        }
    }

    #[test]
    fn a_repo_by_its_shapes_becomes_a_shape_only_order() {
        let o = input(SourceInput::Repo {
            repo: " org/x-GGUF ".into(),
            levels: Some(vec!["Q8_0".into(), "q4_k_m".into()]),
            shape_only: true,
            keep: true,
        })
        .order(2)
        .unwrap();
        assert!(o.keep);
        let spec = new(o);
        assert_eq!(spec.source, Source::Repo("org/x-GGUF".into()));
        assert_eq!(
            spec.levels.as_deref(),
            Some(&["Q8_0".into(), "Q4_K_M".into()][..])
        );
        assert!(spec.shape_only);
        assert_eq!(spec.quality, None, "synthetic weights have no quality");
        // Keeping means nothing when the real files are downloaded.
        let real = input(SourceInput::Repo {
            repo: "org/x-GGUF".into(),
            levels: None,
            shape_only: false,
            keep: true,
        })
        .order(2)
        .unwrap();
        assert!(!real.keep);
        assert!(!new(real).shape_only);
        let e = input(SourceInput::Repo {
            repo: " ".into(),
            levels: None,
            shape_only: false,
            keep: false,
        })
        .order(2)
        .unwrap_err();
        assert!(e.to_string().contains("OWNER/NAME"), "{e}");
    }

    /// A named shape has no real file: its order is always shape-only and
    /// never scores quality, whatever the form's boxes say.
    #[test]
    fn a_named_shape_is_always_measured_by_its_shape() {
        let o = SweepInput {
            quality: Some(true),
            ..input(SourceInput::Shape {
                shape: " llama-3.1-8b ".into(),
                levels: Some(vec!["q4_k_m".into()]),
                keep: false,
            })
        }
        .order(2)
        .unwrap();
        assert!(!o.keep);
        let spec = new(o);
        assert_eq!(spec.source, Source::Shape("llama-3.1-8b".into()));
        assert_eq!(spec.source.kind(), "shape");
        assert_eq!(spec.levels.as_deref(), Some(&["Q4_K_M".into()][..]));
        assert!(spec.shape_only);
        assert_eq!(spec.quality, None, "synthetic weights have no quality");
        let e = input(SourceInput::Shape {
            shape: "".into(),
            levels: None,
            keep: true,
        })
        .order(2)
        .unwrap_err()
        .to_string();
        assert!(e.contains("llama-3.2-1b"), "the shapes are offered: {e}");
    }

    #[test]
    fn sustained_and_cooldown_reach_the_order() {
        let mut i = input(SourceInput::Files {
            files: vec!["a.gguf".into()],
        });
        i.sustain_min = Some(0.5);
        i.cooldown = true;
        let o = i.order(2).unwrap();
        assert_eq!(o.measuring.cooldown_s, Some(COOLDOWN_S));
        let r = new(o).request;
        assert_eq!(r.sustain_s, Some(30));
        // The lengths the form also held are not sent beside it.
        assert_eq!(r.n_prompt, BenchRequest::defaults(2).n_prompt);
        i.sustain_min = Some(0.0);
        let e = i.order(2).unwrap_err().to_string();
        assert!(e.contains("minutes above 0"), "{e}");
    }

    #[test]
    fn one_file_without_quality_is_one_benchmark_with_the_forms_options() {
        let mut i = input(SourceInput::Files {
            files: vec![" ".into(), " /m/a.gguf ".into()],
        });
        i.ngl = Some("0,99".into());
        i.cooldown = true;
        let b = i.bench_input(3).unwrap();
        assert_eq!(b.models, [PathBuf::from("/m/a.gguf")]);
        assert_eq!(b.measuring.cooldown_s, Some(COOLDOWN_S));
        assert_eq!(b.retry_disturbed, 0);
        let r = &b.request;
        assert_eq!(
            (&r.n_prompt[..], &r.n_gen[..], r.reps, &r.n_threads[..]),
            (&[64][..], &[16][..], 2, &[3][..])
        );
        assert_eq!(r.n_gpu_layers, [Some(0), Some(99)]);
        // The same tests as the form's sweep would run, the pair included.
        let sweep = new(i.order(3).unwrap()).request;
        assert_eq!(r.prompt_gen, sweep.prompt_gen);
        assert_eq!(r.prompt_gen, [(64, 16)]);
        // A preset is its own plan, pair and all.
        i.preset = Some(Preset::Quick);
        let mut quick = BenchRequest::defaults(3);
        Preset::Quick.apply(&mut quick);
        assert_eq!(
            i.bench_input(3).unwrap().request.prompt_gen,
            quick.prompt_gen
        );

        // Several files, another source or quality are a sweep's.
        i.source = SourceInput::Files {
            files: vec!["a.gguf".into(), "b.gguf".into()],
        };
        let e = i.bench_input(3).unwrap_err().to_string();
        assert!(e.contains("2 were given"), "{e}");
        i.source = SourceInput::Dir { dir: "/m".into() };
        assert!(i
            .bench_input(3)
            .unwrap_err()
            .to_string()
            .contains("are a sweep"));
        i.source = SourceInput::Files {
            files: vec!["a.gguf".into()],
        };
        i.quality = Some(true);
        let e = i.bench_input(3).unwrap_err().to_string();
        assert!(e.contains("untick Quality"), "{e}");
    }

    #[test]
    fn the_form_becomes_the_cores_spec() {
        let o = input(SourceInput::From {
            base: " /m/base.gguf ".into(),
            levels: Some(vec!["q8_0".into(), "Q4_0".into()]),
        })
        .order(3)
        .unwrap();
        assert!(!o.fresh && o.measuring.telemetry && o.measuring.memory_check);
        assert_eq!(o.timeout_s, DEFAULT_TIMEOUT_S);
        let spec = new(o);
        assert_eq!(spec.source, Source::From("/m/base.gguf".into()));
        assert_eq!(
            spec.levels.as_deref(),
            Some(&["Q8_0".into(), "Q4_0".into()][..])
        );
        let r = &spec.request;
        assert_eq!(
            (&r.n_prompt[..], &r.n_gen[..], r.reps),
            (&[64][..], &[16][..], 2)
        );
        assert_eq!(r.n_threads, [3]);
        // A sweep measures the time to first token on its first pair.
        assert_eq!(r.prompt_gen, [(64, 16)]);
        assert_eq!(spec.quality, None);
        let mut i = input(SourceInput::Dir { dir: "/m".into() });
        i.quality = None;
        assert_eq!(
            new(i.order(2).unwrap()).quality,
            Some(QualitySettings::default())
        );
    }

    #[test]
    fn gpu_layers_from_the_form_are_an_offload_sweep() {
        let mut i = input(SourceInput::Dir { dir: "/m".into() });
        i.ngl = Some(" 0-16+8,99, 8 ".into());
        let r = new(i.order(2).unwrap()).request;
        assert_eq!(r.n_gpu_layers, [Some(0), Some(8), Some(16), Some(99)]);
        i.ngl = Some(" ".into());
        let r = new(i.order(2).unwrap()).request;
        assert_eq!(r.n_gpu_layers, BenchRequest::defaults(2).n_gpu_layers);
        i.ngl = Some("lots".into());
        let e = i.order(2).unwrap_err().to_string();
        assert!(
            e.contains("GPU layers") && e.contains("not a layer count"),
            "{e}"
        );
    }

    #[test]
    fn expert_placement_from_the_form_reaches_the_plan() {
        let mut i = input(SourceInput::Dir { dir: "/m".into() });
        i.n_cpu_moe = Some(" 0,8 ".into());
        i.override_tensor = Some("ffn_up_exps=CPU;attn_q=CPU".into());
        let r = new(i.order(2).unwrap()).request;
        assert_eq!(r.n_cpu_moe, [0, 8]);
        assert_eq!(r.tensor_overrides.len(), 1);
        assert_eq!(r.tensor_overrides[0][1].pattern, "attn_q");
        i.override_tensor = Some("exps".into());
        let e = i.order(2).unwrap_err().to_string();
        assert!(e.contains("PATTERN=BUFFER"), "{e}");
    }

    #[test]
    fn rpc_servers_from_the_form_reach_the_plan_and_a_bad_one_is_refused() {
        let mut i = input(SourceInput::Dir { dir: "/m".into() });
        i.rpc = Some(" 10.0.0.2:50052, 10.0.0.3:50052 ".into());
        let r = new(i.order(2).unwrap()).request;
        assert_eq!(r.rpc, ["10.0.0.2:50052", "10.0.0.3:50052"]);
        assert!(r.groups().iter().all(|g| g.model.rpc == r.rpc));
        i.rpc = Some("10.0.0.2".into());
        let e = new(i.order(2).unwrap())
            .request
            .validate()
            .unwrap_err()
            .to_string();
        assert!(e.contains("HOST:PORT"), "{e}");
    }

    #[test]
    fn a_preset_is_one_plan_whatever_else_the_form_holds() {
        let mut i = input(SourceInput::Files {
            files: vec!["a.gguf".into()],
        });
        i.preset = Some(Preset::Quick);
        let r = new(i.order(2).unwrap()).request;
        assert_eq!((r.n_prompt, r.n_gen, r.reps), (vec![128], vec![32], 3));
        assert_eq!(r.prompt_gen, [(128, 32)]);
        let i: SweepInput = serde_json::from_value(
            serde_json::json!({"source": {"kind": "files", "files": ["a.gguf"]}, "preset": "thorough"}),
        )
        .unwrap();
        assert_eq!(new(i.order(2).unwrap()).request.reps, 10);
    }

    #[test]
    fn a_path_that_looks_like_an_option_stays_a_path() {
        let o = input(SourceInput::Files {
            files: vec!["--fresh".into(), "".into(), " b.gguf".into()],
        })
        .order(2)
        .unwrap();
        assert!(!o.fresh);
        assert_eq!(
            new(o).source,
            Source::Files(vec![PathBuf::from("--fresh"), PathBuf::from("b.gguf")])
        );
    }

    #[test]
    fn empty_or_bad_forms_are_refused_with_what_to_do() {
        let e = input(SourceInput::Dir { dir: "  ".into() })
            .order(2)
            .unwrap_err();
        assert!(
            matches!(&e, DynoError::BadInput(m) if m.contains("folder is empty")),
            "{e}"
        );
        let mut bad = input(SourceInput::Files {
            files: vec!["a.gguf".into()],
        });
        bad.reps = Some(0);
        // Out-of-range values are the core's to judge (`validate`), for
        // both front ends alike; the form only has to reach it.
        let r = new(bad.order(2).unwrap()).request;
        assert!(r.validate().is_err());
        let e =
            serde_json::from_value::<SweepInput>(serde_json::json!({"source": {"kind": "cloud"}}))
                .unwrap_err();
        assert!(e.to_string().contains("cloud"));
        let e = spec(
            Source::Dir("/m".into()),
            &[],
            BenchRequest::defaults(2),
            Some(QualitySettings { tokens: 0, topk: 0 }),
            false,
        )
        .unwrap_err();
        assert!(e.to_string().contains("--no-quality"), "{e}");
    }
}
