//! The `dyno` command line: parse, call the core, print. Tables go to stdout,
//! progress and errors to stderr, and `--json` replaces the table with one
//! JSON document so scripts can pipe it.

pub mod args;
pub mod hub;
pub mod hw;
pub mod options;
pub mod predict;
mod progress;
pub mod serve;
pub mod settings;
pub mod sweep;
pub mod team;

use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use args::{BenchArgs, Cli, Command};

use crate::app::bench::{BenchInput, Benched};
use crate::error::{DynoError, Result};
use crate::machine::Machine;
use crate::report::{self};
use crate::store::default_db_path;
use crate::units::{human_bytes, human_params};
use crate::vocab::status::RunStatus;
use crate::worker::client::Cancel;

/// Exit code of a benchmark the user cancelled (128 + SIGINT, as shells use).
pub const EXIT_CANCELLED: i32 = 130;

/// The `dyno` program: parse `args`, run, and return the exit code. Errors
/// are printed as one line naming what failed and what to do, with exit
/// code 2 for bad input and 1 for a failure while running.
pub fn entry<I, T>(args: I) -> i32
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    use clap::Parser;
    let args: Vec<std::ffi::OsString> = args.into_iter().map(Into::into).collect();
    // A worker (this executable started by the parent) needs no parsing.
    if let Some(code) = crate::worker::entry(&args) {
        return code;
    }
    // `dyno --version` names the llama.cpp build and the modules too, which
    // clap's static version string cannot: they are found at run time.
    if args.len() == 2 && (args[1] == "--version" || args[1] == "-V") {
        return print_version();
    }
    let cli = Cli::parse_from(args);
    // Logs go to stderr: stdout carries tables, JSON, and in the worker the
    // event protocol. llama.cpp's own logs arrive through tracing.
    crate::worker::init_logging(matches!(cli.command, Command::Worker { .. }));
    match main(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("{}", error_line(&e));
            e.exit_code()
        }
    }
}

pub use crate::error::error_line;

fn print_version() -> i32 {
    let text = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| DynoError::io("cannot start the async runtime", e))
        .and_then(|rt| rt.block_on(crate::app::hw::version_text()));
    match text {
        Ok(t) => {
            print!("{t}");
            0
        }
        Err(e) => {
            eprintln!("{}", error_line(&e));
            e.exit_code()
        }
    }
}

/// `dyno rpc-server`: check the address here, where a bad one is bad
/// input, then serve.
fn rpc_server(a: &args::RpcServerArgs) -> Result<i32> {
    let endpoint = format!("{}:{}", a.host, a.port);
    crate::vocab::check_rpc_endpoint(&endpoint).map_err(DynoError::BadInput)?;
    if !matches!(a.host.as_str(), "127.0.0.1" | "localhost") {
        eprintln!(
            "dyno rpc-server: listening on {} lets any machine that reaches it run code on these \
             devices (the protocol has no authentication); do this on a trusted network only",
            a.host
        );
    }
    let threads = a
        .threads
        .unwrap_or_else(|| crate::machine::Machine::detect().default_threads())
        .max(1) as usize;
    Ok(crate::worker::server::rpc_server(
        &endpoint,
        threads,
        a.device.as_deref(),
        a.json,
    ))
}

