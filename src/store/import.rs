//! Runs imported from shared result files.
//!
//! The file's format is `report`'s business: `report::import` reads and
//! checks it and hands the store these insert types, so the store never
//! depends on the JSON document.

use super::doc::text;
use super::{now, DbResult, Store};
use crate::error::Result;
use crate::machine::Machine;
use crate::model::ModelInfo;
use crate::vocab::failure::FailureCode;
use crate::vocab::status::{ResultStatus, RunStatus};
use crate::vocab::{ModuleRef, RunConfig, Sample, TestKind, TestSpec};

/// One imported result: its test, status, samples and headline.
pub struct ImportedResult<'a> {
    pub test: &'a TestSpec,
    pub kind: TestKind,
    pub status: ResultStatus,
    pub error: Option<&'a str>,
    pub reps: u32,
    pub samples: Vec<Sample>,
    pub headline: Option<(f64, f64)>,
    /// What the measuring machine recorded about its quietness, as the file
    /// states it.
    pub disturbance: Option<&'a crate::telemetry::disturbance::Disturbance>,
    /// A sustained decode's summary, as the file states it.
    pub sustained: Option<&'a crate::telemetry::sustain::Sustained>,
}

/// One imported run: the row's fields as the file gives them.
pub struct ImportedRun<'a> {
    /// The run's identity in its file: importing it again adds nothing.
    pub key: &'a str,
    pub machine_id: i64,
    pub model_id: i64,
    /// With the machine and start time, recognises a run that this very
    /// database exported.
    pub model_sha256: &'a str,
    /// As the file says; a run still 'running' there is stored as failed.
    pub status: RunStatus,
    pub error: Option<&'a str>,
    pub error_code: Option<&'a FailureCode>,
    /// The run's configuration rebuilt from the file.
    pub config: &'a RunConfig,
    /// The configuration columns, as the file states them.
    pub n_threads: u32,
    pub n_gpu_layers: Option<u32>,
    pub n_batch: u32,
    pub n_ubatch: u32,
    pub flash_attn: &'a str,
    pub cache_type: &'a str,
    pub use_mmap: Option<bool>,
    pub reps: u32,
    pub backend: Option<&'a str>,
    pub llama_cpp_build: Option<&'a str>,
    /// The backend modules that measured the run.
    pub modules: Option<&'a [ModuleRef]>,
    pub load_time_ms: Option<f64>,
    pub model_desc: Option<&'a str>,
    pub peak_rss_bytes: Option<u64>,
    pub dyno_version: &'a str,
    pub started_at: &'a str,
    /// `None` stores the time of the import.
    pub finished_at: Option<&'a str>,
    /// The team store the run was pulled from (`dyno sync`); `None` for a
    /// file's run.
    pub pulled_from: Option<&'a str>,
}

/// A run or test still 'running' in a file was cut short where it was made,
/// and nothing will ever finish it here.
fn settled(status: RunStatus) -> RunStatus {
    if status == RunStatus::Running {
        RunStatus::Failed
    } else {
        status
    }
}

impl Store {
    /// The id of the machine with `m`'s fingerprint, adding `m` when the
    /// database has none. Unlike [`Store::upsert_machine`], an existing row
    /// is never changed: imports use this, so a file claiming a stored
    /// machine (this one included) cannot rewrite its record.
    pub async fn add_machine_if_absent(&self, m: &Machine) -> Result<i64> {
        self.insert_machine(m, false).await
    }

