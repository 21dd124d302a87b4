//! The worker protocol: one JSON object per line.
//!
//! The parent writes one [`WorkerPlan`] line to the worker's stdin and keeps
//! the pipe open; the worker answers with [`Event`] lines on stdout. Closing
//! stdin tells the worker its parent is gone. Anything llama.cpp prints goes
//! to stderr through `tracing`, never to stdout.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// Flash attention policy, as llama.cpp's `llama_flash_attn_type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum FlashAttn {
    Auto,
    On,
    Off,
}

impl FlashAttn {
    pub fn as_str(self) -> &'static str {
        match self {
            FlashAttn::Auto => "auto",
            FlashAttn::On => "on",
            FlashAttn::Off => "off",
        }
    }
}

/// How llama.cpp spreads a model over several GPUs (`llama_split_mode`).
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, clap::ValueEnum,
)]
#[serde(rename_all = "lowercase")]
pub enum SplitMode {
    /// Everything on the main GPU.
    None,
    /// Whole layers (and their KV cache) per GPU: llama.cpp's default.
    #[default]
    Layer,
    /// Rows of each weight matrix across GPUs (tensor parallel where the
    /// backend supports it).
    Row,
}

impl SplitMode {
    pub fn as_str(self) -> &'static str {
        match self {
            SplitMode::None => "none",
            SplitMode::Layer => "layer",
            SplitMode::Row => "row",
        }
    }
}

/// Parameters fixed when the model is loaded. A change of any of these needs
/// a new load, and so a new worker.
///
/// The offload fields default to llama.cpp's own defaults, so plans stored
/// before they existed still read.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ModelParams {
    /// Layers to offload; `None` lets the worker choose: all layers when a GPU
    /// device is present, otherwise 0.
    pub n_gpu_layers: Option<u32>,
    /// `None`: llama.cpp's automatic load mode (llama-bench's default).
    pub use_mmap: Option<bool>,
    #[serde(default)]
    pub split_mode: SplitMode,
    /// The GPU (index among the devices in use) that holds the whole model
    /// with split mode `none`, and the small tensors otherwise.
    #[serde(default)]
    pub main_gpu: u32,
    /// Backend devices to use by name (`dyno hw` lists them); `None`: every
    /// GPU llama.cpp sees; an empty list: none (CPU only).
    #[serde(default)]
    pub devices: Option<Vec<String>>,
    /// Let llama.cpp fit the offload to free device memory, leaving this
    /// margin (MiB) free on each device; `n_gpu_layers` must then be `None`.
    #[serde(default)]
    pub fit_margin_mib: Option<u32>,
}

/// Parameters of one llama.cpp context.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ContextParams {
    pub n_threads: u32,
    pub n_batch: u32,
    pub n_ubatch: u32,
    pub flash_attn: FlashAttn,
    /// KV cache element type for K and V ("f16", "q8_0", ...).
    pub cache_type: String,
    /// Keep the KV cache and the attention on the CPU even when layers are
    /// offloaded (llama-bench's `-nkvo 1`).
    #[serde(default)]
    pub no_kv_offload: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TestKind {
    /// Prefill of `n_prompt` tokens.
    Prompt,
    /// `n_gen` single-token decodes.
    Gen,
    /// Prefill then decode, timed per phase, with time to first token.
    PromptGen,
    /// `n_parallel` sequences: each prefills `n_prompt` tokens, then all
    /// decode `n_gen` tokens in lockstep, one batch per step.
    Parallel,
}

/// One test, independent of its context parameters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TestSpec {
    pub kind: TestKind,
    pub n_prompt: u32,
    pub n_gen: u32,
    pub n_depth: u32,
    pub n_parallel: u32,
}

/// The largest context, in tokens, that Dyno asks llama.cpp for.
pub const MAX_N_CTX: u32 = (i32::MAX / 2) as u32;

impl TestSpec {
    /// The name llama-bench would print ("pp512", "tg128", "pp512+tg128"),
    /// with "@d4096" for a depth and "@npl4" for parallel sequences.
    pub fn name(&self) -> String {
        let base = match self.kind {
            TestKind::Prompt => format!("pp{}", self.n_prompt),
            TestKind::Gen => format!("tg{}", self.n_gen),
            TestKind::PromptGen => format!("pp{}+tg{}", self.n_prompt, self.n_gen),
            TestKind::Parallel => format!("pp{}+tg{}", self.n_prompt, self.n_gen),
        };
        let mut name = base;
        if self.n_depth > 0 {
            name.push_str(&format!("@d{}", self.n_depth));
        }
        if self.kind == TestKind::Parallel {
            name.push_str(&format!("@npl{}", self.n_parallel));
        }
        name
    }

