//! The team store: many machines' runs in one PostgreSQL database (or a
//! SQLite file), written by `dyno sync` and read by `--db postgres://…`.
//!
//! Local-first: a benchmark only ever writes the local SQLite file; this
//! store is touched by sync and by reads, never while measuring.
//!
//! One schema for both engines: `migrations/team/*.sql` is applied as
//! written to PostgreSQL and to SQLite, and every query here goes through
//! sqlx's `Any` driver with `$N` parameters, which both engines accept, so
//! the tests run the very same statements on both.
//!
//! Ids are content-addressed (see the schema): every insert is `ON CONFLICT
//! DO NOTHING`, so a sync repeated, resumed after a cut, or run by two
//! machines at once adds each run exactly once. A run and its results go in
//! one transaction, so a reader never sees a run without its samples.
//!
//! Credentials come from the URL or the PG* environment variables (and
//! `~/.pgpass`), as `libpq` reads them; this module never stores the URL, and
//! every message names the store by [`redact`]ed URL.

use std::collections::HashSet;
use std::sync::{Mutex, Once};
use std::time::Duration;

use sqlx::any::{AnyConnectOptions, AnyPoolOptions};
use sqlx::{AnyPool, ConnectOptions, Row};

use crate::error::{DynoError, Result};

/// The schema versions this Dyno knows, oldest first; each file is applied
/// once, in order, to bring an older team store up to date.
const SCHEMA: &[(i64, &str)] = &[(1, include_str!("../../../migrations/team/0001_team.sql"))];

/// The newest team schema this Dyno writes and reads.
pub const SCHEMA_VERSION: i64 = SCHEMA[SCHEMA.len() - 1].0;

/// Which engine holds the team store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Engine {
    Postgres,
    Sqlite,
}

/// Whether a connection may create or upgrade the schema. Reading never
/// does: a person with read-only rights can still look.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    Read,
    Write,
}

/// True for a `--db` or sync target that names a team store rather than a
/// local SQLite file.
pub fn is_team_url(s: &str) -> bool {
    let lower = s.trim().to_ascii_lowercase();
    lower.starts_with("postgres://")
        || lower.starts_with("postgresql://")
        || lower.starts_with("sqlite:")
}

/// The URL with its password replaced by `***`, for every message: a URL
/// is printed in errors and logs, and a password must never be.
pub fn redact(url: &str) -> String {
    match url::Url::parse(url.trim()) {
        Ok(mut u) => {
            if u.password().is_some() {
                let _ = u.set_password(Some("***"));
            }
            // A password may also ride in the query (`?password=`).
            let pairs: Vec<(String, String)> = u
                .query_pairs()
                .map(|(k, v)| {
                    let v = if k.eq_ignore_ascii_case("password") {
                        "***".to_string()
                    } else {
                        v.into_owned()
                    };
                    (k.into_owned(), v)
                })
                .collect();
            if !pairs.is_empty() {
                u.query_pairs_mut().clear().extend_pairs(pairs);
            }
            u.to_string()
        }
        Err(_) => "(an unreadable URL)".to_string(),
    }
}

/// The URL without any password, for saving as a setting: the password
/// stays in the person's environment (PGPASSWORD, `~/.pgpass`) or is typed
/// for one session.
pub fn without_password(url: &str) -> Result<String> {
    let mut u = url::Url::parse(url.trim()).map_err(|e| bad_url(url, &e.to_string()))?;
    let _ = u.set_password(None);
    let pairs: Vec<(String, String)> = u
        .query_pairs()
        .filter(|(k, _)| !k.eq_ignore_ascii_case("password"))
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect();
    u.set_query(None);
    if !pairs.is_empty() {
        u.query_pairs_mut().extend_pairs(pairs);
    }
    Ok(u.to_string())
}

/// A warning for a password sent to another machine over a connection
/// that may fall back to plain text: `sslmode` prefer (the default), allow
/// or disable. Anyone on the path can then strip TLS and read it. None for
/// loopback, SQLite, or `sslmode=require` and stricter.
pub fn tls_warning(url: &str) -> Option<String> {
    let u = url::Url::parse(url.trim()).ok()?;
    if !u.scheme().starts_with("postgres") {
        return None;
    }
    let host = u.host_str().unwrap_or("");
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    let local = host.is_empty()
        || host.eq_ignore_ascii_case("localhost")
        || host.starts_with('/')
        || bare
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback());
    let mode = u
        .query_pairs()
        .find(|(k, _)| k.eq_ignore_ascii_case("sslmode"))
        .map(|(_, v)| v.to_ascii_lowercase())
        .unwrap_or_else(|| "prefer".into());
    let password = u.password().is_some()
        || u.query_pairs()
            .any(|(k, _)| k.eq_ignore_ascii_case("password"))
        || std::env::var_os("PGPASSWORD").is_some();
    (!local && password && matches!(mode.as_str(), "prefer" | "allow" | "disable")).then(|| {
        format!(
            "the password goes to {host} with sslmode={mode}, which falls back to plain text if TLS is refused on the way; add ?sslmode=require (or verify-full with sslrootcert=) to insist on TLS"
        )
    })
}

