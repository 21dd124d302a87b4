//! Know before you download: predicted prefill and decode speed, memory fit
//! and quality loss of a model file or a hub level, from its header and this
//! machine's own stored runs.
//!
//! - [`speed`]: the rate model and its calibration on stored runs.
//! - [`quality`]: the KLD measured for the file, else a labelled prior.
//! - [`accuracy`]: predictions made before runs, held against what the runs
//!   measured.
//!
//! This module reads the store but never measures: a prediction costs a
//! header read and one query.

pub mod accuracy;
pub mod quality;
pub mod speed;

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::hub::files::Fit;
use crate::model::shape::ModelShape;
use crate::store::Store;
pub use crate::vocab::prediction::{RunPrediction, TestPrediction};
use crate::vocab::{ContextParams, FlashAttn, MemoryProfile, RunConfig, TestKind};
pub use quality::QualityGuess;
pub use speed::{Basis, Calibration, Device, Estimate, Lengths, Observation, Phase, Priors};

/// Context a fit is judged at unless the user picks one.
pub const DEFAULT_CTX: u64 = 4096;
/// Decode rate a level must reach to be advised unless the user names one:
/// a little faster than people read.
pub const DEFAULT_MIN_DECODE: f64 = 10.0;

/// What to predict for: the plan's lengths and where the layers go.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct PredictConditions {
    pub threads: u32,
    /// Layers on the GPU (0: the CPU only).
    pub gpu_layers: u64,
    pub n_prompt: u64,
    pub n_gen: u64,
    /// Context the memory fit is judged at.
    pub ctx: u64,
}

/// Memory for the model and its cache at `ctx`, against this machine.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct MemoryFit {
    pub ctx: u64,
    /// Weights plus llama.cpp's own around them.
    pub model_bytes: u64,
    /// KV cache (f16) at `ctx`.
    pub kv_bytes: u64,
    /// Compute buffers for one micro-batch at `ctx`.
    pub compute_bytes: u64,
    /// All of it, where it would live.
    pub total_bytes: u64,
    pub ram_bytes: u64,
    pub vram_bytes: u64,
    pub fit: Fit,
    /// "fits in RAM with 4k context".
    pub words: String,
}

/// A prediction for one file or level.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Prediction {
    pub level: String,
    /// The file (or first part) it is for.
    pub file: String,
    pub sha256: Option<String>,
    pub shape: ModelShape,
    pub conditions: PredictConditions,
    pub prefill: Estimate,
    pub prefill_basis: Basis,
    pub decode: Estimate,
    pub decode_basis: Basis,
    pub memory: MemoryFit,
    pub quality: QualityGuess,
}

/// Tokens in words: "4k", "32k", "512".
pub fn ctx_words(ctx: u64) -> String {
    if ctx >= 1024 && ctx.is_multiple_of(1024) {
        format!("{}k", ctx / 1024)
    } else {
        ctx.to_string()
    }
}

/// The memory a model and its context need, from its header, against the
/// machine's RAM and VRAM.
pub fn memory_fit(
    profile: &MemoryProfile,
    ctx: u64,
    gpu_layers: u64,
    (ram, vram): (u64, u64),
) -> MemoryFit {
    // llama-bench's defaults: batch 2048, micro-batch 512, flash attention
    // where the backend has it.
    let params = ContextParams {
        n_threads: 1,
        n_batch: 2048,
        n_ubatch: 512,
        flash_attn: FlashAttn::Auto,
        cache_type: "f16".into(),
        no_kv_offload: false,
    };
    let model_bytes = profile.load_bytes();
    let kv = profile.kv_bytes(ctx, "f16");
    let compute = profile.compute_bytes(ctx, &params);
    let total = model_bytes.saturating_add(kv).saturating_add(compute);
    let all_on_gpu = gpu_layers >= profile.n_layers.max(1) && vram > 0;
    let fit = if all_on_gpu && total <= vram {
        Fit::Vram
    } else if total <= ram {
        Fit::Ram
    } else {
        Fit::No
    };
    let words = match fit {
        Fit::No => format!(
            "won't fit: needs {} with {} context, this machine has {}",
            crate::units::human_bytes(total),
            ctx_words(ctx),
            crate::units::human_bytes(if all_on_gpu { vram.max(ram) } else { ram }),
        ),
        f => format!("{} with {} context", f.describe(), ctx_words(ctx)),
    };
    MemoryFit {
        ctx,
        model_bytes,
        kv_bytes: kv,
        compute_bytes: compute,
        total_bytes: total,
        ram_bytes: ram,
        vram_bytes: vram,
        fit,
        words,
    }
}

