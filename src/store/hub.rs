//! Downloads and the user's model folders.

use super::{now, DbResult, Store};
use crate::error::Result;
use crate::vocab::status::DownloadStatus;

impl Store {
    pub async fn start_download(
        &self,
        repo: &str,
        commit: &str,
        path: &str,
        sha256: &str,
        size: u64,
        endpoint: &str,
    ) -> Result<i64> {
        sqlx::query_scalar(
            "INSERT INTO downloads (repo, commit_sha, path, sha256, size_bytes, endpoint, status, started_at)
             VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
        )
        .bind(repo)
        .bind(commit)
        .bind(path)
        .bind(sha256)
        .bind(size as i64)
        .bind(endpoint)
        .bind(DownloadStatus::Running)
        .bind(now())
        .fetch_one(&self.pool)
        .await
        .db(self)
    }

    /// Close a download.
    #[allow(clippy::too_many_arguments)]
    pub async fn finish_download(
        &self,
        id: i64,
        status: DownloadStatus,
        error: Option<&str>,
        resumed_from: Option<u64>,
        downloaded: Option<u64>,
        local_path: Option<&str>,
        elapsed_ms: f64,
    ) -> Result<()> {
        sqlx::query(
            "UPDATE downloads SET status = ?, error = ?, resumed_from = ?, downloaded_bytes = ?, local_path = ?,
                 elapsed_ms = ?, finished_at = ? WHERE id = ?",
        )
        .bind(status)
        .bind(error)
        .bind(resumed_from.map(|v| v as i64))
        .bind(downloaded.map(|v| v as i64))
        .bind(local_path)
        .bind(elapsed_ms)
        .bind(now())
        .bind(id)
        .execute(&self.pool)
        .await
        .db(self)?;
        Ok(())
    }

    /// (repo, path, status, resumed_from, downloaded bytes), newest first.
    pub async fn downloads(
        &self,
        limit: i64,
    ) -> Result<Vec<(String, String, String, Option<i64>, Option<i64>)>> {
        sqlx::query_as(
            "SELECT repo, path, status, resumed_from, downloaded_bytes FROM downloads ORDER BY id DESC LIMIT ?",
        )
        .bind(limit)
        .fetch_all(&self.pool)
        .await
        .db(self)
    }

    /// The sha256 the newest download of `repo`'s `path` expected: what a
    /// discard deletes is found from this record, never from a name the
    /// caller supplies.
    pub async fn download_sha(&self, repo: &str, path: &str) -> Result<Option<String>> {
        sqlx::query_scalar(
            "SELECT sha256 FROM downloads WHERE repo = ? AND path = ? AND sha256 != '' ORDER BY id DESC LIMIT 1",
        )
        .bind(repo)
        .bind(path)
        .fetch_optional(&self.pool)
        .await
        .db(self)
    }

    pub async fn add_model_dir(&self, path: &str) -> Result<bool> {
        let r = sqlx::query("INSERT OR IGNORE INTO model_dirs (path, added_at) VALUES (?, ?)")
            .bind(path)
            .bind(now())
            .execute(&self.pool)
            .await
            .db(self)?;
        Ok(r.rows_affected() > 0)
    }

    /// Forget an added folder or file; false when it was not there.
    pub async fn remove_model_dir(&self, path: &str) -> Result<bool> {
        let r = sqlx::query("DELETE FROM model_dirs WHERE path = ?")
            .bind(path)
            .execute(&self.pool)
            .await
            .db(self)?;
        Ok(r.rows_affected() > 0)
    }

    /// The folders and single files added to the places searched for models.
    pub async fn model_dirs(&self) -> Result<Vec<String>> {
        sqlx::query_scalar("SELECT path FROM model_dirs ORDER BY id")
            .fetch_all(&self.pool)
            .await
            .db(self)
    }
}
