//! What a server benchmark stores: the server as it described itself, the
//! plan, and each request's sample.
//!
//! They are the server runs' documents, kept here below the store so that
//! the store reads its JSON columns back as these types and no layer above
//! it parses text. What the types do (the routes, the labels, the
//! summaries) is written beside the code that does it, in `serve`.

use serde::{Deserialize, Serialize};

use super::failure::FailureCode;

/// Which route a request takes: the OpenAI-compatible ones, except that
/// chat against Ollama takes Ollama's native chat route (`serve::request`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "lowercase")]
pub enum Api {
    /// `/v1/chat/completions`: the prompt as one user message, through the
    /// model's chat template.
    Chat,
    /// `/v1/completions`: the raw prompt.
    Completions,
}

/// Which server is behind a URL; it decides which extra request fields are
/// safe to send and which native timings exist.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "snake_case")]
pub enum ServerKind {
    LlamaServer,
    Ollama,
    LmStudio,
    Vllm,
    /// Any other server with the OpenAI API.
    OpenAi,
}

/// What the server told Dyno about itself: a condition of every figure.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct ServerInfo {
    pub kind: ServerKind,
    /// Its version or build, where it says (llama-server's `build_info`).
    pub version: Option<String>,
    /// The model the requests name.
    pub model: String,
    /// Models the server lists.
    pub models: Vec<String>,
    /// llama-server: the model file it loaded.
    pub model_path: Option<String>,
    /// llama-server: context size per slot, and the slots (parallel
    /// sequences) it serves.
    pub n_ctx: Option<u64>,
    pub slots: Option<u64>,
    /// What opening a connection to it cost, measured apart from the
    /// requests (`serve::connect`); absent for runs from before it was
    /// measured, or when the probe could not connect.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub connect: Option<ConnectCost>,
}

/// Connection set-up to the server, medians over `probes` fresh
/// connections, in milliseconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct ConnectCost {
    pub probes: u32,
    /// Name lookup and TCP handshake.
    pub tcp_ms: f64,
    /// The TLS handshake after it; absent over plain HTTP.
    pub tls_ms: Option<f64>,
}

/// Where a request's token counts came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "snake_case")]
pub enum TokenSource {
    /// The OpenAI `usage` object (`stream_options.include_usage`).
    Usage,
    /// The server's own account by its clock, which also gives its prefill
    /// and decode rates ([`ServerTimings`]): llama-server's `timings`
    /// (`prompt_n`, `predicted_n`), or Ollama's final `done` object
    /// (`prompt_eval_count`, `eval_count`). The run's server kind says
    /// which; one name for both, since both are the server's own counts.
    Timings,
    /// Counted content chunks: an estimate (a chunk may hold more than one
    /// token), and no prompt count at all.
    Chunks,
    /// The server gave no counts; Dyno counted the generated text and the
    /// prompt with the model's own tokenizer (the GGUF at hand,
    /// `serve::tokens`). Through the chat API the prompt count lacks the
    /// chat template's tokens.
    Tokenizer,
}

/// The server's own account of a request, by its clock: llama-server's
/// `timings` object, or Ollama's final `done` object with its nanoseconds
/// turned into milliseconds (`serve::ollama`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct ServerTimings {
    /// Prompt tokens it processed (llama-server: those not taken from its
    /// cache). Ollama: its `prompt_eval_count`, which counts the tokens it
    /// reused from its cache too, though `prompt_ms` covers only those it
    /// evaluated; see `prompt_n_counts_cache`.
    pub prompt_n: u64,
    pub prompt_ms: f64,
    pub predicted_n: u64,
    pub predicted_ms: f64,
    /// Prompt tokens reused from its cache; null where the server does not
    /// say (Ollama).
    pub cache_n: Option<u64>,
    /// `prompt_n` holds a context Dyno asked the server to keep in its cache
    /// (`--prefix-cache` against Ollama), which `prompt_ms` did not
    /// evaluate: no server prefill rate is derived from the pair, since it
    /// would count the cached context as prefilled. With unique prompts
    /// the reused share is the chat template's first few tokens, and the
    /// rate stands.
    #[serde(default)]
    pub prompt_n_counts_cache: bool,
    /// Ollama's `load_duration`: loading the model inside this request
    /// (a few milliseconds when it was already loaded). A request that
    /// paid for a load has it in its TTFT; the warm-up requests take it.
    #[serde(default)]
    pub load_ms: Option<f64>,
    /// Ollama's `total_duration`: the whole request by its clock.
    #[serde(default)]
    pub total_ms: Option<f64>,
}

