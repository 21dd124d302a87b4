//! The local side of `dyno sync`: how far this database's push got for
//! each team store, which runs are left to push, and which runs came from a
//! team store (those are never pushed back).

use std::collections::HashSet;

use super::{DbResult, RunRow, Store};
use crate::error::Result;

impl Store {
    /// `(pushed_through, telemetry_through)` for the team store `key`: the
    /// run ids up to which runs, and their telemetry, were pushed.
    pub async fn sync_state(&self, key: &str) -> Result<(i64, i64)> {
        let row: Option<(i64, i64)> = sqlx::query_as(
            "SELECT pushed_through, telemetry_through FROM sync_state WHERE store = ?",
        )
        .bind(key)
        .fetch_optional(&self.pool)
        .await
        .db(self)?;
        Ok(row.unwrap_or((0, 0)))
    }

    /// Record that runs up to `through` (and, when given, their telemetry)
    /// are in the team store `key`. Never moves backwards.
    pub async fn set_sync_state(
        &self,
        key: &str,
        through: i64,
        telemetry_through: Option<i64>,
    ) -> Result<()> {
        sqlx::query(
            "INSERT INTO sync_state (store, pushed_through, telemetry_through, last_sync_at)
             VALUES (?, ?, COALESCE(?, 0), ?)
             ON CONFLICT (store) DO UPDATE SET
                pushed_through = MAX(pushed_through, excluded.pushed_through),
                telemetry_through = MAX(telemetry_through, COALESCE(?, telemetry_through)),
                last_sync_at = excluded.last_sync_at",
        )
        .bind(key)
        .bind(through)
        .bind(telemetry_through)
        .bind(super::now())
        .bind(telemetry_through)
        .execute(&self.pool)
        .await
        .db(self)?;
        Ok(())
    }

    /// The next `limit` runs after id `after`, oldest first, every status
    /// included: the caller stops at a run still being measured.
    pub async fn runs_after(&self, after: i64, limit: i64) -> Result<Vec<RunRow>> {
        sqlx::query_as("SELECT * FROM runs WHERE id > ? ORDER BY id LIMIT ?")
            .bind(after)
            .bind(limit)
            .fetch_all(&self.pool)
            .await
            .db(self)
    }

    /// How many runs after `after` were measured or imported here (not
    /// pulled from a team store): what a push has left to send.
    pub async fn count_runs_to_push(&self, after: i64) -> Result<i64> {
        sqlx::query_scalar("SELECT COUNT(*) FROM runs WHERE id > ? AND pulled_from IS NULL")
            .bind(after)
            .fetch_one(&self.pool)
            .await
            .db(self)
    }

    /// Every import key in this database: the team uids of runs pulled or
    /// imported here, so a pull fetches only what is missing.
    pub async fn import_keys(&self) -> Result<HashSet<String>> {
        let keys: Vec<String> =
            sqlx::query_scalar("SELECT import_key FROM runs WHERE import_key IS NOT NULL")
                .fetch_all(&self.pool)
                .await
                .db(self)?;
        Ok(keys.into_iter().collect())
    }

    /// Mark the run imported under `key` as pulled from the team store
    /// `from`, so no push sends it back.
    pub async fn mark_pulled(&self, key: &str, from: &str) -> Result<()> {
        sqlx::query("UPDATE runs SET pulled_from = ? WHERE import_key = ? AND pulled_from IS NULL")
            .bind(from)
            .bind(key)
            .execute(&self.pool)
            .await
            .db(self)?;
        Ok(())
    }

    /// Runs after `after` still being measured.
    pub async fn count_running_after(&self, after: i64) -> Result<i64> {
        sqlx::query_scalar("SELECT COUNT(*) FROM runs WHERE id > ? AND status = 'running'")
            .bind(after)
            .fetch_one(&self.pool)
            .await
            .db(self)
    }

    /// The key of the store at address `base` this database synced with
    /// last: `base` itself (a mark from before stores had ids) or
    /// `base #ID`. None when it never synced there.
    pub async fn last_sync_key(&self, base: &str) -> Result<Option<String>> {
        sqlx::query_scalar(
            "SELECT store FROM sync_state WHERE store = ? OR substr(store, 1, ?) = ?
             ORDER BY last_sync_at DESC LIMIT 1",
        )
        .bind(base)
        .bind(base.len() as i64 + 2)
        .bind(format!("{base} #"))
        .fetch_optional(&self.pool)
        .await
        .db(self)
    }

    /// When this database last synced with the team store `key`.
    pub async fn last_sync_at(&self, key: &str) -> Result<Option<String>> {
        let v: Option<Option<String>> =
            sqlx::query_scalar("SELECT last_sync_at FROM sync_state WHERE store = ?")
                .bind(key)
                .fetch_optional(&self.pool)
                .await
                .db(self)?;
        Ok(v.flatten())
    }
}
