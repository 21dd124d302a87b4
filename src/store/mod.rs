//! SQLite storage through sqlx. All SQL lives here.
//!
//! WAL mode and a busy timeout let several Dyno processes (two CLIs, or the
//! CLI and the app) write one database at once. Every result is committed as
//! soon as it is measured, so a crash loses at most the test in flight.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use sqlx::sqlite::{SqliteConnectOptions, SqlitePoolOptions, SqliteSynchronous};
use sqlx::{FromRow, SqlitePool};

use crate::error::{DynoError, Result};
use crate::machine::Machine;
use crate::model::ModelInfo;
use crate::telemetry::{Phase, Reading};
use crate::worker::protocol::{Sample, TestSpec};

mod hub;
mod import;
mod list;
mod settings;
pub use list::{HeadlineRow, MachineLabelRow, RunListRow};
mod sweeps;
pub use import::{ImportedResult, ImportedRun};
pub use sweeps::{LevelRow, QualityKey, QualityRow, SweepRow};

static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations");

/// Where the database lives unless `--db` or `DYNO_DB` says otherwise: the
/// platform data directory (`~/.local/share/dyno/dyno.db` on Linux).
pub fn default_db_path() -> PathBuf {
    directories::ProjectDirs::from("", "", "dyno")
        .map(|d| d.data_dir().join("dyno.db"))
        .unwrap_or_else(|| PathBuf::from("dyno.db"))
}

pub fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

#[derive(Clone)]
pub struct Store {
    pool: SqlitePool,
    path: PathBuf,
}

#[derive(Debug, Clone, FromRow, Serialize, Deserialize)]
pub struct RunRow {
    pub id: i64,
    pub sweep_id: Option<i64>,
    pub machine_id: i64,
    pub model_id: i64,
    pub status: String,
    pub error: Option<String>,
    pub error_code: Option<String>,
    pub telemetry_sources: Option<String>,
    pub owner_pid: Option<i64>,
    pub owner_host: Option<String>,
    pub config_json: String,
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
    pub devices_json: Option<String>,
    pub system_info: Option<String>,
    pub load_time_ms: Option<f64>,
    pub model_desc: Option<String>,
    pub peak_rss_bytes: Option<i64>,
    pub tokens_per_word: Option<f64>,
    /// JSON of [`crate::worker::protocol::Offload`].
    pub offload_json: Option<String>,
    pub dyno_version: String,
    pub started_at: String,
    pub finished_at: Option<String>,
}

#[derive(Debug, Clone, FromRow, Serialize, Deserialize)]
pub struct ResultRow {
    pub id: i64,
    pub run_id: i64,
    pub test: String,
    pub kind: String,
    pub n_prompt: i64,
    pub n_gen: i64,
    pub n_depth: i64,
    pub n_parallel: i64,
    pub reps: i64,
    pub status: String,
    pub error: Option<String>,
    pub samples_json: String,
    pub mean_tokens_per_s: Option<f64>,
    pub stddev_tokens_per_s: Option<f64>,
    pub created_at: String,
}

#[derive(Debug, Clone, FromRow, Serialize, Deserialize)]
pub struct ModelRow {
    pub id: i64,
    pub sha256: String,
    pub path: String,
    pub file_name: String,
    pub arch: String,
    pub name: Option<String>,
    pub quant: String,
    pub size_bytes: i64,
    pub weight_bytes: i64,
    pub n_params: i64,
    pub n_layers: Option<i64>,
    pub context_length: Option<i64>,
    pub gguf_version: i64,
}

#[derive(Debug, Clone, FromRow, Serialize, Deserialize)]
pub struct MachineRow {
    pub id: i64,
    pub fingerprint: String,
    pub hostname: Option<String>,
    pub os: Option<String>,
    pub kernel: Option<String>,
    pub cpu: String,
    pub cores_physical: Option<i64>,
    pub cores_logical: i64,
    pub memory_bytes: i64,
    pub memory_bandwidth_bytes_per_s: Option<i64>,
    pub bandwidth_threads: Option<i64>,
    pub bandwidth_measured_at: Option<String>,
    pub gpus_json: Option<String>,
}

