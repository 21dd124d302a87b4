//! `dyno sweep`, `dyno sweeps` and `dyno show-sweep`.

use std::io::IsTerminal;
use std::path::Path;

use super::args::SweepArgs;
use super::{ctrl_c, hub::Bytes, open_store, progress, EXIT_CANCELLED};
use crate::app::sweep::{execute, Executed};
use crate::bench::sweep::Source;
use crate::error::Result;
use crate::report::sweep as sweep_report;
use crate::vocab::status::LevelStatus;

pub async fn sweep(db: &Path, a: SweepArgs) -> Result<i32> {
    let order = a.order(crate::machine::Machine::detect().default_threads())?;
    let store = open_store(db).await?;
    let (worker, cancel) = (crate::app::bench::worker(order.timeout_s)?, ctrl_c());
    let mut reporter = progress::Progress::new(0, std::io::stderr().is_terminal());
    let done = execute(
        &store,
        db,
        &order,
        worker,
        cancel,
        &mut reporter,
        &mut Bytes::new(),
    )
    .await;
    reporter.finish();
    let Some(Executed {
        sweep_id,
        outcome: out,
    }) = done?
    else {
        store.close().await;
        return Ok(EXIT_CANCELLED);
    };
    let report = crate::app::results::sweep(&store, sweep_id).await?;
    if a.opts.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&report).expect("report serialises")
        );
    } else {
        println!("sweep {sweep_id}");
        print!("{}", sweep_report::levels_table(&report));
    }
    store.close().await;
    if out.cancelled {
        eprintln!(
            "dyno: cancelled; what was measured is saved, and `dyno sweep --resume {sweep_id}` carries on"
        );
        return Ok(EXIT_CANCELLED);
    }
    if out.failed == 0 {
        return Ok(0);
    }
    eprintln!(
        "dyno: {} of {} level(s) failed; the others are measured (see the table)",
        out.failed,
        out.failed + out.ok
    );
    Ok(if out.ok == 0 && out.bad_input == out.failed {
        2
    } else {
        1
    })
}

pub async fn sweeps(db: &Path, json: bool, limit: i64) -> Result<i32> {
    let store = open_store(db).await?;
    let rows = store.sweeps(limit.max(0)).await?;
    if json {
        let all = crate::app::results::sweeps(&store, limit).await?;
        println!(
            "{}",
            serde_json::to_string_pretty(&all).expect("reports serialise")
        );
    } else if rows.is_empty() {
        println!(
            "no sweeps stored in {} yet; run one with `dyno sweep --from MODEL-F16.gguf`",
            db.display()
        );
    } else {
        println!("| sweep | created | status | source | levels | ok | failed |");
        println!("| ----: | ------- | ------ | ------ | -----: | -: | -----: |");
        for r in &rows {
            let levels = store.levels(r.id).await?;
            let source = match r.args.as_ref().and_then(|a| a.spec()).map(|s| &s.source) {
                Some(Source::Files(f)) => format!("{} files", f.len()),
                Some(Source::Dir(d)) => format!("dir {}", d.display()),
                Some(Source::From(b)) => format!("from {}", b.display()),
                Some(Source::Repo(r)) => format!("repo {r}"),
                Some(Source::Shape(s)) => format!("shape {s} (synthetic)"),
                None => "-".into(),
            };
            println!(
                "| {} | {} | {} | {} | {} | {} | {} |",
                r.id,
                r.created_at,
                r.status.map_or("-", |s| s.as_str()),
                source,
                levels.len(),
                levels
                    .iter()
                    .filter(|l| l.status == LevelStatus::Ok)
                    .count(),
                levels
                    .iter()
                    .filter(|l| l.status == LevelStatus::Failed)
                    .count()
            );
        }
    }
    store.close().await;
    Ok(0)
}

pub async fn show_sweep(db: &Path, id: i64, json: bool) -> Result<i32> {
    let store = open_store(db).await?;
    let report = crate::app::results::sweep(&store, id).await;
    store.close().await;
    let report = report?;
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&report).expect("report serialises")
        );
    } else {
        println!(
            "sweep {id} · {} · started {}",
            report.sweep.status, report.sweep.created_at
        );
        print!("{}", sweep_report::levels_table(&report));
    }
    Ok(0)
}
