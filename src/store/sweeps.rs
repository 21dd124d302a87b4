//! Sweeps, their levels, and quality figures.

use serde::{Deserialize, Serialize};
use sqlx::FromRow;

use super::doc::{text, Doc};
use super::{now, DbResult, Store};
use crate::error::Result;
use crate::vocab::failure::FailureCode;
use crate::vocab::request::{BenchGroup, GroupArgs, SweepSpec};
use crate::vocab::status::{LevelStatus, SweepStatus};
use crate::vocab::QualityFigures;

#[derive(Debug, Clone, FromRow)]
pub struct SweepRow {
    pub id: i64,
    pub kind: String,
    pub machine_id: Option<i64>,
    /// What the group was asked to measure; absent if the stored document
    /// no longer reads (an older Dyno's, see [`Doc`]).
    #[sqlx(rename = "args_json", try_from = "Option<String>")]
    pub args: Doc<GroupArgs>,
    pub created_at: String,
    pub source_kind: Option<String>,
    pub resume_key: Option<String>,
    pub status: Option<SweepStatus>,
    pub owner_pid: Option<i64>,
    pub owner_host: Option<String>,
    pub reference_sha256: Option<String>,
    pub quality_tokens: Option<i64>,
    pub quality_topk: Option<i64>,
    pub finished_at: Option<String>,
}

#[derive(Debug, Clone, FromRow, Serialize, Deserialize)]
pub struct LevelRow {
    pub id: i64,
    pub sweep_id: i64,
    pub position: i64,
    pub level: String,
    pub origin: String,
    pub path: Option<String>,
    pub model_id: Option<i64>,
    pub status: LevelStatus,
    pub error_code: Option<FailureCode>,
    pub error: Option<String>,
    pub quantize_ms: Option<f64>,
    pub attempt_at: Option<String>,
    pub quality_error: Option<String>,
    pub updated_at: String,
}

#[derive(Debug, Clone, FromRow, Serialize, Deserialize)]
pub struct QualityRow {
    pub id: i64,
    pub model_sha256: String,
    pub reference_sha256: String,
    pub text_sha256: String,
    pub chunk_tokens: i64,
    pub n_chunks: i64,
    pub topk: i64,
    pub n_positions: i64,
    pub ppl: f64,
    pub kld_mean: f64,
    pub kld_p99: f64,
    pub top1_agreement: f64,
    pub elapsed_ms: Option<f64>,
    pub peak_rss_bytes: Option<i64>,
    pub created_at: String,
}

/// How a quality figure was computed; part of its key.
#[derive(Debug, Clone, PartialEq)]
pub struct QualityKey<'a> {
    pub model_sha256: &'a str,
    pub reference_sha256: &'a str,
    pub text_sha256: &'a str,
    pub chunk_tokens: u32,
    pub n_chunks: u32,
    pub topk: u32,
}

impl Store {
    /// A group of runs made by one command: `dyno bench` makes a 'bench'
    /// group; `dyno sweep` uses [`Store::create_quant_sweep`].
    pub async fn create_bench_group(&self, machine_id: i64, args: &BenchGroup) -> Result<i64> {
        sqlx::query_scalar("INSERT INTO sweeps (kind, machine_id, args_json, created_at) VALUES ('bench', ?, ?, ?) RETURNING id")
            .bind(machine_id)
            .bind(text(args))
            .bind(now())
            .fetch_one(&self.pool)
            .await
            .db(self)
    }

    /// The newest quantisation sweep with this key on this machine, to resume.
    pub async fn find_sweep(&self, resume_key: &str) -> Result<Option<SweepRow>> {
        sqlx::query_as(
            "SELECT * FROM sweeps WHERE kind = 'sweep' AND resume_key = ? ORDER BY id DESC LIMIT 1",
        )
        .bind(resume_key)
        .fetch_optional(&self.pool)
        .await
        .db(self)
    }

    pub async fn sweep(&self, id: i64) -> Result<Option<SweepRow>> {
        sqlx::query_as("SELECT * FROM sweeps WHERE id = ?")
            .bind(id)
            .fetch_optional(&self.pool)
            .await
            .db(self)
    }

    /// Quantisation sweeps, newest first.
    pub async fn sweeps(&self, limit: i64) -> Result<Vec<SweepRow>> {
        sqlx::query_as("SELECT * FROM sweeps WHERE kind = 'sweep' ORDER BY id DESC LIMIT ?")
            .bind(limit)
            .fetch_all(&self.pool)
            .await
            .db(self)
    }

