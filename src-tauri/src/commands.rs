//! The commands the UI calls (docs/app-api.md). Each is a few lines over a
//! use case in `dyno::app`, and returns the typed value the matching CLI
//! command prints with `--json`, so the CLI is the reference for every shape
//! and the UI's types are generated from these (ui/src/bindings/).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use dyno::app::form::BenchForm;
use dyno::app::{self, hub as app_hub, models as app_models};
use dyno::app::{presets::Estimate, results, sweep::SweepInput};
use dyno::hub::RepoSummary;
use dyno::report::{compare::Comparison, list::ListRow, sweep::SweepReport, Report};
use dyno::store::Store;
use dyno::worker::client::Cancel;
use serde::Serialize;
use tauri::ipc::Channel;
use tauri::State;

use crate::error::{AppError, AppResult, ErrorCode};
use crate::events::JobEvent;
use crate::jobs::{on_core, Jobs, Kind, LiveTelemetry, ToUi};
use crate::state::Core;

/// What every command shares: the database, the running jobs, and the
/// runtime and store the short commands use.
pub struct App {
    pub db: PathBuf,
    pub jobs: Arc<Jobs>,
    /// Made once per process and never freed: it lives as long as the app.
    pub core: &'static Core,
}

impl App {
    /// `DYNO_DB` if set (as for the CLI), else the platform data directory.
    pub fn from_env() -> App {
        let jobs: Arc<Jobs> = Arc::default();
        let core = Core::new(jobs.timing.clone(), crate::state::REAP_EVERY);
        App {
            db: std::env::var_os("DYNO_DB")
                .map(PathBuf::from)
                .unwrap_or_else(dyno::store::default_db_path),
            jobs,
            core: Box::leak(Box::new(core)),
        }
    }
}

/// Runs `f` on the app's one store, opened by the first command that needs
/// it (state.rs): a read is only its queries.
pub(crate) async fn with_store<T, F>(app: &App, f: F) -> AppResult<T>
where
    T: Send + 'static,
    F: for<'s> AsyncFnOnce(&'s Store, &'s Path) -> dyno::error::Result<T> + Send + 'static,
{
    let db = app.db.clone();
    app.core
        .run(move |core| async move {
            let store = core.store(&db).await?;
            f(store, &db).await
        })
        .await
}

/// A long job's store: the job opens its own, on its own thread and
/// runtime, and closes it whatever `f` returned, so what the job spawns
/// never runs beside other commands' work while it times a test.
pub(crate) async fn with_job_store<T, F>(db: PathBuf, f: F) -> AppResult<T>
where
    T: Send + 'static,
    F: for<'s> AsyncFnOnce(&'s Store, &'s Path) -> dyno::error::Result<T> + Send + 'static,
{
    on_core(move || async move {
        let store = app::open_store(&db).await?;
        let r = f(&store, &db).await;
        store.close().await;
        r
    })
    .await
}

/// A long job from start to end: registered under `job_id` (one of its kind
/// at a time), run by `f` with a store of its own and the job's cancel
/// switch, and unregistered however it ends. A job the person cancelled is
/// answered `cancelled` with `kept`, which says what was saved, whatever `f`
/// returned: the cancel cut it short, so its own error is not the news.
pub(crate) async fn run_job<T, F>(
    app: &App,
    job_id: &str,
    kind: Kind,
    kept: &'static str,
    f: F,
) -> AppResult<T>
where
    T: Send + 'static,
    F: for<'s> AsyncFnOnce(&'s Store, &'s Path, Cancel) -> dyno::error::Result<T> + Send + 'static,
{
    let (guard, cancel) = app.jobs.start(job_id, kind)?;
    let watched = cancel.clone();
    let out = with_job_store(app.db.clone(), async move |s, db| {
        let _guard = guard;
        f(s, db, cancel).await
    })
    .await;
    if watched.is_cancelled() {
        return Err(AppError::new(ErrorCode::Cancelled, kept));
    }
    out
}

/// What the app is and where it keeps things.
#[derive(Debug, Clone, Serialize, ts_rs::TS)]
pub struct AppInfo {
    pub version: String,
    pub db: PathBuf,
    /// The user's Downloads folder, else home: where exports are offered.
    pub downloads: Option<PathBuf>,
}

