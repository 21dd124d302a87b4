//! Server benchmarks (`dyno serve-bench`): their runs and tests.

use sqlx::FromRow;

use super::doc::{text, Doc};
use super::{now, DbResult, Store};
use crate::error::Result;
use crate::vocab::failure::FailureCode;
use crate::vocab::serve::{RequestSample, ServePlan, ServerInfo};
use crate::vocab::status::{ResultStatus, RunStatus};

#[derive(Debug, Clone, FromRow)]
pub struct ServerRunRow {
    pub id: i64,
    pub machine_id: Option<i64>,
    pub endpoint: String,
    pub server_kind: String,
    pub server_version: Option<String>,
    pub model: String,
    /// What the server said about itself; absent if the stored document no
    /// longer reads (see [`Doc`]).
    #[sqlx(rename = "server_json", try_from = "Option<String>")]
    pub server: Doc<ServerInfo>,
    #[sqlx(rename = "plan_json", try_from = "Option<String>")]
    pub plan: Doc<ServePlan>,
    pub status: RunStatus,
    pub error_code: Option<FailureCode>,
    pub error: Option<String>,
    pub owner_pid: Option<i64>,
    pub owner_host: Option<String>,
    pub dyno_version: String,
    pub started_at: String,
    pub finished_at: Option<String>,
}

#[derive(Debug, Clone, FromRow)]
pub struct ServerResultRow {
    pub id: i64,
    pub run_id: i64,
    pub test: String,
    pub n_prompt: i64,
    pub n_gen: i64,
    pub n_depth: i64,
    pub concurrency: i64,
    pub prefix_cache: bool,
    pub status: ResultStatus,
    pub error: Option<String>,
    pub wall_ms: f64,
    /// Every request the test sent, as it was timed.
    #[sqlx(rename = "requests_json", try_from = "Option<String>")]
    pub requests: Doc<Vec<RequestSample>>,
    pub created_at: String,
}

/// A server run's fixed description.
pub struct NewServerRun<'a> {
    pub machine_id: i64,
    pub endpoint: &'a str,
    pub server_kind: &'a str,
    pub server_version: Option<&'a str>,
    pub model: &'a str,
    pub server: &'a ServerInfo,
    pub plan: &'a ServePlan,
}

/// One finished test of a server run.
pub struct NewServerResult<'a> {
    pub run_id: i64,
    pub test: &'a str,
    pub n_prompt: u32,
    pub n_gen: u32,
    pub n_depth: u32,
    pub concurrency: u32,
    pub prefix_cache: bool,
    pub status: ResultStatus,
    pub error: Option<&'a str>,
    pub wall_ms: f64,
    pub requests: &'a [RequestSample],
}

impl Store {
    pub async fn create_server_run(&self, r: &NewServerRun<'_>) -> Result<i64> {
        let lock = super::owner::token(&self.path)?;
        sqlx::query_scalar(
            "INSERT INTO server_runs (machine_id, endpoint, server_kind, server_version, model, server_json,
                 plan_json, status, owner_pid, owner_host, owner_lock, dyno_version, started_at)
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
        )
        .bind(r.machine_id)
        .bind(r.endpoint)
        .bind(r.server_kind)
        .bind(r.server_version)
        .bind(r.model)
        .bind(text(r.server))
        .bind(text(r.plan))
        .bind(RunStatus::Running)
        .bind(std::process::id() as i64)
        .bind(sysinfo::System::host_name())
        .bind(lock)
        .bind(env!("CARGO_PKG_VERSION"))
        .bind(now())
        .fetch_one(&self.pool)
        .await
        .db(self)
    }

    /// Store one test with every request it sent, in one commit.
    pub async fn add_server_result(&self, r: &NewServerResult<'_>) -> Result<i64> {
        sqlx::query_scalar(
            "INSERT INTO server_results (run_id, test, n_prompt, n_gen, n_depth, concurrency, prefix_cache,
                 status, error, wall_ms, requests_json, created_at)
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
        )
        .bind(r.run_id)
        .bind(r.test)
        .bind(r.n_prompt as i64)
        .bind(r.n_gen as i64)
        .bind(r.n_depth as i64)
        .bind(r.concurrency as i64)
        .bind(r.prefix_cache)
        .bind(r.status)
        .bind(r.error)
        .bind(r.wall_ms)
        .bind(text(r.requests))
        .bind(now())
        .fetch_one(&self.pool)
        .await
        .db(self)
    }

    pub async fn finish_server_run(
        &self,
        id: i64,
        status: RunStatus,
        failure: Option<(&FailureCode, &str)>,
    ) -> Result<()> {
        sqlx::query(
            "UPDATE server_runs SET status = ?, error_code = ?, error = ?, finished_at = ? WHERE id = ?",
        )
        .bind(status)
        .bind(failure.map(|f| f.0))
        .bind(failure.map(|f| f.1))
        .bind(now())
        .bind(id)
        .execute(&self.pool)
        .await
        .db(self)?;
        Ok(())
    }

    pub async fn server_run(&self, id: i64) -> Result<Option<ServerRunRow>> {
        sqlx::query_as("SELECT * FROM server_runs WHERE id = ?")
            .bind(id)
            .fetch_optional(&self.pool)
            .await
            .db(self)
    }

    /// The newest `limit` server runs, newest first.
    pub async fn server_runs(&self, limit: i64) -> Result<Vec<ServerRunRow>> {
        sqlx::query_as("SELECT * FROM server_runs ORDER BY id DESC LIMIT ?")
            .bind(limit)
            .fetch_all(&self.pool)
            .await
            .db(self)
    }

    pub async fn server_results(&self, run_id: i64) -> Result<Vec<ServerResultRow>> {
        sqlx::query_as("SELECT * FROM server_results WHERE run_id = ? ORDER BY id")
            .bind(run_id)
            .fetch_all(&self.pool)
            .await
            .db(self)
    }

    /// Close server runs left 'running' by a Dyno process on this host
    /// that no longer exists; their finished tests are kept.
    pub(super) async fn close_orphaned_server_runs(&self) -> Result<u64> {
        let mut closed = 0;
        for id in self.orphans(super::reap::Owned::ServerRuns).await? {
            self.finish_server_run(
                id,
                RunStatus::Failed,
                Some((
                    &FailureCode::Interrupted,
                    "interrupted: the Dyno process measuring this server ended before it finished; \
                     the tests it had finished are kept",
                )),
            )
            .await?;
            closed += 1;
        }
        Ok(closed)
    }
}
