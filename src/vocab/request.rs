//! What a user asked to measure: a benchmark's request, and a sweep's
//! whole definition.
//!
//! Both are stored with the group of runs they made (a sweep row's
//! `args_json`), so that a sweep can be resumed and a disturbed run measured
//! again under its own plan. They live below the store so that the store
//! reads that column back as a [`GroupArgs`] and no layer above it parses
//! text. How a request becomes a plan (`bench::plan`) and how a spec is
//! keyed for resuming (`bench::sweep::spec`) is written beside the code that
//! uses it.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::{FlashAttn, SplitMode, TensorOverride};

/// The user's request, each option as a list (llama-bench's `-p 128,512`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BenchRequest {
    pub n_prompt: Vec<u32>,
    pub n_gen: Vec<u32>,
    /// `pp N + tg M` pairs, timed per phase, with time to first token.
    pub prompt_gen: Vec<(u32, u32)>,
    pub n_depth: Vec<u32>,
    /// Parallel sequence counts (llama-batched-bench's `-npl`); empty for none.
    pub n_parallel: Vec<u32>,
    /// Prompt and generation lengths of each parallel sequence.
    pub parallel_prompt: Vec<u32>,
    pub parallel_gen: Vec<u32>,
    pub reps: u32,
    pub warmup: bool,
    pub n_threads: Vec<u32>,
    /// `None` means "all layers when a GPU is there, else 0" (decided in the
    /// worker, which is the process that can see the devices).
    pub n_gpu_layers: Vec<Option<u32>>,
    pub n_batch: Vec<u32>,
    pub n_ubatch: Vec<u32>,
    pub flash_attn: Vec<FlashAttn>,
    pub cache_type: Vec<String>,
    /// `None`: llama.cpp's automatic load mode.
    pub use_mmap: Vec<Option<bool>>,
    /// Offload controls (llama-bench's `-sm`, `-mg`, `-dev`, `-nkvo`), each a
    /// list to sweep. They default to llama.cpp's defaults, so plans stored
    /// before they existed still read.
    #[serde(default = "default_split", skip_serializing_if = "is_default_split")]
    pub split_mode: Vec<SplitMode>,
    #[serde(
        default = "default_main_gpu",
        skip_serializing_if = "is_default_main_gpu"
    )]
    pub main_gpu: Vec<u32>,
    /// Each entry one device set; `None`: every device llama.cpp sees.
    #[serde(
        default = "default_devices",
        skip_serializing_if = "is_default_devices"
    )]
    pub devices: Vec<Option<Vec<String>>>,
    #[serde(default = "default_nkvo", skip_serializing_if = "is_default_nkvo")]
    pub no_kv_offload: Vec<bool>,
    /// Mixture-of-experts placement (llama-bench's `--n-cpu-moe` and `-ot`),
    /// each a list to sweep: layers whose experts stay on the CPU, and
    /// groups of tensor overrides (an empty group: none).
    #[serde(default = "default_ncmoe", skip_serializing_if = "is_default_ncmoe")]
    pub n_cpu_moe: Vec<u32>,
    #[serde(default = "default_ot", skip_serializing_if = "is_default_ot")]
    pub tensor_overrides: Vec<Vec<TensorOverride>>,
    /// `--fit`: the margin (MiB) to leave free per device; the fit then
    /// chooses the layers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fit_margin_mib: Option<u32>,
    /// `--sustain`: decode back to back for this many seconds instead of
    /// the tests above (`bench::plan::SUSTAIN_TOKENS` tokens per repetition).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sustain_s: Option<u32>,
    /// `--rpc`: RPC servers (HOST:PORT) whose devices join every load, as
    /// llama-bench's `--rpc` (one set for the whole run, not a list to
    /// sweep).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rpc: Vec<String>,
}

fn default_split() -> Vec<SplitMode> {
    vec![SplitMode::Layer]
}
fn default_main_gpu() -> Vec<u32> {
    vec![0]
}
fn default_devices() -> Vec<Option<Vec<String>>> {
    vec![None]
}
fn default_nkvo() -> Vec<bool> {
    vec![false]
}
fn default_ncmoe() -> Vec<u32> {
    vec![0]
}
fn default_ot() -> Vec<Vec<TensorOverride>> {
    vec![Vec::new()]
}
// Defaults are left out of the stored plan, so a sweep planned before these
// options existed keeps its resume key (a hash of the plan).
fn is_default_split(v: &[SplitMode]) -> bool {
    v == default_split()
}
fn is_default_main_gpu(v: &[u32]) -> bool {
    v == default_main_gpu()
}
fn is_default_devices(v: &[Option<Vec<String>>]) -> bool {
    v == default_devices()
}
fn is_default_nkvo(v: &[bool]) -> bool {
    v == default_nkvo()
}
fn is_default_ncmoe(v: &[u32]) -> bool {
    v == default_ncmoe()
}
fn is_default_ot(v: &[Vec<TensorOverride>]) -> bool {
    v == default_ot()
}

