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

use std::future::Future;
use std::mem::ManuallyDrop;
use std::path::Path;

use dyno::error::Result;
use dyno::store::Store;
use tokio::runtime::Runtime;
use tokio::sync::OnceCell;

use crate::error::{AppError, AppResult};

pub struct Core {
    /// One worker thread drives the I/O and the timers (the pool's upkeep,
    /// the hub's sockets); each command's future runs on the blocking thread
    /// that called [`Core::run`], so a slow one (a card rendered, a report
    /// built) never holds up another. Never dropped: dropping a runtime
    /// inside Tauri's async context panics, and it ends with the process.
    rt: std::result::Result<ManuallyDrop<Runtime>, String>,
    store: OnceCell<Store>,
}

impl Default for Core {
    fn default() -> Core {
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
        }
    }
}

impl Core {
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
    /// caller.
    pub async fn store(&self, db: &Path) -> Result<&Store> {
        self.store
            .get_or_try_init(|| dyno::app::open_store(db))
            .await
    }
}
