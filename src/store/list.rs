//! The light queries behind a list of many runs (the app's Results view):
//! one query for the runs with their models and one for their headline
//! figures, instead of a full report per run.

use super::{DbResult, Store};
use crate::error::Result;
use crate::vocab::status::ResultStatus;

/// A run as a list shows it.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct RunListRow {
    pub id: i64,
    pub sweep_id: Option<i64>,
    pub status: crate::vocab::status::RunStatus,
    pub started_at: String,
    pub file_name: String,
    pub name: Option<String>,
    pub quant: String,
    pub arch: String,
    pub machine_id: Option<i64>,
    pub synthetic: Option<String>,
}

/// A machine as a list names it: enough to tell this laptop from the
/// desktop whose runs were imported.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct MachineLabelRow {
    pub id: i64,
    pub cpu: String,
    pub cores_logical: i64,
    pub memory_bytes: i64,
    pub fingerprint: String,
}

/// A stored mean of one finished test, and whether it was disturbed (other
/// programs, or repetitions too spread to trust).
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct HeadlineRow {
    pub run_id: i64,
    pub test: String,
    pub kind: String,
    pub mean_tokens_per_s: Option<f64>,
    pub disturbed: bool,
}

impl Store {
    /// The newest `limit` runs with their models.
    pub async fn run_list(&self, limit: i64) -> Result<Vec<RunListRow>> {
        sqlx::query_as(
            "SELECT r.id, r.sweep_id, r.status, r.started_at, m.file_name, m.name, m.quant, m.arch, r.machine_id,
                    m.synthetic
             FROM runs r JOIN models m ON m.id = r.model_id
             ORDER BY r.id DESC LIMIT ?",
        )
        .bind(limit)
        .fetch_all(&self.pool)
        .await
        .db(self)
    }

    /// Every machine that measured something here (this one and imported).
    pub async fn machine_labels(&self) -> Result<Vec<MachineLabelRow>> {
        sqlx::query_as(
            "SELECT id, cpu, cores_logical, memory_bytes, fingerprint FROM machines ORDER BY id",
        )
        .fetch_all(&self.pool)
        .await
        .db(self)
    }

    /// The finished tests' means of runs `from_id` and newer, in the order
    /// they ran, each with its disturbance verdict.
    pub async fn headlines(&self, from_id: i64) -> Result<Vec<HeadlineRow>> {
        sqlx::query_as(
            "SELECT run_id, test, kind, mean_tokens_per_s,
                    CASE WHEN json_valid(disturbance_json)
                         THEN COALESCE(json_extract(disturbance_json, '$.disturbed'), 0) ELSE 0 END AS disturbed
             FROM results
             WHERE run_id >= ? AND status = ?
             ORDER BY id",
        )
        .bind(from_id)
        .bind(ResultStatus::Ok)
        .fetch_all(&self.pool)
        .await
        .db(self)
    }
}
