//! What the app keeps for its whole life: one async runtime and one open
//! store, shared by the commands that read and edit (issue [S] 5).
//!
//! Each command used to start a runtime, open a pool, run the migrations and
//! the reaper (which writes, even for a read) before its first query. Now the
//! store is opened once, by the first command that needs it, so migrations
//! and the reaper run once per start and a read is only its queries. A failed
//! open (a corrupt file, a full disk) is that command's error, and the next
//! command tries again.
//!
//! Long jobs (a benchmark, a sweep, a download, a sync, a server run, a
//! synthetic model) keep a thread, a current-thread runtime and a store of
//! their own ([`crate::jobs::on_core`]): what a benchmark spawns then runs on
//! its own thread, never beside other commands' tasks while a test is timed.
//!
//! With the reaper run once per start, a run left 'running' by a `dyno`
//! killed while the app is open would show as running until the next start.
//! So once the store is open, the reaper runs again every [`REAP_EVERY`] on
//! the core's own thread: a read of the running rows and their owners'
//! locks, and a write only when one has died. It holds still while the app
//! times a test, like a download.

use std::future::Future;
use std::mem::ManuallyDrop;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use dyno::error::Result;
use dyno::store::Store;
use tokio::runtime::Runtime;
use tokio::sync::OnceCell;

use crate::error::{AppError, AppResult};
use crate::jobs::Quiet;

/// How often runs, sweeps and server runs whose Dyno process died are looked
/// for while the app is open: soon enough that a killed `dyno bench` reads as
/// interrupted by the time someone looks, for one small query.
pub const REAP_EVERY: Duration = Duration::from_secs(15);

pub struct Core {
    /// One worker thread drives the I/O and the timers (the pool's upkeep,
    /// the hub's sockets); each command's future runs on the blocking thread
    /// that called [`Core::run`], so a slow one (a card rendered, a report
    /// built) never holds up another. Never dropped: dropping a runtime
    /// inside Tauri's async context panics, and it ends with the process.
    rt: std::result::Result<ManuallyDrop<Runtime>, String>,
    store: OnceCell<Store>,
    /// Up while the app times a test: the reaper waits.
    timing: Quiet,
    reap_every: Duration,
    reaping: AtomicBool,
}

impl Core {
    /// The core, whose reaper holds still while `timing` is up.
    pub fn new(timing: Quiet, reap_every: Duration) -> Core {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("dyno-core")
            .enable_all()
            .build()
            .map(ManuallyDrop::new)
            .map_err(|e| format!("cannot start the async runtime: {e}"));
        Core {
            rt,
            store: OnceCell::new(),
            timing,
            reap_every,
            reaping: AtomicBool::new(false),
        }
    }

    /// Run `f`'s future to the end on a blocking thread, with this
    /// runtime's drivers; its future need not be `Send`.
    pub async fn run<T, F, Fut>(&'static self, f: F) -> AppResult<T>
    where
        F: FnOnce(&'static Core) -> Fut + Send + 'static,
        Fut: Future<Output = Result<T>>,
        T: Send + 'static,
    {
        let rt = self
            .rt
            .as_ref()
            .map_err(|e| AppError::internal(e.clone()))?;
        tauri::async_runtime::spawn_blocking(move || rt.block_on(f(self)))
            .await
            .map_err(|e| AppError::internal(format!("a background task failed: {e}")))?
            .map_err(AppError::from)
    }

    /// The store at `db`, opened (migrations, then the reaper) by the first
    /// caller, who also starts the reaper's rounds.
    pub async fn store(&'static self, db: &Path) -> Result<&'static Store> {
        let store = self
            .store
            .get_or_try_init(|| dyno::app::open_store(db))
            .await?;
        if !self.reaping.swap(true, Ordering::Relaxed) {
            if let Ok(rt) = &self.rt {
                rt.spawn(self.reap_rounds(store));
            }
        }
        Ok(store)
    }

    /// Close what a dead Dyno process left running, every `reap_every`,
    /// unless a test is being timed; a failed round is logged and the next
    /// one tries again.
    async fn reap_rounds(&'static self, store: &'static Store) {
        let mut tick = tokio::time::interval(self.reap_every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        tick.tick().await; // the first tick is now: the open just reaped
        loop {
            tick.tick().await;
            if self.timing.load(Ordering::Relaxed) {
                continue;
            }
            if let Err(e) = store.close_orphaned_runs().await {
                eprintln!("dyno-app: closing runs whose Dyno process ended: {e}");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dyno::vocab::status::SweepStatus;

    /// Point a sweep's owner at a lock no process holds, as a `dyno` killed
    /// with SIGKILL leaves it.
    async fn kill_owner(db: &Path, id: i64) {
        use sqlx::Connection;
        let opts = sqlx::sqlite::SqliteConnectOptions::new().filename(db);
        let mut c = sqlx::SqliteConnection::connect_with(&opts).await.unwrap();
        sqlx::query("UPDATE sweeps SET owner_lock = '00dead' WHERE id = ?")
            .bind(id)
            .execute(&mut c)
            .await
            .unwrap();
        c.close().await.unwrap();
    }

    #[test]
    fn what_a_dead_process_left_running_is_closed_while_the_app_is_open() {
        let dir = std::env::temp_dir().join(format!("dyno-state-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let db = dir.join("dyno.db");
        let timing = Quiet::default();
        let every = Duration::from_millis(40);
        let core: &'static Core = Box::leak(Box::new(Core::new(timing.clone(), every)));
        let rt = core.rt.as_ref().unwrap();
        rt.block_on(async {
            let store = core.store(&db).await.unwrap();
            let machine = store
                .upsert_machine(&dyno::machine::Machine::detect())
                .await
                .unwrap();
            let spec = dyno::bench::sweep::SweepSpec {
                source: dyno::bench::sweep::Source::Files(Vec::new()),
                levels: None,
                request: dyno::bench::plan::BenchRequest::defaults(1),
                quality: None,
                shape_only: false,
            };
            let id = store
                .create_quant_sweep(machine, &spec, "files", "k")
                .await
                .unwrap();
            let status = || async { store.sweep(id).await.unwrap().unwrap().status };
            // Its owner (this process) lives: rounds leave it alone.
            tokio::time::sleep(every * 4).await;
            assert_eq!(status().await, Some(SweepStatus::Running));
            // Its owner dies while a test is being timed: nothing is written
            // until the timing ends.
            timing.store(true, Ordering::Relaxed);
            kill_owner(&db, id).await;
            tokio::time::sleep(every * 4).await;
            assert_eq!(status().await, Some(SweepStatus::Running));
            timing.store(false, Ordering::Relaxed);
            let t0 = std::time::Instant::now();
            while status().await == Some(SweepStatus::Running) {
                assert!(t0.elapsed() < Duration::from_secs(10), "never closed");
                tokio::time::sleep(every).await;
            }
            assert_eq!(status().await, Some(SweepStatus::Interrupted));
        });
        std::fs::remove_dir_all(&dir).ok();
    }
}
