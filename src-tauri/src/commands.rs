//! The commands the UI calls (docs/app-api.md). Each is a few lines over the
//! dyno core and returns the same JSON as the matching CLI command with
//! `--json`, so the CLI is the reference for every shape.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use dyno::app::models as app_models;
use dyno::app::settings as app_settings;
use dyno::cli::{args, hub as cli_hub, hw, open_store, sweep as cli_sweep};
use dyno::error::DynoError;
use dyno::hub::Hub;
use dyno::machine::Machine;
use dyno::report::{self, export, Target};
use dyno::worker::client::WorkerOptions;
use serde::Deserialize;
use serde_json::{json, Value};
use tauri::ipc::Channel;
use tauri::State;

use crate::error::{AppError, AppResult};
use crate::jobs::{on_core, Jobs, Kind, LiveTelemetry, ToUi};

/// What every command shares: the database and the running jobs.
pub struct App {
    pub db: PathBuf,
    pub jobs: Arc<Jobs>,
}

impl App {
    /// `DYNO_DB` if set (as for the CLI), else the platform data directory.
    pub fn from_env() -> App {
        App {
            db: std::env::var_os("DYNO_DB")
                .map(PathBuf::from)
                .unwrap_or_else(dyno::store::default_db_path),
            jobs: Arc::default(),
        }
    }
}

/// Serialise a core value for the UI.
fn to_json<T: serde::Serialize>(v: &T) -> AppResult<Value> {
    serde_json::to_value(v).map_err(|e| AppError::internal(format!("cannot serialise: {e}")))
}

fn target(s: &str) -> AppResult<Target> {
    Ok(s.parse::<Target>()?)
}

#[tauri::command]
pub fn app_info(app: State<'_, App>) -> Value {
    let downloads = directories::UserDirs::new()
        .and_then(|u| u.download_dir().map(Path::to_path_buf))
        .or_else(|| directories::BaseDirs::new().map(|b| b.home_dir().to_path_buf()));
    json!({
        "version": env!("CARGO_PKG_VERSION"),
        "db": app.db,
        "downloads": downloads,
    })
}

#[tauri::command]
pub async fn hw(app: State<'_, App>) -> AppResult<Value> {
    let db = app.db.clone();
    let inv = on_core(move || async move { hw::inventory(&db, false).await }).await?;
    to_json(&inv)
}

#[tauri::command]
pub async fn runs(app: State<'_, App>, limit: Option<i64>) -> AppResult<Value> {
    let db = app.db.clone();
    let limit = limit.unwrap_or(1000).clamp(0, 100_000);
    let r = on_core(move || async move {
        let store = open_store(&db).await?;
        let rows = store.runs(limit).await;
        let r = match rows {
            Ok(rows) => report::build(&store, &rows, &Machine::detect()).await,
            Err(e) => Err(e),
        };
        store.close().await;
        r
    })
    .await?;
    to_json(&r)
}

/// Runs and sweeps as list rows with their headline figures: the Results
/// view lists 1,000 runs without loading 1,000 documents.
#[tauri::command]
pub async fn result_list(app: State<'_, App>, limit: Option<i64>) -> AppResult<Value> {
    let db = app.db.clone();
    let limit = limit.unwrap_or(1000).clamp(0, 100_000);
    let rows = on_core(move || async move {
        let store = open_store(&db).await?;
        let r = report::list::build(&store, limit).await;
        store.close().await;
        r
    })
    .await?;
    to_json(&rows)
}

/// The stored telemetry of each run over time, thinned for a chart: the
/// sweep detail's timeline. Runs without telemetry give an empty list.
#[tauri::command]
pub async fn telemetry(app: State<'_, App>, run_ids: Vec<i64>) -> AppResult<Value> {
    let db = app.db.clone();
    let series = on_core(move || async move {
        let store = open_store(&db).await?;
        let out = async {
            let mut v = Vec::new();
            for id in run_ids {
                let points = report::telemetry::timeline(&store, id).await?;
                v.push(json!({"run_id": id, "points": points}));
            }
            Ok::<_, DynoError>(v)
        }
        .await;
        store.close().await;
        out
    })
    .await?;
    to_json(&series)
}