fn bad_url(url: &str, why: &str) -> DynoError {
    DynoError::BadInput(format!(
        "{} is not a team store URL ({why}); write postgres://USER@HOST:PORT/DATABASE, with the password in PGPASSWORD or ~/.pgpass",
        redact(url)
    ))
}

/// A machine as the team store lists it.
#[derive(Debug, Clone)]
pub struct TeamMachine {
    pub fingerprint: String,
    pub cpu: String,
    pub cores: i64,
    pub memory_bytes: i64,
    pub os: Option<String>,
    pub gpus: Option<String>,
}

/// A model file as the team store lists it.
#[derive(Debug, Clone)]
pub struct TeamModel {
    pub sha256: String,
    pub file_name: String,
    pub name: Option<String>,
    pub arch: String,
    pub quant: String,
    pub size_bytes: i64,
    pub n_params: i64,
}

/// One test of a pushed run.
#[derive(Debug, Clone)]
pub struct TeamResult {
    pub test: String,
    pub kind: String,
    pub status: String,
    pub mean_tokens_per_s: Option<f64>,
    pub n_samples: i64,
    /// The result's JSON, as in the run's document.
    pub doc: String,
}

/// One run to push: its conditions as columns and its document.
#[derive(Debug, Clone)]
pub struct TeamRunIn {
    pub uid: String,
    pub machine: TeamMachine,
    pub model: TeamModel,
    pub local_id: i64,
    pub status: String,
    pub backend: Option<String>,
    pub llama_cpp_build: Option<String>,
    pub dyno_version: String,
    pub n_threads: i64,
    pub n_gpu_layers: Option<i64>,
    pub started_at: String,
    pub finished_at: Option<String>,
    pub prefill_tps: Option<f64>,
    pub decode_tps: Option<f64>,
    pub ttft_ms: Option<f64>,
    pub n_prompt: Option<i64>,
    pub n_gen: Option<i64>,
    pub disturbed: bool,
    /// The run's document, its results left out.
    pub doc: String,
    pub results: Vec<TeamResult>,
    /// The telemetry series as JSON, only with `--with-telemetry`.
    pub telemetry: Option<String>,
}

impl TeamRunIn {
    /// What the push sends, in bytes of text: for the MB/s a sync reports.
    pub fn bytes(&self) -> u64 {
        (self.doc.len()
            + self.results.iter().map(|r| r.doc.len()).sum::<usize>()
            + self.telemetry.as_ref().map_or(0, String::len)) as u64
    }
}

/// A run as a list shows it.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct TeamRunRow {
    pub uid: String,
    pub machine: String,
    pub cpu: String,
    pub cores: i64,
    pub memory_bytes: i64,
    pub gpus: Option<String>,
    pub model_sha256: String,
    pub file_name: String,
    pub model_name: Option<String>,
    pub arch: String,
    pub quant: String,
    pub status: String,
    pub backend: Option<String>,
    pub dyno_version: String,
    pub n_threads: i64,
    pub n_gpu_layers: Option<i64>,
    pub started_at: String,
    pub prefill_tps: Option<f64>,
    pub decode_tps: Option<f64>,
    pub ttft_ms: Option<f64>,
    pub n_prompt: Option<i64>,
    pub n_gen: Option<i64>,
    pub disturbed: i64,
    /// The run's document (see `report::team`): rankings read the settings
    /// that have no column here (batch sizes, KV type) from it.
    pub doc: String,
}

/// Which runs a list or a ranking reads; every field narrows.
#[derive(Debug, Clone, Default)]
pub struct TeamFilter {
    /// Matches the model's sha256 (a prefix of it), file name or name.
    pub model: Option<String>,
    pub quant: Option<String>,
    pub backend: Option<String>,
    pub dyno_version: Option<String>,
    pub machine: Option<String>,
    /// Only finished, successful runs.
    pub ok_only: bool,
}