/// Run a parsed command line; returns the process exit code.
pub fn main(cli: Cli) -> Result<i32> {
    if let Command::Worker { probe } = cli.command {
        return Ok(if probe {
            crate::worker::server::probe()
        } else {
            crate::worker::server::main()
        });
    }
    // Serves llama.cpp devices in this process until killed, with no
    // database: nothing is measured here.
    if let Command::RpcServer(a) = &cli.command {
        return rpc_server(a);
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| DynoError::io("cannot start the async runtime", e))?;
    rt.block_on(async move {
        let db = cli.db.clone().unwrap_or_else(default_db_path);
        match cli.command {
            Command::Bench(a) => bench(&db, *a).await,
            Command::Runs { json, limit } => runs(&db, json, limit).await,
            Command::Show {
                run_id,
                json,
                timeline,
            } => show(&db, &run_id, json, timeline).await,
            Command::Sweep(a) => sweep::sweep(&db, *a).await,
            Command::Sweeps { json, limit } => sweep::sweeps(&db, json, limit).await,
            Command::ShowSweep { sweep_id, json } => sweep::show_sweep(&db, sweep_id, json).await,
            Command::Hub {
                command: args::HubCommand::Login,
                ..
            } => settings::login(&db).await,
            Command::Hub {
                command: args::HubCommand::Logout,
                ..
            } => settings::logout(&db).await,
            Command::Hub { endpoint, command } => hub::hub(&db, endpoint.as_deref(), command).await,
            Command::Settings { command, json } => settings::settings(&db, command, json).await,
            Command::Models { command, json } => hub::models(&db, command, json).await,
            Command::Export {
                id,
                format,
                output,
                include_host,
                force,
                vs_team,
            } => {
                export(
                    &db,
                    &id,
                    format,
                    output.as_deref(),
                    include_host,
                    force,
                    vs_team,
                )
                .await
            }
            Command::Compare { a, b, json } => compare(&db, &a, &b, json).await,
            Command::Sync(a) => team::sync(&db, a).await,
            Command::Machines(a) => team::machines(&db, a).await,
            Command::Import { file } => import(&db, &file).await,
            Command::Inspect { models, json } => inspect(&models, json),
            Command::Presets { model, json } => presets(&db, &model, json).await,
            Command::Predict(a) => predict::predict(&db, *a).await,
            Command::Synth(a) => synth(&db, *a).await,
            Command::Hw { json, remeasure } => hw::hw(&db, json, remeasure).await,
            Command::ServeBench(a) => serve::serve_bench(&db, *a).await,
            Command::ServeRuns { json, limit } => serve::serve_runs(&db, json, limit).await,
            Command::ServeShow {
                run_id,
                json,
                show_host,
            } => serve::serve_show(&db, run_id, json, show_host).await,
            Command::Worker { .. } | Command::RpcServer(_) => unreachable!("handled above"),
        }
    })
}

pub use crate::app::open_store;

/// A cancel switch that Ctrl-C flips.
fn ctrl_c() -> Cancel {
    let cancel = Cancel::default();
    let on_signal = cancel.clone();
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            on_signal.cancel();
        }
    });
    cancel
}

async fn bench(db: &Path, a: BenchArgs) -> Result<i32> {
    let machine = Machine::detect();
    let mut input = BenchInput {
        models: a.models.clone(),
        request: a.opts.request(machine.default_threads()),
        retry_disturbed: a.retry_disturbed,
        measuring: a.opts.measuring(),
    };
    let cancel = ctrl_c();
    let twins = shape_only(db, &a, &machine, &mut input, &cancel).await?;
    if a.again.is_none() {
        input.check()?;
    }
    let worker = crate::app::bench::worker(a.opts.timeout_s)?;
    let store = open_store(db).await?;
    let mut reporter = progress::Progress::new(0, std::io::stderr().is_terminal());
    let measured = match a.again {
        Some(run_id) => {
            let how = input.measuring.clone();
            crate::app::bench::again(&store, &machine, run_id, how, worker, cancel, &mut reporter)
                .await
        }
        None => {
            crate::app::bench::run(&store, &machine, &input, worker, cancel, &mut reporter).await
        }
    };
    reporter.finish();
    store.close().await;
    if let Some(t) = &twins {
        eprintln!("dyno: {}", t.fate());
    }
    drop(twins);
    let Benched {
        report,
        outcome: out,
        ..
    } = measured?;
    if a.opts.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&report).expect("report serialises")
        );
    } else {
        print!("{}", report::table::bench_table(&report));
    }

    if out.cancelled {
        eprintln!("dyno: cancelled; what was measured before the cancel is saved (dyno runs)");
        return Ok(EXIT_CANCELLED);
    }
    let failed: Vec<_> = report
        .runs
        .iter()
        .filter(|r| r.status != RunStatus::Ok)
        .collect();
    if failed.is_empty() {
        return Ok(0);
    }
    for r in &failed {
        eprintln!(
            "dyno: run {} ({}) failed: {}",
            r.run_id,
            r.model.path,
            r.error.as_deref().unwrap_or("unknown error")
        );
    }
    // Bad input (exit 2) only when every failure is one the user must fix
    // by changing the input (see `FailureCode::exit_code`).
    let bad_input = failed
        .iter()
        .all(|r| r.error_code.as_ref().is_some_and(|c| c.exit_code() == 2));
    Ok(if bad_input { 2 } else { 1 })
}