    pub async fn create_quant_sweep(
        &self,
        machine_id: i64,
        spec: &SweepSpec,
        source_kind: &str,
        resume_key: &str,
    ) -> Result<i64> {
        sqlx::query_scalar(
            "INSERT INTO sweeps (kind, machine_id, args_json, created_at, source_kind, resume_key, status,
                                 owner_pid, owner_host, owner_lock)
             VALUES ('sweep', ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
        )
        .bind(machine_id)
        .bind(text(spec))
        .bind(now())
        .bind(source_kind)
        .bind(resume_key)
        .bind(SweepStatus::Running)
        .bind(std::process::id() as i64)
        .bind(sysinfo::System::host_name())
        .bind(super::owner::token(&self.path)?)
        .fetch_one(&self.pool)
        .await
        .db(self)
    }

    /// Take over a sweep to resume it: this process now owns it. False when
    /// another live process claimed it first (one statement, so two starts
    /// cannot both win).
    pub async fn reopen_sweep(&self, id: i64) -> Result<bool> {
        let lock = super::owner::token(&self.path)?;
        let r = sqlx::query(
            "UPDATE sweeps SET status = ?, owner_pid = ?, owner_host = ?, owner_lock = ?, finished_at = NULL
             WHERE id = ? AND (status IS NOT ? OR owner_lock = ?)",
        )
        .bind(SweepStatus::Running)
        .bind(std::process::id() as i64)
        .bind(sysinfo::System::host_name())
        .bind(&lock)
        .bind(id)
        .bind(SweepStatus::Running)
        .bind(&lock)
        .execute(&self.pool)
        .await
        .db(self)?;
        Ok(r.rows_affected() == 1)
    }

    pub async fn set_sweep_quality(
        &self,
        id: i64,
        reference_sha256: Option<&str>,
        tokens: u32,
        topk: u32,
    ) -> Result<()> {
        sqlx::query(
            "UPDATE sweeps SET reference_sha256 = ?, quality_tokens = ?, quality_topk = ? WHERE id = ?",
        )
        .bind(reference_sha256)
        .bind(tokens as i64)
        .bind(topk as i64)
        .bind(id)
        .execute(&self.pool)
        .await
        .db(self)?;
        Ok(())
    }

    /// Close a sweep.
    pub async fn finish_sweep(&self, id: i64, status: SweepStatus) -> Result<()> {
        sqlx::query("UPDATE sweeps SET status = ?, finished_at = ? WHERE id = ?")
            .bind(status)
            .bind(now())
            .bind(id)
            .execute(&self.pool)
            .await
            .db(self)?;
        Ok(())
    }

    /// Add a level (or keep the existing row of a resumed sweep, updating
    /// its position and origin). Returns the row.
    pub async fn upsert_level(
        &self,
        sweep_id: i64,
        position: usize,
        level: &str,
        origin: &str,
        path: Option<&str>,
    ) -> Result<LevelRow> {
        sqlx::query_as(
            "INSERT INTO sweep_levels (sweep_id, position, level, origin, path, status, updated_at)
             VALUES (?, ?, ?, ?, ?, ?, ?)
             ON CONFLICT (sweep_id, level) DO UPDATE SET position = excluded.position,
                 origin = excluded.origin, path = COALESCE(excluded.path, path)
             RETURNING *",
        )
        .bind(sweep_id)
        .bind(position as i64)
        .bind(level)
        .bind(origin)
        .bind(path)
        .bind(LevelStatus::Pending)
        .bind(now())
        .fetch_one(&self.pool)
        .await
        .db(self)
    }

    /// A new attempt at a level: its file and model are known. Returns the row.
    pub async fn start_level(
        &self,
        id: i64,
        path: &str,
        model_id: i64,
        quantize_ms: Option<f64>,
    ) -> Result<LevelRow> {
        sqlx::query_as(
            "UPDATE sweep_levels SET path = ?, model_id = ?, quantize_ms = COALESCE(?, quantize_ms),
                 status = ?, error_code = NULL, error = NULL, attempt_at = ?, updated_at = ?
             WHERE id = ? RETURNING *",
        )
        .bind(path)
        .bind(model_id)
        .bind(quantize_ms)
        .bind(LevelStatus::Pending)
        .bind(now())
        .bind(now())
        .bind(id)
        .fetch_one(&self.pool)
        .await
        .db(self)
    }

    /// Close a level.
    pub async fn finish_level(
        &self,
        id: i64,
        status: LevelStatus,
        failure: Option<(&FailureCode, &str)>,
    ) -> Result<()> {
        self.finish_level_with(id, status, failure, false).await
    }

    /// Close a level that failed before anything was measured, forgetting
    /// the model and attempt of an earlier run so that runs of an older
    /// attempt are not shown as this level's.
    pub async fn fail_level_unmeasured(
        &self,
        id: i64,
        status: LevelStatus,
        code: &FailureCode,
        error: &str,
    ) -> Result<()> {
        self.finish_level_with(id, status, Some((code, error)), true)
            .await
    }