#[derive(Debug, Clone, FromRow)]
struct TelemetryRow {
    result_id: Option<i64>,
    t_ms: f64,
    phase: String,
    cpu_util_pct: Option<f32>,
    core_util_pct: Option<Vec<u8>>,
    cpu_freq_mhz: Option<i64>,
    ram_used_bytes: Option<i64>,
    worker_rss_bytes: Option<i64>,
    cpu_temp_c: Option<f32>,
    cpu_energy_uj: Option<i64>,
    gpu_util_pct: Option<f32>,
    gpu_mem_used_bytes: Option<i64>,
    gpu_power_mw: Option<i64>,
    gpu_energy_mj: Option<i64>,
    gpu_temp_c: Option<f32>,
    gpu_sm_clock_mhz: Option<i64>,
    gpu_mem_clock_mhz: Option<i64>,
    gpu_throttle: Option<i64>,
}

impl TelemetryRow {
    fn into_reading(self) -> (Option<i64>, Reading) {
        let u = |v: Option<i64>| v.map(|v| v as u64);
        let r = Reading {
            t_ms: self.t_ms,
            phase: Phase::parse(&self.phase),
            job: None,
            cpu_util_pct: self.cpu_util_pct,
            core_util_pct: self.core_util_pct.unwrap_or_default(),
            cpu_freq_mhz: u(self.cpu_freq_mhz),
            ram_used_bytes: u(self.ram_used_bytes),
            worker_rss_bytes: u(self.worker_rss_bytes),
            cpu_temp_c: self.cpu_temp_c,
            cpu_energy_uj: u(self.cpu_energy_uj),
            gpu_util_pct: self.gpu_util_pct,
            gpu_mem_used_bytes: u(self.gpu_mem_used_bytes),
            gpu_power_mw: u(self.gpu_power_mw),
            gpu_energy_mj: u(self.gpu_energy_mj),
            gpu_temp_c: self.gpu_temp_c,
            gpu_sm_clock_mhz: self.gpu_sm_clock_mhz.map(|v| v as u32),
            gpu_mem_clock_mhz: self.gpu_mem_clock_mhz.map(|v| v as u32),
            gpu_throttle: u(self.gpu_throttle),
        };
        (self.result_id, r)
    }
}

/// A new run's fixed description.
#[derive(Debug, Clone)]
pub struct NewRun<'a> {
    pub sweep_id: Option<i64>,
    pub machine_id: i64,
    pub model_id: i64,
    pub config: &'a crate::bench::plan::RunConfig,
}

/// What the worker said about itself and the model, stored on the run.
#[derive(Debug, Clone, Default)]
pub struct WorkerFacts {
    pub backend: Option<String>,
    pub llama_cpp_build: Option<String>,
    pub devices_json: Option<String>,
    pub system_info: Option<String>,
    pub load_time_ms: Option<f64>,
    pub model_desc: Option<String>,
    pub n_gpu_layers: Option<i64>,
    /// JSON of [`crate::telemetry::Sources`].
    pub telemetry_sources: Option<String>,
    pub tokens_per_word: Option<f64>,
    /// JSON of [`crate::worker::protocol::Offload`].
    pub offload_json: Option<String>,
}

/// Switch the database to WAL, once; the mode is stored in the file, so later
/// opens find it set and this is a no-op.
///
/// Not done through the connect options: switching the journal mode needs an
/// exclusive lock that SQLite's busy timeout does not wait for, so two
/// processes creating one database at once made the loser fail at once with
/// "database is locked". Here the loser waits and tries again.
async fn set_wal(pool: &sqlx::SqlitePool) -> std::result::Result<(), sqlx::Error> {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let mut pause = Duration::from_millis(10);
    loop {
        match sqlx::query_scalar::<_, String>("PRAGMA journal_mode = WAL")
            .fetch_one(pool)
            .await
        {
            Ok(_) => return Ok(()),
            Err(sqlx::Error::Database(e))
                if e.code().as_deref().is_some_and(is_busy)
                    && std::time::Instant::now() < deadline =>
            {
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(Duration::from_millis(500));
            }
            Err(e) => return Err(e),
        }
    }
}

/// SQLITE_BUSY or SQLITE_LOCKED, with or without an extended code.
fn is_busy(code: &str) -> bool {
    code.parse::<i32>().is_ok_and(|c| matches!(c & 0xFF, 5 | 6))
}

