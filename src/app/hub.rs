//! Hugging Face as both front ends use it: search, a repo listed by level
//! with what fits this machine, and verified, resumable pulls that are
//! recorded in the store (`dyno hub`, a sweep of a repo, and the app's hub
//! search and Download buttons). Each pull is recorded, successful or not, so
//! a failed or cancelled download can be told apart from one never started.

use serde::Serialize;
use std::path::PathBuf;

use super::models::memory;
use super::settings::HubCheck;
use crate::error::{DynoError, Result};
use crate::hub::download::{pull_file, PullProgress, Pulled};
use crate::hub::files::{listing, RepoListing};
use crate::hub::{Hub, RepoSummary, TreeFile};
use crate::store::Store;
use crate::vocab::status::DownloadStatus;
use crate::worker::client::Cancel;

/// The hub client with the settings in force: `flag` (`--endpoint`), else
/// `HF_ENDPOINT`, else the endpoint saved in Settings, else huggingface.co;
/// the token as huggingface_hub finds it (`app::settings`).
pub async fn open(store: &Store, flag: Option<&str>) -> Result<Hub> {
    Hub::new(super::settings::hub_config(store, flag).await?)
}

/// GGUF repos matching `query`, most downloaded first.
pub async fn search(hub: &Hub, query: &str, limit: u32) -> Result<Vec<RepoSummary>> {
    hub.search(query, limit).await
}

/// The repo at main, listed by level, with what of each level this
/// machine's cache already holds.
pub async fn repo_listing(hub: &Hub, repo: &str) -> Result<RepoListing> {
    let info = hub.info(repo, "main").await?;
    let tree = hub.tree(repo, &info.sha).await?;
    let (ram, vram) = memory();
    let mut l = listing(&info.id, &info.sha, &tree, ram, vram);
    mark_local(hub, &mut l);
    Ok(l)
}

/// Fill each level's `local_path` and `partial_bytes` from the cache: a
/// level is there when every part's blob has its full size and this
/// commit's snapshot links to it (as a finished pull leaves it); a partial
/// download is the `.incomplete` files a cut or paused pull kept. Sizes
/// only: the sha256 is checked when the file is pulled or benchmarked.
fn mark_local(hub: &Hub, l: &mut RepoListing) {
    let cache = hub.cache_repo(&l.repo);
    let snapshot = cache.pointer_path(&l.commit);
    for level in &mut l.levels {
        let mut complete = true;
        let mut partial = 0;
        for f in &level.files {
            let Some(sha) = f.sha256.as_deref() else {
                complete = false;
                continue;
            };
            let blob = cache.blob_path(sha);
            let whole = std::fs::metadata(&blob).is_ok_and(|m| m.len() == f.size)
                && snapshot.join(&f.path).exists();
            complete &= whole;
            if !whole {
                partial += std::fs::metadata(crate::hub::download::partial_path(&blob))
                    .map(|m| m.len())
                    .unwrap_or(0);
            }
        }
        level.local_path = match (complete, level.files.first()) {
            (true, Some(first)) => Some(snapshot.join(&first.path)),
            _ => None,
        };
        level.partial_bytes = partial;
    }
}

/// Pull one file, recording the download in the store.
pub async fn pull_recorded(
    store: &Store,
    hub: &Hub,
    repo: &str,
    commit: &str,
    file: &TreeFile,
    cancel: &Cancel,
    progress: &mut dyn PullProgress,
) -> Result<Pulled> {
    let id = store
        .start_download(
            repo,
            commit,
            &file.path,
            file.sha256.as_deref().unwrap_or(""),
            file.size,
            &hub.config.endpoint,
        )
        .await?;
    let t0 = std::time::Instant::now();
    let r = pull_file(hub, repo, commit, file, cancel, progress).await;
    let ms = t0.elapsed().as_secs_f64() * 1e3;
    match &r {
        Ok(p) => {
            store
                .finish_download(
                    id,
                    DownloadStatus::Ok,
                    None,
                    Some(p.resumed_from),
                    Some(p.downloaded_bytes),
                    Some(&p.local_path.display().to_string()),
                    ms,
                )
                .await?
        }
        Err(e) => {
            let status = if cancel.is_cancelled() {
                DownloadStatus::Cancelled
            } else {
                DownloadStatus::Failed
            };
            // The download's own error is the one to report.
            if let Err(se) = store
                .finish_download(id, status, Some(&e.to_string()), None, None, None, ms)
                .await
            {
                tracing::warn!("could not record the failed download: {se}");
            }
        }
    }
    r
}

/// What a pull of one file gives the app: where the file is now.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct PullResult {
    /// The snapshot path, what a benchmark loads.
    pub path: PathBuf,
    pub sha256: String,
    pub size_bytes: u64,
}

/// Pull `file` of `repo` at main, recorded in the store.
pub async fn pull_one(
    store: &Store,
    hub: &Hub,
    repo: &str,
    file: &str,
    cancel: &Cancel,
    progress: &mut dyn PullProgress,
) -> Result<PullResult> {
    let info = hub.info(repo, "main").await?;
    let tree = hub.tree(repo, &info.sha).await?;
    let f = tree
        .iter()
        .find(|f| f.path == file)
        .ok_or_else(|| DynoError::NotFound(format!("{repo} has no file {file}; list it again")))?;
    let p = pull_recorded(store, hub, &info.id, &info.sha, f, cancel, progress).await?;
    Ok(PullResult {
        path: p.local_path,
        sha256: p.sha256,
        size_bytes: p.size_bytes,
    })
}

/// Reach the hub with the settings in force: one search, then, with a
/// token, who it belongs to. A failure is an answer here, not an error, so
/// the page can show it in place.
pub async fn check(store: &Store) -> Result<HubCheck> {
    let hub = open(store, None).await?;
    let endpoint = hub.config.endpoint.clone();
    if let Err(e) = hub.search("gguf", 1).await {
        return Ok(HubCheck {
            endpoint,
            reachable: false,
            user: None,
            message: e.to_string(),
        });
    }
    match hub.whoami().await {
        Ok(Some(user)) => Ok(HubCheck {
            message: format!("Reached {endpoint}; the token belongs to {user}."),
            endpoint,
            reachable: true,
            user: Some(user),
        }),
        Ok(None) => Ok(HubCheck {
            message: format!(
                "Reached {endpoint}. No token is saved: public models download, gated and private ones need a token."
            ),
            endpoint,
            reachable: true,
            user: None,
        }),
        Err(e) => Ok(HubCheck {
            message: format!("Reached {endpoint}, but {e}"),
            endpoint,
            reachable: true,
            user: None,
        }),
    }
}
