//! The worker protocol: one JSON object per line.
//!
//! The parent writes one [`WorkerPlan`] line to the worker's stdin and keeps
//! the pipe open; the worker answers with [`Event`] lines on stdout. Closing
//! stdin tells the worker its parent is gone. Anything llama.cpp prints goes
//! to stderr through `tracing`, never to stdout.
//!
//! Only the messages live here; the nouns they carry (tests, parameters,
//! samples, devices) are the crate's shared vocabulary in [`crate::vocab`].

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::vocab::failure::FailureCode;
use crate::vocab::{
    BackendModules, Device, Job, MemoryProfile, ModelParams, Offload, QualityFigures, Sample,
};

/// Everything one worker does: one model load, then its jobs in order.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WorkerPlan {
    pub model_path: PathBuf,
    pub model: ModelParams,
    pub jobs: Vec<Job>,
    pub reps: u32,
    pub warmup: bool,
    /// Repeat each job back to back for this long instead of `reps` times
    /// (`--sustain`).
    #[serde(default)]
    pub sustain_ms: Option<u64>,
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
    pub profile: MemoryProfile,
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
    /// Count the tokens of texts with a model's own tokenizer (a server
    /// benchmark's fallback when the server reports no counts).
    Tokenize(TokenizePlan),
    /// Write a model file with synthetic weights (ggml's quantisers make
    /// the blocks, and they abort on what they do not expect).
    Synth(SynthPlan),
    /// Dequantise every tensor of a file and describe its values.
    TensorStats { path: PathBuf },
    /// Decode `tokens` random tokens with a mixture-of-experts file and
    /// count the experts its routers choose.
    Routing { path: PathBuf, tokens: u32 },
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SynthPlan {
    /// The file whose header the output takes (or resizes).
    pub like: PathBuf,
    /// `like` is the front of a file this long (a header from the hub).
    #[serde(default)]
    pub like_size: Option<u64>,
    /// A shape other than `like`'s, and one type for every matrix.
    pub shape: Option<crate::model::reshape::ShapeRequest>,
    /// Where to write: the parent's `.partial` name, renamed when done.
    pub output: PathBuf,
    pub seed: u64,
    /// The real file the header stands for, written into the label (see
    /// [`crate::model::reshape::Origin`]).
    #[serde(default)]
    pub source: Option<String>,
    /// A mixture of experts small enough to decode here: decode the written
    /// file and report how its routers spread tokens over the experts.
    #[serde(default)]
    pub check_routing: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TokenizePlan {
    pub model_path: PathBuf,
    /// Counted as plain text: no BOS or EOS added, and special-token
    /// strings read as text, as a server counts text it generated.
    pub texts: Vec<String>,
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
        /// The backend modules looked for and loaded (a `dynamic-backends`
        /// build); absent where llama.cpp is linked in.
        #[serde(default)]
        modules: Option<BackendModules>,
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
    /// The worker cannot go on (the model failed to load). On the wire the
    /// code is its text; a parent that does not know it keeps it as
    /// [`FailureCode::Other`].
    Fatal { code: FailureCode, message: String },
    /// Work done so far in a long task (bytes written by the quantizer,
    /// positions scored by a quality pass); it also proves the worker alive.
    Progress { done: u64, total: u64 },
    /// The quantizer wrote the output file.
    Quantized { output_bytes: u64, elapsed_ms: f64 },
    /// A quality pass finished.
    Quality { figures: QualityFigures },
    /// A synthetic file was written and flushed.
    Synthesised {
        stats: crate::model::synth::SynthStats,
    },
    /// Every tensor's value statistics, in the file's order.
    TensorStats {
        stats: Vec<crate::model::synth::TensorStat>,
    },
    /// How a mixture's routers spread a decode.
    Routed {
        routing: crate::model::synth::Routing,
    },
    /// The token count of each text of a tokenize request, in order.
    Tokens { counts: Vec<u64> },
    /// All jobs are done; the worker exits after this.
    Done { peak_rss_bytes: u64 },
}
