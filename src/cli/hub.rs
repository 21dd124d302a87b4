//! `dyno hub search|ls|pull` and `dyno models [add|remove|added]`.

use std::io::IsTerminal;
use std::path::Path;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::args::{HubCommand, ModelsCommand};
use super::{open_store, EXIT_CANCELLED};
use crate::app;
use crate::app::hub::{pull_recorded, repo_listing};
use crate::app::models::memory;
use crate::error::{DynoError, Result};
use crate::hub::download::PullProgress;
use crate::hub::files::{Fit, RepoLevel, RepoListing};
use crate::hub::{Hub, TreeFile};
use crate::store::Store;
use crate::units::{human_bytes, human_params};
use crate::worker::client::Cancel;

/// A byte progress bar on a terminal (bytes, rate, ETA); a line per file
/// otherwise.
pub struct Bytes {
    bar: ProgressBar,
    tty: bool,
}

impl Default for Bytes {
    fn default() -> Self {
        Bytes::new()
    }
}

impl Bytes {
    pub fn new() -> Bytes {
        let tty = std::io::stderr().is_terminal();
        let bar = if tty {
            let b = ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::stderr());
            b.set_style(
                ProgressStyle::with_template(
                    "{msg} {bar:30.cyan/blue} {bytes}/{total_bytes} · {bytes_per_sec} · ETA {eta}",
                )
                .expect("static template")
                .progress_chars("=> "),
            );
            b
        } else {
            ProgressBar::hidden()
        };
        Bytes { bar, tty }
    }
}

impl PullProgress for Bytes {
    fn start(&mut self, path: &str, total: u64, already: u64) {
        self.bar.reset();
        self.bar.set_length(total);
        self.bar.set_position(already);
        self.bar.set_message(path.to_string());
        if !self.tty {
            let resume = if already > 0 {
                format!(", resuming at {}", human_bytes(already))
            } else {
                String::new()
            };
            eprintln!("dyno: downloading {path} ({}{resume})", human_bytes(total));
        }
    }
    fn advance(&mut self, bytes: u64) {
        self.bar.inc(bytes);
    }
    fn finish(&mut self, path: &str) {
        self.bar.finish_and_clear();
        if !self.tty {
            eprintln!("dyno: {path} downloaded and verified (sha256)");
        }
    }
}

fn cancel_on_ctrl_c() -> Cancel {
    let cancel = Cancel::default();
    let c = cancel.clone();
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            c.cancel();
        }
    });
    cancel
}

