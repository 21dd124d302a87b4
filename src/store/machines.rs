//! Machines: the inventory a run was measured on, keyed by fingerprint,
//! with the GPUs and memory bandwidth learnt about it later.

use sqlx::FromRow;

use super::doc::{text, Doc};
use super::{now, DbResult, Store};
use crate::error::Result;
use crate::machine::Machine;
use crate::telemetry::gpu::GpuInfo;

/// A machine as stored, with what was learnt about it after the first run.
#[derive(Debug, Clone, FromRow)]
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
    /// The GPUs found when it was last inventoried.
    #[sqlx(rename = "gpus_json", try_from = "Option<String>")]
    pub gpus: Doc<Vec<GpuInfo>>,
}

impl Store {
    /// This machine's id, adding it or refreshing its OS and kernel.
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
        .db(self)?;
        sqlx::query_scalar("SELECT id FROM machines WHERE fingerprint = ?")
            .bind(&m.fingerprint)
            .fetch_one(&self.pool)
            .await
            .db(self)
    }

    /// Record the machine's GPUs as NVML describes them (JSON list).
    pub async fn set_machine_gpus(&self, machine_id: i64, gpus: &[GpuInfo]) -> Result<()> {
        sqlx::query("UPDATE machines SET gpus_json = ? WHERE id = ?")
            .bind(text(gpus))
            .bind(machine_id)
            .execute(&self.pool)
            .await
            .db(self)?;
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
        .db(self)?;
        Ok(())
    }

    pub async fn machine(&self, id: i64) -> Result<MachineRow> {
        sqlx::query_as("SELECT * FROM machines WHERE id = ?")
            .bind(id)
            .fetch_one(&self.pool)
            .await
            .db(self)
    }
}