/// `--shape-only`: each MODEL is a hub level, written here as a synthetic
/// twin that the benchmark then measures in its place. Without it, a hub
/// level where a file is expected gets the two ways forward.
async fn shape_only(
    db: &Path,
    a: &BenchArgs,
    machine: &Machine,
    input: &mut BenchInput,
    cancel: &Cancel,
) -> Result<Option<crate::app::shape_only::Twins>> {
    use crate::app::shape_only::{is_shape_only_target, not_a_file, write_twins};
    let targets: Vec<String> = a
        .models
        .iter()
        .map(|m| m.to_string_lossy().into_owned())
        .collect();
    if !a.shape_only {
        return match targets.iter().find(|t| is_shape_only_target(t)) {
            Some(t) => Err(not_a_file(t)),
            None => Ok(None),
        };
    }
    // The plan is checked before a header is fetched.
    input.request.validate()?;
    let store = open_store(db).await?;
    let twins = write_twins(
        &store,
        machine,
        &targets,
        None,
        a.endpoint.as_deref(),
        a.keep,
        cancel,
    )
    .await;
    store.close().await;
    let twins = twins?;
    for t in &twins.twins {
        eprintln!("dyno: {}", t.describe());
    }
    input.models = twins.paths();
    Ok(Some(twins))
}

async fn runs(db: &Path, json: bool, limit: i64) -> Result<i32> {
    if let Some(url) = team::url_of(db) {
        return team::runs(url, json, limit).await;
    }
    let store = open_store(db).await?;
    let rows = store.runs(limit.max(0)).await?;
    if json {
        let report = report::build(&store, &rows, &Machine::detect()).await?;
        println!(
            "{}",
            serde_json::to_string_pretty(&report).expect("report serialises")
        );
    } else if rows.is_empty() {
        println!(
            "no runs stored in {} yet; measure one with `dyno bench MODEL.gguf`",
            db.display()
        );
    } else {
        println!("| run | started | status | model | quant | threads | ngl | tests |");
        println!("| --: | ------- | ------ | ----- | ----- | ------: | --: | ----: |");
        for r in &rows {
            let m = store.model(r.model_id).await?;
            let results = store.results(r.id).await?;
            // A figure other programs disturbed is never listed as clean; a
            // test that did not finish has no figure to mark.
            let disturbed: Vec<&str> = results
                .iter()
                .filter(|x| {
                    x.status == crate::vocab::status::ResultStatus::Ok
                        && x.disturbance.as_ref().is_some_and(|d| d.disturbed)
                })
                .map(|x| x.test.as_str())
                .collect();
            let status = if disturbed.is_empty() {
                r.status.to_string()
            } else {
                format!("{} (disturbed: {})", r.status, disturbed.join(", "))
            };
            println!(
                "| {} | {} | {} | {} | {} | {} | {} | {} |",
                r.id,
                r.started_at,
                status,
                match m.synthetic {
                    Some(_) => format!("{} (synthetic)", m.file_name),
                    None => m.file_name.clone(),
                },
                m.quant,
                r.n_threads,
                r.n_gpu_layers
                    .map(|v| v.to_string())
                    .unwrap_or_else(|| "-".into()),
                results.len()
            );
        }
    }
    store.close().await;
    Ok(0)
}

async fn show(db: &Path, run_id: &str, json: bool, timeline: bool) -> Result<i32> {
    if let Some(url) = team::url_of(db) {
        return team::show(url, run_id, json, timeline).await;
    }
    let run_id: i64 = run_id
        .trim()
        .strip_prefix("run:")
        .unwrap_or(run_id.trim())
        .parse()
        .map_err(|_| {
            DynoError::BadInput(format!(
                "'{run_id}' is not a run id; `dyno runs` lists them (a team run's id, from `dyno runs --db postgres://…`, needs that --db)"
            ))
        })?;
    let store = open_store(db).await?;
    let row = store.run(run_id).await?.ok_or_else(|| {
        DynoError::NotFound(format!(
            "no run {run_id} in {}; `dyno runs` lists the stored runs",
            db.display()
        ))
    })?;
    if timeline {
        let points = report::telemetry::timeline(&store, row.id).await?;
        store.close().await;
        let doc = serde_json::json!({"run_id": row.id, "points": points});
        println!(
            "{}",
            serde_json::to_string_pretty(&doc).expect("timeline serialises")
        );
        return Ok(0);
    }
    // Through `load`, so a run of an offload sweep brings its curve.
    let report = report::load(&store, db, report::Target::Run(row.id))
        .await?
        .report()
        .clone();
    store.close().await;
    print_show(&report, json)
}

