//! `dyno sweep`, `dyno sweeps` and `dyno show-sweep`.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use super::args::SweepArgs;
use super::{hw, open_store, progress, start_bench, EXIT_CANCELLED};
use crate::bench::plan::Plan;
use crate::bench::sweep::{
    resolve, resolve_files, run_sweep, QualitySettings, Source, SweepEvent, SweepOutcome,
    SweepReporter, SweepSpec,
};
use crate::error::{DynoError, Result};
use crate::machine::Machine;
use crate::quantize::{parse_levels, DEFAULT_LADDER};
use crate::report::sweep as sweep_report;
use crate::store::Store;
use crate::worker::client::{Cancel, WorkerOptions};

/// The spec a command line asks for.
fn spec_of(a: &SweepArgs, machine: &Machine) -> Result<SweepSpec> {
    let source = if !a.files.is_empty() {
        Source::Files(a.files.clone())
    } else if let Some(d) = &a.dir {
        Source::Dir(d.clone())
    } else if let Some(b) = &a.from {
        Source::From(b.clone())
    } else if let Some(r) = &a.repo {
        Source::Repo(r.clone())
    } else {
        unreachable!("clap requires one source")
    };
    let levels = if a.levels.is_empty() {
        None
    } else {
        Some(parse_levels(&a.levels)?)
    };
    let mut request = a.opts.request(machine.default_threads());
    if a.opts.pg.is_empty() {
        // The sweep's default plan adds pp+tg for time to first token.
        if let (Some(&p), Some(&n)) = (request.n_prompt.first(), request.n_gen.first()) {
            request.prompt_gen = vec![(p, n)];
        }
    }
    if !a.no_quality && a.quality_tokens == 0 {
        return Err(DynoError::BadInput(
            "--quality-tokens must be at least 1; use --no-quality to skip quality".into(),
        ));
    }
    Ok(SweepSpec {
        source,
        levels,
        request,
        quality: (!a.no_quality).then_some(QualitySettings {
            tokens: a.quality_tokens,
            topk: a.quality_topk,
        }),
    })
}

/// What a sweep run did: its id and outcome, or `None` when it was cancelled
/// while a repo's levels were still downloading.
pub struct Executed {
    pub sweep_id: i64,
    pub outcome: SweepOutcome,
}