    /// The id of the model with `m`'s path and sha256, adding it when
    /// absent; an existing row (a local file's, with its mtime) is kept as
    /// it is.
    pub async fn add_model_if_absent(&self, m: &ModelInfo) -> Result<i64> {
        let path = m.path.to_string_lossy();
        sqlx::query(
            "INSERT INTO models (sha256, path, file_name, arch, name, quant, size_bytes, weight_bytes, n_params,
                                 n_layers, context_length, gguf_version, file_mtime_ns, created_at, synthetic)
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?)
             ON CONFLICT (path, sha256) DO UPDATE SET synthetic = COALESCE(models.synthetic, excluded.synthetic)",
        )
        .bind(&m.sha256)
        .bind(&path)
        .bind(&m.file_name)
        .bind(&m.arch)
        .bind(&m.name)
        .bind(&m.quant)
        .bind(m.size_bytes as i64)
        .bind(m.weight_bytes as i64)
        .bind(m.n_params as i64)
        .bind(m.n_layers.map(|v| v as i64))
        .bind(m.context_length.map(|v| v as i64))
        .bind(m.gguf_version as i64)
        .bind(now())
        .bind(&m.synthetic)
        .execute(&self.pool)
        .await
        .db(self)?;
        sqlx::query_scalar("SELECT id FROM models WHERE path = ? AND sha256 = ?")
            .bind(&path)
            .bind(&m.sha256)
            .fetch_one(&self.pool)
            .await
            .db(self)
    }

    /// Store an imported run with its results, in one transaction. `None`
    /// when a run with the same key was imported before.
    pub async fn import_run(
        &self,
        r: &ImportedRun<'_>,
        results: &[ImportedResult<'_>],
    ) -> Result<Option<i64>> {
        let mut tx = self.pool.begin().await.db(self)?;
        // Imported before, or this very run exported from this database.
        let exists: Option<i64> = sqlx::query_scalar(
            "SELECT id FROM runs WHERE import_key = ?
                OR (machine_id = ? AND started_at = ?
                    AND model_id IN (SELECT id FROM models WHERE sha256 = ?)) LIMIT 1",
        )
        .bind(r.key)
        .bind(r.machine_id)
        .bind(r.started_at)
        .bind(r.model_sha256)
        .fetch_optional(&mut *tx)
        .await
        .db(self)?;
        if exists.is_some() {
            return Ok(None);
        }
        let id: i64 = sqlx::query_scalar(
            "INSERT INTO runs (sweep_id, machine_id, model_id, status, error, error_code, config_json, n_threads,
                               n_gpu_layers, n_batch, n_ubatch, flash_attn, cache_type, use_mmap, reps, backend,
                               llama_cpp_build, load_time_ms, model_desc, peak_rss_bytes, dyno_version, started_at,
                               finished_at, import_key, pulled_from, modules_json)
             VALUES (NULL, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
        )
        .bind(r.machine_id)
        .bind(r.model_id)
        .bind(settled(r.status))
        .bind(r.error)
        .bind(r.error_code)
        .bind(text(r.config))
        .bind(r.n_threads as i64)
        .bind(r.n_gpu_layers.map(|v| v as i64))
        .bind(r.n_batch as i64)
        .bind(r.n_ubatch as i64)
        .bind(r.flash_attn)
        .bind(r.cache_type)
        .bind(r.use_mmap)
        .bind(r.reps as i64)
        .bind(r.backend)
        .bind(r.llama_cpp_build)
        .bind(r.load_time_ms)
        .bind(r.model_desc)
        .bind(r.peak_rss_bytes.map(|v| v as i64))
        .bind(r.dyno_version)
        .bind(r.started_at)
        .bind(r.finished_at.map_or_else(now, str::to_string))
        .bind(r.key)
        .bind(r.pulled_from)
        .bind(r.modules.map(text))
        .fetch_one(&mut *tx)
        .await
        .db(self)?;
        for res in results {
            sqlx::query(
                "INSERT INTO results (run_id, test, kind, n_prompt, n_gen, n_depth, n_parallel, reps, status, error,
                                      samples_json, mean_tokens_per_s, stddev_tokens_per_s, created_at,
                                      disturbance_json, sustain_json)
                 VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            )
            .bind(id)
            .bind(res.test.name())
            .bind(res.kind.as_str())
            .bind(res.test.n_prompt as i64)
            .bind(res.test.n_gen as i64)
            .bind(res.test.n_depth as i64)
            .bind(res.test.n_parallel as i64)
            .bind(res.reps as i64)
            .bind(settled(res.status))
            .bind(res.error)
            .bind(text(&res.samples))
            .bind(res.headline.map(|h| h.0))
            .bind(res.headline.map(|h| h.1))
            .bind(now())
            .bind(res.disturbance.map(text))
            .bind(res.sustained.map(text))
            .execute(&mut *tx)
            .await
            .db(self)?;
        }
        tx.commit().await.db(self)?;
        Ok(Some(id))
    }
}