impl Store {
    /// Open (creating if needed) the database at `path` and migrate it.
    pub async fn open(path: &Path) -> Result<Store> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| {
                DynoError::io(
                    format!("cannot create the database folder {}", dir.display()),
                    e,
                )
            })?;
        }
        let store_err = |e| DynoError::Store {
            path: path.to_path_buf(),
            source: e,
        };
        // The path is a file name, not a URL: parsing `sqlite://{path}`
        // would turn a `?` or `#` in a folder name into connection options.
        let opts = SqliteConnectOptions::new()
            .filename(path)
            .create_if_missing(true)
            // NORMAL in WAL mode survives any crash of the app; only a power
            // loss can drop the last commits.
            .synchronous(SqliteSynchronous::Normal)
            .foreign_keys(true)
            .busy_timeout(Duration::from_secs(30));
        let pool = SqlitePoolOptions::new()
            .max_connections(4)
            .connect_with(opts)
            .await
            .map_err(store_err)?;
        set_wal(&pool).await.map_err(store_err)?;
        // Two processes opening a new database at once both see a migration
        // as pending and race to apply it; the loser's transaction fails
        // ("table already exists") and rolls back whole. Running the migrator
        // again then finds it applied and goes on, so retry a few times
        // before reporting a real failure (such as a database from a newer
        // Dyno).
        let mut attempt = 0;
        loop {
            match MIGRATOR.run(&pool).await {
                Ok(()) => break,
                Err(e) if attempt >= 4 => {
                    return Err(DynoError::Migrate {
                        path: path.to_path_buf(),
                        source: e,
                    })
                }
                Err(_) => {
                    attempt += 1;
                    tokio::time::sleep(Duration::from_millis(100 * attempt)).await;
                }
            }
        }
        Ok(Store {
            pool,
            path: path.to_path_buf(),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn err(&self, e: sqlx::Error) -> DynoError {
        DynoError::Store {
            path: self.path.clone(),
            source: e,
        }
    }

    pub async fn upsert_machine(&self, m: &Machine) -> Result<i64> {
        self.insert_machine(m, true).await
    }

    /// Insert `m` unless its fingerprint is stored; with `refresh`, a stored
    /// row takes `m`'s OS and kernel (this machine after an upgrade). The id
    /// either way.
    pub(crate) async fn insert_machine(&self, m: &Machine, refresh: bool) -> Result<i64> {
        let on_conflict = if refresh {
            "DO UPDATE SET os = excluded.os, kernel = excluded.kernel"
        } else {
            "DO NOTHING"
        };
        sqlx::query(&format!(
            "INSERT INTO machines (fingerprint, hostname, os, kernel, cpu, cores_physical, cores_logical, memory_bytes, created_at)
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
             ON CONFLICT (fingerprint) {on_conflict}"
        ))
        .bind(&m.fingerprint)
        .bind(&m.hostname)
        .bind(&m.os)
        .bind(&m.kernel)
        .bind(&m.cpu)
        .bind(m.cores_physical.map(|c| c as i64))
        .bind(m.cores_logical as i64)
        .bind(m.memory_bytes as i64)
        .bind(now())
        .execute(&self.pool)
        .await
        .map_err(|e| self.err(e))?;
        sqlx::query_scalar("SELECT id FROM machines WHERE fingerprint = ?")
            .bind(&m.fingerprint)
            .fetch_one(&self.pool)
            .await
            .map_err(|e| self.err(e))
    }

    /// The sha256 stored for a file with this path, size and mtime, if any.
    pub async fn cached_sha256(
        &self,
        path: &Path,
        size: u64,
        mtime_ns: i64,
    ) -> Result<Option<String>> {
        sqlx::query_scalar(
            "SELECT sha256 FROM models WHERE path = ? AND size_bytes = ? AND file_mtime_ns = ? ORDER BY id DESC LIMIT 1",
        )
        .bind(path.to_string_lossy())
        .bind(size as i64)
        .bind(mtime_ns)
        .fetch_optional(&self.pool)
        .await
        .map_err(|e| self.err(e))
    }

    pub async fn upsert_model(&self, m: &ModelInfo, mtime_ns: i64) -> Result<i64> {
        sqlx::query_scalar(
            "INSERT INTO models (sha256, path, file_name, arch, name, quant, size_bytes, weight_bytes, n_params,
                                 n_layers, context_length, gguf_version, file_mtime_ns, created_at)
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
             ON CONFLICT (path, sha256) DO UPDATE SET file_mtime_ns = excluded.file_mtime_ns
             RETURNING id",
        )
        .bind(&m.sha256)
        .bind(m.path.to_string_lossy())
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
        .bind(mtime_ns)
        .bind(now())
        .fetch_one(&self.pool)
        .await
        .map_err(|e| self.err(e))
    }

    pub async fn create_sweep(&self, kind: &str, machine_id: i64, args_json: &str) -> Result<i64> {
        sqlx::query_scalar("INSERT INTO sweeps (kind, machine_id, args_json, created_at) VALUES (?, ?, ?, ?) RETURNING id")
            .bind(kind)
            .bind(machine_id)
            .bind(args_json)
            .bind(now())
            .fetch_one(&self.pool)
            .await
            .map_err(|e| self.err(e))
    }

    pub async fn create_run(&self, r: &NewRun<'_>) -> Result<i64> {
        let c = r.config;
        sqlx::query_scalar(
            "INSERT INTO runs (sweep_id, machine_id, model_id, status, owner_pid, owner_host, config_json, n_threads,
                               n_gpu_layers, n_batch, n_ubatch, flash_attn, cache_type, use_mmap, reps, dyno_version,
                               started_at)
             VALUES (?, ?, ?, 'running', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
        )
        .bind(r.sweep_id)
        .bind(r.machine_id)
        .bind(r.model_id)
        .bind(std::process::id() as i64)
        .bind(sysinfo::System::host_name())
        .bind(serde_json::to_string(c).expect("config serialises"))
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
        .map_err(|e| self.err(e))
    }

    /// Record what the worker reported. Fields left `None` keep their value.
    pub async fn set_worker_facts(&self, run_id: i64, f: &WorkerFacts) -> Result<()> {
        sqlx::query(
            "UPDATE runs SET backend = COALESCE(?, backend), llama_cpp_build = COALESCE(?, llama_cpp_build),
                devices_json = COALESCE(?, devices_json), system_info = COALESCE(?, system_info),
                load_time_ms = COALESCE(?, load_time_ms), model_desc = COALESCE(?, model_desc),
                n_gpu_layers = COALESCE(?, n_gpu_layers), telemetry_sources = COALESCE(?, telemetry_sources),
                tokens_per_word = COALESCE(?, tokens_per_word), offload_json = COALESCE(?, offload_json)
             WHERE id = ?",
        )
        .bind(&f.backend)
        .bind(&f.llama_cpp_build)
        .bind(&f.devices_json)
        .bind(&f.system_info)
        .bind(f.load_time_ms)
        .bind(&f.model_desc)
        .bind(f.n_gpu_layers)
        .bind(&f.telemetry_sources)
        .bind(f.tokens_per_word)
        .bind(&f.offload_json)
        .bind(run_id)
        .execute(&self.pool)
        .await
        .map_err(|e| self.err(e))?;
        Ok(())
    }

    /// Open a result row for a test that is about to run. Its samples are
    /// filled in by [`Store::set_result_samples`] as they are measured.
    pub async fn start_result(&self, run_id: i64, test: &TestSpec, reps: u32) -> Result<i64> {
        let kind = serde_json::to_value(test.kind).expect("kind serialises");
        sqlx::query_scalar(
            "INSERT INTO results (run_id, test, kind, n_prompt, n_gen, n_depth, n_parallel, reps, status,
                                  samples_json, created_at)
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'running', '[]', ?) RETURNING id",
        )
        .bind(run_id)
        .bind(test.name())
        .bind(kind.as_str().unwrap_or("unknown"))
        .bind(test.n_prompt as i64)
        .bind(test.n_gen as i64)
        .bind(test.n_depth as i64)
        .bind(test.n_parallel as i64)
        .bind(reps as i64)
        .bind(now())
        .fetch_one(&self.pool)
        .await
        .map_err(|e| self.err(e))
    }

    /// Store the samples measured so far (one commit per repetition).
    pub async fn set_result_samples(&self, result_id: i64, samples: &[Sample]) -> Result<()> {
        sqlx::query("UPDATE results SET samples_json = ? WHERE id = ?")
            .bind(serde_json::to_string(samples).expect("samples serialise"))
            .bind(result_id)
            .execute(&self.pool)
            .await
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    /// Close a result: `status` is 'ok', 'failed' or 'cancelled'; the headline
    /// mean and standard deviation are copied into columns for queries.
    pub async fn finish_result(
        &self,
        result_id: i64,
        status: &str,
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
        .bind(serde_json::to_string(samples).expect("samples serialise"))
        .bind(headline.map(|h| h.0))
        .bind(headline.map(|h| h.1))
        .bind(result_id)
        .execute(&self.pool)
        .await
        .map_err(|e| self.err(e))?;
        Ok(())
    }

    /// Close a run. `failure` is `(code, message)` for a failed or cancelled run.
    pub async fn finish_run(
        &self,
        run_id: i64,
        status: &str,
        failure: Option<(&str, &str)>,
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
        .map_err(|e| self.err(e))?;
        Ok(())
    }

    /// Store telemetry readings of one run, each with the result (test) it
    /// was taken during, in one transaction.
    pub async fn insert_telemetry(
        &self,
        run_id: i64,
        rows: &[(Option<i64>, Reading)],
    ) -> Result<()> {
        if rows.is_empty() {
            return Ok(());
        }
        let mut tx = self.pool.begin().await.map_err(|e| self.err(e))?;
        for (result_id, r) in rows {
            sqlx::query(
                "INSERT INTO telemetry (run_id, result_id, t_ms, phase, cpu_util_pct, core_util_pct, cpu_freq_mhz,
                    ram_used_bytes, worker_rss_bytes, cpu_temp_c, cpu_energy_uj, gpu_util_pct, gpu_mem_used_bytes,
                    gpu_power_mw, gpu_energy_mj, gpu_temp_c, gpu_sm_clock_mhz, gpu_mem_clock_mhz, gpu_throttle)
                 VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            )
            .bind(run_id)
            .bind(result_id)
            .bind(r.t_ms)
            .bind(r.phase.as_str())
            .bind(r.cpu_util_pct)
            .bind(&r.core_util_pct)
            .bind(r.cpu_freq_mhz.map(|v| v as i64))
            .bind(r.ram_used_bytes.map(|v| v as i64))
            .bind(r.worker_rss_bytes.map(|v| v as i64))
            .bind(r.cpu_temp_c)
            .bind(r.cpu_energy_uj.map(|v| v as i64))
            .bind(r.gpu_util_pct)
            .bind(r.gpu_mem_used_bytes.map(|v| v as i64))
            .bind(r.gpu_power_mw.map(|v| v as i64))
            .bind(r.gpu_energy_mj.map(|v| v as i64))
            .bind(r.gpu_temp_c)
            .bind(r.gpu_sm_clock_mhz)
            .bind(r.gpu_mem_clock_mhz)
            .bind(r.gpu_throttle.map(|v| v as i64))
            .execute(&mut *tx)
            .await
            .map_err(|e| self.err(e))?;
        }
        tx.commit().await.map_err(|e| self.err(e))
    }

    /// A run's telemetry in time order, each reading with its result id.
    pub async fn telemetry(&self, run_id: i64) -> Result<Vec<(Option<i64>, Reading)>> {
        let rows: Vec<TelemetryRow> =
            sqlx::query_as("SELECT * FROM telemetry WHERE run_id = ? ORDER BY t_ms")
                .bind(run_id)
                .fetch_all(&self.pool)
                .await
                .map_err(|e| self.err(e))?;
        Ok(rows.into_iter().map(TelemetryRow::into_reading).collect())
    }

    /// Record the machine's GPUs as NVML describes them (JSON list).
    pub async fn set_machine_gpus(&self, machine_id: i64, gpus_json: &str) -> Result<()> {
        sqlx::query("UPDATE machines SET gpus_json = ? WHERE id = ?")
            .bind(gpus_json)
            .bind(machine_id)
            .execute(&self.pool)
            .await
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    /// Cache the machine's measured memory bandwidth.
    pub async fn set_machine_bandwidth(
        &self,
        machine_id: i64,
        bytes_per_s: u64,
        threads: usize,
    ) -> Result<()> {
        sqlx::query(
            "UPDATE machines SET memory_bandwidth_bytes_per_s = ?, bandwidth_threads = ?, bandwidth_measured_at = ?
             WHERE id = ?",
        )
        .bind(bytes_per_s as i64)
        .bind(threads as i64)
        .bind(now())
        .bind(machine_id)
        .execute(&self.pool)
        .await
        .map_err(|e| self.err(e))?;
        Ok(())
    }

    /// The worker's peak resident memory, known only when it exits.
    pub async fn set_run_peak_rss(&self, run_id: i64, bytes: u64) -> Result<()> {
        sqlx::query("UPDATE runs SET peak_rss_bytes = ? WHERE id = ?")
            .bind(bytes as i64)
            .bind(run_id)
            .execute(&self.pool)
            .await
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    pub async fn runs(&self, limit: i64) -> Result<Vec<RunRow>> {
        sqlx::query_as("SELECT * FROM runs ORDER BY id DESC LIMIT ?")
            .bind(limit)
            .fetch_all(&self.pool)
            .await
            .map_err(|e| self.err(e))
    }

    pub async fn run(&self, id: i64) -> Result<Option<RunRow>> {
        sqlx::query_as("SELECT * FROM runs WHERE id = ?")
            .bind(id)
            .fetch_optional(&self.pool)
            .await
            .map_err(|e| self.err(e))
    }

    pub async fn results(&self, run_id: i64) -> Result<Vec<ResultRow>> {
        sqlx::query_as("SELECT * FROM results WHERE run_id = ? ORDER BY id")
            .bind(run_id)
            .fetch_all(&self.pool)
            .await
            .map_err(|e| self.err(e))
    }

    pub async fn model(&self, id: i64) -> Result<ModelRow> {
        sqlx::query_as("SELECT * FROM models WHERE id = ?")
            .bind(id)
            .fetch_one(&self.pool)
            .await
            .map_err(|e| self.err(e))
    }

    pub async fn machine(&self, id: i64) -> Result<MachineRow> {
        sqlx::query_as("SELECT * FROM machines WHERE id = ?")
            .bind(id)
            .fetch_one(&self.pool)
            .await
            .map_err(|e| self.err(e))
    }

    /// Close runs and results left 'running' by a Dyno process on this host
    /// that no longer exists (killed, crashed, power cut). Finished tests stay;
    /// only the status changes, so the run reads as interrupted rather than
    /// forever in progress. Returns how many runs were closed.
    pub async fn close_orphaned_runs(&self) -> Result<u64> {
        let host = sysinfo::System::host_name();
        let rows: Vec<(i64, Option<i64>)> = sqlx::query_as(
            "SELECT id, owner_pid FROM runs WHERE status = 'running' AND owner_host IS ?",
        )
        .bind(&host)
        .fetch_all(&self.pool)
        .await
        .map_err(|e| self.err(e))?;
        let mut closed = 0;
        for (id, pid) in rows {
            if pid.is_some_and(process_alive) {
                continue;
            }
            let msg = "interrupted: the Dyno process measuring this run ended before it finished; \
                       the tests it had finished are kept";
            // A test's repetitions are committed when it ends (bench::run),
            // so the test in progress has none to keep.
            let test_msg =
                "interrupted: the Dyno process measuring this test ended before the test \
                            did; a test's repetitions are saved when it ends, so run it again";
            let mut tx = self.pool.begin().await.map_err(|e| self.err(e))?;
            sqlx::query("UPDATE results SET status = 'failed', error = ? WHERE run_id = ? AND status = 'running'")
                .bind(test_msg)
                .bind(id)
                .execute(&mut *tx)
                .await
                .map_err(|e| self.err(e))?;
            sqlx::query(
                "UPDATE runs SET status = 'failed', error_code = 'interrupted', error = ?, finished_at = ?
                 WHERE id = ? AND status = 'running'",
            )
            .bind(msg)
            .bind(now())
            .bind(id)
            .execute(&mut *tx)
            .await
            .map_err(|e| self.err(e))?;
            tx.commit().await.map_err(|e| self.err(e))?;
            closed += 1;
        }
        self.close_orphaned_sweeps().await?;
        Ok(closed)
    }

    /// `PRAGMA integrity_check`; "ok" on a healthy database.
    pub async fn integrity_check(&self) -> Result<String> {
        sqlx::query_scalar("PRAGMA integrity_check")
            .fetch_one(&self.pool)
            .await
            .map_err(|e| self.err(e))
    }

    pub async fn sweep_runs(&self, sweep_id: i64) -> Result<Vec<RunRow>> {
        sqlx::query_as("SELECT * FROM runs WHERE sweep_id = ? ORDER BY id")
            .bind(sweep_id)
            .fetch_all(&self.pool)
            .await
            .map_err(|e| self.err(e))
    }

    pub async fn close(self) {
        self.pool.close().await;
    }
}

/// Whether a process with this id exists on this host.
fn process_alive(pid: i64) -> bool {
    #[cfg(unix)]
    {
        let Ok(pid) = libc::pid_t::try_from(pid) else {
            return false;
        };
        // Signal 0 checks existence; EPERM means it exists under another user.
        // SAFETY: kill takes plain integers and, with signal 0, sends
        // nothing; it touches no memory of ours.
        let rc = unsafe { libc::kill(pid, 0) };
        rc == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
    }
    #[cfg(not(unix))]
    {
        let _ = pid;
        true
    }
}