#[tauri::command]
pub fn app_info(app: State<'_, App>) -> AppInfo {
    let downloads = directories::UserDirs::new()
        .and_then(|u| u.download_dir().map(Path::to_path_buf))
        .or_else(|| directories::BaseDirs::new().map(|b| b.home_dir().to_path_buf()));
    AppInfo {
        version: env!("CARGO_PKG_VERSION").to_string(),
        db: app.db.clone(),
        downloads,
    }
}

/// The About box: what `dyno --version` prints (Dyno's version, the
/// llama.cpp build, each backend module loaded or why not), from a worker
/// started to say hello.
#[tauri::command]
pub async fn version_text(app: State<'_, App>) -> AppResult<String> {
    app.core
        .run(|_| async { app::hw::version_text().await })
        .await
}

#[tauri::command]
pub async fn hw(app: State<'_, App>) -> AppResult<app::hw::Hw> {
    with_store(&app, async |s, _| app::hw::inventory_in(s, false).await).await
}

/// Where the power comes from now, so the Benchmark view can warn before
/// measuring on battery.
#[tauri::command]
pub fn power() -> dyno::telemetry::power::PowerState {
    dyno::telemetry::power::PowerState::now()
}

#[tauri::command]
pub async fn runs(app: State<'_, App>, limit: Option<i64>) -> AppResult<Report> {
    let limit = limit.unwrap_or(1000).clamp(0, 100_000);
    with_store(&app, async move |s, _| results::runs(s, limit).await).await
}

/// Runs and sweeps as light list rows, newest first.
#[tauri::command]
pub async fn result_list(app: State<'_, App>, limit: Option<i64>) -> AppResult<Vec<ListRow>> {
    let limit = limit.unwrap_or(1000).clamp(0, 100_000);
    with_store(&app, async move |s, _| results::list(s, limit).await).await
}

/// Each run's stored telemetry over time: the sweep detail's timeline.
#[tauri::command]
pub async fn telemetry(
    app: State<'_, App>,
    run_ids: Vec<i64>,
) -> AppResult<Vec<results::RunTimeline>> {
    with_store(&app, async move |s, _| {
        results::timelines(s, &run_ids).await
    })
    .await
}

#[tauri::command]
pub async fn run(app: State<'_, App>, id: i64) -> AppResult<Report> {
    with_store(&app, async move |s, db| results::run(s, db, id).await).await
}

#[tauri::command]
pub async fn sweep(app: State<'_, App>, id: i64) -> AppResult<SweepReport> {
    with_store(&app, async move |s, _| results::sweep(s, id).await).await
}

#[tauri::command]
pub async fn sweeps(app: State<'_, App>) -> AppResult<Vec<SweepReport>> {
    with_store(&app, async |s, _| results::sweeps(s, 1000).await).await
}

#[tauri::command]
pub async fn models(app: State<'_, App>) -> AppResult<Vec<app_models::LocalModel>> {
    with_store(&app, async |s, _| app_models::local_models(s).await).await
}

/// The folders and files the person added (Models view, "Added places").
#[tauri::command]
pub async fn model_places(app: State<'_, App>) -> AppResult<Vec<app_models::ModelPlace>> {
    with_store(&app, async |s, _| app_models::places(s).await).await
}

/// Add a folder or a .gguf file: from the native dialogs, a drop on the
/// window, or a typed path.
#[tauri::command]
pub async fn add_model_place(app: State<'_, App>, path: String) -> AppResult<app_models::Added> {
    let path = app::expand_home(path.trim());
    with_store(&app, async move |s, _| {
        app_models::add_place(s, &path).await
    })
    .await
}

#[tauri::command]
pub async fn remove_model_place(app: State<'_, App>, path: String) -> AppResult<bool> {
    let path = PathBuf::from(path);
    with_store(&app, async move |s, _| {
        app_models::remove_place(s, &path).await
    })
    .await
}

/// The hub with the settings in force: HF_ENDPOINT, else the endpoint
/// saved in Settings.
#[tauri::command]
pub async fn hub_search(app: State<'_, App>, query: String) -> AppResult<Vec<RepoSummary>> {
    with_store(&app, async move |s, _| {
        app_hub::search(&app_hub::open(s, None).await?, &query, 50).await
    })
    .await
}

#[tauri::command]
pub async fn hub_levels(
    app: State<'_, App>,
    repo: String,
) -> AppResult<dyno::hub::files::RepoListing> {
    with_store(&app, async move |s, _| {
        app_hub::repo_listing(&app_hub::open(s, None).await?, &repo).await
    })
    .await
}