/// Run (or resume) the sweep `a` asks for, reporting to `reporter`: the
/// whole of `dyno sweep` but the printing, shared by the CLI and the app.
pub async fn execute(
    store: &Store,
    db: &Path,
    a: &SweepArgs,
    worker: WorkerOptions,
    cancel: Cancel,
    reporter: &mut dyn SweepReporter,
) -> Result<Option<Executed>> {
    let machine = Machine::detect();
    let machine_id = store.upsert_machine(&machine).await?;
    let (spec, resume) = match a.resume {
        Some(id) => {
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
            if row.status.as_deref() == Some("running") {
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
            let spec: SweepSpec = serde_json::from_str(&row.args_json).map_err(|e| {
                DynoError::BadInput(format!(
                    "sweep {id} was stored by another Dyno version and cannot be resumed ({e}); run it afresh"
                ))
            })?;
            (spec, Some(id))
        }
        None => (spec_of(a, &machine)?.canonical(), None),
    };
    spec.request.validate()?;
    // Headers first: a bad --from base or folder fails in milliseconds. A
    // repo's missing levels are downloaded first (verified, resumable).
    let resolved = match &spec.source {
        Source::Repo(repo) => {
            let files = pull_repo_levels(
                store,
                repo,
                spec.levels.as_deref(),
                a.endpoint.as_deref(),
                &cancel,
            )
            .await?;
            let Some(files) = files else {
                return Ok(None);
            };
            resolve_files(&files, None)?
        }
        _ => resolve(&spec)?,
    };
    hw::ensure_inventory(store, machine_id, &machine, false).await?;
    let key = spec.resume_key(&machine.fingerprint);
    let sweep_id = match resume {
        Some(id) => id,
        None => match store.find_sweep(&key).await? {
            // A sweep still 'running' after orphans were closed belongs to a
            // live process: measuring beside it would only disturb both.
            Some(s) if s.status.as_deref() == Some("running") => {
                return Err(DynoError::BadInput(format!(
                    "sweep {} with the same levels and plan is running in another Dyno process (pid {}); wait for it, or stop it and run this again to resume",
                    s.id,
                    s.owner_pid.unwrap_or_default()
                )));
            }
            Some(s) if !a.fresh => {
                reporter.sweep(&SweepEvent::Info(&format!(
                    "resuming sweep {} (same levels, plan and machine); levels already measured are skipped, --fresh measures them again",
                    s.id
                )));
                s.id
            }
            _ => {
                let args = serde_json::to_string(&spec).expect("spec serialises");
                store
                    .create_quant_sweep(machine_id, &args, spec.source.kind(), &key)
                    .await?
            }
        },
    };
    if !store.reopen_sweep(sweep_id).await? {
        return Err(DynoError::BadInput(format!(
            "sweep {sweep_id} was just taken by another Dyno process; wait for it to finish"
        )));
    }

    let ctx = crate::bench::run::BenchContext {
        store,
        machine_id,
        sweep_id: Some(sweep_id),
        worker,
        cancel: cancel.clone(),
        telemetry: !a.opts.no_telemetry,
        memory_check: !a.opts.no_memory_check,
    };
    let plan = Plan {
        models: resolved
            .levels
            .iter()
            .map(|l| l.path.clone().unwrap_or_else(|| l.level.clone().into()))
            .collect(),
        request: spec.request.clone(),
    };
    reporter.planned(plan.total_samples());
    let out = run_sweep(&ctx, &spec, &resolved, sweep_id, a.fresh, reporter).await;
    let status = match &out {
        Ok(o) if o.cancelled => "cancelled",
        Ok(o) if o.failed == 0 => "ok",
        Ok(_) => "partial",
        Err(_) => "failed",
    };
    store.finish_sweep(sweep_id, status).await?;
    Ok(Some(Executed {
        sweep_id,
        outcome: out?,
    }))
}

pub async fn sweep(db: &Path, a: SweepArgs) -> Result<i32> {
    let store = open_store(db).await?;
    let (worker, cancel) = start_bench(a.opts.timeout_s)?;
    let mut reporter = progress::Progress::new(0, std::io::stderr().is_terminal());
    let done = execute(&store, db, &a, worker, cancel, &mut reporter).await;
    reporter.finish();
    let Some(Executed {
        sweep_id,
        outcome: out,
    }) = done?
    else {
        store.close().await;
        return Ok(EXIT_CANCELLED);
    };
    let machine = Machine::detect();
    let report = sweep_report::build(&store, sweep_id, &machine).await?;
    if a.opts.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&report).expect("report serialises")
        );
    } else {
        println!("sweep {sweep_id}");
        print!("{}", sweep_report::markdown(&report));
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

/// The newest `limit` sweeps' reports, as `dyno sweeps --json` prints them.
pub async fn sweep_reports(store: &Store, limit: i64) -> Result<Vec<sweep_report::SweepReport>> {
    let machine = Machine::detect();
    let mut all = Vec::new();
    for r in &store.sweeps(limit.max(0)).await? {
        all.push(sweep_report::build(store, r.id, &machine).await?);
    }
    Ok(all)
}

pub async fn sweeps(db: &Path, json: bool, limit: i64) -> Result<i32> {
    let store = open_store(db).await?;
    let rows = store.sweeps(limit.max(0)).await?;
    if json {
        let all = sweep_reports(&store, limit).await?;
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
            let spec: Option<SweepSpec> = serde_json::from_str(&r.args_json).ok();
            let source = match spec.map(|s| s.source) {
                Some(Source::Files(f)) => format!("{} files", f.len()),
                Some(Source::Dir(d)) => format!("dir {}", d.display()),
                Some(Source::From(b)) => format!("from {}", b.display()),
                Some(Source::Repo(r)) => format!("repo {r}"),
                None => "-".into(),
            };
            println!(
                "| {} | {} | {} | {} | {} | {} | {} |",
                r.id,
                r.created_at,
                r.status.as_deref().unwrap_or("-"),
                source,
                levels.len(),
                levels.iter().filter(|l| l.status == "ok").count(),
                levels.iter().filter(|l| l.status == "failed").count()
            );
        }
    }
    store.close().await;
    Ok(0)
}

pub async fn show_sweep(db: &Path, id: i64, json: bool) -> Result<i32> {
    let store = open_store(db).await?;
    let report = sweep_report::build(&store, id, &Machine::detect()).await?;
    store.close().await;
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
        print!("{}", sweep_report::markdown(&report));
    }
    Ok(0)
}

/// Download the repo's files for the sweep's levels (those already in the
/// cache cost nothing) and return the first file of each level. `None`
/// after Ctrl-C.
async fn pull_repo_levels(
    store: &Store,
    repo: &str,
    levels: Option<&[String]>,
    endpoint: Option<&str>,
    cancel: &Cancel,
) -> Result<Option<Vec<PathBuf>>> {
    let hub = crate::app::settings::hub(store, endpoint).await?;
    let listing = super::hub::repo_listing(&hub, repo).await?;
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
            None => eprintln!("dyno: {repo} has no {w} files; that level is left out"),
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
    let mut bar = super::hub::Bytes::new();
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
                &mut bar,
            )
            .await
            {
                Ok(p) => {
                    first.get_or_insert(p.local_path);
                }
                Err(e) if cancel.is_cancelled() => {
                    eprintln!("dyno: {e}");
                    return Ok(None);
                }
                Err(e) => return Err(e),
            }
        }
        out.extend(first);
    }
    Ok(Some(out))
}
