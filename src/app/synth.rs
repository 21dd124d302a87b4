//! `dyno synth`: a model file with another file's header (or that header
//! resized to another shape) and synthetic weights ([`crate::model::synth`]
//! says how the values are chosen and why, [`crate::model::reshape`] how a
//! header is resized).
//!
//! The header is prepared and checked here, so bad input is refused before
//! anything starts; the weights are quantised and written by a worker,
//! because ggml's quantisers abort the process on what they do not expect.
//! The output is written under a `.partial` name and renamed when complete,
//! so a full disk, an error or a kill leaves no file that looks like a model.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;
use tokio::sync::mpsc;

use crate::error::{DynoError, Result};
use crate::model::gguf;
use crate::model::reshape::ShapeRequest;
use crate::model::synth::{self, PrepareError, Prepared, SynthStats, TensorStat};
use crate::worker::client::{self, Cancel, WorkerOptions};
use crate::worker::protocol::{Event, SynthPlan, WorkerRequest};

/// What `dyno synth` wrote (or, with `dry_run`, would write).
#[derive(Debug, Clone, Serialize)]
pub struct SynthOutcome {
    pub source: PathBuf,
    pub path: PathBuf,
    pub arch: String,
    pub seed: u64,
    /// The shape asked for (`llama-3.1-8b Q4_0`); absent for `--like` alone,
    /// whose header is the source's byte for byte.
    pub shape: Option<String>,
    /// Parameters, and bytes of tensor data (what llama.cpp calls the
    /// model's size).
    pub n_params: u64,
    pub weight_bytes: u64,
    pub file_bytes: u64,
    /// Absent for a dry run.
    pub stats: Option<SynthStats>,
}

/// What to write.
#[derive(Debug, Clone)]
pub struct SynthRequest {
    pub like: PathBuf,
    pub shape: Option<ShapeRequest>,
    pub out: PathBuf,
    pub seed: u64,
    pub force: bool,
    /// Prepare and check the header, write nothing.
    pub dry_run: bool,
}

fn prepared(like: &Path, shape: Option<&ShapeRequest>, seed: u64) -> Result<Prepared> {
    synth::prepare(like, shape, seed).map_err(|e| match e {
        PrepareError::Read(source) => DynoError::BadModel {
            path: like.to_path_buf(),
            source,
        },
        PrepareError::Refused(why) => DynoError::BadInput(why),
    })
}

