//! Orphan reaping: runs, tests and sweeps left 'running' by a Dyno process
//! that died are closed, so they read as interrupted instead of forever in
//! progress. Whether an owner lives is asked of its lock ([`super::owner`]).

use super::{now, DbResult, Store};
use crate::error::Result;
use crate::vocab::status::{ResultStatus, RunStatus, SweepStatus};

impl Store {
    /// Close runs and results left 'running' by a Dyno process that no
    /// longer exists (killed, crashed, power cut). Finished tests stay;
    /// only the status changes, so the run reads as interrupted rather than
    /// forever in progress. Returns how many runs were closed.
    pub async fn close_orphaned_runs(&self) -> Result<u64> {
        let mut closed = 0;
        for id in self.orphans(Owned::Runs).await? {
            let msg = "interrupted: the Dyno process measuring this run ended before it finished; \
                       the tests it had finished are kept";
            // A test's repetitions are committed when it ends (bench::run),
            // so the test in progress has none to keep.
            let test_msg =
                "interrupted: the Dyno process measuring this test ended before the test \
                            did; a test's repetitions are saved when it ends, so run it again";
            let mut tx = self.pool.begin().await.db(self)?;
            sqlx::query("UPDATE results SET status = ?, error = ? WHERE run_id = ? AND status = ?")
                .bind(ResultStatus::Failed)
                .bind(test_msg)
                .bind(id)
                .bind(ResultStatus::Running)
                .execute(&mut *tx)
                .await
                .db(self)?;
            sqlx::query(
                "UPDATE runs SET status = ?, error_code = 'interrupted', error = ?, finished_at = ?
                 WHERE id = ? AND status = ?",
            )
            .bind(RunStatus::Failed)
            .bind(msg)
            .bind(now())
            .bind(id)
            .bind(RunStatus::Running)
            .execute(&mut *tx)
            .await
            .db(self)?;
            tx.commit().await.db(self)?;
            closed += 1;
        }
        self.close_orphaned_sweeps().await?;
        self.close_orphaned_server_runs().await?;
        Ok(closed)
    }

    /// Mark sweeps whose owning process is gone as interrupted.
    async fn close_orphaned_sweeps(&self) -> Result<()> {
        for id in self.orphans(Owned::Sweeps).await? {
            self.finish_sweep(id, SweepStatus::Interrupted).await?;
        }
        Ok(())
    }

    /// Rows of `table` still 'running' whose owning Dyno process no longer
    /// exists. Every table with an owner names its running state with the
    /// same word, so one query serves them all.
    pub(super) async fn orphans(&self, table: Owned) -> Result<Vec<i64>> {
        let sql = format!(
            "SELECT id, owner_pid, owner_host, owner_lock FROM {} WHERE status = ?",
            table.name()
        );
        let rows: Vec<OwnedRow> = sqlx::query_as(&sql)
            .bind(RunStatus::Running)
            .fetch_all(&self.pool)
            .await
            .db(self)?;
        let host = sysinfo::System::host_name();
        Ok(rows
            .into_iter()
            .filter(|(_, pid, owner_host, lock)| match lock {
                Some(token) => !super::owner::alive(&self.path, token),
                None => !legacy_alive(*pid, owner_host.as_deref(), host.as_deref()),
            })
            .map(|(id, ..)| id)
            .collect())
    }
}

/// A running row's id and owner: pid, host, lock token.
type OwnedRow = (i64, Option<i64>, Option<String>, Option<String>);

/// The tables whose rows a Dyno process owns while it works on them.
#[derive(Debug, Clone, Copy)]
pub(super) enum Owned {
    Runs,
    Sweeps,
    ServerRuns,
}

impl Owned {
    /// A fixed name, never user input, so it may be formatted into SQL.
    fn name(self) -> &'static str {
        match self {
            Owned::Runs => "runs",
            Owned::Sweeps => "sweeps",
            Owned::ServerRuns => "server_runs",
        }
    }
}

/// Whether the owner of a row written before owner locks existed (no
/// `owner_lock`) is alive: only a process on this host with its pid can be.
/// Elsewhere, and where a pid cannot be asked about, the row is an older
/// Dyno's, whose process cannot still be running after this one's upgrade in
/// all but a race, so it is closed rather than left running for ever.
fn legacy_alive(pid: Option<i64>, owner_host: Option<&str>, host: Option<&str>) -> bool {
    owner_host == host && pid.is_some_and(process_alive)
}

/// Whether a process with this id exists on this host.
fn process_alive(pid: i64) -> bool {
    #[cfg(unix)]
    {
        let Ok(pid) = libc::pid_t::try_from(pid) else {
            return false;
        };
        // Signal 0 checks existence; EPERM means it exists under another user.
        // SAFETY: kill(2) with signal 0 delivers nothing and touches no
        // memory of ours; any pid value is valid to ask about.
        let rc = unsafe { libc::kill(pid, 0) };
        rc == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
    }
    #[cfg(not(unix))]
    {
        let _ = pid;
        false
    }
}
