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
    if let Some(m) = &a.engine {
        // A bad file fails now, not after the server's tests.
        if let Err(e) = crate::model::inspect(m) {
            store.close().await;
            return Err(e);
        }
    }
    let out = serve::run(&store, machine_id, &target, &plan, &cancel, &mut on_event).await;
    let (run_id, _) = match out {
        Ok(o) => o,
        Err(e) => {
            store.close().await;
            return Err(e);
        }
    };
    let doc = report::load(&store, run_id, a.show_host).await;
    let engine = match (&doc, &a.engine) {
        (Ok(d), Some(m)) if !cancel.is_cancelled() => {
            eprintln!("dyno: the same model in-process: {}", m.display());
            let bench = engine_args(&a, m);
            match super::measure(&store, &Machine::detect(), &bench).await {
                Ok((engine, _)) => Some(crate::app::serve::compare_with_engine(d, &engine)),
                Err(e) => {
                    store.close().await;
                    return Err(e);
                }
            }
        }
        _ => None,
    };
    store.close().await;
    let doc = doc?;
    if a.json {
        let mut v = serde_json::to_value(&doc).expect("serialises");
        if let Some(e) = &engine {
            v["engine_comparison"] = serde_json::to_value(e).expect("serialises");
        }
        println!("{}", serde_json::to_string_pretty(&v).expect("serialises"));
    } else {
        print!("{}", report::table(&doc));
        if let Some(e) = &engine {
            print!("{}", crate::app::serve::comparison_table(e));
        }
    }
    Ok(match doc.status {
        RunStatus::Ok => 0,
        RunStatus::Cancelled => EXIT_CANCELLED,
        _ => 1,
    })
}

/// `dyno bench MODEL --pg P,N … -d D -r R` for the server plan's lengths:
/// parsed from the same words a user would type, so the in-process side is
/// exactly a `dyno bench` run.
fn engine_args(a: &ServeBenchArgs, model: &Path) -> super::args::BenchArgs {
    let list = |v: &[u32]| v.iter().map(u32::to_string).collect::<Vec<_>>().join(",");
    let mut argv: Vec<std::ffi::OsString> = vec!["dyno".into(), "bench".into(), model.into()];
    for w in [
        "-p",
        "0",
        "-n",
        "0",
        "-d",
        &list(&a.n_depth),
        "-r",
        &a.requests.max(1).to_string(),
    ] {
        argv.push(w.into());
    }
    for p in &a.n_prompt {
        for n in &a.n_gen {
            argv.push("--pg".into());
            argv.push(format!("{p},{n}").into());
        }
    }
    if let Some(t) = a.engine_threads {
        argv.push("-t".into());
        argv.push(t.to_string().into());
    }
    match <super::args::Cli as clap::Parser>::try_parse_from(argv)
        .expect("the engine's bench arguments parse")
        .command
    {
        super::args::Command::Bench(b) => *b,
        _ => unreachable!("parsed as bench"),
    }
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
