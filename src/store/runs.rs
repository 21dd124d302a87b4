//! Runs and their results (one row per test): created when a run starts,
//! filled in as the worker reports and each repetition is measured, closed
//! when it ends, and read back for reports.

use sqlx::FromRow;

use super::doc::{text, text_opt, Doc};
use super::{now, DbResult, Store};
use crate::error::Result;
use crate::telemetry::cooldown::CooldownRecord;
use crate::telemetry::disturbance::Disturbance;
use crate::telemetry::power::PowerState;
use crate::telemetry::sustain::Sustained;
use crate::telemetry::Sources;
use crate::vocab::failure::FailureCode;
use crate::vocab::prediction::RunPrediction;
use crate::vocab::status::{ResultStatus, RunStatus};
use crate::vocab::{Device, ModuleRef, Offload, RunConfig, Sample, TestKind, TestSpec};

/// A run as stored: one model under one configuration.
#[derive(Debug, Clone, FromRow)]
pub struct RunRow {
    pub id: i64,
    pub sweep_id: Option<i64>,
    pub machine_id: i64,
    pub model_id: i64,
    pub status: RunStatus,
    pub error: Option<String>,
    pub error_code: Option<FailureCode>,
    /// What telemetry could read while the run was timed.
    #[sqlx(rename = "telemetry_sources", try_from = "Option<String>")]
    pub telemetry_sources: Doc<Sources>,
    pub owner_pid: Option<i64>,
    pub owner_host: Option<String>,
    /// The plan the run was measured with.
    #[sqlx(rename = "config_json", try_from = "Option<String>")]
    pub config: Doc<RunConfig>,
    pub n_threads: i64,
    pub n_gpu_layers: Option<i64>,
    pub n_batch: i64,
    pub n_ubatch: i64,
    pub flash_attn: String,
    pub cache_type: String,
    pub use_mmap: Option<bool>,
    pub reps: i64,
    pub backend: Option<String>,
    pub llama_cpp_build: Option<String>,
    /// The devices llama.cpp saw.
    #[sqlx(rename = "devices_json", try_from = "Option<String>")]
    pub devices: Doc<Vec<Device>>,
    pub system_info: Option<String>,
    pub load_time_ms: Option<f64>,
    pub model_desc: Option<String>,
    pub peak_rss_bytes: Option<i64>,
    pub tokens_per_word: Option<f64>,
    /// Where llama.cpp put the weights.
    #[sqlx(rename = "offload_json", try_from = "Option<String>")]
    pub offload: Doc<Offload>,
    /// Mains or battery, and the power profile.
    #[sqlx(rename = "power_json", try_from = "Option<String>")]
    pub power: Doc<PowerState>,
    /// How the machine was let cool before the run.
    #[sqlx(rename = "cooldown_json", try_from = "Option<String>")]
    pub cooldown: Doc<CooldownRecord>,
    /// The prediction made before the run was measured.
    #[sqlx(rename = "prediction_json", try_from = "Option<String>")]
    pub prediction: Doc<RunPrediction>,
    pub dyno_version: String,
    pub started_at: String,
    pub finished_at: Option<String>,
    /// The run's identity in the file or team store it came from; `None`
    /// for a run measured here.
    #[sqlx(default)]
    pub import_key: Option<String>,
    /// The team store a run was pulled from (`dyno sync`).
    #[sqlx(default)]
    pub pulled_from: Option<String>,
    /// The backend modules that measured the run.
    #[sqlx(default, rename = "modules_json", try_from = "Option<String>")]
    pub modules: Doc<Vec<ModuleRef>>,
}

/// One test of a run, with every repetition's samples.
#[derive(Debug, Clone, FromRow)]
pub struct ResultRow {
    pub id: i64,
    pub run_id: i64,
    pub test: String,
    #[sqlx(try_from = "String")]
    pub kind: TestKind,
    pub n_prompt: i64,
    pub n_gen: i64,
    pub n_depth: i64,
    pub n_parallel: i64,
    pub reps: i64,
    pub status: ResultStatus,
    pub error: Option<String>,
    /// Every repetition measured so far.
    #[sqlx(rename = "samples_json", try_from = "Option<String>")]
    pub samples: Doc<Vec<Sample>>,
    pub mean_tokens_per_s: Option<f64>,
    pub stddev_tokens_per_s: Option<f64>,
    pub created_at: String,
    /// Whether the machine was quiet while the test was timed.
    #[sqlx(rename = "disturbance_json", try_from = "Option<String>")]
    pub disturbance: Doc<Disturbance>,
    /// A sustained decode's summary.
    #[sqlx(rename = "sustain_json", try_from = "Option<String>")]
    pub sustain: Doc<Sustained>,
}

