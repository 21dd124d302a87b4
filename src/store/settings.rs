//! Dyno's own settings (the `settings` table): a few named text values the
//! app's Settings page and `dyno settings` share. Secrets are never stored
//! here; see `app::settings` for where the hub token goes.

use super::{now, DbResult, Store};
use crate::error::Result;

impl Store {
    /// The value saved under `key`, if any.
    pub async fn setting(&self, key: &str) -> Result<Option<String>> {
        sqlx::query_scalar("SELECT value FROM settings WHERE key = ?")
            .bind(key)
            .fetch_optional(&self.pool)
            .await
            .db(self)
    }

    /// Save `value` under `key`, replacing what was there.
    pub async fn set_setting(&self, key: &str, value: &str) -> Result<()> {
        sqlx::query(
            "INSERT INTO settings (key, value, updated_at) VALUES (?, ?, ?)
             ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at",
        )
        .bind(key)
        .bind(value)
        .bind(now())
        .execute(&self.pool)
        .await
        .db(self)?;
        Ok(())
    }

    /// Forget `key`; false when nothing was saved under it.
    pub async fn remove_setting(&self, key: &str) -> Result<bool> {
        let r = sqlx::query("DELETE FROM settings WHERE key = ?")
            .bind(key)
            .execute(&self.pool)
            .await
            .db(self)?;
        Ok(r.rows_affected() > 0)
    }
}
