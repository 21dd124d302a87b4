//! `dyno serve-bench`, `dyno serve-runs` and `dyno serve-show`.

use std::io::IsTerminal;
use std::path::Path;

use super::args::{ServeApi, ServeBenchArgs};
use super::{open_store, EXIT_CANCELLED};
use crate::app::serve::ServeInput;
use crate::error::Result;
use crate::serve::{report, Api, Endpoint, ServeEvent};
use crate::vocab::status::RunStatus;
use crate::worker::client::Cancel;

fn input(a: &ServeBenchArgs) -> ServeInput {
    ServeInput {
        url: a.url.clone(),
        model: a.model.clone(),
        api_key: a.api_key.clone(),
        api: match a.api {
            ServeApi::Chat => Api::Chat,
            ServeApi::Completions => Api::Completions,
        },
        n_prompt: a.n_prompt.clone(),
        n_gen: a.n_gen.clone(),
        n_depth: a.n_depth.clone(),
        concurrency: a.concurrency.clone(),
        requests: a.requests,
        prefix_cache: a.prefix_cache,
        slo_ttft_ms: a.slo_ttft_ms,
        slo_itl_ms: a.slo_itl_ms,
        stall_s: a.stall,
        timeout_s: a.timeout,
        engine: a.engine.clone(),
        engine_threads: a.engine_threads,
        tokenizer: a.tokenizer.clone(),
        ca_cert: a.ca_cert.clone(),
        show_host: a.show_host,
    }
}

pub async fn serve_bench(db: &Path, a: ServeBenchArgs) -> Result<i32> {
    let input = input(&a);
    // Checked before the database is opened: a typo costs nothing.
    Endpoint::parse(&input.url)?;
    input.plan().validate()?;
    if let Some(ca) = &input.ca_cert {
        crate::serve::connect::read_ca(ca)?;
    }
    let store = open_store(db).await?;
    let cancel = Cancel::default();
    let c = cancel.clone();
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            c.cancel();
        }
    });
    let tty = std::io::stderr().is_terminal();
    let mut on_event = |ev: ServeEvent<'_>| match ev {
        ServeEvent::Warning(w) => eprintln!("dyno: warning: {w}"),
        ServeEvent::Detected(i) => eprintln!(
            "dyno: {} {} serving '{}'",
            i.kind.label(),
            i.version.as_deref().unwrap_or(""),
            i.model
        ),
        ServeEvent::TestStarted { test, index, total } => {
            eprintln!("dyno: [{}/{total}] {}", index + 1, test.name())
        }
        ServeEvent::Request { done, total } if tty => eprint!("\r  {done}/{total} requests"),
        ServeEvent::Request { .. } => {}
        ServeEvent::TestFinished(r) => {
            if tty {
                eprint!("\r");
            }
            eprintln!(
                "  {}: {}/{} requests ok{}",
                r.status,
                r.summary.ok,
                r.summary.requests,
                r.error
                    .as_deref()
                    .map(|e| format!(" ({e})"))
                    .unwrap_or_default()
            );
        }
    };
    // A bar only for the in-process run of --engine: one pp+tg test per
    // length pair and depth, `requests` repetitions each.
    let out = if input.engine.is_some() {
        let samples = input.n_prompt.len() * input.n_gen.len() * input.n_depth.len();
        let total = samples as u64 * u64::from(input.requests.max(1));
        let mut bar = super::progress::Progress::new(total, tty);
        let out = crate::app::serve::run(&store, &input, &cancel, &mut on_event, &mut bar).await;
        bar.finish();
        out
    } else {
        let mut silent = crate::bench::Silent;
        crate::app::serve::run(&store, &input, &cancel, &mut on_event, &mut silent).await
    };
    store.close().await;
    let out = out?;
    if a.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&out).expect("serialises")
        );
    } else {
        print!("{}", report::table(&out.report));
        if let Some(e) = &out.engine_comparison {
            print!("{}", crate::app::serve::comparison_table(e));
        }
    }
    Ok(match out.report.status {
        RunStatus::Ok => 0,
        RunStatus::Cancelled => EXIT_CANCELLED,
        _ => 1,
    })
}

pub async fn serve_runs(db: &Path, json: bool, limit: i64) -> Result<i32> {
    let store = open_store(db).await?;
    let rows = store.server_runs(limit.max(0)).await;
    store.close().await;
    let rows = rows?;
    if json {
        let list: Vec<_> = rows
            .iter()
            .map(|r| {
                let e = Endpoint::parse(&r.endpoint).ok();
                let ep = e
                    .as_ref()
                    .map_or_else(|| r.endpoint.clone(), Endpoint::redacted);
                let error = match (&e, &r.error) {
                    (Some(e), Some(t)) => Some(e.scrub(t)),
                    (_, t) => t.clone(),
                };
                serde_json::json!({
                    "run_id": r.id, "status": r.status, "server_kind": r.server_kind,
                    "server_version": r.server_version, "model": r.model, "endpoint": ep,
                    "started_at": r.started_at, "finished_at": r.finished_at, "error": error,
                })
            })
            .collect();
        println!(
            "{}",
            serde_json::to_string_pretty(&list).expect("serialises")
        );
    } else if rows.is_empty() {
        println!(
            "no server runs stored in {} yet; measure one with `dyno serve-bench URL`",
            db.display()
        );
    } else {
        println!("| run | started | status | server | model | endpoint |");
        println!("| --- | ------- | ------ | ------ | ----- | -------- |");
        for r in &rows {
            let ep = Endpoint::parse(&r.endpoint)
                .map(|e| e.redacted())
                .unwrap_or_else(|_| r.endpoint.clone());
            println!(
                "| {} | {} | {} | {} {} | {} | {} |",
                r.id,
                r.started_at,
                r.status,
                r.server_kind,
                r.server_version.as_deref().unwrap_or(""),
                r.model,
                ep
            );
        }
    }
    Ok(0)
}

pub async fn serve_show(db: &Path, run_id: i64, json: bool, show_host: bool) -> Result<i32> {
    let store = open_store(db).await?;
    let doc = report::load(&store, run_id, show_host).await;
    store.close().await;
    let doc = doc?;
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&doc).expect("serialises")
        );
    } else {
        print!("{}", report::table(&doc));
    }
    Ok(0)
}
