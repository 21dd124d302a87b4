//! Plans: which tests run under which configurations, grouped by model load.
//!
//! As in llama-bench, every numeric option takes a list and the plan is the
//! cross product. Parameters fixed at model load (GPU layers, mmap) split the
//! plan into worker groups, one model load each; context parameters (threads,
//! batch sizes, flash attention, KV cache type) only make new runs inside a
//! group, so changing them never reloads the model.

use std::path::PathBuf;

use crate::error::DynoError;
pub use crate::vocab::request::BenchRequest;
use crate::vocab::{CacheType, ContextParams, ModelParams, RunConfig, TestKind, TestSpec};

/// Tokens per repetition of a sustained decode: short enough that the rate
/// is read several times a second on a small model, long enough that one
/// repetition's start-up is noise. The cache is cleared between
/// repetitions, so the rate is decode near depth 0 throughout and a fall is
/// the machine's, not a growing context's.
pub const SUSTAIN_TOKENS: u32 = 32;

/// The longest sustained decode Dyno runs, in seconds (4 hours).
pub const SUSTAIN_MAX_S: u32 = 4 * 3600;

impl BenchRequest {
    /// Reject values llama.cpp would crash on or that measure nothing, with a
    /// message that names the option.
    pub fn validate(&self) -> Result<(), DynoError> {
        let bad = |m: String| Err(DynoError::BadInput(m));
        if self.reps == 0 {
            return bad("-r/--reps must be at least 1".into());
        }
        for (name, list) in [
            ("-t/--threads", &self.n_threads),
            ("-b/--batch-size", &self.n_batch),
            ("--ub/--ubatch-size", &self.n_ubatch),
        ] {
            if list.is_empty() || list.contains(&0) {
                return bad(format!("{name} needs values of at least 1"));
            }
        }
        if self.n_parallel.contains(&0) {
            return bad("--npl values must be at least 1".into());
        }
        if !self.n_parallel.is_empty()
            && (self.parallel_gen.is_empty() || self.parallel_gen.contains(&0))
        {
            return bad("--ntg values must be at least 1 when --npl is given".into());
        }
        for ct in &self.cache_type {
            if CacheType::parse(ct).is_none() {
                return bad(format!(
                    "unknown KV cache type '{ct}' for --ctk; use one of {}",
                    CacheType::names()
                ));
            }
        }
        if self.fit_margin_mib.is_some() && self.n_gpu_layers.iter().any(Option::is_some) {
            return bad(
                "--fit chooses the GPU layers itself; drop --ngl, or drop --fit to set them".into(),
            );
        }
        if self.fit_margin_mib.is_some()
            && (self.n_cpu_moe.iter().any(|&n| n > 0)
                || self.tensor_overrides.iter().any(|g| !g.is_empty()))
        {
            return bad(
                "--fit places the tensors itself; drop --n-cpu-moe and --override-tensor, or drop --fit to place them".into(),
            );
        }
        for (name, list) in [
            ("--split-mode", self.split_mode.len()),
            ("--main-gpu", self.main_gpu.len()),
            ("--device", self.devices.len()),
            ("--no-kv-offload", self.no_kv_offload.len()),
            ("--n-cpu-moe", self.n_cpu_moe.len()),
            ("--override-tensor", self.tensor_overrides.len()),
            ("--ngl", self.n_gpu_layers.len()),
        ] {
            if list == 0 {
                return bad(format!("{name} needs at least one value"));
            }
        }
        for (i, ep) in self.rpc.iter().enumerate() {
            crate::vocab::check_rpc_endpoint(ep).map_err(DynoError::BadInput)?;
            if self.rpc[..i].contains(ep) {
                return bad(format!("--rpc names {ep} twice; give each server once"));
            }
        }
        if let Some(s) = self.sustain_s {
            if s == 0 || s > SUSTAIN_MAX_S {
                return bad(format!(
                    "--sustain takes minutes above 0 and at most {}; e.g. --sustain 5",
                    SUSTAIN_MAX_S / 60
                ));
            }
        }
        if self.tests().is_empty() {
            return bad("nothing to measure: every test length is 0; give -p, -n, --pg or --npl a value above 0".into());
        }
        // A context of 2^31 tokens or more overflows llama.cpp's int32 positions.
        for t in self.tests() {
            t.llama_n_ctx().map_err(DynoError::BadInput)?;
        }
        Ok(())
    }