/// `dyno show`'s output for one run's report, local or from a team store.
fn print_show(report: &report::Report, json: bool) -> Result<i32> {
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&report).expect("report serialises")
        );
        return Ok(0);
    }
    let r = &report.runs[0];
    let m = &report.machine;
    println!("run {} · {} · started {}", r.run_id, r.status, r.started_at);
    if let Some(e) = &r.error {
        println!("error: {e}");
    }
    println!(
        "model: {} ({}, {} weights, {} file, {} params, {:.2} bits/weight)\n  sha256 {}",
        r.model.path,
        r.model.quant,
        human_bytes(r.model.weight_bytes),
        human_bytes(r.model.size_bytes),
        human_params(r.model.n_params),
        r.model.bits_per_weight,
        r.model.sha256
    );
    println!(
        "config: {}",
        report::conditions(&r.config, report::Wording::Fields)
    );
    println!("offload: {}", report::offload::describe(r));
    println!(
        "machine: {} · {} cores · {} · backend {} · {}",
        m.cpu,
        m.cores,
        human_bytes(m.memory_bytes),
        r.backend.as_deref().unwrap_or("-"),
        r.llama_cpp_build
            .as_deref()
            .unwrap_or("llama.cpp build unknown")
    );
    if let Some(ms) = r.load_time_ms {
        println!("model load: {ms:.2} ms (not part of any tokens/s figure)");
    }
    if let Some(w) = &r.what_this_means {
        println!(
            "what this means: {:.1} words/s at {:.2} tokens per word{}",
            w.words_per_s,
            w.tokens_per_word,
            w.reply_500_words_s
                .map(|s| format!("; a 500-word reply takes {s:.1} s"))
                .unwrap_or_default()
        );
    }
    if let Some(line) = prediction_line(r) {
        println!("{line}");
    }
    println!();
    print!("{}", report::table::bench_table(report));
    println!();
    for res in &r.results {
        print_samples(res);
    }
    Ok(0)
}

/// What the run's prediction said against what was measured, per test; none
/// when the run was not predicted.
fn prediction_line(r: &report::RunJson) -> Option<String> {
    let p = r.prediction.as_ref()?;
    let lines: Vec<String> = r
        .results
        .iter()
        .filter_map(|res| {
            let e = res.predicted?;
            let m = res.mean_tokens_per_s?;
            Some(format!(
                "{} {} t/s, measured {m:.1} ({:+.0}%{})",
                res.test,
                predict::rate(&e),
                (m / e.tokens_per_s - 1.0) * 100.0,
                if m < e.low || m > e.high {
                    ", outside the range"
                } else {
                    ""
                }
            ))
        })
        .collect();
    if lines.is_empty() {
        return None;
    }
    let basis = p.tests.first().map_or("", |t| t.basis.text.as_str());
    Some(format!(
        "predicted before the run ({basis}): {}",
        lines.join("; ")
    ))
}

/// One result's samples and their spread (a sustained decode's hundreds of
/// repetitions are counted, not listed).
fn print_samples(res: &report::ResultJson) {
    let samples: Vec<String> = res
        .samples_tokens_per_s
        .iter()
        .map(|v| format!("{v:.2}"))
        .collect();
    // A sustained decode has hundreds of repetitions: its rate over
    // time is the summary above, and the JSON keeps every one.
    if res.sustained.is_some() && samples.len() > 20 {
        println!(
            "{} samples ({:?} t/s): {} repetitions, every one in --json",
            res.test,
            res.rate,
            samples.len()
        );
    } else {
        println!(
            "{} samples ({:?} t/s): [{}]",
            res.test,
            res.rate,
            samples.join(", ")
        );
    }
    if let Some(ci) = res.ci95_tokens_per_s {
        println!(
            "  median {:.2} · min {:.2} · max {:.2} · 95% CI ± {:.2}{}",
            res.median_tokens_per_s.unwrap_or_default(),
            res.min_tokens_per_s.unwrap_or_default(),
            res.max_tokens_per_s.unwrap_or_default(),
            ci,
            if res.outliers.is_empty() {
                String::new()
            } else {
                format!(" · outliers at {:?}", res.outliers)
            }
        );
    }
}