/// A new run's fixed description.
#[derive(Debug, Clone)]
pub struct NewRun<'a> {
    pub sweep_id: Option<i64>,
    pub machine_id: i64,
    pub model_id: i64,
    pub config: &'a crate::vocab::RunConfig,
}

/// What the worker said about itself and the model, stored on the run.
#[derive(Debug, Clone, Default)]
pub struct WorkerFacts {
    pub backend: Option<String>,
    pub llama_cpp_build: Option<String>,
    pub devices: Option<Vec<Device>>,
    pub system_info: Option<String>,
    pub load_time_ms: Option<f64>,
    pub model_desc: Option<String>,
    pub n_gpu_layers: Option<i64>,
    pub telemetry_sources: Option<Sources>,
    pub tokens_per_word: Option<f64>,
    pub offload: Option<Offload>,
    pub power: Option<PowerState>,
    pub cooldown: Option<CooldownRecord>,
    /// The modules the worker loaded.
    pub modules: Option<Vec<ModuleRef>>,
}

impl Store {
    pub async fn create_run(&self, r: &NewRun<'_>) -> Result<i64> {
        let c = r.config;
        let lock = super::owner::token(&self.path)?;
        sqlx::query_scalar(
            "INSERT INTO runs (sweep_id, machine_id, model_id, status, owner_pid, owner_host, owner_lock, config_json,
                               n_threads, n_gpu_layers, n_batch, n_ubatch, flash_attn, cache_type, use_mmap, reps,
                               dyno_version, started_at)
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
        )
        .bind(r.sweep_id)
        .bind(r.machine_id)
        .bind(r.model_id)
        .bind(RunStatus::Running)
        .bind(std::process::id() as i64)
        .bind(sysinfo::System::host_name())
        .bind(lock)
        .bind(text(c))
        .bind(c.ctx.n_threads as i64)
        .bind(c.model.n_gpu_layers.map(|v| v as i64))
        .bind(c.ctx.n_batch as i64)
        .bind(c.ctx.n_ubatch as i64)
        .bind(c.ctx.flash_attn.as_str())
        .bind(&c.ctx.cache_type)
        .bind(c.model.use_mmap)
        .bind(c.reps as i64)
        .bind(env!("CARGO_PKG_VERSION"))
        .bind(now())
        .fetch_one(&self.pool)
        .await
        .db(self)
    }

    /// Record what the worker reported. Fields left `None` keep their value.
    pub async fn set_worker_facts(&self, run_id: i64, f: &WorkerFacts) -> Result<()> {
        sqlx::query(
            "UPDATE runs SET backend = COALESCE(?, backend), llama_cpp_build = COALESCE(?, llama_cpp_build),
                devices_json = COALESCE(?, devices_json), system_info = COALESCE(?, system_info),
                load_time_ms = COALESCE(?, load_time_ms), model_desc = COALESCE(?, model_desc),
                n_gpu_layers = COALESCE(?, n_gpu_layers), telemetry_sources = COALESCE(?, telemetry_sources),
                tokens_per_word = COALESCE(?, tokens_per_word), offload_json = COALESCE(?, offload_json),
                power_json = COALESCE(?, power_json), cooldown_json = COALESCE(?, cooldown_json),
                modules_json = COALESCE(?, modules_json)
             WHERE id = ?",
        )
        .bind(&f.backend)
        .bind(&f.llama_cpp_build)
        .bind(text_opt(f.devices.as_ref()))
        .bind(&f.system_info)
        .bind(f.load_time_ms)
        .bind(&f.model_desc)
        .bind(f.n_gpu_layers)
        .bind(text_opt(f.telemetry_sources.as_ref()))
        .bind(f.tokens_per_word)
        .bind(text_opt(f.offload.as_ref()))
        .bind(text_opt(f.power.as_ref()))
        .bind(text_opt(f.cooldown.as_ref()))
        .bind(text_opt(f.modules.as_ref()))
        .bind(run_id)
        .execute(&self.pool)
        .await
        .db(self)?;
        Ok(())
    }

    /// Open a result row for a test that is about to run. Its samples are
    /// filled in by [`Store::set_result_samples`] as they are measured.
    pub async fn start_result(&self, run_id: i64, test: &TestSpec, reps: u32) -> Result<i64> {
        sqlx::query_scalar(
            "INSERT INTO results (run_id, test, kind, n_prompt, n_gen, n_depth, n_parallel, reps, status,
                                  samples_json, created_at)
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, '[]', ?) RETURNING id",
        )
        .bind(run_id)
        .bind(test.name())
        .bind(test.kind.as_str())
        .bind(test.n_prompt as i64)
        .bind(test.n_gen as i64)
        .bind(test.n_depth as i64)
        .bind(test.n_parallel as i64)
        .bind(reps as i64)
        .bind(ResultStatus::Running)
        .bind(now())
        .fetch_one(&self.pool)
        .await
        .db(self)
    }

    /// Store the samples measured so far (one commit per repetition).
    pub async fn set_result_samples(&self, result_id: i64, samples: &[Sample]) -> Result<()> {
        sqlx::query("UPDATE results SET samples_json = ? WHERE id = ?")
            .bind(text(samples))
            .bind(result_id)
            .execute(&self.pool)
            .await
            .db(self)?;
        Ok(())
    }

    /// Close a result as ok, failed or cancelled; the headline mean and standard deviation are copied into
    /// columns for queries.
    pub async fn finish_result(
        &self,
        result_id: i64,
        status: ResultStatus,
        error: Option<&str>,
        samples: &[Sample],
        headline: Option<(f64, f64)>,
    ) -> Result<()> {
        sqlx::query(
            "UPDATE results SET status = ?, error = ?, samples_json = ?, mean_tokens_per_s = ?, stddev_tokens_per_s = ?
             WHERE id = ?",
        )
        .bind(status)
        .bind(error)
        .bind(text(samples))
        .bind(headline.map(|h| h.0))
        .bind(headline.map(|h| h.1))
        .bind(result_id)
        .execute(&self.pool)
        .await
        .db(self)?;
        Ok(())
    }

    /// Keep the verdict on whether the machine was quiet while the result
    /// was timed.
    pub async fn set_result_disturbance(
        &self,
        result_id: i64,
        d: &crate::telemetry::disturbance::Disturbance,
    ) -> Result<()> {
        sqlx::query("UPDATE results SET disturbance_json = ? WHERE id = ?")
            .bind(text(d))
            .bind(result_id)
            .execute(&self.pool)
            .await
            .db(self)?;
        Ok(())
    }

    /// Keep the summary of a sustained decode with its result.
    pub async fn set_result_sustain(
        &self,
        result_id: i64,
        s: &crate::telemetry::sustain::Sustained,
    ) -> Result<()> {
        sqlx::query("UPDATE results SET sustain_json = ? WHERE id = ?")
            .bind(text(s))
            .bind(result_id)
            .execute(&self.pool)
            .await
            .db(self)?;
        Ok(())
    }

    /// Close a run; `failure` is `(code, message)` for a failed or cancelled
    /// run.
    pub async fn finish_run(
        &self,
        run_id: i64,
        status: RunStatus,
        failure: Option<(&FailureCode, &str)>,
        peak_rss_bytes: Option<u64>,
    ) -> Result<()> {
        sqlx::query(
            "UPDATE runs SET status = ?, error_code = ?, error = ?, peak_rss_bytes = COALESCE(?, peak_rss_bytes),
                finished_at = ? WHERE id = ?",
        )
        .bind(status)
        .bind(failure.map(|f| f.0))
        .bind(failure.map(|f| f.1))
        .bind(peak_rss_bytes.map(|v| v as i64))
        .bind(now())
        .bind(run_id)
        .execute(&self.pool)
        .await
        .db(self)?;
        Ok(())
    }

    /// The worker's peak resident memory, known only when it exits.
    pub async fn set_run_peak_rss(&self, run_id: i64, bytes: u64) -> Result<()> {
        sqlx::query("UPDATE runs SET peak_rss_bytes = ? WHERE id = ?")
            .bind(bytes as i64)
            .bind(run_id)
            .execute(&self.pool)
            .await
            .db(self)?;
        Ok(())
    }

    /// The newest `limit` runs, newest first.
    pub async fn runs(&self, limit: i64) -> Result<Vec<RunRow>> {
        sqlx::query_as("SELECT * FROM runs ORDER BY id DESC LIMIT ?")
            .bind(limit)
            .fetch_all(&self.pool)
            .await
            .db(self)
    }

    pub async fn run(&self, id: i64) -> Result<Option<RunRow>> {
        sqlx::query_as("SELECT * FROM runs WHERE id = ?")
            .bind(id)
            .fetch_optional(&self.pool)
            .await
            .db(self)
    }

    /// A run's tests in the order they ran.
    pub async fn results(&self, run_id: i64) -> Result<Vec<ResultRow>> {
        sqlx::query_as("SELECT * FROM results WHERE run_id = ? ORDER BY id")
            .bind(run_id)
            .fetch_all(&self.pool)
            .await
            .db(self)
    }

    /// Every run of a sweep, every attempt included, in order.
    pub async fn sweep_runs(&self, sweep_id: i64) -> Result<Vec<RunRow>> {
        sqlx::query_as("SELECT * FROM runs WHERE sweep_id = ? ORDER BY id")
            .bind(sweep_id)
            .fetch_all(&self.pool)
            .await
            .db(self)
    }
}