    /// The tests of one run, in llama-bench's order: for each depth, every
    /// pp, then every tg, then every pp+tg; parallel tests come last.
    /// A sustained decode is one test, `tg32`, repeated for its duration.
    pub fn tests(&self) -> Vec<TestSpec> {
        let mut out = Vec::new();
        let spec = |kind, n_prompt, n_gen, n_depth, n_parallel| TestSpec {
            kind,
            n_prompt,
            n_gen,
            n_depth,
            n_parallel,
        };
        if self.sustain_s.is_some() {
            return vec![spec(TestKind::Gen, 0, SUSTAIN_TOKENS, 0, 1)];
        }
        for &d in &self.n_depth {
            out.extend(
                self.n_prompt
                    .iter()
                    .filter(|&&p| p > 0)
                    .map(|&p| spec(TestKind::Prompt, p, 0, d, 1)),
            );
            out.extend(
                self.n_gen
                    .iter()
                    .filter(|&&n| n > 0)
                    .map(|&n| spec(TestKind::Gen, 0, n, d, 1)),
            );
            out.extend(
                self.prompt_gen
                    .iter()
                    .filter(|(p, n)| *p > 0 && *n > 0)
                    .map(|&(p, n)| spec(TestKind::PromptGen, p, n, d, 1)),
            );
        }
        for &npl in &self.n_parallel {
            for &p in &self.parallel_prompt {
                for &n in self.parallel_gen.iter().filter(|&&n| n > 0) {
                    out.push(spec(TestKind::Parallel, p, n, 0, npl));
                }
            }
        }
        out
    }

    /// Expand into worker groups for one model.
    pub fn groups(&self) -> Vec<WorkerGroup> {
        let tests = self.tests();
        let mut groups = Vec::new();
        let mut models = Vec::new();
        for &ngl in &self.n_gpu_layers {
            for &mmap in &self.use_mmap {
                for &split_mode in &self.split_mode {
                    for &main_gpu in &self.main_gpu {
                        for devices in &self.devices {
                            for &n_cpu_moe in &self.n_cpu_moe {
                                for overrides in &self.tensor_overrides {
                                    models.push(ModelParams {
                                        n_gpu_layers: ngl,
                                        use_mmap: mmap,
                                        split_mode,
                                        main_gpu,
                                        devices: devices.clone(),
                                        fit_margin_mib: self.fit_margin_mib,
                                        n_cpu_moe,
                                        tensor_overrides: overrides.clone(),
                                        rpc: self.rpc.clone(),
                                    });
                                }
                            }
                        }
                    }
                }
            }
        }
        for model in models {
            let mut runs = Vec::new();
            for &t in &self.n_threads {
                for &b in &self.n_batch {
                    for &ub in &self.n_ubatch {
                        for &fa in &self.flash_attn {
                            for ct in &self.cache_type {
                                for &nkvo in &self.no_kv_offload {
                                    runs.push(RunConfig {
                                        model: model.clone(),
                                        ctx: ContextParams {
                                            n_threads: t,
                                            n_batch: b,
                                            n_ubatch: ub,
                                            flash_attn: fa,
                                            cache_type: ct.to_ascii_lowercase(),
                                            no_kv_offload: nkvo,
                                        },
                                        reps: self.reps,
                                        warmup: self.warmup,
                                        tests: tests.clone(),
                                        sustain_s: self.sustain_s,
                                    });
                                }
                            }
                        }
                    }
                }
            }
            groups.push(WorkerGroup { model, runs });
        }
        groups
    }
}

/// Runs that share one model load, and so one worker process.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkerGroup {
    pub model: ModelParams,
    pub runs: Vec<RunConfig>,
}

/// A whole `dyno bench`: models, each expanded into worker groups.
#[derive(Debug, Clone)]
pub struct Plan {
    pub models: Vec<PathBuf>,
    pub request: BenchRequest,
}