async fn compare(db: &Path, a: &str, b: &str, json: bool) -> Result<i32> {
    let c = if let Some(url) = team::url_of(db) {
        team::compare(url, a, b).await?
    } else {
        let store = open_store(db).await?;
        let c = crate::app::compare::compare(&store, db, a, b).await;
        store.close().await;
        c?
    };
    if json {
        println!("{}", serde_json::to_string_pretty(&c).expect("serialises"));
    } else {
        print!("{}", report::compare::table(&c));
    }
    Ok(0)
}

async fn import(db: &Path, file: &Path) -> Result<i32> {
    let text = report::import::read(file)?;
    let report = report::import::parse(&text, &file.display().to_string())?;
    let store = open_store(db).await?;
    let (added, skipped) = report::import::import(&store, &report).await?;
    store.close().await;
    println!(
        "imported {added} run(s) measured on {}{}",
        report.machine.cpu,
        if skipped > 0 {
            format!("; {skipped} were already stored")
        } else {
            String::new()
        }
    );
    Ok(0)
}

async fn export(
    db: &Path,
    id: &str,
    format: args::ExportFormat,
    output: Option<&Path>,
    include_host: bool,
    force: bool,
    vs_team: Option<Option<String>>,
) -> Result<i32> {
    use crate::report::export as ex;
    let team_db = team::url_of(db);
    let (target, stem) = match team_db {
        Some(_) => (
            None,
            format!("team-{}", id.trim().chars().take(12).collect::<String>()),
        ),
        None => {
            let t: report::Target = id.parse()?;
            (Some(t), t.file_stem())
        }
    };
    let default_name = format
        .is_image()
        .then(|| PathBuf::from(format!("dyno-{stem}.{}", format.extension())));
    let dest = output.map(Path::to_path_buf).or(default_name);
    if let Some(p) = &dest {
        ex::check_destination(p, format, force)?;
    }
    let bytes = match (team_db, target) {
        (Some(url), _) => {
            let t = crate::app::team::open(url).await?;
            let r = team::report_vs_team(&t, id, vs_team.is_some()).await;
            t.close().await;
            ex::export_report(&r?, format, include_host)?
        }
        (None, Some(target)) if vs_team.is_some() => {
            let store = open_store(db).await?;
            let url = vs_team.as_ref().and_then(|u| u.as_deref());
            let r = crate::app::export::against_team(&store, db, target, url).await;
            store.close().await;
            ex::export_report(&r?, format, include_host)?
        }
        (None, target) => {
            let target = target.expect("a local target was parsed above");
            let store = open_store(db).await?;
            let bytes = ex::export(&store, db, target, format, include_host).await;
            store.close().await;
            bytes?
        }
    };
    match dest {
        Some(p) => {
            ex::write_file(&p, &bytes)?;
            eprintln!("dyno: wrote {}", p.display());
        }
        None => {
            use std::io::Write;
            std::io::stdout()
                .write_all(&bytes)
                .map_err(|e| DynoError::io("cannot write to stdout", e))?;
        }
    }
    Ok(0)
}

async fn presets(db: &Path, model: &Path, json: bool) -> Result<i32> {
    use crate::app::presets::{self, Basis};
    let store = open_store(db).await?;
    let all = presets::estimates(&store, model).await;
    store.close().await;
    let all = all?;
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&all).expect("estimates serialise")
        );
        return Ok(0);
    }
    for e in &all {
        println!(
            "{:<9} {} · {} repetitions · about {} ({}–{}) · {}",
            e.plan.label,
            e.tests.join(", "),
            e.plan.reps,
            crate::units::human_duration(e.seconds),
            crate::units::human_duration(e.seconds_low),
            crate::units::human_duration(e.seconds_high),
            e.plan.about
        );
    }
    match all.first().map(|e| (e.basis, e.runs_used)) {
        Some((Basis::StoredRuns, n)) => {
            println!("times estimated from {n} stored run(s) on this machine")
        }
        _ => println!("times are rough: no run on this machine to learn from yet"),
    }
    Ok(0)
}

