//! SQLite storage through sqlx. All SQL lives here.
//!
//! WAL mode and a busy timeout let several Dyno processes (two CLIs, or the
//! CLI and the app) write one database at once. Every result is committed as
//! soon as it is measured, so a crash loses at most the test in flight.
//!
//! This file opens the database (WAL, migrations) and holds the [`Store`];
//! the queries live beside the tables they touch: [`runs`] (runs and their
//! results), [`telemetry`], [`machines`], [`models`], [`sweeps`] (with their
//! levels and quality figures), [`hub`] (downloads and model folders),
//! [`settings`], [`list`] (the light queries of the Results view),
//! [`import`] (runs from shared files), [`owner`] (the lock a measuring
//! process holds) and [`reap`] (runs and sweeps left behind by a process
//! that died).
//!
//! The store speaks only its own types and the vocabulary below it: what it
//! stores arrives as its insert structs ([`NewRun`], [`WorkerFacts`],
//! [`ImportedRun`], ...), which the layers above fill in.

use std::path::{Path, PathBuf};
use std::time::Duration;

use sqlx::sqlite::{SqliteConnectOptions, SqlitePoolOptions, SqliteSynchronous};
use sqlx::SqlitePool;

use crate::error::{DynoError, Result};

mod doc;
mod hub;
mod import;
mod list;
mod machines;
mod models;
mod owner;
mod predict;
mod reap;
mod runs;
mod serve;
mod settings;
mod sweeps;
mod sync;
pub mod team;
mod telemetry;

pub use doc::Doc;
pub use import::{ImportedResult, ImportedRun};
pub use list::{HeadlineRow, MachineLabelRow, RunListRow};
pub use machines::MachineRow;
pub use models::ModelRow;
pub use predict::{CalibrationRow, PredictedResultRow};
pub use runs::{NewRun, ResultRow, RunRow, WorkerFacts};
pub use serve::{NewServerResult, NewServerRun, ServerResultRow, ServerRunRow};
pub use sweeps::{LevelRow, QualityKey, QualityRow, SweepRow};

static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations");

/// Where the database lives unless `--db` or `DYNO_DB` says otherwise: the
/// platform data directory (`~/.local/share/dyno/dyno.db` on Linux).
pub fn default_db_path() -> PathBuf {
    directories::ProjectDirs::from("", "", "dyno")
        .map(|d| d.data_dir().join("dyno.db"))
        .unwrap_or_else(|| PathBuf::from("dyno.db"))
}

/// A name no other process or machine picks: this process's id, a value
/// the OS seeds at random for each process (std's hasher keys), and the
/// time, in hex. For lock files, temporary files and store ids; not a
/// secret.
pub fn unique_id() -> String {
    use std::hash::BuildHasher;
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    let random = std::collections::hash_map::RandomState::new().hash_one(nanos);
    format!("{:x}-{random:016x}-{nanos:x}", std::process::id())
}

pub fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

#[derive(Clone)]
pub struct Store {
    pool: SqlitePool,
    path: PathBuf,
}

/// Every query's error becomes [`DynoError::Store`] naming the database
/// file, so a failure says which file to look at. One call, `.db(self)?`,
/// instead of a closure at the end of every query.
trait DbResult<T> {
    fn db(self, store: &Store) -> Result<T>;
}

impl<T> DbResult<T> for std::result::Result<T, sqlx::Error> {
    fn db(self, store: &Store) -> Result<T> {
        self.map_err(|source| DynoError::Store {
            path: store.path.clone(),
            source,
        })
    }
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

/// Refuse a database whose schema is newer than this build's, before any
/// write: sqlx's migrator would fail on it too, but only after switching the
/// journal mode and touching its table, and with a message about a missing
/// migration rather than what the user must do. A new or empty file has no
/// migrations table and passes.
async fn refuse_newer(pool: &sqlx::SqlitePool, path: &Path) -> Result<()> {
    let store_err = |source| DynoError::Store {
        path: path.to_path_buf(),
        source,
    };
    let has_table: bool = sqlx::query_scalar(
        "SELECT COUNT(*) > 0 FROM sqlite_master WHERE type = 'table' AND name = '_sqlx_migrations'",
    )
    .fetch_one(pool)
    .await
    .map_err(store_err)?;
    if !has_table {
        return Ok(());
    }
    let have: Option<i64> = sqlx::query_scalar("SELECT MAX(version) FROM _sqlx_migrations")
        .fetch_one(pool)
        .await
        .map_err(store_err)?;
    let known = MIGRATOR.iter().map(|m| m.version).max().unwrap_or(0);
    match have {
        Some(have) if have > known => Err(DynoError::NewerDatabase {
            path: path.to_path_buf(),
            have,
            known,
        }),
        _ => Ok(()),
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
        refuse_newer(&pool, path).await?;
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

    /// `PRAGMA integrity_check`; "ok" on a healthy database.
    pub async fn integrity_check(&self) -> Result<String> {
        sqlx::query_scalar("PRAGMA integrity_check")
            .fetch_one(&self.pool)
            .await
            .db(self)
    }

    pub async fn close(self) {
        self.pool.close().await;
    }
}