/// A pushed batch: how many runs were new and how many were there already.
#[derive(Debug, Clone, Copy, Default)]
pub struct Pushed {
    pub added: usize,
    pub present: usize,
    pub bytes: u64,
    /// Telemetry series stored with the added runs.
    pub telemetry: usize,
}

/// A run's document and its results' documents, in order.
#[derive(Debug, Clone)]
pub struct TeamDoc {
    pub uid: String,
    pub doc: String,
    pub results: Vec<String>,
}

pub struct TeamStore {
    pool: AnyPool,
    label: String,
    engine: Engine,
    /// Machines and models already written by this connection: a sync of
    /// 10,000 runs of one machine writes its row once, not 10,000 times.
    known: Mutex<(HashSet<String>, HashSet<String>)>,
}

fn install_drivers() {
    static ONCE: Once = Once::new();
    ONCE.call_once(sqlx::any::install_default_drivers);
}

impl TeamStore {
    /// Connect to the team store at `url`. With [`Access::Write`] a new
    /// store gets the schema and an older one is brought up to date; either
    /// way a store made by a newer Dyno is refused with both versions named.
    pub async fn connect(url: &str, access: Access) -> Result<TeamStore> {
        install_drivers();
        let label = redact(url);
        let trimmed = url.trim();
        if !is_team_url(trimmed) {
            return Err(bad_url(url, "it names neither postgres:// nor sqlite:"));
        }
        let engine = if trimmed.to_ascii_lowercase().starts_with("sqlite:") {
            Engine::Sqlite
        } else {
            Engine::Postgres
        };
        if let Some(w) = tls_warning(trimmed) {
            tracing::warn!("{w}");
        }
        let opts: AnyConnectOptions = trimmed
            .parse()
            .map_err(|e: sqlx::Error| bad_url(url, &scrub_text(&e.to_string(), url)))?;
        if engine == Engine::Postgres {
            probe(trimmed).await.map_err(|message| DynoError::Team {
                store: label.clone(),
                message,
            })?;
        }
        // A statement is logged only when slow, and never with its values.
        let opts = opts.log_statements(tracing::log::LevelFilter::Off);
        let pool = AnyPoolOptions::new()
            .max_connections(4)
            .acquire_timeout(Duration::from_secs(20))
            .connect_with(opts)
            .await
            .map_err(|e| connect_error(&label, url, e))?;
        let store = TeamStore {
            pool,
            label,
            engine,
            known: Mutex::new((HashSet::new(), HashSet::new())),
        };
        store.schema(access).await?;
        Ok(store)
    }

    /// The store's URL without its password.
    pub fn label(&self) -> &str {
        &self.label
    }

    pub fn engine(&self) -> Engine {
        self.engine
    }

    /// Close the connections, waiting at most a few seconds: a connection
    /// to a server that went silent never answers the goodbye, and closing
    /// must not hang a sync that has already given up on it.
    pub async fn close(self) {
        let _ = tokio::time::timeout(Duration::from_secs(5), self.pool.close()).await;
    }

    fn err(&self, e: sqlx::Error) -> DynoError {
        DynoError::Team {
            store: self.label.clone(),
            message: describe(&e),
        }
    }

    /// The schema version the store holds; 0 when it has none yet.
    async fn version_in<'c, E>(&self, exec: E) -> Result<i64>
    where
        E: sqlx::Executor<'c, Database = sqlx::Any>,
    {
        let v: Option<String> =
            sqlx::query_scalar("SELECT value FROM dyno_team WHERE key = 'schema_version'")
                .fetch_optional(exec)
                .await
                .map_err(|e| self.err(e))?;
        Ok(v.and_then(|v| v.parse().ok()).unwrap_or(0))
    }