/// A run or a sweep's report, as `dyno show` and `dyno show-sweep` give it.
async fn load(db: PathBuf, t: Target) -> AppResult<Value> {
    let loaded = on_core(move || async move {
        let store = open_store(&db).await?;
        let r = report::load(&store, &db, t).await;
        store.close().await;
        r
    })
    .await?;
    match loaded {
        report::Loaded::Run(r) => to_json(&r),
        report::Loaded::Sweep(s) => to_json(&s),
    }
}

#[tauri::command]
pub async fn run(app: State<'_, App>, id: i64) -> AppResult<Value> {
    load(app.db.clone(), Target::Run(id)).await
}

#[tauri::command]
pub async fn sweep(app: State<'_, App>, id: i64) -> AppResult<Value> {
    load(app.db.clone(), Target::Sweep(id)).await
}

#[tauri::command]
pub async fn sweeps(app: State<'_, App>) -> AppResult<Value> {
    let db = app.db.clone();
    let all = on_core(move || async move {
        let store = open_store(&db).await?;
        let r = cli_sweep::sweep_reports(&store, 1000).await;
        store.close().await;
        r
    })
    .await?;
    to_json(&all)
}

/// Opens the store, runs `f` on it and closes it, whatever `f` returned.
pub(crate) async fn with_store<T, F>(db: PathBuf, f: F) -> AppResult<T>
where
    T: Send + 'static,
    F: for<'s> FnOnce(&'s dyno::store::Store) -> LocalBoxFuture<'s, dyno::error::Result<T>>
        + Send
        + 'static,
{
    on_core(move || async move {
        let store = open_store(&db).await?;
        let r = f(&store).await;
        store.close().await;
        r
    })
    .await
}

pub(crate) type LocalBoxFuture<'a, T> =
    std::pin::Pin<Box<dyn std::future::Future<Output = T> + 'a>>;

#[tauri::command]
pub async fn models(app: State<'_, App>) -> AppResult<Vec<app_models::LocalModel>> {
    with_store(app.db.clone(), |s| Box::pin(app_models::local_models(s))).await
}

/// The folders and files the person added (Models view, "Added places").
#[tauri::command]
pub async fn model_places(app: State<'_, App>) -> AppResult<Vec<app_models::ModelPlace>> {
    with_store(app.db.clone(), |s| Box::pin(app_models::places(s))).await
}

/// Add a folder or a .gguf file: from the native dialogs, a drop on the
/// window, or a typed path.
#[tauri::command]
pub async fn add_model_place(app: State<'_, App>, path: String) -> AppResult<app_models::Added> {
    let path = expand_home(path.trim());
    with_store(app.db.clone(), move |s| {
        Box::pin(async move { app_models::add_place(s, &path).await })
    })
    .await
}

#[tauri::command]
pub async fn remove_model_place(app: State<'_, App>, path: String) -> AppResult<bool> {
    let path = PathBuf::from(path);
    with_store(app.db.clone(), move |s| {
        Box::pin(async move { app_models::remove_place(s, &path).await })
    })
    .await
}

/// The hub client with the settings in force (HF_ENDPOINT, else the
/// endpoint saved in Settings).
async fn hub(db: &Path) -> dyno::error::Result<Hub> {
    let store = open_store(db).await?;
    let h = app_settings::hub(&store, None).await;
    store.close().await;
    h
}

#[tauri::command]
pub async fn hub_search(app: State<'_, App>, query: String) -> AppResult<Value> {
    let db = app.db.clone();
    let found = on_core(move || async move { hub(&db).await?.search(&query, 50).await }).await?;
    to_json(&found)
}

