//! Telemetry readings of a run (one row per reading, tagged with the test
//! in progress), written in batches and read back in time order.

use sqlx::FromRow;

use super::{DbResult, Store};
use crate::error::Result;
use crate::telemetry::{Phase, Reading};

/// A `telemetry` row as read back; the sampler's unsigned figures are
/// stored as SQLite integers.
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

impl Store {
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
        let mut tx = self.pool.begin().await.db(self)?;
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
            .db(self)?;
        }
        tx.commit().await.db(self)
    }

    /// A run's telemetry in time order, each reading with its result id.
    pub async fn telemetry(&self, run_id: i64) -> Result<Vec<(Option<i64>, Reading)>> {
        let rows: Vec<TelemetryRow> =
            sqlx::query_as("SELECT * FROM telemetry WHERE run_id = ? ORDER BY t_ms")
                .bind(run_id)
                .fetch_all(&self.pool)
                .await
                .db(self)?;
        Ok(rows.into_iter().map(TelemetryRow::into_reading).collect())
    }
}