    async fn schema(&self, access: Access) -> Result<()> {
        let exists = self.has_meta_table().await?;
        if access == Access::Read {
            if !exists {
                return Err(DynoError::NotFound(format!(
                    "{} holds no Dyno team store yet; `dyno sync {}` creates it with this machine's runs",
                    self.label, self.label
                )));
            }
            let v = self.version_in(&self.pool).await?;
            return self.check_version(v);
        }
        let mut tx = self.pool.begin().await.map_err(|e| self.err(e))?;
        if self.engine == Engine::Postgres {
            // Two machines syncing to a new store at once: one creates the
            // schema while the other waits, then finds it made.
            sqlx::query("SELECT pg_advisory_xact_lock(7306545)")
                .execute(&mut *tx)
                .await
                .map_err(|e| self.err(e))?;
        }
        sqlx::raw_sql(
            "CREATE TABLE IF NOT EXISTS dyno_team (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
        )
        .execute(&mut *tx)
        .await
        .map_err(|e| self.err(e))?;
        let have = self.version_in(&mut *tx).await?;
        self.check_version(have)?;
        for (v, sql) in SCHEMA.iter().filter(|(v, _)| *v > have) {
            sqlx::raw_sql(sql)
                .execute(&mut *tx)
                .await
                .map_err(|e| self.err(e))?;
            sqlx::query(
                "INSERT INTO dyno_team (key, value) VALUES ('schema_version', $1)
                 ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            )
            .bind(v.to_string())
            .execute(&mut *tx)
            .await
            .map_err(|e| self.err(e))?;
        }
        // The store's identity, made once when it is created: a sync's mark
        // is kept per store, and a dropped and recreated database (or a
        // second schema) at the same address is another store.
        sqlx::query(
            "INSERT INTO dyno_team (key, value) VALUES ('store_id', $1) ON CONFLICT (key) DO NOTHING",
        )
        .bind(super::unique_id())
        .execute(&mut *tx)
        .await
        .map_err(|e| self.err(e))?;
        tx.commit().await.map_err(|e| self.err(e))?;
        Ok(())
    }

    /// The id the store was given when it was created; none for a store
    /// only read, made before ids were.
    pub async fn store_id(&self) -> Result<Option<String>> {
        sqlx::query_scalar("SELECT value FROM dyno_team WHERE key = 'store_id'")
            .fetch_optional(&self.pool)
            .await
            .map_err(|e| self.err(e))
    }

    async fn has_meta_table(&self) -> Result<bool> {
        let q = match self.engine {
            Engine::Postgres => {
                "SELECT COUNT(*) FROM information_schema.tables WHERE table_name = 'dyno_team' AND table_schema = current_schema()"
            }
            Engine::Sqlite => {
                "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'dyno_team'"
            }
        };
        let n: i64 = sqlx::query_scalar(q)
            .fetch_one(&self.pool)
            .await
            .map_err(|e| self.err(e))?;
        Ok(n > 0)
    }

    fn check_version(&self, have: i64) -> Result<()> {
        if have > SCHEMA_VERSION {
            return Err(DynoError::Team {
                store: self.label.clone(),
                message: format!(
                    "its schema is version {have}, written by a newer Dyno; this Dyno ({}) reads and writes version {SCHEMA_VERSION} only. Update Dyno on this machine before syncing or reading it",
                    env!("CARGO_PKG_VERSION")
                ),
            });
        }
        Ok(())
    }

    /// The schema version the store holds.
    pub async fn schema_version(&self) -> Result<i64> {
        self.version_in(&self.pool).await
    }

    /// Push `runs` in one transaction: all of them are stored, or none.
    /// A run already there (same uid) is left as it is and counted present.
    pub async fn push(&self, runs: &[TeamRunIn]) -> Result<Pushed> {
        let mut out = Pushed::default();
        let mut tx = self.pool.begin().await.map_err(|e| self.err(e))?;
        let (mut new_machines, mut new_models) = (Vec::new(), Vec::new());
        // A copy, so no lock is held across an await.
        let (seen_machines, seen_models) = self.known.lock().expect("not poisoned").clone();
        for r in runs {
            if !seen_machines.contains(&r.machine.fingerprint)
                && !new_machines.contains(&r.machine.fingerprint)
            {
                self.insert_machine(&mut tx, &r.machine).await?;
                new_machines.push(r.machine.fingerprint.clone());
            }
            if !seen_models.contains(&r.model.sha256) && !new_models.contains(&r.model.sha256) {
                self.insert_model(&mut tx, &r.model).await?;
                new_models.push(r.model.sha256.clone());
            }
            if !self.insert_run(&mut tx, r).await? {
                out.present += 1;
                continue;
            }
            out.added += 1;
            out.bytes += r.bytes();
            self.insert_results(&mut tx, r).await?;
            if let Some(points) = &r.telemetry {
                out.telemetry += 1;
                sqlx::query("INSERT INTO team_telemetry (run_uid, points) VALUES ($1, $2)")
                    .bind(&r.uid)
                    .bind(points)
                    .execute(&mut *tx)
                    .await
                    .map_err(|e| self.err(e))?;
            }
        }
        tx.commit().await.map_err(|e| self.err(e))?;
        let mut known = self.known.lock().expect("not poisoned");
        known.0.extend(new_machines);
        known.1.extend(new_models);
        Ok(out)
    }