impl Plan {
    /// Timed repetitions in the whole plan, for a progress bar.
    pub fn total_samples(&self) -> u64 {
        let per_model: u64 = self
            .request
            .groups()
            .iter()
            .flat_map(|g| g.runs.iter())
            .map(|r| r.tests.len() as u64 * u64::from(r.reps))
            .sum();
        per_model * self.models.len() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vocab::TensorOverride;

    #[test]
    fn defaults_are_llama_bench_defaults() {
        let r = BenchRequest::defaults(4);
        let names: Vec<String> = r.tests().iter().map(TestSpec::name).collect();
        assert_eq!(names, ["pp512", "tg128"]);
        let g = r.groups();
        assert_eq!(g.len(), 1);
        assert_eq!(g[0].runs.len(), 1);
        let c = &g[0].runs[0].ctx;
        assert_eq!((c.n_threads, c.n_batch, c.n_ubatch), (4, 2048, 512));
        assert_eq!(g[0].runs[0].reps, 5);
    }

    #[test]
    fn context_lists_make_runs_and_model_lists_make_loads() {
        let mut r = BenchRequest::defaults(2);
        r.n_threads = vec![1, 2];
        r.n_batch = vec![64, 128, 256];
        r.use_mmap = vec![Some(true), Some(false)];
        let g = r.groups();
        assert_eq!(g.len(), 2, "one load per mmap setting");
        assert!(
            g.iter().all(|g| g.runs.len() == 6),
            "threads x batch runs share a load"
        );
        assert_ne!(g[0].model.use_mmap, g[1].model.use_mmap);
    }

    #[test]
    fn depths_multiply_tests_and_parallel_comes_last() {
        let mut r = BenchRequest::defaults(2);
        r.n_prompt = vec![32];
        r.n_gen = vec![8];
        r.prompt_gen = vec![(16, 4)];
        r.n_depth = vec![0, 64];
        r.n_parallel = vec![1, 4];
        r.parallel_prompt = vec![16];
        r.parallel_gen = vec![8];
        let names: Vec<String> = r.tests().iter().map(TestSpec::name).collect();
        assert_eq!(
            names,
            [
                "pp32",
                "tg8",
                "pp16+tg4",
                "pp32@d64",
                "tg8@d64",
                "pp16+tg4@d64",
                "pp16+tg8@npl1",
                "pp16+tg8@npl4"
            ]
        );
        assert_eq!(r.tests()[7].n_ctx(), (16 + 8) * 4);
    }

    #[test]
    fn zero_lengths_are_skipped_and_empty_plans_rejected() {
        let mut r = BenchRequest::defaults(2);
        r.n_prompt = vec![0];
        assert_eq!(r.tests().len(), 1);
        r.n_gen = vec![0];
        assert!(matches!(r.validate(), Err(DynoError::BadInput(_))));
    }

    #[test]
    fn contexts_past_u32_are_refused_not_wrapped() {
        // u32::MAX + 1 wraps to 0 in u32: the old check let this through.
        let mut r = BenchRequest::defaults(2);
        r.prompt_gen = vec![(u32::MAX, 1)];
        let e = r.validate().unwrap_err().to_string();
        assert!(e.contains("pp4294967295+tg1"), "{e}");
        assert!(e.contains("4294967296 tokens"), "{e}");
        assert!(e.contains("-p") && e.contains("--npl"), "{e}");
        // (2^30 + 2^30) * 2 = 2^32: wraps only in the product.
        let mut r = BenchRequest::defaults(2);
        r.n_parallel = vec![2];
        r.parallel_prompt = vec![1 << 30];
        r.parallel_gen = vec![1 << 30];
        assert!(r.validate().is_err());
        // Just under llama.cpp's limit is still allowed.
        let mut r = BenchRequest::defaults(2);
        r.n_prompt = vec![(i32::MAX / 2) as u32];
        r.n_gen = vec![0];
        assert!(r.validate().is_ok());
        r.n_prompt = vec![(i32::MAX / 2) as u32 + 1];
        assert!(r.validate().is_err());
    }

    #[test]
    fn bad_values_name_their_option() {
        let mut r = BenchRequest::defaults(2);
        r.n_threads = vec![0];
        let e = r.validate().unwrap_err().to_string();
        assert!(e.contains("--threads"), "{e}");
        let mut r = BenchRequest::defaults(2);
        r.cache_type = vec!["q3_z".into()];
        assert!(r.validate().unwrap_err().to_string().contains("q3_z"));
        let mut r = BenchRequest::defaults(2);
        r.reps = 0;
        assert!(r.validate().is_err());
    }

    #[test]
    fn a_plan_without_offload_options_serialises_as_before_them() {
        // Stored plans and sweep resume keys of older versions must not change.
        let v = serde_json::to_value(BenchRequest::defaults(2)).unwrap();
        for k in [
            "split_mode",
            "main_gpu",
            "devices",
            "no_kv_offload",
            "fit_margin_mib",
            "n_cpu_moe",
            "tensor_overrides",
        ] {
            assert!(v.get(k).is_none(), "{k} left out at its default");
        }
        // Nor does a run's model load.
        let m = serde_json::to_value(&BenchRequest::defaults(2).groups()[0].model).unwrap();
        assert!(m.get("n_cpu_moe").is_none() && m.get("tensor_overrides").is_none());
        let back: BenchRequest = serde_json::from_value(v).unwrap();
        assert_eq!(back.groups(), BenchRequest::defaults(2).groups());
    }

    #[test]
    fn expert_placement_is_a_load_setting_swept_like_the_layers() {
        let mut r = BenchRequest::defaults(2);
        r.n_cpu_moe = vec![0, 8];
        r.tensor_overrides = vec![
            Vec::new(),
            TensorOverride::parse_group("ffn_up_exps=CPU;attn=CUDA0").unwrap(),
        ];
        let g = r.groups();
        // Each is its own load, and so its own worker.
        assert_eq!(g.len(), 4);
        assert_eq!(g[1].model.n_cpu_moe, 0);
        assert_eq!(
            TensorOverride::label(&g[1].model.tensor_overrides),
            "ffn_up_exps=CPU;attn=CUDA0"
        );
        assert_eq!(g[2].model.n_cpu_moe, 8);
        assert!(g[2].model.tensor_overrides.is_empty());
        assert!(r.validate().is_ok());
        // --fit places tensors itself.
        r.fit_margin_mib = Some(1024);
        r.n_gpu_layers = vec![None];
        let e = r.validate().unwrap_err().to_string();
        assert!(e.contains("--n-cpu-moe"), "{e}");
        assert!(TensorOverride::parse_group("exps").is_err());
        assert_eq!(TensorOverride::parse_group(" ").unwrap(), Vec::new());
    }

    #[test]
    fn total_samples_counts_every_timed_repetition() {
        let mut r = BenchRequest::defaults(2);
        r.n_threads = vec![1, 2];
        r.reps = 3;
        let p = Plan {
            models: vec!["a".into(), "b".into()],
            request: r,
        };
        // 2 models x 2 runs x 2 tests x 3 reps
        assert_eq!(p.total_samples(), 24);
    }
}
