//! The orchestrator: runs a plan through worker processes, one per model
//! load, and commits every sample to the store as soon as it arrives.
//!
//! A worker that fails a test cleanly goes on by itself. One that crashes,
//! aborts, hangs or runs out of memory is recorded against the run it was
//! measuring, and a fresh worker takes the runs that had not started. Only a
//! cancel stops the whole benchmark.

use std::path::Path;
use std::time::{Duration, Instant};

use super::plan::BenchRequest;
use super::recorder::Recorder;
use super::{BenchEvent, Reporter};
use crate::error::{DynoError, Result};
use crate::model::{self, ModelInfo};
use crate::store::Store;
use crate::telemetry::cooldown::{still_warm, CooldownEnd, CooldownRecord, Margins, Thermal};
use crate::vocab::RunConfig;
use crate::worker::client::{Cancel, WorkerOptions};
use crate::worker::protocol::MemoryCheck;

/// What a benchmark needs besides its plan.
pub struct BenchContext<'a> {
    pub store: &'a Store,
    pub machine_id: i64,
    pub sweep_id: Option<i64>,
    pub worker: WorkerOptions,
    pub cancel: Cancel,
    /// Sample CPU, memory, energy and GPUs alongside every run.
    pub telemetry: bool,
    /// Refuse a model or a test whose estimated memory exceeds what is free
    /// (see [`crate::model::memory`]).
    pub memory_check: bool,
    /// `--cooldown`: wait for idle temperatures and clocks before each
    /// model load after the first.
    pub cooldown: Option<Cooldown>,
}

/// The cool-down's limit and the idle state it waits for, read before the
/// benchmark's first model load.
pub struct Cooldown {
    pub limit_s: u32,
    idle: std::sync::Mutex<Option<Thermal>>,
}

impl Cooldown {
    pub fn new(limit_s: u32) -> Cooldown {
        Cooldown {
            limit_s,
            idle: std::sync::Mutex::new(None),
        }
    }

    /// Before a worker starts: the first call reads the idle state and
    /// returns `None`; each later one waits for it (or the limit, or a
    /// cancel) and says how the wait went.
    async fn before_worker(
        &self,
        cancel: &Cancel,
        reporter: &mut dyn Reporter,
    ) -> Option<CooldownRecord> {
        let idle = {
            let mut g = self.idle.lock().unwrap_or_else(|p| p.into_inner());
            match *g {
                Some(i) => i,
                None => {
                    *g = Some(Thermal::read());
                    return None;
                }
            }
        };
        let margins = Margins::default();
        let t0 = Instant::now();
        let before = Thermal::read();
        let mut now = before;
        let mut still = still_warm(&idle, &now, &margins);
        let mut told = false;
        let end = loop {
            if idle.is_empty() || now.is_empty() {
                break CooldownEnd::NothingToRead;
            }
            if still.is_empty() {
                break CooldownEnd::Settled;
            }
            if cancel.is_cancelled() {
                break CooldownEnd::Cancelled;
            }
            if t0.elapsed() >= Duration::from_secs(u64::from(self.limit_s)) {
                break CooldownEnd::TimeLimit;
            }
            if !told {
                reporter.event(&BenchEvent::CoolingDown {
                    limit_s: self.limit_s,
                    still: &still,
                });
                told = true;
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
            now = Thermal::read();
            still = still_warm(&idle, &now, &margins);
        };
        Some(CooldownRecord {
            waited_ms: t0.elapsed().as_secs_f64() * 1e3,
            limit_s: self.limit_s,
            end,
            idle,
            before,
            after: now,
            still: if end == CooldownEnd::TimeLimit {
                still
            } else {
                Vec::new()
            },
        })
    }
}

/// A model file described, hashed and registered in the store.
#[derive(Debug, Clone)]
pub struct PreparedModel {
    pub info: ModelInfo,
    pub model_id: i64,
    /// Its header, kept for the prediction each run stores before it is
    /// measured.
    pub header: std::sync::Arc<crate::model::gguf::Header>,
}

/// Describe a model from its header, hash it (reusing the stored digest when
/// path, size and modification time are unchanged) and register it.
pub async fn prepare_model(store: &Store, path: &Path) -> Result<PreparedModel> {
    let (mut info, header) = model::inspect_with_header(path)?;
    let io_err = |e| DynoError::io(format!("cannot read {}", path.display()), e);
    let (size, mtime_ns) = model::file_stamp(path).map_err(io_err)?;
    info.sha256 = match store.cached_sha256(path, size, mtime_ns).await? {
        Some(s) => s,
        None => {
            let p = path.to_path_buf();
            tokio::task::spawn_blocking(move || model::sha256_file(&p))
                .await
                .map_err(|e| DynoError::Worker(format!("hashing thread failed: {e}")))?
                .map_err(io_err)?
        }
    };
    let model_id = store.upsert_model(&info, mtime_ns).await?;
    let shape = crate::model::shape::ModelShape::of(&header);
    store
        .set_model_shape(
            model_id,
            &serde_json::to_string(&shape).expect("a shape serialises"),
        )
        .await?;
    Ok(PreparedModel {
        info,
        model_id,
        header: std::sync::Arc::new(header),
    })
}

/// Run ids made so far, and whether the user cancelled.
#[derive(Debug, Default, Clone)]
pub struct BenchOutcome {
    pub run_ids: Vec<i64>,
    pub cancelled: bool,
}

/// Run every configuration of `req` on one model.
pub async fn run_model(
    ctx: &BenchContext<'_>,
    model: &PreparedModel,
    req: &BenchRequest,
    reporter: &mut dyn Reporter,
    out: &mut BenchOutcome,
) -> Result<()> {
    for group in req.groups() {
        run_all(ctx, model, group.runs.iter().collect(), req, reporter, out).await?;
        if out.cancelled {
            return Ok(());
        }
    }
    Ok(())
}

/// Run `pending` (one model load), starting a fresh worker for the runs a
/// crashed one left, until all are done or the user cancels.
async fn run_all(
    ctx: &BenchContext<'_>,
    model: &PreparedModel,
    mut pending: Vec<&RunConfig>,
    req: &BenchRequest,
    reporter: &mut dyn Reporter,
    out: &mut BenchOutcome,
) -> Result<()> {
    while !pending.is_empty() {
        if ctx.cancel.is_cancelled() {
            out.cancelled = true;
            return Ok(());
        }
        pending = run_worker(ctx, model, &pending, req, reporter, out).await?;
    }
    Ok(())
}

/// Measure `config` once more on `model`: a stored run's configuration cut
/// down to the tests to repeat (`dyno bench --retry-disturbed`). It is a
/// run of its own, so the first measurement is kept beside it.
pub async fn run_config(
    ctx: &BenchContext<'_>,
    model: &PreparedModel,
    config: &RunConfig,
    req: &BenchRequest,
    reporter: &mut dyn Reporter,
    out: &mut BenchOutcome,
) -> Result<()> {
    run_all(ctx, model, vec![config], req, reporter, out).await
}

/// One worker over `runs`, with its telemetry. Returns the runs left to do
/// by a fresh worker (those not started when this one crashed); empty when
/// nothing is left.
async fn run_worker<'c>(
    ctx: &BenchContext<'_>,
    model: &PreparedModel,
    runs: &[&'c RunConfig],
    req: &BenchRequest,
    reporter: &mut dyn Reporter,
    out: &mut BenchOutcome,
) -> Result<Vec<&'c RunConfig>> {
    let cooled = match &ctx.cooldown {
        Some(c) => c.before_worker(&ctx.cancel, reporter).await,
        None => None,
    };
    let mut rec = Recorder::start(ctx.telemetry);
    rec.set_sustained(req.sustain_s.is_some());
    rec.set_cooldown(cooled);
    let left = super::supervisor::supervise(ctx, model, runs, req, reporter, out, &mut rec).await;
    // Store the last readings whatever happened; a store error in the run
    // itself is the one to report.
    let flushed = rec.finish(ctx.store).await;
    let left = left?;
    flushed?;
    Ok(left)
}