    /// Context size the test needs, as llama-bench sizes it. Computed in u64
    /// (saturating) because lengths near `u32::MAX` would wrap in u32 into a
    /// small, wrong context.
    pub fn n_ctx(&self) -> u64 {
        let per_seq = u64::from(self.n_prompt) + u64::from(self.n_gen) + u64::from(self.n_depth);
        per_seq.saturating_mul(u64::from(self.n_parallel.max(1)))
    }

    /// [`Self::n_ctx`] as llama.cpp takes it, or why it cannot be made:
    /// llama.cpp's positions are int32, and Dyno keeps to half that range
    /// (as the plan check always has) for a margin.
    pub fn llama_n_ctx(&self) -> Result<u32, String> {
        let n_ctx = self.n_ctx();
        u32::try_from(n_ctx)
            .ok()
            .filter(|&n| n <= MAX_N_CTX)
            .ok_or_else(|| {
                format!(
                    "{} needs a context of {n_ctx} tokens, more than llama.cpp can address \
                     ({MAX_N_CTX}); use shorter tests (-p, -n, -d, --npp, --ntg) or fewer \
                     parallel sequences (--npl)",
                    self.name()
                )
            })
    }
}

/// One test with its context, as the worker runs it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Job {
    pub test: TestSpec,
    pub ctx: ContextParams,
}

/// Everything one worker does: one model load, then its jobs in order.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WorkerPlan {
    pub model_path: PathBuf,
    pub model: ModelParams,
    pub jobs: Vec<Job>,
    pub reps: u32,
    pub warmup: bool,
    /// The parent's memory estimate; a test whose KV cache and compute
    /// buffers would not fit is refused before llama.cpp allocates it.
    /// `None`: no check.
    #[serde(default)]
    pub memory: Option<MemoryCheck>,
}

/// The model's memory profile (read once, by the parent) and the bytes left
/// for each test's context once the model is loaded.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MemoryCheck {
    pub profile: crate::model::memory::MemoryProfile,
    pub left: u64,
}

/// What a worker is asked to do: the first line on its stdin. Each task
/// runs in its own process so a crash in llama.cpp (a load, a quantizer
/// abort, an out-of-memory kill) costs only that task.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "task", rename_all = "snake_case")]
pub enum WorkerRequest {
    /// Load one model and run timed tests.
    Bench(WorkerPlan),
    /// Write a quantised copy of a model with llama.cpp's quantizer.
    Quantize(QuantizePlan),
    /// Score a model on the bundled text, as the reference or against one.
    Quality(QualityPlan),
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct QuantizePlan {
    pub input: PathBuf,
    pub output: PathBuf,
    /// The target `llama_ftype`.
    pub ftype: u32,
    pub n_threads: u32,
    /// The input is already quantised: llama.cpp refuses unless told.
    pub allow_requantize: bool,
    /// Expected output size, for progress only.
    pub expected_bytes: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct QualityPlan {
    pub model_path: PathBuf,
    pub model: ModelParams,
    pub n_threads: u32,
    /// Tokens per chunk (the context of each evaluation).
    pub chunk_tokens: u32,
    pub n_chunks: u32,
    pub mode: QualityMode,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "mode", rename_all = "snake_case")]
pub enum QualityMode {
    /// Write the model's top-`topk` log-probabilities per scored position
    /// (0: the whole vocabulary, for an exact KL divergence) to `output`.
    Reference { output: PathBuf, topk: u32 },
    /// Compare against a reference file written earlier.
    Compare { reference: PathBuf },
}

/// Quality figures of one model on the bundled text.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct QualityFigures {
    pub n_positions: u64,
    pub ppl: f64,
    /// `None` for the reference itself.
    pub kld_mean: Option<f64>,
    pub kld_p99: Option<f64>,
    pub top1_agreement: Option<f64>,
}

/// A llama.cpp backend device.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct Device {
    pub name: String,
    pub description: String,
    /// "cpu", "gpu", "igpu" or "accel".
    pub kind: String,
    pub memory_total_bytes: u64,
    pub memory_free_bytes: u64,
}

/// Where llama.cpp put a loaded model, as it reported it while loading
/// (its "offloaded N/M layers to GPU" and "… model buffer size" lines), plus
/// what `--fit` chose. This is the evidence that layers really ran on a
/// device, not just that they were asked to.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct Offload {
    /// Layers llama.cpp placed on GPUs, and how many could be.
    pub layers_offloaded: Option<u32>,
    pub layers_total: Option<u32>,
    /// Weight buffers by backend buffer name ("CPU_Mapped", "Vulkan0",
    /// "CUDA0"), in bytes.
    pub buffers: Vec<Buffer>,
    /// The devices handed to llama.cpp by name: `None` for "all it sees",
    /// empty for none (CPU only).
    #[serde(default)]
    pub devices: Option<Vec<String>>,
    /// What llama.cpp's fit chose, when `--fit` was given.
    pub fit: Option<FitChoice>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
#[ts(rename = "OffloadBuffer")]
pub struct Buffer {
    pub name: String,
    pub bytes: u64,
}