    async fn finish_level_with(
        &self,
        id: i64,
        status: LevelStatus,
        failure: Option<(&FailureCode, &str)>,
        detach: bool,
    ) -> Result<()> {
        sqlx::query(
            "UPDATE sweep_levels SET status = ?, error_code = ?, error = ?, updated_at = ?,
                 model_id = CASE WHEN ? THEN NULL ELSE model_id END,
                 attempt_at = CASE WHEN ? THEN NULL ELSE attempt_at END
             WHERE id = ?",
        )
        .bind(status)
        .bind(failure.map(|f| f.0))
        .bind(failure.map(|f| f.1))
        .bind(now())
        .bind(detach)
        .bind(detach)
        .bind(id)
        .execute(&self.pool)
        .await
        .db(self)?;
        Ok(())
    }

    pub async fn set_level_quality_error(&self, id: i64, error: Option<&str>) -> Result<()> {
        sqlx::query("UPDATE sweep_levels SET quality_error = ?, updated_at = ? WHERE id = ?")
            .bind(error)
            .bind(now())
            .bind(id)
            .execute(&self.pool)
            .await
            .db(self)?;
        Ok(())
    }

    pub async fn levels(&self, sweep_id: i64) -> Result<Vec<LevelRow>> {
        sqlx::query_as("SELECT * FROM sweep_levels WHERE sweep_id = ? ORDER BY position, id")
            .bind(sweep_id)
            .fetch_all(&self.pool)
            .await
            .db(self)
    }

    /// The runs of a level's latest attempt, in order.
    pub async fn level_runs(&self, level: &LevelRow) -> Result<Vec<super::RunRow>> {
        let Some(model_id) = level.model_id else {
            return Ok(Vec::new());
        };
        sqlx::query_as(
            "SELECT * FROM runs WHERE sweep_id = ? AND model_id = ? AND started_at >= COALESCE(?, '')
             ORDER BY id",
        )
        .bind(level.sweep_id)
        .bind(model_id)
        .bind(&level.attempt_at)
        .fetch_all(&self.pool)
        .await
        .db(self)
    }

    pub async fn quality(&self, k: &QualityKey<'_>) -> Result<Option<QualityRow>> {
        sqlx::query_as(
            "SELECT * FROM quality WHERE model_sha256 = ? AND reference_sha256 = ? AND text_sha256 = ?
                 AND chunk_tokens = ? AND n_chunks = ? AND topk = ?",
        )
        .bind(k.model_sha256)
        .bind(k.reference_sha256)
        .bind(k.text_sha256)
        .bind(k.chunk_tokens as i64)
        .bind(k.n_chunks as i64)
        .bind(k.topk as i64)
        .fetch_optional(&self.pool)
        .await
        .db(self)
    }

    /// Store a quality figure; the reference against itself stores zero
    /// divergence and full agreement, which is exactly true.
    pub async fn put_quality(
        &self,
        k: &QualityKey<'_>,
        f: &QualityFigures,
        elapsed_ms: f64,
        peak_rss_bytes: Option<u64>,
    ) -> Result<()> {
        sqlx::query(
            "INSERT INTO quality (model_sha256, reference_sha256, text_sha256, chunk_tokens, n_chunks, topk,
                                  n_positions, ppl, kld_mean, kld_p99, top1_agreement, elapsed_ms,
                                  peak_rss_bytes, created_at)
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
             ON CONFLICT DO UPDATE SET n_positions = excluded.n_positions, ppl = excluded.ppl,
                 kld_mean = excluded.kld_mean, kld_p99 = excluded.kld_p99,
                 top1_agreement = excluded.top1_agreement, elapsed_ms = excluded.elapsed_ms,
                 peak_rss_bytes = excluded.peak_rss_bytes, created_at = excluded.created_at",
        )
        .bind(k.model_sha256)
        .bind(k.reference_sha256)
        .bind(k.text_sha256)
        .bind(k.chunk_tokens as i64)
        .bind(k.n_chunks as i64)
        .bind(k.topk as i64)
        .bind(f.n_positions as i64)
        .bind(f.ppl)
        .bind(f.kld_mean.unwrap_or(0.0))
        .bind(f.kld_p99.unwrap_or(0.0))
        .bind(f.top1_agreement.unwrap_or(1.0))
        .bind(elapsed_ms)
        .bind(peak_rss_bytes.map(|b| b as i64))
        .bind(now())
        .execute(&self.pool)
        .await
        .db(self)?;
        Ok(())
    }
}
