//! Cancelling a download for good: a paused download keeps its partial file
//! so it can resume, and "Cancel" (the app) or `dyno hub discard` (the CLI)
//! deletes it. Which blob to delete is read from Dyno's own record of the
//! download, so the request cannot name an arbitrary file.

use serde::Serialize;

use crate::error::{DynoError, Result};
use crate::hub::{self, download};
use crate::store::Store;

/// What a discard removed.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Discarded {
    pub repo: String,
    pub path: String,
    /// Bytes of partial download deleted; 0 when none was left.
    pub freed_bytes: u64,
}

/// Delete the partial download of `repo`'s file `path` from the hub cache
/// (`$HF_HUB_CACHE`, else `$HF_HOME/hub`).
pub async fn discard(store: &Store, repo: &str, path: &str) -> Result<Discarded> {
    hub::check_repo_id(repo)?;
    let sha = store.download_sha(repo, path).await?.ok_or_else(|| {
        DynoError::NotFound(format!(
            "Dyno has not downloaded {repo}/{path}, so there is nothing of it to delete"
        ))
    })?;
    let cache = hub::hub_cache();
    let (repo_s, sha_s) = (repo.to_string(), sha.clone());
    let freed =
        tokio::task::spawn_blocking(move || download::discard_partial(&cache, &repo_s, &sha_s))
            .await
            .map_err(|e| DynoError::Internal(format!("the discard failed: {e}")))??;
    Ok(Discarded {
        repo: repo.to_string(),
        path: path.to_string(),
        freed_bytes: freed,
    })
}
