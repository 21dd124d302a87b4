//! `dyno serve-bench`, `dyno serve-runs` and `dyno serve-show`.

use std::io::IsTerminal;
use std::path::Path;

use super::args::{ServeApi, ServeBenchArgs};
use super::{open_store, EXIT_CANCELLED};
use crate::error::Result;
use crate::machine::Machine;
use crate::serve::{self, report, Api, Endpoint, ServeEvent, ServePlan, ServeTarget, Slo};
use crate::vocab::status::RunStatus;
use crate::worker::client::Cancel;

fn plan(a: &ServeBenchArgs) -> ServePlan {
    ServePlan {
        api: match a.api {
            ServeApi::Chat => Api::Chat,
            ServeApi::Completions => Api::Completions,
        },
        n_prompt: a.n_prompt.clone(),
        n_gen: a.n_gen.clone(),
        depths: a.n_depth.clone(),
        concurrency: a.concurrency.clone(),
        requests: a.requests,
        prefix_cache: a.prefix_cache,
        slo: Slo {
            ttft_ms: a.slo_ttft_ms,
            itl_ms: a.slo_itl_ms,
        },
        stall_s: a.stall,
        timeout_s: a.timeout,
    }
}

pub async fn serve_bench(db: &Path, a: ServeBenchArgs) -> Result<i32> {
    let endpoint = Endpoint::parse(&a.url)?;
    let plan = plan(&a);
    plan.validate()?;
    let store = open_store(db).await?;
    let machine_id = store.upsert_machine(&Machine::detect()).await?;
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
    let target = ServeTarget {
        endpoint: &endpoint,
        model: a.model.as_deref(),
        api_key: a.api_key.as_deref(),
    };
    let out = serve::run(&store, machine_id, &target, &plan, &cancel, &mut on_event).await;
    let (run_id, _) = match out {
        Ok(o) => o,
        Err(e) => {
            store.close().await;
            return Err(e);
        }
    };
    let doc = report::load(&store, run_id, a.show_host).await;
    store.close().await;
    let doc = doc?;
    if a.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&doc).expect("serialises")
        );
    } else {
        print!("{}", report::table(&doc));
    }
    Ok(match doc.status {
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
                let ep = Endpoint::parse(&r.endpoint)
                    .map(|e| e.redacted())
                    .unwrap_or_else(|_| r.endpoint.clone());
                serde_json::json!({
                    "run_id": r.id, "status": r.status, "server_kind": r.server_kind,
                    "server_version": r.server_version, "model": r.model, "endpoint": ep,
                    "started_at": r.started_at, "finished_at": r.finished_at, "error": r.error,
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