    /// A machine the store has not seen, inside the push's transaction.
    async fn insert_machine(&self, tx: &mut sqlx::AnyConnection, m: &TeamMachine) -> Result<()> {
        sqlx::query(
            "INSERT INTO team_machines (fingerprint, cpu, cores, memory_bytes, os, gpus, first_synced_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (fingerprint) DO NOTHING",
        )
        .bind(&m.fingerprint)
        .bind(&m.cpu)
        .bind(m.cores)
        .bind(m.memory_bytes)
        .bind(&m.os)
        .bind(&m.gpus)
        .bind(now())
        .execute(tx)
        .await
        .map_err(|e| self.err(e))?;
        Ok(())
    }

    /// A model the store has not seen, inside the push's transaction.
    async fn insert_model(&self, tx: &mut sqlx::AnyConnection, m: &TeamModel) -> Result<()> {
        sqlx::query(
            "INSERT INTO team_models (sha256, file_name, name, arch, quant, size_bytes, n_params)
             VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (sha256) DO NOTHING",
        )
        .bind(&m.sha256)
        .bind(&m.file_name)
        .bind(&m.name)
        .bind(&m.arch)
        .bind(&m.quant)
        .bind(m.size_bytes)
        .bind(m.n_params)
        .execute(tx)
        .await
        .map_err(|e| self.err(e))?;
        Ok(())
    }