/// Prepare the header, check the output can be written, and have a worker
/// write the file. `progress` hears bytes written and the total.
pub async fn synth(
    req: &SynthRequest,
    cancel: &Cancel,
    mut progress: impl FnMut(u64, u64),
) -> Result<SynthOutcome> {
    let p = prepared(&req.like, req.shape.as_ref(), req.seed)?;
    let h = &p.header;
    let mut outcome = SynthOutcome {
        source: req.like.clone(),
        path: req.out.clone(),
        arch: h.get_str("general.architecture").unwrap_or_default().into(),
        seed: req.seed,
        shape: p.shape_label.clone(),
        n_params: h.tensors.iter().map(|t| t.n_elements).sum(),
        weight_bytes: h.tensors.iter().map(|t| t.n_bytes).sum(),
        file_bytes: h.file_size,
        stats: None,
    };
    if req.dry_run {
        return Ok(outcome);
    }
    if req.out.exists() && !req.force {
        return Err(DynoError::Exists(req.out.clone()));
    }
    let dir = match req.out.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    if !dir.is_dir() {
        return Err(DynoError::BadInput(format!(
            "{}: no such folder; create it first or choose another output path",
            dir.display()
        )));
    }
    let full = |free: Option<u64>| {
        DynoError::BadInput(format!(
            "{} has {} free and the synthetic file needs {}; free some space or write it elsewhere with -o",
            dir.display(),
            free.map_or("too little".into(), crate::units::human_bytes),
            crate::units::human_bytes(h.file_size)
        ))
    };
    if let Some(free) = crate::quantize::free_space(&dir).filter(|&f| f < h.file_size) {
        return Err(full(Some(free)));
    }
    let partial = crate::quantize::partial_path(&req.out);
    let _ = std::fs::remove_file(&partial);
    let opts = WorkerOptions::current(Duration::from_secs(60))
        .map_err(|e| DynoError::io("cannot find Dyno's executable to start a worker", e))?;
    let (tx, mut rx) = mpsc::unbounded_channel();
    let plan = WorkerRequest::Synth(SynthPlan {
        like: req.like.clone(),
        shape: req.shape.clone(),
        output: partial.clone(),
        seed: req.seed,
    });
    let handle = tokio::spawn(client::run(plan, opts, cancel.clone(), tx));
    let mut stats = None;
    let mut disk_full = false;
    while let Some(ev) = rx.recv().await {
        match ev {
            Event::Progress { done, total } => progress(done, total),
            Event::Synthesised { stats: s } => stats = Some(s),
            Event::Fatal { code, .. } => {
                disk_full = code == crate::vocab::failure::FailureCode::DiskFull
            }
            _ => {}
        }
    }
    let ended = handle
        .await
        .map_err(|e| DynoError::Internal(format!("the synth task failed: {e}")))?;
    let failure = ended.failure("synthesiser");
    let renamed = match (failure, stats) {
        (None, Some(s)) => std::fs::rename(&partial, &req.out)
            .map(|_| s)
            .map_err(|e| {
                DynoError::BadInput(format!("cannot move {} into place: {e}", partial.display()))
            }),
        (Some(_), _) if disk_full => Err(DynoError::BadInput(format!(
            "the disk filled up while writing {} ({} needed); nothing was kept. Free some space or write it elsewhere with -o",
            req.out.display(),
            crate::units::human_bytes(h.file_size)
        ))),
        (Some(f), _) => Err(DynoError::BadInput(format!(
            "writing {}: {}; nothing was kept",
            req.out.display(),
            f.message
        ))),
        (None, None) => Err(DynoError::Internal(
            "the synthesiser ended without reporting its file".into(),
        )),
    };
    match renamed {
        Ok(s) => {
            outcome.stats = Some(s);
            Ok(outcome)
        }
        Err(e) => {
            // Never leave half a model where a later run could take it.
            let _ = std::fs::remove_file(&partial);
            Err(e)
        }
    }
}

/// Every tensor's value statistics (`dyno synth --stats FILE`), measured by
/// a worker (dequantising is ggml's).
pub async fn stats(path: &Path) -> Result<Vec<TensorStat>> {
    // A missing or broken file gets the usual message before a worker starts.
    gguf::read_header(path).map_err(|source| DynoError::BadModel {
        path: path.to_path_buf(),
        source,
    })?;
    let opts = WorkerOptions::current(Duration::from_secs(300))
        .map_err(|e| DynoError::io("cannot find Dyno's executable to start a worker", e))?;
    let (tx, mut rx) = mpsc::unbounded_channel();
    let plan = WorkerRequest::TensorStats {
        path: path.to_path_buf(),
    };
    let handle = tokio::spawn(client::run(plan, opts, Cancel::default(), tx));
    let mut stats = None;
    while let Some(ev) = rx.recv().await {
        if let Event::TensorStats { stats: s } = ev {
            stats = Some(s);
        }
    }
    let ended = handle
        .await
        .map_err(|e| DynoError::Internal(format!("the statistics task failed: {e}")))?;
    match (ended.failure("statistics worker"), stats) {
        (None, Some(s)) => Ok(s),
        (Some(f), _) => Err(DynoError::BadInput(format!(
            "{}: {}",
            path.display(),
            f.message
        ))),
        (None, None) => Err(DynoError::Internal(
            "the statistics worker ended without figures".into(),
        )),
    }
}