#[tauri::command]
pub async fn hub_levels(app: State<'_, App>, repo: String) -> AppResult<Value> {
    let db = app.db.clone();
    let l = on_core(move || async move { cli_hub::repo_listing(&hub(&db).await?, &repo).await })
        .await?;
    to_json(&l)
}

#[tauri::command]
pub async fn compare(app: State<'_, App>, a: String, b: String) -> AppResult<Value> {
    let (ta, tb) = (target(&a)?, target(&b)?);
    let db = app.db.clone();
    let c = on_core(move || async move {
        let store = open_store(&db).await?;
        let la = report::load(&store, &db, ta).await;
        let lb = report::load(&store, &db, tb).await;
        store.close().await;
        let (la, lb) = (la?, lb?);
        Ok(report::compare::compare(
            &a,
            la.report(),
            &b,
            lb.report(),
            ta.is_sweep() && tb.is_sweep(),
        ))
    })
    .await?;
    to_json(&c)
}

async fn exported(db: PathBuf, t: Target, format: export::Format) -> AppResult<Vec<u8>> {
    on_core(move || async move {
        let store = open_store(&db).await?;
        let r = export::export(&store, &db, t, format, false).await;
        store.close().await;
        r
    })
    .await
}

/// The result card as SVG text, for the Export view's preview.
#[tauri::command]
pub async fn card_svg(app: State<'_, App>, target: String) -> AppResult<String> {
    let t = self::target(&target)?;
    let bytes = exported(app.db.clone(), t, export::Format::Svg).await?;
    String::from_utf8(bytes).map_err(|e| AppError::internal(format!("the card is not UTF-8: {e}")))
}

/// An export as text (md, csv, json), for the Export view's Copy buttons.
#[tauri::command]
pub async fn export_text(app: State<'_, App>, target: String, format: String) -> AppResult<String> {
    let (t, f) = (self::target(&target)?, format.parse::<export::Format>()?);
    if f == export::Format::Png {
        return Err(AppError::new(
            "bad_input",
            "a PNG is not text; save it instead",
        ));
    }
    let bytes = exported(app.db.clone(), t, f).await?;
    String::from_utf8(bytes)
        .map_err(|e| AppError::internal(format!("the export is not UTF-8: {e}")))
}

/// `~/x` and `~` as the user's home: the path field is typed by a person.
fn expand_home(p: &str) -> PathBuf {
    let home = || directories::BaseDirs::new().map(|b| b.home_dir().to_path_buf());
    match p
        .strip_prefix("~/")
        .or(if p == "~" { Some("") } else { None })
    {
        Some(rest) => home()
            .map(|h| h.join(rest))
            .unwrap_or_else(|| PathBuf::from(p)),
        None => PathBuf::from(p),
    }
}

#[tauri::command]
pub async fn export_card(
    app: State<'_, App>,
    target: String,
    format: String,
    path: String,
    overwrite: Option<bool>,
) -> AppResult<Value> {
    let (t, f) = (self::target(&target)?, format.parse::<export::Format>()?);
    let path = expand_home(path.trim());
    if !path.is_absolute() {
        return Err(AppError::new(
            "bad_input",
            format!(
                "{} is not a full path; write one such as ~/Downloads/dyno-{}.{}",
                path.display(),
                t.file_stem(),
                f.extension()
            ),
        ));
    }
    // The native Save dialog has asked already; a typed path is asked about
    // by the UI when this refuses with "exists".
    export::check_destination(&path, f, overwrite.unwrap_or(false))?;
    let bytes = exported(app.db.clone(), t, f).await?;
    export::write_file(&path, &bytes)?;
    Ok(json!({ "path": path }))
}

#[tauri::command]
pub fn cancel(app: State<'_, App>, job_id: String) -> bool {
    app.jobs.cancel(&job_id)
}