/// `dyno predict TARGET --json`: a file or a hub repo's levels (headers
/// only), predicted on this machine, with the advised level.
#[tauri::command]
pub async fn predict(
    app: State<'_, App>,
    input: app::predict::PredictInput,
) -> AppResult<app::predict::PredictOutcome> {
    with_store(&app, async move |s, _| {
        app::predict::predict(s, None, &input).await
    })
    .await
}

/// "Synthetic model…": a file's header (or a hub level's), resized to a
/// named shape and typed as a level if asked, written with synthetic
/// weights (`dyno synth --like FILE --shape S --type T`); a dry run only
/// describes it. Bytes written reach the form as `QuantizeProgress`, and
/// `cancel(job_id)` stops the worker, leaving no file.
#[tauri::command]
pub async fn synth_file(
    app: State<'_, App>,
    input: app::synth::SynthInput,
    job_id: String,
    on_event: Channel<JobEvent>,
) -> AppResult<app::synth::SynthOutcome> {
    let (guard, cancel) = app.jobs.start(&job_id, Kind::Download)?;
    with_job_store(app.db.clone(), async move |s, _| {
        let _guard = guard;
        let place = app::synth::DefaultPlace::Cache;
        app::synth::synth_file(Some(s), &input, place, &cancel, |done, total| {
            let _ = on_event.send(JobEvent::QuantizeProgress { done, total });
        })
        .await
    })
    .await
}

/// The name "Save as…" offers for a synthetic model: the one `dyno synth`
/// would give it.
#[tauri::command]
pub fn synth_name(input: app::synth::SynthInput) -> String {
    app::synth::suggested_name(&input)
}

/// The shapes and levels "Synthetic model…" offers.
#[tauri::command]
pub fn synth_options() -> app::synth::SynthOptions {
    app::synth::options()
}

/// The Models view's predictions: every listed file at once, with one
/// calibration.
#[tauri::command]
pub async fn predict_files(
    app: State<'_, App>,
    paths: Vec<String>,
) -> AppResult<Vec<app::predict::PredictedFile>> {
    let paths: Vec<PathBuf> = paths.into_iter().map(PathBuf::from).collect();
    with_store(&app, async move |s, _| {
        app::predict::predict_files(s, &paths, &app::predict::PredictInput::default()).await
    })
    .await
}

/// `dyno predict --accuracy --json`.
#[tauri::command]
pub async fn predict_accuracy(
    app: State<'_, App>,
) -> AppResult<dyno::predict::accuracy::AccuracyReport> {
    with_store(&app, async |s, _| app::predict::accuracy(s, false).await).await
}

#[tauri::command]
pub async fn compare(app: State<'_, App>, a: String, b: String) -> AppResult<Comparison> {
    with_store(&app, async move |s, db| {
        app::compare::compare(s, db, &a, &b).await
    })
    .await
}

/// The result card as SVG text, for the Export view's preview.
#[tauri::command]
pub async fn card_svg(
    app: State<'_, App>,
    target: String,
    vs_team: Option<String>,
) -> AppResult<String> {
    with_store(&app, async move |s, db| {
        app::export::card_svg(s, db, &target, vs_team.as_deref()).await
    })
    .await
}

/// An export as text (md, csv, json), for the Export view's Copy buttons.
#[tauri::command]
pub async fn export_text(app: State<'_, App>, target: String, format: String) -> AppResult<String> {
    with_store(&app, async move |s, db| {
        app::export::text(s, db, &target, &format).await
    })
    .await
}

/// Write an export where the person said. The native Save dialog has asked
/// about replacing a file already; a typed path is asked about by the UI
/// when this refuses with "exists".
#[tauri::command]
pub async fn export_card(
    app: State<'_, App>,
    target: String,
    format: String,
    path: String,
    overwrite: Option<bool>,
    vs_team: Option<String>,
) -> AppResult<app::export::Written> {
    with_store(&app, async move |s, db| {
        let overwrite = overwrite.unwrap_or(false);
        app::export::write(
            s,
            db,
            &target,
            &format,
            &path,
            overwrite,
            vs_team.as_deref(),
        )
        .await
    })
    .await
}

#[tauri::command]
pub fn cancel(app: State<'_, App>, job_id: String) -> bool {
    app.jobs.cancel(&job_id)
}

