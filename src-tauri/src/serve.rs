//! The Servers view's commands: benchmark a running server, list and read
//! stored server runs (docs/app-api.md). The work is `dyno::app::serve`'s,
//! shared with `dyno serve-bench`.

use dyno::app::serve::{ServeInput, ServeOutcome};
use dyno::serve::report::ServeReport;
use dyno::serve::ServeEvent;
use serde::Serialize;
use std::sync::atomic::{AtomicBool, Ordering};
use tauri::ipc::Channel;
use tauri::State;

use crate::commands::App;
use crate::commands::{run_job, with_store};
use crate::error::AppResult;
use crate::events::JobEvent;
use crate::jobs::{Kind, Timing, ToUi};

/// A stored server run as the list shows it.
#[derive(Debug, Clone, Serialize, ts_rs::TS)]
pub struct ServerRunItem {
    pub run_id: i64,
    pub status: dyno::vocab::status::RunStatus,
    pub server_kind: String,
    pub server_version: Option<String>,
    pub model: String,
    pub endpoint: String,
    pub started_at: String,
    pub error: Option<String>,
}

#[tauri::command]
pub async fn serve_runs(app: State<'_, App>) -> AppResult<Vec<ServerRunItem>> {
    with_store(&app, async move |s, _| {
        Ok(s.server_runs(200)
            .await?
            .into_iter()
            .map(|r| ServerRunItem {
                run_id: r.id,
                status: r.status,
                server_kind: r.server_kind,
                server_version: r.server_version,
                model: r.model,
                endpoint: r.endpoint,
                started_at: r.started_at,
                error: r.error,
            })
            .collect())
    })
    .await
}

/// One stored server run; the app is on the user's own machine, so the
/// host is shown.
#[tauri::command]
pub async fn serve_run(app: State<'_, App>, id: i64) -> AppResult<ServeReport> {
    with_store(&app, async move |s, _| {
        dyno::serve::report::load(s, id, true).await
    })
    .await
}

/// Keep the app-wide timing flag up from a server test's start to its end:
/// its requests are timed, so a download or a sync waits (see
/// `jobs::hold_while_timed`) rather than share the machine with them.
fn flag_timed(flag: &AtomicBool, ev: &ServeEvent<'_>) {
    match ev {
        ServeEvent::TestStarted { .. } => flag.store(true, Ordering::Relaxed),
        ServeEvent::TestFinished(_) => flag.store(false, Ordering::Relaxed),
        _ => {}
    }
}

/// Benchmark a server with live progress (and, with `engine`, the same
/// model in-process); resolves with the stored run.
#[tauri::command]
pub async fn start_serve_bench(
    app: State<'_, App>,
    input: ServeInput,
    job_id: String,
    on_event: Channel<JobEvent>,
) -> AppResult<ServeOutcome> {
    // The app-wide timing flag, up while a server test's requests (or the
    // engine's tests) are timed: downloads and syncs hold still then.
    let timing = Timing(app.jobs.timing.clone());
    let kept = "the server benchmark was cancelled; the tests it finished are saved.";
    run_job(
        &app,
        &job_id,
        Kind::Bench,
        kept,
        async move |s, _, cancel| {
            let ch = on_event.clone();
            let flag = timing.0.clone();
            let mut on_serve = move |ev: ServeEvent<'_>| {
                flag_timed(&flag, &ev);
                let e = match ev {
                    ServeEvent::Detected(i) => JobEvent::ServeDetected {
                        server: i.kind.label().to_string(),
                        version: i.version.clone(),
                        model: i.model.clone(),
                    },
                    ServeEvent::Warning(w) => JobEvent::ServeWarning {
                        message: w.to_string(),
                    },
                    ServeEvent::TestStarted { test, index, total } => JobEvent::ServeTest {
                        test: test.name(),
                        index,
                        total,
                    },
                    ServeEvent::Request { done, total } => JobEvent::ServeRequests { done, total },
                    ServeEvent::TestFinished(r) => JobEvent::ServeTestFinished {
                        test: r.test.clone(),
                        status: r.status,
                        ok: r.summary.ok,
                        requests: r.summary.requests,
                        error: r.error.clone(),
                    },
                };
                let _ = ch.send(e);
            };
            let mut ui = ToUi::quieted(on_event, cancel.clone(), timing.0.clone());
            let out = dyno::app::serve::run(s, &input, &cancel, &mut on_serve, &mut ui).await;
            // Lowered however the run ended.
            drop(timing);
            out
        },
    )
    .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use dyno::serve::{ServeResult, ServeTest, Slo};

    /// A server test raises the flag downloads and syncs wait on, through
    /// its requests, and lowers it when the test ends.
    #[test]
    fn a_server_test_holds_the_timing_flag_while_its_requests_run() {
        let flag = AtomicBool::new(false);
        let t = ServeTest {
            n_prompt: 32,
            n_gen: 4,
            n_depth: 0,
            concurrency: 1,
        };
        flag_timed(&flag, &ServeEvent::Warning("plain HTTP"));
        assert!(!flag.load(Ordering::Relaxed), "nothing is timed yet");
        flag_timed(
            &flag,
            &ServeEvent::TestStarted {
                test: &t,
                index: 0,
                total: 1,
            },
        );
        assert!(flag.load(Ordering::Relaxed));
        flag_timed(&flag, &ServeEvent::Request { done: 1, total: 2 });
        assert!(flag.load(Ordering::Relaxed), "up between requests");
        let r = ServeResult {
            test: t.name(),
            spec: t,
            status: dyno::vocab::status::ResultStatus::Ok,
            error: None,
            summary: dyno::serve::summary::summarize(&[], 0.0, &Slo::default()),
            samples: Vec::new(),
        };
        flag_timed(&flag, &ServeEvent::TestFinished(&r));
        assert!(!flag.load(Ordering::Relaxed), "down when the test ends");
    }
}