impl Buffer {
    /// Device memory, not host memory: "CUDA0", "Vulkan0", "Metal", but not
    /// "CPU", "CPU_Mapped" or pinned host buffers such as "CUDA_Host".
    pub fn on_device(&self) -> bool {
        !self.name.starts_with("CPU") && !self.name.ends_with("_Host")
    }
}

/// The outcome of llama.cpp's fit (`common_fit_params`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct FitChoice {
    pub margin_mib: u32,
    /// Layers it chose to offload (-1 or more than the model has: all).
    pub n_gpu_layers: i32,
    /// Share of the model per device, when it split one.
    pub tensor_split: Vec<f32>,
    /// Tensor-name patterns it kept in host memory (mixture-of-experts).
    pub overrides: Vec<String>,
}

/// One repetition's timings. Times are wall-clock nanoseconds of the timed
/// region only; tokenization, sampling setup and model loading are outside.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    /// The whole timed region (prefill plus decode), as llama-bench's sample.
    pub total_ns: u64,
    /// Prefill phase, when the test has one.
    pub prompt_ns: Option<u64>,
    /// Decode phase, when the test has one.
    pub gen_ns: Option<u64>,
    /// Prefill plus the first token, for `PromptGen` tests.
    pub ttft_ns: Option<u64>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
    /// First line: what this build of llama.cpp is and sees.
    Ready {
        /// The worker's process id, so the parent can sample its memory.
        pid: u32,
        llama_cpp_build: String,
        backend: String,
        gpu_offload: bool,
        devices: Vec<Device>,
        system_info: String,
    },
    /// A phase boundary, for tagging telemetry: "load", then per job
    /// "warmup" (the job has started) and "timed" (its repetitions begin).
    Phase { phase: String, job: Option<usize> },
    Loaded {
        load_time_ms: f64,
        model_desc: String,
        model_size_bytes: u64,
        n_params: u64,
        n_layer: u32,
        n_gpu_layers: u32,
        /// Where llama.cpp put the model, from its own load report.
        #[serde(default)]
        offload: Option<Offload>,
        /// Tokens per word of the bundled English text with this model's
        /// tokenizer (outside any timed region).
        #[serde(default)]
        tokens_per_word: Option<f64>,
    },
    /// One repetition of job `job` was measured.
    Sample {
        job: usize,
        rep: u32,
        sample: Sample,
    },
    /// Job `job` finished all repetitions.
    JobDone { job: usize },
    /// Job `job` could not run (context creation or decode failed); the
    /// worker goes on with the next job.
    JobFailed { job: usize, error: String },
    /// The worker cannot go on (the model failed to load).
    Fatal { code: String, message: String },
    /// Work done so far in a long task (bytes written by the quantizer,
    /// positions scored by a quality pass); it also proves the worker alive.
    Progress { done: u64, total: u64 },
    /// The quantizer wrote the output file.
    Quantized { output_bytes: u64, elapsed_ms: f64 },
    /// A quality pass finished.
    Quality { figures: QualityFigures },
    /// All jobs are done; the worker exits after this.
    Done { peak_rss_bytes: u64 },
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(n_prompt: u32, n_gen: u32, n_depth: u32, n_parallel: u32) -> TestSpec {
        TestSpec {
            kind: TestKind::Parallel,
            n_prompt,
            n_gen,
            n_depth,
            n_parallel,
        }
    }

    #[test]
    fn n_ctx_does_not_wrap_near_u32_max() {
        assert_eq!(spec(16, 8, 0, 4).n_ctx(), 96);
        assert_eq!(spec(u32::MAX, 1, 0, 1).n_ctx(), 1 << 32);
        assert_eq!(spec(1 << 31, 0, 0, 2).n_ctx(), 1 << 32);
        assert_eq!(
            spec(u32::MAX, u32::MAX, u32::MAX, 1).n_ctx(),
            3 * u64::from(u32::MAX)
        );
        // Past u64 it saturates rather than wraps.
        assert_eq!(
            spec(u32::MAX, u32::MAX, u32::MAX, u32::MAX).n_ctx(),
            u64::MAX
        );
    }

    #[test]
    fn llama_n_ctx_refuses_what_llama_cpp_cannot_address() {
        assert_eq!(spec(16, 8, 0, 4).llama_n_ctx(), Ok(96));
        let max = (i32::MAX / 2) as u32;
        assert_eq!(spec(max, 0, 0, 1).llama_n_ctx(), Ok(max));
        let e = spec(u32::MAX, 1, 0, 1).llama_n_ctx().unwrap_err();
        assert!(e.contains("4294967296 tokens"), "{e}");
        assert!(spec(max, 1, 0, 1).llama_n_ctx().is_err());
        assert!(spec(1 << 30, 1 << 30, 0, 2).llama_n_ctx().is_err());
    }
}