    /// The run's row; false when the store has it already (its uid), so a
    /// resumed or repeated push adds nothing twice.
    async fn insert_run(&self, tx: &mut sqlx::AnyConnection, r: &TeamRunIn) -> Result<bool> {
        let done = sqlx::query(
            "INSERT INTO team_runs (uid, machine, model_sha256, local_id, status, backend, llama_cpp_build,
                dyno_version, n_threads, n_gpu_layers, started_at, finished_at, prefill_tps, decode_tps,
                ttft_ms, n_prompt, n_gen, disturbed, doc, synced_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, CAST($13 AS DOUBLE PRECISION),
                     CAST($14 AS DOUBLE PRECISION), CAST($15 AS DOUBLE PRECISION), $16, $17, $18, $19, $20)
             ON CONFLICT (uid) DO NOTHING",
        )
        .bind(&r.uid)
        .bind(&r.machine.fingerprint)
        .bind(&r.model.sha256)
        .bind(r.local_id)
        .bind(&r.status)
        .bind(&r.backend)
        .bind(&r.llama_cpp_build)
        .bind(&r.dyno_version)
        .bind(r.n_threads)
        .bind(r.n_gpu_layers)
        .bind(&r.started_at)
        .bind(&r.finished_at)
        .bind(real(r.prefill_tps))
        .bind(real(r.decode_tps))
        .bind(real(r.ttft_ms))
        .bind(r.n_prompt)
        .bind(r.n_gen)
        .bind(r.disturbed as i64)
        .bind(&r.doc)
        .bind(now())
        .execute(tx)
        .await
        .map_err(|e| self.err(e))?;
        Ok(done.rows_affected() > 0)
    }

    /// One row per test of a run just added.
    async fn insert_results(&self, tx: &mut sqlx::AnyConnection, r: &TeamRunIn) -> Result<()> {
        for (i, res) in r.results.iter().enumerate() {
            sqlx::query(
                "INSERT INTO team_results (run_uid, ord, test, kind, status, mean_tokens_per_s, n_samples, doc)
                 VALUES ($1, $2, $3, $4, $5, CAST($6 AS DOUBLE PRECISION), $7, $8)",
            )
            .bind(&r.uid)
            .bind(i as i64)
            .bind(&res.test)
            .bind(&res.kind)
            .bind(&res.status)
            .bind(real(res.mean_tokens_per_s))
            .bind(res.n_samples)
            .bind(&res.doc)
            .execute(&mut *tx)
            .await
            .map_err(|e| self.err(e))?;
        }
        Ok(())
    }

    /// Add the telemetry series of a run already in the store, when it has
    /// none: a later `--with-telemetry` sync fills in what an earlier plain
    /// sync left out.
    pub async fn add_telemetry(&self, uid: &str, points: &str) -> Result<bool> {
        let n = sqlx::query(
            "INSERT INTO team_telemetry (run_uid, points) VALUES ($1, $2) ON CONFLICT (run_uid) DO NOTHING",
        )
        .bind(uid)
        .bind(points)
        .execute(&self.pool)
        .await
        .map_err(|e| self.err(e))?
        .rows_affected();
        Ok(n > 0)
    }

    /// The uids of every run measured on a machine other than `machine`.
    pub async fn uids_not_from(&self, machine: &str) -> Result<Vec<String>> {
        sqlx::query_scalar("SELECT uid FROM team_runs WHERE machine <> $1 ORDER BY started_at, uid")
            .bind(machine)
            .fetch_all(&self.pool)
            .await
            .map_err(|e| self.err(e))
    }

    /// How many runs the store holds (all machines).
    pub async fn count_runs(&self) -> Result<i64> {
        sqlx::query_scalar("SELECT COUNT(*) FROM team_runs")
            .fetch_one(&self.pool)
            .await
            .map_err(|e| self.err(e))
    }

    /// The documents of `uids`, in the order asked for; a uid the store
    /// lacks is left out.
    pub async fn docs(&self, uids: &[String]) -> Result<Vec<TeamDoc>> {
        let mut out = Vec::with_capacity(uids.len());
        for chunk in uids.chunks(200) {
            let marks = (1..=chunk.len())
                .map(|i| format!("${i}"))
                .collect::<Vec<_>>()
                .join(", ");
            let sql_runs = format!("SELECT uid, doc FROM team_runs WHERE uid IN ({marks})");
            let mut q = sqlx::query(&sql_runs);
            for u in chunk {
                q = q.bind(u);
            }
            let rows = q.fetch_all(&self.pool).await.map_err(|e| self.err(e))?;
            let sql_res = format!(
                "SELECT run_uid, doc FROM team_results WHERE run_uid IN ({marks}) ORDER BY run_uid, ord"
            );
            let mut q = sqlx::query(&sql_res);
            for u in chunk {
                q = q.bind(u);
            }
            let results = q.fetch_all(&self.pool).await.map_err(|e| self.err(e))?;
            let mut by_uid: std::collections::HashMap<String, TeamDoc> = rows
                .into_iter()
                .map(|r| {
                    let uid: String = r.get(0);
                    let doc: String = r.get(1);
                    (
                        uid.clone(),
                        TeamDoc {
                            uid,
                            doc,
                            results: Vec::new(),
                        },
                    )
                })
                .collect();
            for r in results {
                let uid: String = r.get(0);
                if let Some(d) = by_uid.get_mut(&uid) {
                    d.results.push(r.get(1));
                }
            }
            out.extend(chunk.iter().filter_map(|u| by_uid.remove(u)));
        }
        Ok(out)
    }

    /// The full uid of the one run whose uid starts with `prefix`.
    pub async fn resolve(&self, prefix: &str) -> Result<String> {
        let p = prefix.trim().to_ascii_lowercase();
        if p.len() < 4 || !p.chars().all(|c| c.is_ascii_hexdigit()) {
            return Err(DynoError::BadInput(format!(
                "'{prefix}' is not a team run id; give at least the first 4 hex digits of an id that `dyno runs --db {}` lists",
                self.label
            )));
        }
        let found: Vec<String> =
            sqlx::query_scalar("SELECT uid FROM team_runs WHERE uid LIKE $1 ORDER BY uid LIMIT 2")
                .bind(format!("{p}%"))
                .fetch_all(&self.pool)
                .await
                .map_err(|e| self.err(e))?;
        match found.as_slice() {
            [one] => Ok(one.clone()),
            [] => Err(DynoError::NotFound(format!(
                "no run {p} in the team store {}; `dyno runs --db {}` lists its runs",
                self.label, self.label
            ))),
            _ => Err(DynoError::BadInput(format!(
                "more than one team run starts with {p}; give more of its id"
            ))),
        }
    }

    /// The telemetry series pushed with a run, if any.
    pub async fn telemetry(&self, uid: &str) -> Result<Option<String>> {
        sqlx::query_scalar("SELECT points FROM team_telemetry WHERE run_uid = $1")
            .bind(uid)
            .fetch_optional(&self.pool)
            .await
            .map_err(|e| self.err(e))
    }

    /// Runs matching `f`, newest first, at most `limit`.
    pub async fn runs(&self, f: &TeamFilter, limit: i64) -> Result<Vec<TeamRunRow>> {
        let mut sql = String::from(
            "SELECT r.uid, r.machine, ma.cpu, ma.cores, ma.memory_bytes, ma.gpus, r.model_sha256,
                    mo.file_name, mo.name AS model_name, mo.arch, mo.quant, r.status, r.backend,
                    r.dyno_version, r.n_threads, r.n_gpu_layers, r.started_at, r.prefill_tps,
                    r.decode_tps, r.ttft_ms, r.n_prompt, r.n_gen, r.disturbed, r.doc
             FROM team_runs r
             JOIN team_machines ma ON ma.fingerprint = r.machine
             JOIN team_models mo ON mo.sha256 = r.model_sha256
             WHERE 1 = 1",
        );
        let mut binds: Vec<String> = Vec::new();
        let mut push = |sql: &mut String, cond: &str, v: String| {
            binds.push(v);
            sql.push_str(&cond.replace('?', &format!("${}", binds.len())));
        };
        if let Some(m) = &f.model {
            let m = m.trim().to_string();
            push(
                &mut sql,
                " AND (r.model_sha256 LIKE ?",
                format!("{}%", m.to_ascii_lowercase()),
            );
            push(&mut sql, " OR mo.file_name = ?", m.clone());
            push(&mut sql, " OR mo.name = ?)", m);
        }
        if let Some(q) = &f.quant {
            push(&mut sql, " AND UPPER(mo.quant) = ?", q.to_ascii_uppercase());
        }
        if let Some(b) = &f.backend {
            push(
                &mut sql,
                " AND LOWER(r.backend) = ?",
                b.to_ascii_lowercase(),
            );
        }
        if let Some(v) = &f.dyno_version {
            push(&mut sql, " AND r.dyno_version = ?", v.clone());
        }
        if let Some(m) = &f.machine {
            push(&mut sql, " AND r.machine LIKE ?", format!("{m}%"));
        }
        if f.ok_only {
            sql.push_str(" AND r.status = 'ok'");
        }
        sql.push_str(&format!(
            " ORDER BY r.started_at DESC, r.uid LIMIT {}",
            limit.max(0)
        ));
        let mut q = sqlx::query_as::<_, TeamRunRow>(&sql);
        for b in &binds {
            q = q.bind(b);
        }
        q.fetch_all(&self.pool).await.map_err(|e| self.err(e))
    }

    /// Every machine in the store with its run count.
    pub async fn machines(&self) -> Result<Vec<(TeamMachine, i64)>> {
        let rows = sqlx::query(
            "SELECT ma.fingerprint, ma.cpu, ma.cores, ma.memory_bytes, ma.os, ma.gpus,
                    (SELECT COUNT(*) FROM team_runs r WHERE r.machine = ma.fingerprint)
             FROM team_machines ma ORDER BY ma.fingerprint",
        )
        .fetch_all(&self.pool)
        .await
        .map_err(|e| self.err(e))?;
        Ok(rows
            .into_iter()
            .map(|r| {
                (
                    TeamMachine {
                        fingerprint: r.get(0),
                        cpu: r.get(1),
                        cores: r.get(2),
                        memory_bytes: r.get(3),
                        os: r.get(4),
                        gpus: r.get(5),
                    },
                    r.get(6),
                )
            })
            .collect())
    }
}

