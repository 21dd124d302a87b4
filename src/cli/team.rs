//! `dyno sync`, `dyno machines`, and `runs`, `show`, `compare` and `export`
//! with `--db postgres://…`: the team store from the command line, through
//! `app::team`.

use std::io::IsTerminal;
use std::path::Path;

use super::args::{MachinesArgs, SyncArgs};
use super::open_store;
use crate::app::team::{self as t, SyncProgress, SyncRequest, TeamQuery};
use crate::error::Result;
use crate::report::compare::Comparison;
use crate::report::Report;
use crate::store::team::{is_team_url, TeamStore};
use crate::units::human_bytes;

/// The `--db` value when it names a team store rather than a file.
pub fn url_of(db: &Path) -> Option<&str> {
    db.to_str().filter(|s| is_team_url(s))
}

pub async fn sync(db: &Path, a: SyncArgs) -> Result<i32> {
    let store = open_store(db).await?;
    let url = t::team_url(&store, a.url.as_deref()).await;
    let url = match url {
        Ok(u) => u,
        Err(e) => {
            store.close().await;
            return Err(e);
        }
    };
    let tty = std::io::stderr().is_terminal() && !a.json;
    let progress = move |p: SyncProgress| match p {
        SyncProgress::Connected {
            store,
            schema_version,
        } => eprintln!("dyno: syncing with {store} (team schema v{schema_version})"),
        SyncProgress::Pushing { done, total } | SyncProgress::Pulling { done, total }
            if tty && total > 0 =>
        {
            let what = if matches!(p, SyncProgress::Pushing { .. }) {
                "pushed"
            } else {
                "pulled"
            };
            eprint!("\rdyno: {what} {done}/{total} runs   ");
            if done >= total {
                eprintln!();
            }
        }
        _ => {}
    };
    let req = SyncRequest {
        url,
        with_telemetry: a.with_telemetry,
        push_only: a.push_only,
    };
    // Ctrl-C simply ends the process: what the server committed is marked,
    // and the next sync resumes from there.
    let never = crate::worker::client::Cancel::default();
    let out = t::sync(&store, &req, &progress, &never).await;
    store.close().await;
    let r = out?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&r).expect("serialises"));
        return Ok(0);
    }
    let rate = if r.push_seconds > 0.0 && r.pushed > 0 {
        format!(
            " in {:.1} s ({:.0} runs/s, {}/s)",
            r.push_seconds,
            r.pushed as f64 / r.push_seconds,
            human_bytes((r.push_bytes as f64 / r.push_seconds) as u64)
        )
    } else {
        String::new()
    };
    println!(
        "pushed {} run(s){rate}; {} already there{}",
        r.pushed,
        r.already_there,
        if r.telemetry_pushed > 0 {
            format!("; telemetry of {}", r.telemetry_pushed)
        } else {
            String::new()
        }
    );
    if r.left_running > 0 {
        println!(
            "{} run(s) still being measured are left for the next sync",
            r.left_running
        );
    }
    if !req.push_only {
        println!("pulled {} run(s) of other machines", r.pulled);
    }
    if r.skipped > 0 {
        println!(
            "skipped {} run(s) of other machines this Dyno cannot read (update Dyno; the next sync tries them again):",
            r.skipped
        );
        for s in &r.skipped_runs {
            println!("  {}: {}", s.uid, s.reason);
        }
    }
    println!(
        "the team store holds {} run(s) from {} machine(s); this machine is {}",
        r.team_runs, r.team_machines, r.machine
    );
    Ok(0)
}

pub async fn runs(url: &str, json: bool, limit: i64) -> Result<i32> {
    let team = t::open(url).await?;
    let rows = t::runs(&team, &TeamQuery::default(), limit).await;
    let label = team.label().to_string();
    team.close().await;
    let rows = rows?;
    if json {
        let v: Vec<serde_json::Value> = rows
            .iter()
            .map(|r| {
                serde_json::json!({
                    "id": r.uid, "machine": r.machine, "cpu": r.cpu, "started_at": r.started_at,
                    "status": r.status, "model": r.file_name, "model_sha256": r.model_sha256,
                    "quant": r.quant, "backend": r.backend, "dyno_version": r.dyno_version,
                    "n_threads": r.n_threads, "n_gpu_layers": r.n_gpu_layers,
                    "prefill_tokens_per_s": r.prefill_tps, "n_prompt": r.n_prompt,
                    "decode_tokens_per_s": r.decode_tps, "n_gen": r.n_gen,
                    "ttft_ms": r.ttft_ms, "disturbed": r.disturbed != 0,
                })
            })
            .collect();
        println!("{}", serde_json::to_string_pretty(&v).expect("serialises"));
        return Ok(0);
    }
    if rows.is_empty() {
        println!("no runs in the team store {label} yet; `dyno sync {label}` sends this machine's");
        return Ok(0);
    }
    println!("| run | machine | started | status | model | quant | backend | threads | ngl | prefill t/s | decode t/s |");
    println!("| --- | ------- | ------- | ------ | ----- | ----- | ------- | ------: | --: | ----------: | ---------: |");
    for r in &rows {
        let fig = |v: Option<f64>, n: Option<i64>, p: &str| match v {
            Some(v) => format!("{v:.1} ({p}{})", n.unwrap_or(0)),
            None => "-".into(),
        };
        println!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            &r.uid[..12.min(r.uid.len())],
            r.machine,
            r.started_at,
            r.status,
            r.file_name,
            r.quant,
            r.backend.as_deref().unwrap_or("-"),
            r.n_threads,
            r.n_gpu_layers.map_or("-".into(), |n| n.to_string()),
            fig(r.prefill_tps, r.n_prompt, "pp"),
            fig(r.decode_tps, r.n_gen, "tg") + if r.disturbed != 0 { " busy" } else { "" },
        );
    }
    Ok(0)
}