/// What each preset measures and how long it should take on `path`.
#[tauri::command]
pub async fn preset_estimates(
    app: State<'_, App>,
    path: String,
) -> AppResult<Vec<dyno::app::presets::Estimate>> {
    let path = expand_home(path.trim());
    with_store(app.db.clone(), move |s| {
        Box::pin(async move {
            let mut all = Vec::new();
            for p in dyno::app::presets::Preset::ALL {
                all.push(dyno::app::presets::estimate(s, &path, p).await?);
            }
            Ok(all)
        })
    })
    .await
}

/// The Sweep view's form (docs/app-api.md).
#[derive(Debug, Deserialize)]
pub struct SweepInput {
    pub source: SourceInput,
    /// Quick, Standard or Thorough; `prompt`, `gen` and `reps` are then
    /// ignored (a preset is one plan, so its runs always compare).
    #[serde(default)]
    pub preset: Option<dyno::app::presets::Preset>,
    pub prompt: Option<u32>,
    pub gen: Option<u32>,
    pub reps: Option<u32>,
    /// GPU layers as `--ngl` takes them ("99", "0,8,16,99", "0-32+8");
    /// a list makes an offload sweep of each level.
    #[serde(default)]
    pub ngl: Option<String>,
    pub quality: Option<bool>,
    /// Measure every level again instead of resuming the same sweep.
    #[serde(default)]
    pub fresh: bool,
}

#[derive(Debug, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum SourceInput {
    Files {
        files: Vec<String>,
    },
    From {
        base: String,
        levels: Option<Vec<String>>,
    },
    Dir {
        dir: String,
    },
}

impl SweepInput {
    /// The `dyno sweep` command line this form means, parsed by the CLI's
    /// own parser so the app and the CLI check options the same way. Every
    /// value is attached with `=`, so a path that starts with `-` stays a
    /// value; nothing here goes near a shell.
    pub fn args(&self) -> AppResult<args::SweepArgs> {
        let mut argv = vec!["dyno".to_string(), "sweep".to_string()];
        let need = |what: &str| {
            AppError::new(
                "bad_input",
                format!("{what} is empty; type the full path of a .gguf file or folder"),
            )
        };
        match &self.source {
            SourceInput::Files { files } => {
                let files: Vec<&String> = files.iter().filter(|f| !f.trim().is_empty()).collect();
                if files.is_empty() {
                    return Err(need("the list of files"));
                }
                argv.extend(files.iter().map(|f| format!("--files={}", f.trim())));
            }
            SourceInput::From { base, levels } => {
                if base.trim().is_empty() {
                    return Err(need("the base model"));
                }
                argv.push(format!("--from={}", base.trim()));
                if let Some(l) = levels.as_ref().filter(|l| !l.is_empty()) {
                    argv.push(format!("--levels={}", l.join(",")));
                }
            }
            SourceInput::Dir { dir } => {
                if dir.trim().is_empty() {
                    return Err(need("the folder"));
                }
                argv.push(format!("--dir={}", dir.trim()));
            }
        }
        if let Some(p) = self.preset {
            let name = clap::ValueEnum::to_possible_value(&p)
                .map(|v| v.get_name().to_string())
                .unwrap_or_default();
            argv.push(format!("--preset={name}"));
        } else {
            if let Some(p) = self.prompt {
                argv.push(format!("--n-prompt={p}"));
            }
            if let Some(n) = self.gen {
                argv.push(format!("--n-gen={n}"));
            }
            if let Some(r) = self.reps {
                argv.push(format!("--repetitions={r}"));
            }
        }
        if let Some(n) = self.ngl.as_deref().map(str::trim).filter(|n| !n.is_empty()) {
            argv.push(format!("--ngl={n}"));
        }
        if self.quality == Some(false) {
            argv.push("--no-quality".into());
        }
        if self.fresh {
            argv.push("--fresh".into());
        }
        use clap::Parser;
        match args::Cli::try_parse_from(&argv) {
            Ok(args::Cli {
                command: args::Command::Sweep(a),
                ..
            }) => Ok(*a),
            Ok(_) => Err(AppError::internal(
                "the sweep form parsed as another command",
            )),
            Err(e) => {
                let text = e.to_string();
                let first = text.lines().next().unwrap_or("").trim();
                Err(AppError::new(
                    "bad_input",
                    first.strip_prefix("error: ").unwrap_or(first).to_string(),
                ))
            }
        }
    }
}