async fn synth(db: &std::path::Path, a: args::SynthArgs) -> Result<i32> {
    let like = a.like.clone().unwrap_or_default();
    let like_path = crate::app::expand_home(&like);
    if a.stats {
        if like.is_empty() {
            return Err(DynoError::BadInput(
                "--stats reads a model's values: give it with --like FILE.gguf".into(),
            ));
        }
        let stats = crate::app::synth::stats(&like_path).await?;
        println!(
            "{}",
            serde_json::to_string_pretty(&stats).expect("stats serialise")
        );
        return Ok(0);
    }
    if let Some(tokens) = a.routing {
        if like.is_empty() {
            return Err(DynoError::BadInput(
                "--routing decodes a model: give it with --like FILE.gguf".into(),
            ));
        }
        let r = crate::app::synth::routing(&like_path, tokens.max(1)).await?;
        if a.json {
            println!(
                "{}",
                serde_json::to_string_pretty(&r).expect("routing serialises")
            );
        } else {
            println!("routing: {}", r.describe());
        }
        return Ok(0);
    }
    let bar = if std::io::stderr().is_terminal() && !a.json && !a.dry_run {
        let b = indicatif::ProgressBar::new(0);
        b.set_style(
            indicatif::ProgressStyle::with_template(
                "synthetic weights {bar:30.cyan/blue} {bytes}/{total_bytes} · {bytes_per_sec}",
            )
            .expect("static template"),
        );
        b
    } else {
        indicatif::ProgressBar::hidden()
    };
    let input = crate::app::synth::SynthInput {
        like: like.clone(),
        endpoint: a.endpoint.clone(),
        shape: a.shape.clone(),
        level: a.ggml_type.clone(),
        out: a.out.clone(),
        replace: a.force,
        seed: Some(a.seed),
        dry_run: a.dry_run,
    };
    let cancel = Cancel::default();
    let on_signal = cancel.clone();
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            on_signal.cancel();
        }
    });
    // The settings (hub address, token) only for a hub level.
    let store = if like.is_empty() || like_path.exists() {
        None
    } else {
        Some(open_store(db).await?)
    };
    let done = crate::app::synth::synth_file(
        store.as_ref(),
        &input,
        crate::app::synth::DefaultPlace::BesideTemplate,
        &cancel,
        |d, t| {
            bar.set_length(t);
            bar.set_position(d);
        },
    )
    .await;
    bar.finish_and_clear();
    let done = done?;
    if a.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&done).expect("outcome serialises")
        );
        return Ok(0);
    }
    print_synth(&done, like.is_empty());
    Ok(0)
}

/// `dyno synth`'s line: what was written (or would be), from what, and how
/// long it took; `built_in` when the header was Dyno's own.
fn print_synth(done: &crate::app::synth::SynthOutcome, built_in: bool) {
    let what = match &done.shape {
        Some(s) if built_in => format!("the shape {s}, from {}", done.source),
        Some(s) => format!("the shape {s}, from the header of {}", done.source),
        None => format!("the shape of {}", done.source),
    };
    let size = format!(
        "{:.2} B parameters, {} of weights",
        done.n_params as f64 / 1e9,
        human_bytes(done.weight_bytes)
    );
    match &done.stats {
        None => println!(
            "{}: {} with synthetic weights, {what}: {size}; nothing written (--dry-run)",
            done.path.display(),
            done.arch
        ),
        Some(st) => println!(
            "{}: {} with synthetic weights (seed {}), {what}: {size}; {} written in {:.1} s ({:.1} s drawing and quantising)",
            done.path.display(),
            done.arch,
            done.seed,
            human_bytes(st.file_bytes),
            st.quantise_s + st.write_s,
            st.quantise_s
        ),
    }
    if let Some(r) = done.stats.as_ref().and_then(|s| s.routing.as_ref()) {
        println!("routing: {}", r.describe());
    }
}

fn inspect(models: &[std::path::PathBuf], json: bool) -> Result<i32> {
    let infos = models
        .iter()
        .map(|m| crate::model::inspect(m))
        .collect::<Result<Vec<_>>>()?;
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&infos).expect("model info serialises")
        );
        return Ok(0);
    }
    for i in &infos {
        println!(
            "{}: {} {} · {} weights ({} file) · {} params · {:.2} bits/weight · {} layers · context {} · GGUF v{}",
            i.path.display(),
            i.arch,
            i.quant,
            human_bytes(i.weight_bytes),
            human_bytes(i.size_bytes),
            human_params(i.n_params),
            i.bits_per_weight(),
            i.n_layers
                .map(|v| v.to_string())
                .unwrap_or_else(|| "?".into()),
            i.context_length
                .map(|v| v.to_string())
                .unwrap_or_else(|| "?".into()),
            i.gguf_version
        );
    }
    Ok(0)
}