pub async fn show(url: &str, id: &str, json: bool, timeline: bool) -> Result<i32> {
    let team = t::open(url).await?;
    if timeline {
        let uid = team.resolve(id).await;
        let points = match &uid {
            Ok(u) => team.telemetry(u).await,
            Err(_) => Ok(None),
        };
        team.close().await;
        let uid = uid?;
        let points: serde_json::Value = match points? {
            Some(p) => serde_json::from_str(&p).unwrap_or(serde_json::Value::Null),
            None => {
                return Err(crate::error::DynoError::NotFound(format!(
                    "team run {uid} was synced without its telemetry; the machine that measured it can send it with `dyno sync --with-telemetry`"
                )))
            }
        };
        let doc = serde_json::json!({"run_id": uid, "points": points});
        println!(
            "{}",
            serde_json::to_string_pretty(&doc).expect("serialises")
        );
        return Ok(0);
    }
    let r = t::load(&team, id).await;
    team.close().await;
    super::print_show(&r?, json)
}

pub async fn compare(url: &str, a: &str, b: &str) -> Result<Comparison> {
    let team = t::open(url).await?;
    let ra = t::load(&team, a).await;
    let rb = t::load(&team, b).await;
    team.close().await;
    Ok(crate::report::compare::compare(a, &ra?, b, &rb?, false))
}

/// A team run's report, with the team median beside it when asked.
pub async fn report_vs_team(team: &TeamStore, id: &str, vs_team: bool) -> Result<Report> {
    let mut r = t::load(team, id).await?;
    if vs_team {
        r.team = Some(t::median_for(team, &r).await?);
    }
    Ok(r)
}

pub async fn machines(db: &Path, a: MachinesArgs) -> Result<i32> {
    let url = match (a.team.clone(), url_of(db)) {
        (Some(u), _) => u,
        (None, Some(u)) => u.to_string(),
        (None, None) => {
            let store = open_store(db).await?;
            let u = t::team_url(&store, None).await;
            store.close().await;
            u?
        }
    };
    let team = t::open(&url).await?;
    let q = TeamQuery {
        model: a.model,
        quant: a.quant,
        backend: a.backend,
        dyno_version: a.dyno_version,
    };
    let r = t::machines(&team, &q).await;
    team.close().await;
    let r = r?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&r).expect("serialises"));
        return Ok(0);
    }
    let Some(level) = &r.level else {
        println!("no successful run in the team store matches; levels there:");
        for c in r.choices.iter().take(20) {
            println!(
                "  {} {} ({} machines, {} runs)",
                c.file_name, c.quant, c.machines, c.runs
            );
        }
        return Ok(0);
    };
    println!(
        "{} {} (sha256 {}…) on {} machine(s); medians over each machine's clean runs of decode tg{} and prefill pp{}",
        level.name.as_deref().unwrap_or(&level.file_name),
        level.quant,
        &level.model_sha256[..12.min(level.model_sha256.len())],
        level.machines,
        r.n_gen.map_or("-".into(), |n| n.to_string()),
        r.n_prompt.map_or("-".into(), |n| n.to_string()),
    );
    println!("figures are {}", r.setup_rule);
    println!("| # | machine | cpu | cores | memory | gpus | setup | runs | decode t/s | prefill t/s | ttft ms | vs best |");
    println!("| -: | ------- | --- | ----: | -----: | ---- | ----- | ---: | ---------: | ----------: | ------: | ------: |");
    for m in &r.machines {
        let f = |v: Option<f64>| v.map_or("-".into(), |v| format!("{v:.1}"));
        println!(
            "| {} | {} | {} | {} | {} | {} | {} | {}{}{} | {} | {} | {} | {} |",
            m.rank,
            m.machine,
            m.cpu,
            m.cores,
            human_bytes(m.memory_bytes.max(0) as u64),
            m.gpus.as_deref().unwrap_or("-"),
            m.setup,
            m.runs,
            if m.disturbed_runs > 0 {
                format!(" (+{} busy)", m.disturbed_runs)
            } else {
                String::new()
            },
            if m.other_setup_runs > 0 {
                format!(" (+{} other setups)", m.other_setup_runs)
            } else {
                String::new()
            },
            f(m.decode_tps),
            f(m.prefill_tps),
            f(m.ttft_ms),
            m.decode_vs_best
                .map_or("-".into(), |v| format!("{:.0}%", v * 100.0)),
        );
    }
    println!(
        "team median: decode {} t/s, prefill {} t/s",
        r.median_decode_tps
            .map_or("-".into(), |v| format!("{v:.1}")),
        r.median_prefill_tps
            .map_or("-".into(), |v| format!("{v:.1}"))
    );
    Ok(0)
}