/// Estimate what loading `model` for `runs` takes against free memory (and
/// free GPU memory when layers go to an NVIDIA GPU). `Err` says why it will
/// not fit and what to change; `Ok` gives the profile and the bytes left for
/// each test's context, which the worker checks test by test.
pub(super) fn check_memory(
    model: &PreparedModel,
    runs: &[&RunConfig],
) -> std::result::Result<Option<MemoryCheck>, String> {
    use crate::model::memory::Budget;
    use crate::vocab::MemoryProfile;
    let Ok(profile) = MemoryProfile::read(&model.info.path) else {
        // The header was read moments ago; if it cannot be now, the load
        // will say why.
        return Ok(None);
    };
    let budget = Budget::now()?;
    if let Some(why) = profile.refuse_load(&model.info.file_name, &budget) {
        return Err(why);
    }
    // `--fit` sizes the offload itself and `--device none` uses no GPU. NVML's
    // free memory is the sum over all GPUs, so the check only holds when
    // llama.cpp may spread layers over all of them (no device named, split
    // by layer).
    let m = &runs[0].model;
    // Experts or tensors placed by hand leave the GPU part of the model
    // smaller than the layer count says, by an amount only the load knows.
    let gpu_in_use = m.fit_margin_mib.is_none()
        && m.devices.is_none()
        && m.split_mode == crate::vocab::SplitMode::Layer
        && m.n_cpu_moe == 0
        && m.tensor_overrides.is_empty();
    if cfg!(feature = "cuda") && gpu_in_use {
        if let Some(free) = crate::telemetry::gpu::free_vram_bytes() {
            let ngl = runs[0]
                .model
                .n_gpu_layers
                .map_or(profile.n_layers + 1, u64::from);
            let (kv, compute) = runs
                .iter()
                .flat_map(|r| r.jobs())
                // With --nkvo 1 the KV cache stays in host memory.
                .map(|j| {
                    let (kv, compute) = profile.context_bytes(&j.test, &j.ctx);
                    (if j.ctx.no_kv_offload { 0 } else { kv }, compute)
                })
                .max_by_key(|(k, c)| k.saturating_add(*c))
                .unwrap_or((0, 0));
            let need = profile.gpu_bytes(ngl, kv, compute);
            if ngl > 0 && need > free {
                let fit = profile.layers_that_fit(free, kv, compute);
                return Err(format!(
                    "{} with {ngl} layers on the GPU needs about {} of GPU memory but {} is free; \
                     offload fewer layers (--ngl {fit} should fit), pick a smaller level, \
                     or pass --no-memory-check to try anyway",
                    model.info.file_name,
                    crate::units::human_bytes(need),
                    crate::units::human_bytes(free),
                ));
            }
        }
    }
    let left = budget.bytes.saturating_sub(profile.load_bytes());
    Ok(Some(MemoryCheck { profile, left }))
}
