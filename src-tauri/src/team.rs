//! The Team view's commands (docs/app-api.md): the team store's URL, a sync
//! with live progress, and the machines ranking, each a few lines over
//! `dyno::app::team`, shared with `dyno sync` and `dyno machines`.
//!
//! A password typed into the view crosses with each call that needs it and
//! is never saved: `save_team_url` strips it, as `dyno settings set
//! team.url` does.

use dyno::app::team::{self, SyncProgress, SyncReport, SyncRequest, TeamQuery, TeamStatus};
use dyno::report::team::Ranking;
use tauri::ipc::Channel;
use tauri::State;

use crate::commands::{with_job_store, with_store, App};
use crate::error::{AppError, AppResult};
use crate::jobs::{hold_while_timed, Kind};

#[tauri::command]
pub async fn team_status(app: State<'_, App>) -> AppResult<TeamStatus> {
    with_store(&app, async |s, _| team::status(s).await).await
}

/// Save the team store's URL without its password; an empty one forgets it.
#[tauri::command]
pub async fn save_team_url(app: State<'_, App>, url: String) -> AppResult<TeamStatus> {
    with_store(&app, async move |s, _| {
        if url.trim().is_empty() {
            s.remove_setting(team::TEAM_URL).await?;
        } else {
            team::save_team_url(s, &url).await?;
        }
        team::status(s).await
    })
    .await
}

/// Push this machine's runs and pull the others', reporting progress.
/// `cancel(job_id)` stops it between batches: what the server committed
/// stays, and the next sync goes on from there.
#[tauri::command]
pub async fn team_sync(
    app: State<'_, App>,
    request: SyncRequest,
    job_id: String,
    on_progress: Channel<SyncProgress>,
) -> AppResult<SyncReport> {
    let (guard, cancel) = app.jobs.start(&job_id, Kind::Sync)?;
    let cancelled = cancel.clone();
    let timing = app.jobs.timing.clone();
    let report = with_job_store(app.db.clone(), async move |s, _| {
        let _guard = guard;
        // Not even the connection while a benchmark times a test; then
        // the sync holds still between its batches (each progress report
        // comes after a batch is committed on the server, never inside
        // a transaction) until the test's timed phase is over.
        hold_while_timed(&timing, &cancel);
        let held = cancel.clone();
        let send = move |p: SyncProgress| {
            let _ = on_progress.send(p);
            hold_while_timed(&timing, &held);
        };
        team::sync(s, &request, &send, &cancel).await
    })
    .await;
    match report {
        Ok(r) if cancelled.is_cancelled() => Err(AppError::new(
            crate::error::ErrorCode::Cancelled,
            format!(
                "the sync was cancelled; what it pushed ({}) and pulled ({}) is kept, and the next sync goes on from there.",
                r.pushed, r.pulled
            ),
        )),
        other => other,
    }
}

/// Machines ranked by decode and prefill of one model and level, read from
/// the team store at `url` (empty: the one in force).
#[tauri::command]
pub async fn team_machines(
    app: State<'_, App>,
    url: String,
    query: TeamQuery,
) -> AppResult<Ranking> {
    with_store(&app, async move |s, _| {
        let url = team::team_url(s, Some(&url)).await?;
        let t = team::open(&url).await?;
        let r = team::machines(&t, &query).await;
        t.close().await;
        r
    })
    .await
}