/// Everything known about one file or level, predicted.
pub struct Subject<'a> {
    pub level: &'a str,
    pub file: &'a str,
    pub sha256: Option<&'a str>,
    pub header: &'a crate::model::gguf::Header,
    pub measured_kld: Option<f64>,
}

/// Predict speed, fit and quality for `s` under `c`.
pub fn predict(
    cal: &Calibration,
    s: &Subject<'_>,
    c: PredictConditions,
    memory: (u64, u64),
) -> Prediction {
    let shape = ModelShape::of(s.header);
    let profile = MemoryProfile::of(s.header);
    let pp = Lengths {
        n_prompt: c.n_prompt,
        n_gen: 0,
        depth: 0,
    };
    let tg = Lengths {
        n_prompt: 0,
        n_gen: c.n_gen,
        depth: 0,
    };
    let (prefill, prefill_basis) =
        speed::predict_rate(cal, &shape, s.sha256, Phase::Prefill, pp, c.gpu_layers);
    let (decode, decode_basis) =
        speed::predict_rate(cal, &shape, s.sha256, Phase::Decode, tg, c.gpu_layers);
    let level = if s.level.is_empty() {
        shape.quant.clone()
    } else {
        s.level.to_string()
    };
    Prediction {
        quality: quality::guess(&level, s.measured_kld),
        memory: memory_fit(&profile, c.ctx, c.gpu_layers, memory),
        level,
        file: s.file.to_string(),
        sha256: s.sha256.map(str::to_string),
        shape,
        conditions: c,
        prefill,
        prefill_basis,
        decode,
        decode_basis,
    }
}

/// Which level to take, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Advice {
    /// The level advised, or null when none fits.
    pub level: Option<String>,
    /// The decode rate it had to reach.
    pub min_decode_tokens_per_s: f64,
    /// The reverse question: the largest level that fits and still decodes
    /// at `min_decode_tokens_per_s` or faster (null when none does).
    pub largest_fast_enough: Option<String>,
    /// The whole advice in a sentence.
    pub text: String,
}

/// The most precise level that fits and decodes at `min_decode` or faster;
/// among those whose quality loss is already negligible, the smallest
/// (beyond that point more bits only cost speed). When none is fast enough,
/// the fastest that fits, said plainly.
pub fn advise(preds: &[Prediction], min_decode: f64) -> Advice {
    let fits: Vec<&Prediction> = preds.iter().filter(|p| p.memory.fit != Fit::No).collect();
    let say = |p: &Prediction, lead: String| {
        format!(
            "{lead}: about {:.0} t/s decode ({:.0}–{:.0}), {}, typical quality loss {} ({})",
            p.decode.tokens_per_s,
            p.decode.low,
            p.decode.high,
            p.memory.words,
            p.quality.words,
            if p.quality.source == "measured" {
                "measured"
            } else {
                "a prior from another model"
            }
        )
    };
    let fast: Vec<&&Prediction> = fits
        .iter()
        .filter(|p| p.decode.tokens_per_s >= min_decode)
        .collect();
    let largest_fast_enough = fast
        .iter()
        .max_by_key(|p| p.shape.weight_bytes)
        .map(|p| p.level.clone());
    let pick = fast
        .iter()
        .filter(|p| p.quality.kld < 0.005)
        .min_by_key(|p| p.shape.weight_bytes)
        .or_else(|| {
            fast.iter()
                .min_by(|a, b| a.quality.kld.total_cmp(&b.quality.kld))
        });
    match pick {
        Some(p) => Advice {
            level: Some(p.level.clone()),
            min_decode_tokens_per_s: min_decode,
            largest_fast_enough,
            text: say(p, format!("On this machine, take {}", p.level)),
        },
        None => match fits
            .iter()
            .max_by(|a, b| a.decode.tokens_per_s.total_cmp(&b.decode.tokens_per_s))
        {
            Some(p) => Advice {
                level: Some(p.level.clone()),
                min_decode_tokens_per_s: min_decode,
                largest_fast_enough: None,
                text: say(
                    p,
                    format!(
                        "No level reaches {min_decode:.0} t/s here; the fastest that fits is {}",
                        p.level
                    ),
                ),
            },
            None => Advice {
                level: None,
                min_decode_tokens_per_s: min_decode,
                largest_fast_enough: None,
                text:
                    "No level fits this machine's memory; pick a smaller model or a shorter context"
                        .into(),
            },
        },
    }
}

