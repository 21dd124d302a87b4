//! What a benchmark's runner ([`super::run`]) and its supervisor
//! ([`super::supervisor`]) both need: the benchmark's context, a prepared
//! model, the outcome, and the memory check before a load. Kept apart so the
//! runner calls the supervisor and neither imports the other's types.

use std::time::{Duration, Instant};

use super::{BenchEvent, Reporter};
use crate::model::ModelInfo;
use crate::store::Store;
use crate::telemetry::cooldown::{still_warm, CooldownEnd, CooldownRecord, Margins, Thermal};
use crate::vocab::RunConfig;
use crate::worker::client::{Cancel, Launch};
use crate::worker::protocol::MemoryCheck;

/// What a benchmark needs besides its plan.
pub struct BenchContext<'a> {
    pub store: &'a Store,
    pub machine_id: i64,
    pub sweep_id: Option<i64>,
    /// Starts the worker each model load is measured in.
    pub worker: std::sync::Arc<dyn Launch>,
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
    pub(super) async fn before_worker(
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

/// Run ids made so far, and whether the user cancelled.
#[derive(Debug, Default, Clone)]
pub struct BenchOutcome {
    pub run_ids: Vec<i64>,
    pub cancelled: bool,
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