impl BenchRequest {
    /// llama-bench's defaults: `-p 512 -n 128 -r 5 -b 2048 -ub 512`, flash
    /// attention auto, f16 KV cache, automatic load mode, one thread per
    /// physical core.
    pub fn defaults(n_threads: u32) -> BenchRequest {
        BenchRequest {
            n_prompt: vec![512],
            n_gen: vec![128],
            prompt_gen: vec![],
            n_depth: vec![0],
            n_parallel: vec![],
            parallel_prompt: vec![128],
            parallel_gen: vec![128],
            reps: 5,
            warmup: true,
            n_threads: vec![n_threads],
            n_gpu_layers: vec![None],
            n_batch: vec![2048],
            n_ubatch: vec![512],
            flash_attn: vec![FlashAttn::Auto],
            cache_type: vec!["f16".into()],
            use_mmap: vec![None],
            split_mode: default_split(),
            main_gpu: default_main_gpu(),
            devices: default_devices(),
            no_kv_offload: default_nkvo(),
            n_cpu_moe: default_ncmoe(),
            tensor_overrides: default_ot(),
            fit_margin_mib: None,
            sustain_s: None,
            rpc: Vec::new(),
        }
    }
}

/// Where a sweep's levels come from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// GGUF files of one model.
    Files(Vec<PathBuf>),
    /// Every GGUF file in a folder.
    Dir(PathBuf),
    /// One high-precision GGUF, quantised locally into the ladder.
    From(PathBuf),
    /// A Hugging Face repo: its levels are downloaded, then swept as files.
    Repo(String),
    /// A named shape (`llama-3.1-8b`): each level is written from Dyno's
    /// built-in header with synthetic weights, then swept as files. Always
    /// shape-only: there is no real file to measure.
    Shape(String),
}

/// How quality is measured.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct QualitySettings {
    /// Tokens of text evaluated (rounded up to whole chunks).
    pub tokens: u32,
    /// Reference top-k kept per position; 0 keeps the whole vocabulary.
    pub topk: u32,
}

impl Default for QualitySettings {
    /// The bundled text's default length and top-k (`dyno sweep`'s).
    fn default() -> QualitySettings {
        QualitySettings {
            tokens: super::quality::DEFAULT_TOKENS,
            topk: super::quality::DEFAULT_TOPK,
        }
    }
}

/// Everything that defines a sweep; stored as its `args_json`, so
/// `--resume ID` can run it again.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SweepSpec {
    pub source: Source,
    /// Canonical level names; `None` takes the default ladder (for `from`)
    /// or every file (for `files` and `dir`).
    pub levels: Option<Vec<String>>,
    pub request: BenchRequest,
    /// `None`: `--no-quality`.
    pub quality: Option<QualitySettings>,
    /// A repo's levels measured by their shape (`--shape-only`): synthetic
    /// twins written from their headers, never downloaded. Left out of the
    /// stored spec when false, so older sweeps keep their resume keys; a
    /// shape-only sweep never resumes a real one, nor a real one it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub shape_only: bool,
}

/// What a 'bench' group stores: the files and the request of one `dyno
/// bench` (or the app's Benchmark button), or the run measured again and
/// the request it was measured again under.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BenchGroup {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub models: Vec<PathBuf>,
    /// `--retry-disturbed`'s run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub again: Option<i64>,
    pub request: BenchRequest,
}

/// A sweep row's stored definition, which its kind decides: a quantisation
/// sweep's [`SweepSpec`], or a benchmark's [`BenchGroup`]. Read without a tag
/// (a spec has a `source`, bench arguments have not), so the documents
/// stored before this type existed read as they are.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(untagged)]
pub enum GroupArgs {
    Sweep(SweepSpec),
    Bench(BenchGroup),
}

impl GroupArgs {
    /// The benchmark request the group's runs were planned from.
    pub fn request(&self) -> &BenchRequest {
        match self {
            GroupArgs::Sweep(s) => &s.request,
            GroupArgs::Bench(b) => &b.request,
        }
    }

    /// The sweep's definition, for a quantisation sweep.
    pub fn spec(&self) -> Option<&SweepSpec> {
        match self {
            GroupArgs::Sweep(s) => Some(s),
            GroupArgs::Bench(_) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_of_stored_group_reads_back_as_its_own_type() {
        let request = BenchRequest::defaults(2);
        // As `dyno bench` stored its groups before this type existed.
        let bench = serde_json::json!({ "models": ["/m/a.gguf"], "request": request });
        let again = serde_json::json!({ "again": 12, "request": request });
        let spec = SweepSpec {
            source: Source::Shape("llama-3.2-1b".into()),
            levels: Some(vec!["Q4_K_M".into()]),
            request: request.clone(),
            quality: None,
            shape_only: true,
        };
        let read = |v: serde_json::Value| serde_json::from_value::<GroupArgs>(v).unwrap();
        match read(bench) {
            GroupArgs::Bench(b) => {
                assert_eq!(b.models, [PathBuf::from("/m/a.gguf")]);
                assert_eq!(b.again, None);
            }
            GroupArgs::Sweep(_) => panic!("a benchmark's group is not a sweep"),
        }
        let g = read(again);
        assert!(matches!(&g, GroupArgs::Bench(b) if b.again == Some(12) && b.models.is_empty()));
        assert_eq!(g.request().n_threads, [2]);
        assert!(g.spec().is_none());
        let g = read(serde_json::to_value(&spec).unwrap());
        let back = g.spec().expect("a sweep's spec");
        assert_eq!(back.source, spec.source);
        assert!(back.shape_only);
        // What the store writes for a group reads back the same.
        let written = serde_json::to_value(BenchGroup {
            models: vec!["b.gguf".into()],
            again: None,
            request,
        })
        .unwrap();
        assert_eq!(written["models"][0], "b.gguf");
        assert!(written.get("again").is_none());
        assert!(matches!(read(written), GroupArgs::Bench(_)));
    }
}