/// Run a sweep with live progress; resolves with its report.
#[tauri::command]
pub async fn start_sweep(
    app: State<'_, App>,
    spec: SweepInput,
    job_id: String,
    on_event: Channel<Value>,
) -> AppResult<Value> {
    let a = spec.args()?;
    let (guard, cancel) = app.jobs.start(&job_id, Kind::Bench)?;
    let cancelled = cancel.clone();
    let db = app.db.clone();
    let timing = crate::jobs::Timing(app.jobs.timing.clone());
    let report = on_core(move || async move {
        let _guard = guard;
        // The app-wide timing flag: downloads hold still while it is up.
        let quiet = timing.0.clone();
        let _live = LiveTelemetry::start(on_event.clone(), quiet.clone());
        let worker =
            WorkerOptions::current(std::time::Duration::from_secs(a.opts.timeout_s.max(1)))
                .map_err(|e| DynoError::io("cannot find Dyno's executable to start a worker", e))?;
        let store = open_store(&db).await?;
        let mut ui = ToUi::quieted(on_event, cancel.clone(), quiet);
        let done = cli_sweep::execute(&store, &db, &a, worker, cancel.clone(), &mut ui).await;
        let out = match done {
            Ok(Some(done)) => report::sweep::build(&store, done.sweep_id, &Machine::detect())
                .await
                .map(Some),
            Ok(None) => Ok(None),
            Err(e) => Err(e),
        };
        store.close().await;
        out
    })
    .await;
    if cancelled.is_cancelled() {
        return Err(AppError::new(
            "cancelled",
            "the sweep was cancelled; what was measured is saved, and running the same sweep again resumes it.",
        ));
    }
    to_json(&report?)
}

