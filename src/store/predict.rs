//! What the speed prediction reads and writes: the shapes of stored models,
//! this machine's clean measurements to calibrate on, the prediction made
//! before each run, and measured quality by file digest.

use sqlx::FromRow;

use super::doc::{text, Doc};
use super::{DbResult, Store};
use crate::error::Result;
use crate::model::shape::ModelShape;
use crate::telemetry::disturbance::Disturbance;
use crate::vocab::prediction::RunPrediction;
use crate::vocab::{Offload, RunConfig, TestKind};

/// One clean, finished prefill or decode test of a run on one machine, with
/// what is needed to fit rates to it.
#[derive(Debug, Clone, FromRow)]
pub struct CalibrationRow {
    pub run_id: i64,
    pub model_id: i64,
    pub sha256: String,
    /// For a twin: the real file it stands for.
    pub twin_of_sha256: Option<String>,
    /// What the file's synthetic weights stand for, if they are synthetic.
    pub synthetic: Option<String>,
    pub path: String,
    pub quant: String,
    #[sqlx(rename = "shape_json", try_from = "Option<String>")]
    pub shape: Doc<ModelShape>,
    pub backend: Option<String>,
    pub n_threads: i64,
    pub n_gpu_layers: Option<i64>,
    #[sqlx(rename = "offload_json", try_from = "Option<String>")]
    pub offload: Doc<Offload>,
    /// The run's plan, for its tensor placement.
    #[sqlx(rename = "config_json", try_from = "Option<String>")]
    pub config: Doc<RunConfig>,
    #[sqlx(try_from = "String")]
    pub kind: TestKind,
    pub n_prompt: i64,
    pub n_gen: i64,
    pub n_depth: i64,
    pub mean_tokens_per_s: f64,
    #[sqlx(rename = "disturbance_json", try_from = "Option<String>")]
    pub disturbance: Doc<Disturbance>,
}

/// A run that carries the prediction made before it, with one of its
/// measured tests.
#[derive(Debug, Clone, FromRow)]
pub struct PredictedResultRow {
    pub run_id: i64,
    #[sqlx(rename = "prediction_json", try_from = "Option<String>")]
    pub prediction: Doc<RunPrediction>,
    pub peak_rss_bytes: Option<i64>,
    pub test: String,
    #[sqlx(try_from = "String")]
    pub kind: TestKind,
    pub n_prompt: i64,
    pub n_gen: i64,
    pub n_depth: i64,
    pub mean_tokens_per_s: f64,
    /// Other programs or an unsteady machine disturbed this figure.
    pub disturbed: bool,
}

impl Store {
    /// Keep a model's shape (see `crate::model::shape`).
    pub async fn set_model_shape(&self, model_id: i64, shape: &ModelShape) -> Result<()> {
        sqlx::query("UPDATE models SET shape_json = ? WHERE id = ?")
            .bind(text(shape))
            .bind(model_id)
            .execute(&self.pool)
            .await
            .db(self)?;
        Ok(())
    }

    /// Every finished prefill (`prompt`) and decode (`gen`) test measured on
    /// `machine_id` with one sequence, sustained decodes left out. Disturbed
    /// results come back with their verdict for the caller to drop.
    pub async fn calibration_rows(&self, machine_id: i64) -> Result<Vec<CalibrationRow>> {
        sqlx::query_as(
            "SELECT r.id AS run_id, m.id AS model_id, m.sha256, m.twin_of_sha256, m.synthetic, m.path, m.quant, m.shape_json,
                    r.backend, r.n_threads, r.n_gpu_layers, r.offload_json, r.config_json,
                    res.kind, res.n_prompt, res.n_gen, res.n_depth, res.mean_tokens_per_s,
                    res.disturbance_json
             FROM results res JOIN runs r ON r.id = res.run_id JOIN models m ON m.id = r.model_id
             WHERE r.machine_id = ? AND res.status = 'ok' AND res.n_parallel <= 1
               AND res.kind IN ('prompt', 'gen') AND res.sustain_json IS NULL
               AND res.mean_tokens_per_s > 0
             ORDER BY r.id, res.id",
        )
        .bind(machine_id)
        .fetch_all(&self.pool)
        .await
        .db(self)
    }

    /// Keep the prediction made for a run before it was measured.
    pub async fn set_run_prediction(&self, run_id: i64, prediction: &RunPrediction) -> Result<()> {
        sqlx::query("UPDATE runs SET prediction_json = ? WHERE id = ?")
            .bind(text(prediction))
            .bind(run_id)
            .execute(&self.pool)
            .await
            .db(self)?;
        Ok(())
    }

    /// Every finished test of every run that stored a prediction.
    pub async fn predicted_results(&self) -> Result<Vec<PredictedResultRow>> {
        sqlx::query_as(
            "SELECT r.id AS run_id, r.prediction_json, r.peak_rss_bytes, res.test, res.kind,
                    res.n_prompt, res.n_gen, res.n_depth, res.mean_tokens_per_s,
                    CASE WHEN json_valid(res.disturbance_json)
                         THEN COALESCE(json_extract(res.disturbance_json, '$.disturbed'), 0) ELSE 0 END AS disturbed
             FROM results res JOIN runs r ON r.id = res.run_id
             WHERE r.prediction_json IS NOT NULL AND res.status = 'ok'
               AND res.mean_tokens_per_s > 0 AND res.n_parallel <= 1
               AND res.sustain_json IS NULL
             ORDER BY r.id, res.id",
        )
        .fetch_all(&self.pool)
        .await
        .db(self)
    }

    /// The mean KLD measured for a file (by sha256) against its sweep's
    /// reference, the most recent when there are several.
    pub async fn measured_kld(&self, sha256: &str) -> Result<Option<f64>> {
        sqlx::query_scalar(
            "SELECT kld_mean FROM quality WHERE model_sha256 = ? AND model_sha256 != reference_sha256
             ORDER BY id DESC LIMIT 1",
        )
        .bind(sha256)
        .fetch_optional(&self.pool)
        .await
        .db(self)
    }
}