/// An optional real as text, cast back in SQL. sqlx's `Any` driver sends a
/// missing f64 to PostgreSQL as a 4-byte float, and a statement prepared
/// with that null then rejects the 8-byte value of the next run ("incorrect
/// binary data format"); text is one type whether present or not, and
/// Rust writes an f64 as the shortest text that reads back to the same
/// value, so nothing is lost.
fn real(v: Option<f64>) -> Option<String> {
    v.filter(|x| x.is_finite()).map(|x| x.to_string())
}

fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// The error's text with anything that looks like the URL's password cut
/// out: a driver may echo the URL it could not parse.
fn scrub_text(text: &str, url: &str) -> String {
    let mut t = text.to_string();
    if let Ok(u) = url::Url::parse(url.trim()) {
        if let Some(p) = u.password().filter(|p| !p.is_empty()) {
            t = t.replace(p, "***");
        }
    }
    t.replace(url.trim(), &redact(url))
}

/// The TCP address the pool will connect to, read as the driver reads the
/// URL (`?host=`, `?hostaddr=`, `?port=`, and PGHOST, PGPORT where the URL
/// is silent), with the address as a person writes it (`[::1]:5432`).
/// `None` for a Unix socket, or a URL the driver will refuse in its own
/// words.
fn knock_address(url: &str) -> Option<(String, u16, String)> {
    use std::str::FromStr;
    let o = sqlx::postgres::PgConnectOptions::from_str(url).ok()?;
    let host = o.get_host();
    if o.get_socket().is_some() || host.starts_with('/') || host.is_empty() {
        return None;
    }
    let host = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_string();
    let port = o.get_port();
    let shown = if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    };
    Some((host, port, shown))
}