/// What one request measured. Times are milliseconds; `start_ms` is from
/// the start of its batch, so concurrent requests can be laid on one axis.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct RequestSample {
    pub start_ms: f64,
    /// Null when it failed.
    #[cfg_attr(feature = "ts", ts(type = "string | null"))]
    pub error_code: Option<FailureCode>,
    pub error: Option<String>,
    /// To the first chunk carrying generated text.
    pub ttft_ms: Option<f64>,
    /// To the end of the stream.
    pub e2e_ms: f64,
    /// Gaps between successive content chunks.
    pub itl_ms: Vec<f64>,
    pub content_chunks: u32,
    pub prompt_tokens: Option<u64>,
    pub completion_tokens: Option<u64>,
    /// Prompt tokens the server says it served from its cache.
    pub cached_tokens: Option<u64>,
    /// With `--prefix-cache` at a depth: the tokens of the shared context
    /// this request carried first, which the server holds cached. Where the
    /// server does not say how many it served from cache (Ollama, often
    /// vLLM and LM Studio), these are taken off the prompt instead, so a
    /// prefill rate counts only what was prefilled.
    #[serde(default)]
    pub shared_prefix_tokens: Option<u64>,
    pub token_source: Option<TokenSource>,
    pub timings: Option<ServerTimings>,
    pub finish_reason: Option<String>,
    /// Times the request was sent again because its pooled connection had
    /// been closed before the server read it (the clock restarts).
    #[serde(default)]
    pub retries: u32,
    /// The generated text, held only until its tokens are counted (when
    /// the server gave no counts and the model's tokenizer is at hand);
    /// never stored.
    #[serde(skip)]
    #[cfg_attr(feature = "ts", ts(skip))]
    pub text: String,
}

/// A service-level objective: a request is good when it meets every bound
/// that is set.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Slo {
    pub ttft_ms: Option<f64>,
    /// Bound on the request's mean inter-token latency.
    pub itl_ms: Option<f64>,
}

/// What to measure. Stored with the run (the API key is not part of it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct ServePlan {
    pub api: Api,
    pub n_prompt: Vec<u32>,
    pub n_gen: Vec<u32>,
    /// Context already in the conversation before the prompt (`-d`).
    pub depths: Vec<u32>,
    pub concurrency: Vec<u32>,
    /// Requests per test (at least the test's concurrency).
    pub requests: u32,
    /// Let the server reuse its prompt cache: the depth's context is sent
    /// once first, and each request adds only its prompt. Off, every
    /// request's whole prompt is new to the server.
    pub prefix_cache: bool,
    pub slo: Slo,
    /// A request with no byte for this long fails as stalled.
    pub stall_s: f64,
    /// No request may take longer.
    pub timeout_s: f64,
    /// The GGUF (file name only) whose tokenizer counted the tokens of
    /// requests the server gave no counts for; null when none was used.
    #[serde(default)]
    pub tokenizer: Option<String>,
}

impl Default for ServePlan {
    fn default() -> Self {
        ServePlan {
            api: Api::Chat,
            n_prompt: vec![512],
            n_gen: vec![128],
            depths: vec![0],
            concurrency: vec![1],
            requests: 5,
            prefix_cache: false,
            slo: Slo::default(),
            stall_s: 60.0,
            timeout_s: 600.0,
            tokenizer: None,
        }
    }
}