fn pick_level<'a>(l: &'a RepoListing, quant: &str) -> Result<&'a RepoLevel> {
    l.levels
        .iter()
        .find(|v| v.level.eq_ignore_ascii_case(quant))
        .ok_or_else(|| {
            DynoError::NotFound(format!(
                "{} has no {quant} files; it has {}",
                l.repo,
                l.levels
                    .iter()
                    .map(|v| v.level.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        })
}

/// `dyno hub …`: one function per subcommand below.
pub async fn hub(db: &Path, endpoint: Option<&str>, cmd: HubCommand) -> Result<i32> {
    let hub = {
        let store = open_store(db).await?;
        let h = app::hub::open(&store, endpoint).await;
        store.close().await;
        h?
    };
    match cmd {
        HubCommand::Search { query, limit, json } => search(&hub, &query, limit, json).await,
        HubCommand::Ls {
            repo,
            json,
            no_predict,
        } => ls(db, &hub, &repo, json, !no_predict).await,
        HubCommand::Pull {
            repo,
            quant,
            file,
            json,
        } => pull(db, &hub, &repo, quant.as_deref(), file.as_deref(), json).await,
        HubCommand::Discard { repo, file, json } => discard(db, &repo, &file, json).await,
        HubCommand::Login | HubCommand::Logout => {
            unreachable!("`dyno hub login|logout` are dispatched to cli::settings")
        }
    }
}

async fn search(hub: &Hub, query: &str, limit: u32, json: bool) -> Result<i32> {
    let found = hub.search(query, limit.clamp(1, 1000)).await?;
    if json {
        print_json(&found);
    } else if found.is_empty() {
        println!("no GGUF repos match '{query}'");
    } else {
        println!("| repo | downloads | likes |");
        println!("| ---- | --------: | ----: |");
        for r in &found {
            println!("| {} | {} | {} |", r.id, r.downloads, r.likes);
        }
    }
    Ok(0)
}

/// `hub ls --json`: the listing, and each level's prediction when asked.
#[derive(serde::Serialize)]
struct LsJson<'a> {
    #[serde(flatten)]
    listing: &'a RepoListing,
    predictions: Vec<app::predict::PredictedLevel>,
}

async fn ls(db: &Path, hub: &Hub, repo: &str, json: bool, with_predictions: bool) -> Result<i32> {
    let l = repo_listing(hub, repo).await?;
    let mut predictions = Vec::new();
    if with_predictions && !l.levels.is_empty() {
        let store = open_store(db).await?;
        let input = app::predict::PredictInput::default();
        let prepared = app::predict::prepare(&store, &input).await;
        if let Ok(pre) = &prepared {
            for v in &l.levels {
                let (p, _) =
                    app::predict::predict_level(&store, hub, pre, &l.repo, &l.commit, v).await;
                predictions.push(p);
            }
        }
        store.close().await;
        prepared?;
    }
    if json {
        print_json(&LsJson {
            listing: &l,
            predictions,
        });
        return Ok(0);
    }
    println!(
        "{} @ {}",
        l.repo,
        l.commit.chars().take(12).collect::<String>()
    );
    if l.levels.is_empty() {
        println!("no GGUF model files in this repo");
    }
    for v in &l.levels {
        let parts = if v.files.len() > 1 {
            format!(" ({} parts)", v.files.len())
        } else {
            String::new()
        };
        let here = if v.local_path.is_some() {
            " · in the cache".to_string()
        } else if v.partial_bytes > 0 {
            format!(
                " · {} of an interrupted download (pull resumes, discard deletes)",
                human_bytes(v.partial_bytes)
            )
        } else {
            String::new()
        };
        let predicted = match predictions.iter().find(|p| p.level == v.level) {
            Some(p) => format!(" · {}", super::predict::column(p.prediction.as_ref())),
            None => String::new(),
        };
        println!(
            "  {:<10} {:>10} — {}{predicted}{parts}{here}  {}",
            v.level,
            human_bytes(v.size_bytes),
            v.fit.describe(),
            v.files[0].path
        );
    }
    for (what, files) in [("projector", &l.mmproj), ("imatrix", &l.imatrix)] {
        for f in files.iter() {
            println!("  [{what}] {} {}", f.path, human_bytes(f.size));
        }
    }
    Ok(0)
}

/// The files a pull fetches: a level's (every part of a split model), the
/// level holding the named file, the named file alone, or the repo's only
/// level.
async fn files_to_pull(
    hub: &Hub,
    l: &RepoListing,
    quant: Option<&str>,
    file: Option<&str>,
) -> Result<Vec<TreeFile>> {
    Ok(match (quant, file) {
        (Some(q), _) => pick_level(l, q)?.files.clone(),
        (None, Some(f)) => {
            let level = l
                .levels
                .iter()
                .find(|v| v.files.iter().any(|x| x.path == f));
            match level {
                // A part of a split model brings the whole model.
                Some(v) => v.files.clone(),
                None => {
                    let tree = hub.tree(&l.repo, &l.commit).await?;
                    vec![tree.into_iter().find(|x| x.path == f).ok_or_else(|| {
                        DynoError::NotFound(format!(
                            "{f} is not in {}; `dyno hub ls {}` lists its files",
                            l.repo, l.repo
                        ))
                    })?]
                }
            }
        }
        (None, None) if l.levels.len() == 1 => l.levels[0].files.clone(),
        (None, None) => {
            return Err(DynoError::BadInput(format!(
                "{} has {} levels; pick one with --quant ({})",
                l.repo,
                l.levels.len(),
                l.levels
                    .iter()
                    .map(|v| v.level.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )))
        }
    })
}

async fn pull(
    db: &Path,
    hub: &Hub,
    repo: &str,
    quant: Option<&str>,
    file: Option<&str>,
    json: bool,
) -> Result<i32> {
    let l = repo_listing(hub, repo).await?;
    let files = files_to_pull(hub, &l, quant, file).await?;
    if let Some(v) = l.levels.iter().find(|v| v.files == files) {
        if v.fit == Fit::No {
            eprintln!(
                "dyno: warning: {} {} ({}) is larger than this machine's memory",
                l.repo,
                v.level,
                human_bytes(v.size_bytes)
            );
        }
    }
    let store = open_store(db).await?;
    let cancel = cancel_on_ctrl_c();
    let mut bar = Bytes::new();
    let mut pulled = Vec::new();
    for f in &files {
        match pull_recorded(&store, hub, &l.repo, &l.commit, f, &cancel, &mut bar).await {
            Ok(p) => pulled.push(p),
            Err(e) if cancel.is_cancelled() => {
                eprintln!("dyno: {e}");
                store.close().await;
                return Ok(EXIT_CANCELLED);
            }
            Err(e) => {
                store.close().await;
                return Err(e);
            }
        }
    }
    store.close().await;
    if json {
        print_json(&serde_json::json!({
            "repo": l.repo, "commit": l.commit, "files": pulled,
        }));
    } else {
        for p in &pulled {
            let how = if p.already_present {
                "already in the cache".to_string()
            } else if p.resumed_from > 0 {
                format!("resumed at {}", human_bytes(p.resumed_from))
            } else {
                "downloaded".to_string()
            };
            println!("{} ({how}, sha256 verified)", p.local_path.display());
        }
    }
    Ok(0)
}

async fn discard(db: &Path, repo: &str, file: &str, json: bool) -> Result<i32> {
    let store = open_store(db).await?;
    let d = app::downloads::discard(&store, repo, file).await;
    store.close().await;
    let d = d?;
    if json {
        print_json(&d);
    } else if d.freed_bytes > 0 {
        println!(
            "deleted the partial download of {}/{} ({})",
            d.repo,
            d.path,
            human_bytes(d.freed_bytes)
        );
    } else {
        println!("no partial download of {}/{} was left", d.repo, d.path);
    }
    Ok(0)
}

pub async fn models(db: &Path, cmd: Option<ModelsCommand>, json: bool) -> Result<i32> {
    let store = open_store(db).await?;
    let out = match cmd {
        Some(cmd) => models_command(&store, cmd, json).await,
        None => list_models(&store, json).await,
    };
    store.close().await;
    out
}

fn print_json<T: serde::Serialize>(v: &T) {
    println!("{}", serde_json::to_string_pretty(v).expect("serialises"));
}

async fn models_command(store: &Store, cmd: ModelsCommand, json: bool) -> Result<i32> {
    match cmd {
        ModelsCommand::Add { path } => {
            let a = app::models::add_place(store, &path).await?;
            if json {
                print_json(&a);
            } else {
                println!(
                    "{} {} ({} model{} there now)",
                    if a.added {
                        "added"
                    } else {
                        "already searched:"
                    },
                    a.place.path.display(),
                    a.models.len(),
                    if a.models.len() == 1 { "" } else { "s" }
                );
            }
            Ok(0)
        }
        ModelsCommand::Remove { path } => {
            if app::models::remove_place(store, &path).await? {
                println!("removed {}", path.display());
                Ok(0)
            } else {
                Err(DynoError::NotFound(format!(
                    "{} is not among the added places; `dyno models added` lists them",
                    path.display()
                )))
            }
        }
        ModelsCommand::Added => {
            let places = app::models::places(store).await?;
            if json {
                print_json(&places);
            } else if places.is_empty() {
                println!("no folders or files added; `dyno models add PATH` adds one");
            } else {
                for p in &places {
                    let kind = match p.kind {
                        app::models::PlaceKind::Folder => "folder",
                        app::models::PlaceKind::File => "file",
                        app::models::PlaceKind::Missing => "missing",
                    };
                    println!("{kind}\t{}", p.path.display());
                }
            }
            Ok(0)
        }
    }
}

async fn list_models(store: &Store, json: bool) -> Result<i32> {
    let found = app::models::found(store).await?;
    let (ram, vram) = memory();
    if json {
        let mut rows = app::models::rows(&found, (ram, vram));
        app::predict::fill_models(store, &mut rows).await?;
        print_json(&rows);
        return Ok(0);
    }
    if found.is_empty() {
        println!(
            "no GGUF models found in the Hugging Face cache, LM Studio or Ollama; `dyno models add PATH` adds a folder or file, `dyno hub pull` downloads one"
        );
        return Ok(0);
    }
    let paths: Vec<std::path::PathBuf> = found
        .iter()
        .filter(|f| f.info.is_some())
        .map(|f| f.path.clone())
        .collect();
    let predicted =
        app::predict::predict_files(store, &paths, &app::predict::PredictInput::default()).await?;
    println!(
        "| source | name | arch | quant | size | params | fits | predicted (t/s, 80%) | path |"
    );
    println!(
        "| ------ | ---- | ---- | ----- | ---: | -----: | ---- | -------------------- | ---- |"
    );
    for f in &found {
        let p = predicted
            .iter()
            .find(|p| p.path == f.path)
            .and_then(|p| p.prediction.as_ref());
        match &f.info {
            Some(i) => println!(
                "| {} | {}{} | {} | {} | {} | {} | {} | {} | {} |",
                f.origin.as_str(),
                f.name,
                if i.synthetic.is_some() {
                    " (synthetic)"
                } else {
                    ""
                },
                i.arch,
                i.quant,
                human_bytes(i.size_bytes),
                human_params(i.n_params),
                Fit::of(i.size_bytes, ram, vram).describe(),
                super::predict::column(p),
                f.path.display()
            ),
            None => println!(
                "| {} | {} | - | - | - | - | unreadable: {} | - | {} |",
                f.origin.as_str(),
                f.name,
                f.error.as_deref().unwrap_or("?"),
                f.path.display()
            ),
        }
    }
    Ok(0)
}
