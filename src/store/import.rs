//! Runs imported from shared result files.

use super::{now, Store};
use crate::error::Result;
use crate::machine::Machine;
use crate::model::ModelInfo;
use crate::worker::protocol::{Sample, TestSpec};

/// One imported result: its test, status, samples and headline.
pub struct ImportedResult<'a> {
    pub test: &'a TestSpec,
    pub kind: &'a str,
    pub status: &'a str,
    pub error: Option<&'a str>,
    pub reps: u32,
    pub samples: Vec<Sample>,
    pub headline: Option<(f64, f64)>,
}

/// One imported run: the row's fields as the file gives them.
pub struct ImportedRun<'a> {
    pub key: &'a str,
    pub machine_id: i64,
    pub model_id: i64,
    pub run: &'a crate::report::RunJson,
    pub config_json: String,
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
                                 n_layers, context_length, gguf_version, file_mtime_ns, created_at)
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, ?)
             ON CONFLICT (path, sha256) DO NOTHING",
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
        .execute(&self.pool)
        .await
        .map_err(|e| self.err(e))?;
        sqlx::query_scalar("SELECT id FROM models WHERE path = ? AND sha256 = ?")
            .bind(&path)
            .bind(&m.sha256)
            .fetch_one(&self.pool)
            .await
            .map_err(|e| self.err(e))
    }

    /// Store an imported run with its results, in one transaction. `None`
    /// when a run with the same key was imported before.
    pub async fn import_run(
        &self,
        r: &ImportedRun<'_>,
        results: &[ImportedResult<'_>],
    ) -> Result<Option<i64>> {
        let mut tx = self.pool.begin().await.map_err(|e| self.err(e))?;
        // Imported before, or this very run exported from this database.
        let exists: Option<i64> = sqlx::query_scalar(
            "SELECT id FROM runs WHERE import_key = ?
                OR (machine_id = ? AND started_at = ?
                    AND model_id IN (SELECT id FROM models WHERE sha256 = ?)) LIMIT 1",
        )
        .bind(r.key)
        .bind(r.machine_id)
        .bind(&r.run.started_at)
        .bind(&r.run.model.sha256)
        .fetch_optional(&mut *tx)
        .await
        .map_err(|e| self.err(e))?;
        if exists.is_some() {
            return Ok(None);
        }
        let c = &r.run.config;
        let id: i64 = sqlx::query_scalar(
            "INSERT INTO runs (sweep_id, machine_id, model_id, status, error, error_code, config_json, n_threads,
                               n_gpu_layers, n_batch, n_ubatch, flash_attn, cache_type, use_mmap, reps, backend,
                               llama_cpp_build, load_time_ms, model_desc, peak_rss_bytes, dyno_version, started_at,
                               finished_at, import_key)
             VALUES (NULL, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
        )
        .bind(r.machine_id)
        .bind(r.model_id)
        // A run still 'running' in a file was cut short where it was made.
        .bind(if r.run.status == "running" { "failed" } else { r.run.status.as_str() })
        .bind(&r.run.error)
        .bind(&r.run.error_code)
        .bind(&r.config_json)
        .bind(c.n_threads as i64)
        .bind(c.n_gpu_layers.map(|v| v as i64))
        .bind(c.n_batch as i64)
        .bind(c.n_ubatch as i64)
        .bind(&c.flash_attn)
        .bind(&c.cache_type)
        .bind(c.use_mmap)
        .bind(c.reps as i64)
        .bind(&r.run.backend)
        .bind(&r.run.llama_cpp_build)
        .bind(r.run.load_time_ms)
        .bind(&r.run.model_desc)
        .bind(r.run.peak_rss_bytes.map(|v| v as i64))
        .bind(&r.run.dyno_version)
        .bind(&r.run.started_at)
        .bind(r.run.finished_at.clone().unwrap_or_else(now))
        .bind(r.key)
        .fetch_one(&mut *tx)
        .await
        .map_err(|e| self.err(e))?;
        for res in results {
            sqlx::query(
                "INSERT INTO results (run_id, test, kind, n_prompt, n_gen, n_depth, n_parallel, reps, status, error,
                                      samples_json, mean_tokens_per_s, stddev_tokens_per_s, created_at)
                 VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            )
            .bind(id)
            .bind(res.test.name())
            .bind(res.kind)
            .bind(res.test.n_prompt as i64)
            .bind(res.test.n_gen as i64)
            .bind(res.test.n_depth as i64)
            .bind(res.test.n_parallel as i64)
            .bind(res.reps as i64)
            .bind(if res.status == "running" { "failed" } else { res.status })
            .bind(res.error)
            .bind(serde_json::to_string(&res.samples).expect("samples serialise"))
            .bind(res.headline.map(|h| h.0))
            .bind(res.headline.map(|h| h.1))
            .bind(now())
            .execute(&mut *tx)
            .await
            .map_err(|e| self.err(e))?;
        }
        tx.commit().await.map_err(|e| self.err(e))?;
        Ok(Some(id))
    }
}