/// GPU layers a plan's `n_gpu_layers` means on this build: all of them when
/// unset and the build has a GPU backend, else none.
pub fn gpu_layers_of(n_gpu_layers: Option<u32>, n_layers: u64) -> u64 {
    match n_gpu_layers {
        Some(n) => u64::from(n).min(n_layers),
        None if cfg!(any(feature = "cuda", feature = "vulkan", feature = "metal")) => n_layers,
        None => 0,
    }
}

/// This machine's calibration: its runs' observations and priors from its
/// measured bandwidth. Models stored before shapes were kept are read from
/// their files (and their shape stored) while the files exist; disturbed
/// results count only where there is no clean one.
pub async fn calibrate(store: &Store, machine_id: i64, threads: u32) -> Result<Calibration> {
    let machine = store.machine(machine_id).await?;
    let gpu_bandwidth = machine.gpus.as_ref().and_then(|g| {
        g.iter()
            .filter_map(|x| x.theoretical_bandwidth_bytes_per_s)
            .max()
            .map(|b| b as f64)
    });
    let priors = Priors {
        host_bandwidth: machine.memory_bandwidth_bytes_per_s.map(|b| b as f64),
        gpu_bandwidth,
        threads,
    };
    let rows = store.calibration_rows(machine_id).await?;
    let mut shapes: std::collections::HashMap<i64, Option<ModelShape>> = Default::default();
    let mut obs = Vec::new();
    for r in rows {
        let disturbed = r.disturbance.as_ref().is_some_and(|d| d.disturbed);
        if let std::collections::hash_map::Entry::Vacant(slot) = shapes.entry(r.model_id) {
            let shape = match r.shape.as_ref() {
                Some(s) => Some(s.clone()),
                None => {
                    let s = shape_of_file(Path::new(&r.path)).await;
                    if let Some(s) = &s {
                        store.set_model_shape(r.model_id, s).await?;
                    }
                    s
                }
            };
            slot.insert(shape);
        }
        let Some(shape) = shapes[&r.model_id].clone() else {
            continue;
        };
        let Some(device) = device_of(&r, shape.n_layers) else {
            continue;
        };
        // A twin's speed is counted as the real file's, and says so.
        let by_shape = r.twin_of_sha256.is_some();
        let synthetic_shape = r.synthetic.is_some() && !by_shape;
        obs.push(Observation {
            run_id: r.run_id,
            model_sha256: r.twin_of_sha256.unwrap_or(r.sha256),
            by_shape,
            synthetic_shape,
            level: r.quant,
            threads: u32::try_from(r.n_threads).unwrap_or(0),
            device,
            phase: if r.kind == TestKind::Prompt {
                Phase::Prefill
            } else {
                Phase::Decode
            },
            n_prompt: r.n_prompt.max(0) as u64,
            n_gen: r.n_gen.max(0) as u64,
            depth: r.n_depth.max(0) as u64,
            tokens_per_s: r.mean_tokens_per_s,
            shape,
            disturbed,
        });
    }
    Ok(Calibration::fit(&obs, priors))
}

/// A model's shape from its file, off the runtime thread; `None` when it is
/// gone or unreadable.
pub async fn shape_of_file(path: &Path) -> Option<ModelShape> {
    let p = path.to_path_buf();
    tokio::task::spawn_blocking(move || crate::model::gguf::read_model_header(&p).ok())
        .await
        .ok()
        .flatten()
        .map(|h| ModelShape::of(&h))
}

/// CPU or GPU for a stored run: all layers on one device, else `None` (a
/// partial offload mixes both and calibrates neither).
fn device_of(r: &crate::store::CalibrationRow, n_layers: u64) -> Option<Device> {
    let offload = r.offload.as_ref();
    let cpu_backend = r
        .backend
        .as_deref()
        .is_none_or(|b| b.eq_ignore_ascii_case("cpu"));
    if cpu_backend || r.n_gpu_layers == Some(0) {
        return Some(Device::Cpu);
    }
    // Experts kept on the CPU (`--n-cpu-moe`, `-ot`) split every layer they
    // touch, however many layers llama.cpp counts as offloaded. llama.cpp's
    // own count of the tensors it moved says whether any were; a run stored
    // without that report is judged by its options.
    let placed = match &offload {
        Some(o) => o.tensors_overridden.unwrap_or(0) > 0,
        None => r.config.as_ref().is_some_and(|c| c.model.places_tensors()),
    };
    if placed {
        return None;
    }
    match offload.and_then(|o| o.layers_offloaded.zip(o.layers_total)) {
        Some((done, total)) if done >= total && total > 0 => Some(Device::Gpu),
        Some((0, _)) => Some(Device::Cpu),
        Some(_) => None,
        None => (r.n_gpu_layers.unwrap_or(0) as u64 >= n_layers).then_some(Device::Gpu),
    }
}

