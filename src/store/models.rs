//! Model files: identity (sha256, with the path, size and mtime that let a
//! file skip hashing again) and the GGUF facts a report shows.

use std::path::Path;

use sqlx::FromRow;

use super::doc::Doc;
use super::{now, DbResult, Store};
use crate::error::Result;
use crate::model::shape::ModelShape;
use crate::model::ModelInfo;

/// A model file as stored.
#[derive(Debug, Clone, FromRow)]
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
    /// [`ModelInfo::synthetic`].
    pub synthetic: Option<String>,
    /// [`ModelInfo::twin_of_sha256`].
    pub twin_of_sha256: Option<String>,
    /// Its shape, stored when it was first benchmarked (absent for models
    /// stored before shapes were kept).
    #[sqlx(rename = "shape_json", try_from = "Option<String>")]
    pub shape: Doc<ModelShape>,
}

impl Store {
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
        .db(self)
    }

    /// The id of this file's row (path and sha256), added if new; a stored
    /// row only takes the new mtime.
    pub async fn upsert_model(&self, m: &ModelInfo, mtime_ns: i64) -> Result<i64> {
        sqlx::query_scalar(
            "INSERT INTO models (sha256, path, file_name, arch, name, quant, size_bytes, weight_bytes, n_params,
                                 n_layers, context_length, gguf_version, file_mtime_ns, created_at, synthetic,
                                 twin_of_sha256)
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
             ON CONFLICT (path, sha256) DO UPDATE SET file_mtime_ns = excluded.file_mtime_ns,
                                                      synthetic = excluded.synthetic,
                                                      twin_of_sha256 = excluded.twin_of_sha256
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
        .bind(&m.synthetic)
        .bind(&m.twin_of_sha256)
        .fetch_one(&self.pool)
        .await
        .db(self)
    }

    pub async fn model(&self, id: i64) -> Result<ModelRow> {
        sqlx::query_as("SELECT * FROM models WHERE id = ?")
            .bind(id)
            .fetch_one(&self.pool)
            .await
            .db(self)
    }
}