/// What each preset measures and how long it should take on `path`.
#[tauri::command]
pub async fn preset_estimates(app: State<'_, App>, path: String) -> AppResult<Vec<Estimate>> {
    let path = app::expand_home(path.trim());
    with_store(&app, async move |s, _| {
        app::presets::estimates(s, &path).await
    })
    .await
}

/// Run a sweep with live progress; resolves with its report.
#[tauri::command]
pub async fn start_sweep(
    app: State<'_, App>,
    spec: SweepInput,
    job_id: String,
    on_event: Channel<JobEvent>,
) -> AppResult<Option<SweepReport>> {
    let order = spec.order(dyno::machine::Machine::detect().default_threads())?;
    let timing = crate::jobs::Timing(app.jobs.timing.clone());
    let kept = "the sweep was cancelled; what was measured is saved, and running the same sweep again resumes it.";
    run_job(
        &app,
        &job_id,
        Kind::Bench,
        kept,
        async move |s, db, cancel| {
            // The app-wide timing flag: downloads hold still while it is up,
            // and it is lowered when `timing` drops, however the sweep ends.
            let quiet = timing.0.clone();
            let _live = LiveTelemetry::start(on_event.clone(), quiet.clone());
            let mut pull = ToUi::new(on_event.clone(), cancel.clone());
            let mut ui = ToUi::quieted(on_event, cancel.clone(), quiet);
            app::sweep::run(s, db, &order, cancel, &mut ui, &mut pull).await
        },
    )
    .await
}

/// Benchmark one file with a preset, or measure a run's disturbed tests
/// again: one result (its runs), as `dyno bench` makes, never a sweep.
#[tauri::command]
pub async fn start_bench(
    app: State<'_, App>,
    form: BenchForm,
    job_id: String,
    on_event: Channel<JobEvent>,
) -> AppResult<Report> {
    let timing = crate::jobs::Timing(app.jobs.timing.clone());
    let kept =
        "the benchmark was cancelled; what was measured before the cancel is saved in Results.";
    run_job(
        &app,
        &job_id,
        Kind::Bench,
        kept,
        async move |s, _, cancel| {
            let quiet = timing.0.clone();
            let _live = LiveTelemetry::start(on_event.clone(), quiet.clone());
            let mut ui = ToUi::quieted(on_event, cancel.clone(), quiet);
            Ok(app::form::run_form(s, form, cancel, &mut ui).await?.report)
        },
    )
    .await
}

/// Download one file of a hub repo (resumable, sha256-verified).
#[tauri::command]
pub async fn hub_pull(
    app: State<'_, App>,
    repo: String,
    file: String,
    job_id: String,
    on_event: Channel<JobEvent>,
) -> AppResult<app_hub::PullResult> {
    let timing = app.jobs.timing.clone();
    let kept =
        "the download was cancelled; what arrived is kept, and downloading again resumes it.";
    run_job(
        &app,
        &job_id,
        Kind::Download,
        kept,
        async move |s, _, cancel| {
            let mut ui = ToUi::download(on_event, cancel.clone(), timing);
            // Not even the first request while a test is timed.
            ui.wait_for_quiet();
            app_hub::pull_one(
                s,
                &app_hub::open(s, None).await?,
                &repo,
                &file,
                &cancel,
                &mut ui,
            )
            .await
        },
    )
    .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use dyno::error::DynoError;

    #[test]
    fn errors_cross_with_a_code_and_the_clis_message() {
        let e = AppError::from(DynoError::NotFound("no run 7 in x.db".into()));
        assert_eq!(e.code, ErrorCode::NotFound);
        assert_eq!(e.message, "no run 7 in x.db");
        let e = AppError::from(DynoError::io(
            "cannot write /full/card.png",
            std::io::Error::from_raw_os_error(28),
        ));
        assert_eq!(e.code, ErrorCode::Failed);
        assert!(
            e.message.starts_with("cannot write /full/card.png"),
            "{}",
            e.message
        );
    }

    #[test]
    fn a_bad_sweep_form_crosses_as_bad_input() {
        let spec: SweepInput =
            serde_json::from_value(serde_json::json!({"source": {"kind": "dir", "dir": " "}}))
                .unwrap();
        let e = AppError::from(spec.order(2).unwrap_err());
        assert_eq!(e.code, ErrorCode::BadInput);
        assert!(e.message.contains("folder is empty"), "{}", e.message);
    }
}