/// Predict each prefill and decode test of `config` for a model. Tests that
/// mix phases or run several sequences are not predicted.
pub fn for_run(
    cal: &Calibration,
    header: &crate::model::gguf::Header,
    sha256: &str,
    config: &RunConfig,
) -> RunPrediction {
    let shape = ModelShape::of(header);
    let profile = MemoryProfile::of(header);
    let gpu_layers = gpu_layers_of(config.model.n_gpu_layers, shape.n_layers);
    let mut tests = Vec::new();
    let mut max_ctx = 0;
    for t in &config.tests {
        max_ctx = max_ctx.max(t.n_ctx());
        let (phase, lengths) = match t.kind {
            TestKind::Prompt => (
                Phase::Prefill,
                Lengths {
                    n_prompt: t.n_prompt.into(),
                    n_gen: 0,
                    depth: t.n_depth.into(),
                },
            ),
            TestKind::Gen => (
                Phase::Decode,
                Lengths {
                    n_prompt: 0,
                    n_gen: t.n_gen.into(),
                    depth: t.n_depth.into(),
                },
            ),
            _ => continue,
        };
        let (estimate, basis) =
            speed::predict_rate(cal, &shape, Some(sha256), phase, lengths, gpu_layers);
        tests.push(TestPrediction {
            test: t.name(),
            phase,
            estimate,
            basis,
        });
    }
    let fit = memory_fit(&profile, max_ctx.max(1), gpu_layers, (u64::MAX, 0));
    RunPrediction {
        made_at: crate::store::now(),
        tests,
        memory_bytes: fit.total_bytes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Doc;

    fn pred(level: &str, bytes: u64, tps: f64, kld: f64, fit: Fit) -> Prediction {
        let e = Estimate {
            tokens_per_s: tps,
            low: tps * 0.8,
            high: tps * 1.2,
        };
        let b = Basis {
            source: "machine".into(),
            runs: 3,
            models: 1,
            level_seen: true,
            model_seen: false,
            by_shape: false,
            text: String::new(),
        };
        Prediction {
            level: level.into(),
            file: format!("m-{level}.gguf"),
            sha256: None,
            shape: ModelShape {
                arch: "llama".into(),
                quant: level.into(),
                n_params: 0,
                n_active_params: 0,
                n_layers: 32,
                n_embd: 0,
                n_vocab: 0,
                n_expert: 0,
                n_expert_used: 0,
                context_length: None,
                weight_bytes: bytes,
                decode_bytes_per_token: bytes,
                kv_elements_per_token: 0,
                prefill_flops_per_token: 0,
                attn_width: 0,
                tensor_types: vec![],
                decode_elements: vec![],
            },
            conditions: PredictConditions {
                threads: 2,
                gpu_layers: 0,
                n_prompt: 512,
                n_gen: 128,
                ctx: 8192,
            },
            prefill: e,
            prefill_basis: b.clone(),
            decode: e,
            decode_basis: b,
            memory: MemoryFit {
                ctx: 8192,
                model_bytes: bytes,
                kv_bytes: 0,
                compute_bytes: 0,
                total_bytes: bytes,
                ram_bytes: 0,
                vram_bytes: 0,
                fit,
                words: "fits in RAM with 8k context".into(),
            },
            quality: quality::guess(level, Some(kld)),
        }
    }

    #[test]
    fn advice_takes_the_most_precise_fast_enough_level_and_stops_at_negligible_loss() {
        let ladder = vec![
            pred("F16", 16, 9.0, 0.0, Fit::Ram),
            pred("Q8_0", 8, 17.0, 0.0014, Fit::Ram),
            pred("Q6_K", 6, 22.0, 0.0055, Fit::Ram),
            pred("Q4_K_M", 4, 38.0, 0.031, Fit::Ram),
            pred("Q2_K", 2, 60.0, 0.45, Fit::Ram),
        ];
        // At 10 t/s F16 is too slow, Q8_0 is already negligible: Q8_0.
        let a = advise(&ladder, 10.0);
        assert_eq!(a.level.as_deref(), Some("Q8_0"));
        assert_eq!(a.largest_fast_enough.as_deref(), Some("Q8_0"));
        assert_eq!(
            advise(&ladder, 5.0).largest_fast_enough.as_deref(),
            Some("F16")
        );
        assert!(a
            .text
            .starts_with("On this machine, take Q8_0: about 17 t/s decode"));
        // At 30 t/s only Q4_K_M and Q2_K qualify: the more precise.
        let a = advise(&ladder, 30.0);
        assert_eq!(a.level.as_deref(), Some("Q4_K_M"));
        assert!(a.text.contains("fits in RAM with 8k context"), "{}", a.text);
        assert!(a.text.contains("typical quality loss small"), "{}", a.text);
        // Nothing reaches 100: the fastest, said so.
        let a = advise(&ladder, 100.0);
        assert_eq!(a.level.as_deref(), Some("Q2_K"));
        assert_eq!(a.largest_fast_enough, None);
        assert!(a.text.starts_with("No level reaches 100 t/s"));
        // Nothing fits.
        let none = vec![pred("F16", 16, 9.0, 0.0, Fit::No)];
        assert_eq!(advise(&none, 10.0).level, None);
    }

    #[test]
    fn the_fit_counts_the_cache_at_the_chosen_context() {
        let p = MemoryProfile {
            weight_bytes: 4 << 30,
            n_layers: 32,
            kv_elements_per_token: 32 * 2 * 1024,
            n_embd: 4096,
            n_vocab: 128_000,
            n_ff: 14336,
            n_head: 32,
        };
        let small = memory_fit(&p, 4096, 0, (16 << 30, 0));
        let big = memory_fit(&p, 131_072, 0, (16 << 30, 0));
        assert_eq!(small.kv_bytes, 32 * 2 * 1024 * 4096 * 2);
        assert_eq!(small.fit, Fit::Ram);
        assert_eq!(small.words, "fits in RAM with 4k context");
        assert_eq!(big.fit, Fit::No, "128k of cache is 16 GiB more");
        assert!(big.words.starts_with("won't fit: needs"));
        let gpu = memory_fit(&p, 4096, 32, (16 << 30, 8 << 30));
        assert_eq!(gpu.fit, Fit::Vram);
    }

    #[test]
    fn a_run_with_experts_kept_on_the_cpu_calibrates_neither_device() {
        let config = |n_cpu_moe: u32| RunConfig {
            model: crate::vocab::ModelParams {
                n_gpu_layers: Some(99),
                n_cpu_moe,
                ..Default::default()
            },
            ctx: ContextParams {
                n_threads: 4,
                n_batch: 2048,
                n_ubatch: 512,
                flash_attn: FlashAttn::Auto,
                cache_type: "f16".into(),
                no_kv_offload: false,
            },
            reps: 1,
            warmup: true,
            tests: vec![],
            sustain_s: None,
        };
        let moved = r#"{"layers_offloaded":17,"layers_total":17,"buffers":[],"fit":null,"tensors_overridden":24}"#;
        let none_moved = r#"{"layers_offloaded":17,"layers_total":17,"buffers":[],"fit":null}"#;
        let row = |config: RunConfig, backend: &str, offload: Option<&str>| {
            crate::store::CalibrationRow {
                run_id: 1,
                model_id: 1,
                sha256: "x".into(),
                twin_of_sha256: None,
                synthetic: None,
                path: "m.gguf".into(),
                quant: "Q4_K_M".into(),
                shape: Default::default(),
                backend: Some(backend.into()),
                n_threads: 4,
                n_gpu_layers: Some(99),
                offload: Doc::new(offload.map(|j| serde_json::from_str(j).unwrap())),
                config: Doc::new(Some(config)),
                kind: TestKind::Gen,
                n_prompt: 0,
                n_gen: 128,
                n_depth: 0,
                mean_tokens_per_s: 100.0,
                disturbance: Default::default(),
            }
        };
        let gpu = |config: RunConfig, offload| device_of(&row(config, "CUDA", offload), 16);
        assert_eq!(gpu(config(0), Some(none_moved)), Some(Device::Gpu));
        assert_eq!(
            gpu(config(8), Some(moved)),
            None,
            "all layers offloaded, but 8 layers' experts on the CPU"
        );
        // llama.cpp moved nothing (a dense model): one device after all.
        assert_eq!(gpu(config(8), Some(none_moved)), Some(Device::Gpu));
        // No load report: the options say it.
        assert_eq!(gpu(config(8), None), None);
        let cpu = row(config(8), "CPU", Some(moved));
        assert_eq!(device_of(&cpu, 16), Some(Device::Cpu));
    }
}