/// Download one file of a hub repo (resumable, sha256-verified).
#[tauri::command]
pub async fn hub_pull(
    app: State<'_, App>,
    repo: String,
    file: String,
    job_id: String,
    on_event: Channel<Value>,
) -> AppResult<Value> {
    let (guard, cancel) = app.jobs.start(&job_id, Kind::Download)?;
    let cancelled = cancel.clone();
    let db = app.db.clone();
    let timing = app.jobs.timing.clone();
    let pulled = on_core(move || async move {
        let _guard = guard;
        let hub = hub(&db).await?;
        let info = hub.info(&repo, "main").await?;
        let tree = hub.tree(&repo, &info.sha).await?;
        let f = tree.iter().find(|f| f.path == file).ok_or_else(|| {
            DynoError::NotFound(format!("{repo} has no file {file}; list it again"))
        })?;
        let store = open_store(&db).await?;
        let mut ui = ToUi::download(on_event, cancel.clone(), timing);
        // Not even the first request while a test is timed.
        ui.wait_for_quiet();
        let r =
            cli_hub::pull_recorded(&store, &hub, &info.id, &info.sha, f, &cancel, &mut ui).await;
        store.close().await;
        r
    })
    .await;
    if cancelled.is_cancelled() {
        return Err(AppError::new(
            "cancelled",
            "the download was cancelled; what arrived is kept, and downloading again resumes it.",
        ));
    }
    let pulled = pulled?;
    Ok(json!({
        "path": pulled.local_path,
        "sha256": pulled.sha256,
        "size_bytes": pulled.size_bytes,
    }))
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
            quality: Some(false),
            fresh: false,
        }
    }

    #[test]
    fn the_form_becomes_the_clis_own_options() {
        let a = input(SourceInput::From {
            base: " /m/base.gguf ".into(),
            levels: Some(vec!["q8_0".into(), "Q4_0".into()]),
        })
        .args()
        .unwrap();
        assert_eq!(a.from.as_deref(), Some(Path::new("/m/base.gguf")));
        assert_eq!(a.levels, ["q8_0", "Q4_0"]);
        assert_eq!(a.opts.n_prompt, Some(vec![64]));
        assert_eq!(a.opts.n_gen, Some(vec![16]));
        assert_eq!(a.opts.reps, 2);
        assert!(a.no_quality);
    }

    #[test]
    fn gpu_layers_from_the_form_are_an_offload_sweep() {
        let mut i = input(SourceInput::Dir { dir: "/m".into() });
        i.ngl = Some(" 0-16+8,99 ".into());
        let r = i.args().unwrap().opts.request(2);
        assert_eq!(r.n_gpu_layers, [Some(0), Some(8), Some(16), Some(99)]);
        i.ngl = Some("lots".into());
        let e = i.args().unwrap_err();
        assert!(e.message.contains("not a layer count"), "{}", e.message);
    }

    #[test]
    fn a_preset_is_one_plan_whatever_else_the_form_holds() {
        let mut i = input(SourceInput::Files {
            files: vec!["a.gguf".into()],
        });
        i.preset = Some(dyno::app::presets::Preset::Quick);
        let r = i.args().unwrap().opts.request(2);
        assert_eq!((r.n_prompt, r.n_gen, r.reps), (vec![128], vec![32], 3));
        assert_eq!(r.prompt_gen, [(128, 32)]);
        let i: SweepInput = serde_json::from_value(
            json!({"source": {"kind": "files", "files": ["a.gguf"]}, "preset": "thorough"}),
        )
        .unwrap();
        assert_eq!(i.args().unwrap().opts.request(2).reps, 10);
    }

    #[test]
    fn a_path_that_looks_like_an_option_stays_a_path() {
        let a = input(SourceInput::Files {
            files: vec!["--fresh".into(), "".into(), "b.gguf".into()],
        })
        .args()
        .unwrap();
        assert_eq!(a.files, [PathBuf::from("--fresh"), PathBuf::from("b.gguf")]);
        assert!(!a.fresh);
    }

    #[test]
    fn empty_or_bad_forms_are_refused_with_what_to_do() {
        let e = input(SourceInput::Dir { dir: "  ".into() })
            .args()
            .unwrap_err();
        assert_eq!(e.code, "bad_input");
        assert!(e.message.contains("folder is empty"), "{}", e.message);
        let mut bad = input(SourceInput::Files {
            files: vec!["a.gguf".into()],
        });
        bad.reps = Some(0);
        // Out-of-range values are the core's to judge (`validate`); the form
        // only has to reach it. A value clap cannot parse is refused here.
        assert!(bad.args().is_ok());
        let e =
            serde_json::from_value::<SweepInput>(json!({"source": {"kind": "cloud"}})).unwrap_err();
        assert!(e.to_string().contains("cloud"));
    }

    #[test]
    fn errors_cross_with_a_code_and_the_clis_message() {
        let e = AppError::from(DynoError::NotFound("no run 7 in x.db".into()));
        assert_eq!(e.code, "not_found");
        assert_eq!(e.message, "no run 7 in x.db");
        let e = AppError::from(DynoError::io(
            "cannot write /full/card.png",
            std::io::Error::from_raw_os_error(28),
        ));
        assert_eq!(e.code, "failed");
        assert!(
            e.message.starts_with("cannot write /full/card.png"),
            "{}",
            e.message
        );
    }

    #[test]
    fn a_typed_tilde_means_home() {
        let home = directories::BaseDirs::new()
            .unwrap()
            .home_dir()
            .to_path_buf();
        assert_eq!(
            expand_home("~/Downloads/c.png"),
            home.join("Downloads/c.png")
        );
        assert_eq!(expand_home("~"), home);
        assert_eq!(expand_home("/abs/c.png"), PathBuf::from("/abs/c.png"));
        assert_eq!(expand_home("~user/c.png"), PathBuf::from("~user/c.png"));
    }
}