/// Knock on the server's address before the pool connects: the pool retries
/// a refused connection until its 20 s are up and then says only that it
/// timed out, while a refused or unreachable address is known at once and
/// has its own remedy. A server on a Unix socket is left to the pool.
async fn probe(url: &str) -> std::result::Result<(), String> {
    let Some((host, port, shown)) = knock_address(url) else {
        return Ok(());
    };
    let knock = tokio::net::TcpStream::connect((host.as_str(), port));
    match tokio::time::timeout(Duration::from_secs(5), knock).await {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(e)) if e.kind() == std::io::ErrorKind::ConnectionRefused => Err(format!(
            "nothing is listening on {shown}; start the PostgreSQL server, or correct the host and port in the URL"
        )),
        Ok(Err(e)) => Err(format!(
            "cannot reach {shown} ({e}); check the host name and port in the URL"
        )),
        Err(_) => Err(format!(
            "{shown} did not answer within 5 s; check the host and port, and that no firewall stands between"
        )),
    }
}

/// What went wrong, in words a person can act on.
fn describe(e: &sqlx::Error) -> String {
    match e {
        sqlx::Error::Database(d) => {
            let code = d.code().unwrap_or_default();
            match code.as_ref() {
                "28P01" | "28000" => format!(
                    "the server refused the user name or password ({}); give the password in PGPASSWORD, ~/.pgpass or the URL (Dyno never saves it)",
                    d.message()
                ),
                "3D000" => format!("{}; create the database first (createdb) or name another", d.message()),
                "42501" => format!("{}; this user may read but not write the team store", d.message()),
                _ => d.message().to_string(),
            }
        }
        sqlx::Error::Io(io) => format!(
            "cannot reach the server ({io}); is it running, and is the host and port right?"
        ),
        sqlx::Error::Tls(t) => {
            format!("the TLS connection failed ({t}); check sslmode and sslrootcert in the URL")
        }
        sqlx::Error::PoolTimedOut => "the server did not answer within 20 s".to_string(),
        other => other.to_string(),
    }
}

fn connect_error(label: &str, url: &str, e: sqlx::Error) -> DynoError {
    DynoError::Team {
        store: label.to_string(),
        message: scrub_text(&describe(&e), url),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_knock_goes_where_the_driver_will_connect() {
        let at = |u: &str| knock_address(u).map(|a| a.2);
        assert_eq!(
            at("postgres://ana@db.lab:6000/team").as_deref(),
            Some("db.lab:6000")
        );
        assert_eq!(
            at("postgres://ana@db.lab/team?port=6543").as_deref(),
            Some("db.lab:6543")
        );
        assert_eq!(
            at("postgresql://ana@[::1]:7/team").as_deref(),
            Some("[::1]:7")
        );
        assert_eq!(
            at("postgres://ana@db.lab/team?hostaddr=10.0.0.7&port=5433").as_deref(),
            Some("10.0.0.7:5433")
        );
        // A Unix socket is the pool's to reach.
        assert_eq!(at("postgres://ana@%2Fvar%2Frun%2Fpostgresql/team"), None);
        assert_eq!(
            at("postgres://ana@localhost/team?host=/var/run/postgresql"),
            None
        );
    }

    #[test]
    fn a_password_never_survives_redaction() {
        assert!(tls_warning("postgres://ana:pw@db.lab/team")
            .is_some_and(|w| w.contains("sslmode=require")));
        assert!(tls_warning("postgres://ana:pw@db.lab/team?sslmode=disable").is_some());
        assert!(tls_warning("postgres://ana:pw@db.lab/team?sslmode=require").is_none());
        assert!(tls_warning("postgres://ana:pw@db.lab/team?sslmode=verify-full").is_none());
        assert!(tls_warning("postgres://ana:pw@127.0.0.1/team").is_none());
        assert!(tls_warning("postgres://ana:pw@localhost/team").is_none());
        assert!(tls_warning("sqlite:///tmp/t.db").is_none());
        let r = redact("postgres://ana:s3cret@db.lab:5432/team?sslmode=require");
        assert_eq!(r, "postgres://ana:***@db.lab:5432/team?sslmode=require");
        let r = redact("postgres://ana@db.lab/team?password=s3cret");
        assert!(!r.contains("s3cret"), "{r}");
        let saved =
            without_password("postgres://ana:s3cret@db.lab/team?password=x&sslmode=require")
                .unwrap();
        assert_eq!(saved, "postgres://ana@db.lab/team?sslmode=require");
        assert!(is_team_url("postgresql://h/db") && is_team_url("sqlite:///tmp/t.db"));
        assert!(!is_team_url("/home/ana/dyno.db"));
    }
}
