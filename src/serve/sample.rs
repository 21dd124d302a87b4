//! What one streamed request gives and how its body is read, whichever
//! format carries the tokens: the request, the timed sample, the server's
//! own counts, and the pump that hands the body over piece by piece. The
//! OpenAI routes' reader ([`super::request`]) and Ollama's native one
//! ([`super::ollama`]) both build on it, so neither imports the other's.

use std::time::{Duration, Instant};

use super::detect::ServerKind;
use crate::vocab::failure::FailureCode;
pub use crate::vocab::serve::{Api, RequestSample, ServerTimings, TokenSource};

impl Api {
    /// The OpenAI-compatible path.
    pub fn path(self) -> &'static str {
        match self {
            Api::Chat => "v1/chat/completions",
            Api::Completions => "v1/completions",
        }
    }

    /// Whether requests take Ollama's native route.
    pub fn is_ollama_native(self, kind: ServerKind) -> bool {
        self == Api::Chat && kind == ServerKind::Ollama
    }
}

impl RequestSample {
    pub fn ok(&self) -> bool {
        self.error_code.is_none()
    }

    /// Generated tokens: the server's count, else the chunks.
    pub fn generated(&self) -> u64 {
        self.completion_tokens
            .unwrap_or(u64::from(self.content_chunks))
    }

    /// Tokens each content chunk carried, on average, where the server
    /// counted the tokens and sent fewer chunks than tokens (vLLM and
    /// others batch several tokens into one event); 1 otherwise.
    pub fn tokens_per_chunk(&self) -> f64 {
        match self.completion_tokens {
            Some(n) if self.content_chunks > 0 && n > u64::from(self.content_chunks) => {
                n as f64 / f64::from(self.content_chunks)
            }
            _ => 1.0,
        }
    }

    /// The gaps between tokens: each gap between chunks divided by the
    /// tokens a chunk carried, so a server that sends several tokens per
    /// event is not read as several times slower per token.
    pub fn itl_per_token_ms(&self) -> impl Iterator<Item = f64> + '_ {
        let k = self.tokens_per_chunk();
        self.itl_ms.iter().map(move |g| g / k)
    }

    /// Time per output token after the first: (e2e − TTFT) ÷ (tokens − 1).
    pub fn tpot_ms(&self) -> Option<f64> {
        let n = self.generated();
        let ttft = self.ttft_ms?;
        (self.ok() && n > 1).then(|| (self.e2e_ms - ttft) / (n - 1) as f64)
    }

    /// Decode rate of this request as the client saw it.
    pub fn decode_tokens_per_s(&self) -> Option<f64> {
        self.tpot_ms().filter(|t| *t > 0.0).map(|t| 1e3 / t)
    }

    /// Prompt tokens the server had to process (not from its cache) per
    /// second of TTFT, as the client saw it: queueing and the network are
    /// inside. Null without a server prompt count.
    pub fn prefill_tokens_per_s(&self) -> Option<f64> {
        let ttft = self.ttft_ms.filter(|t| *t > 0.0)?;
        let n = self.prefilled_tokens()?;
        self.ok().then(|| n as f64 / (ttft / 1e3))
    }

    /// Prompt tokens the server had to prefill: the prompt less what it
    /// served from cache, by its own count, else by the shared prefix this
    /// request is known to have carried.
    pub fn prefilled_tokens(&self) -> Option<u64> {
        let cached = self
            .cached_tokens
            .or(self.shared_prefix_tokens)
            .unwrap_or(0);
        Some(self.prompt_tokens?.saturating_sub(cached))
    }

    /// Prefill rate by the server's own clock (llama-server, Ollama).
    pub fn server_prefill_tokens_per_s(&self) -> Option<f64> {
        let t = self
            .timings
            .filter(|t| t.prompt_ms > 0.0 && !t.prompt_n_counts_cache)?;
        Some(t.prompt_n as f64 / (t.prompt_ms / 1e3))
    }

    /// Decode rate by the server's own clock (llama-server, Ollama).
    pub fn server_decode_tokens_per_s(&self) -> Option<f64> {
        let t = self.timings.filter(|t| t.predicted_ms > 0.0)?;
        Some(t.predicted_n as f64 / (t.predicted_ms / 1e3))
    }
}

/// What to send. It owns its text, so a concurrent request can move it
/// into its own task.
#[derive(Debug, Clone)]
pub struct RequestSpec {
    pub url: String,
    pub api: Api,
    pub kind: ServerKind,
    pub model: String,
    pub prompt: String,
    pub max_tokens: u32,
    /// Let the server reuse its prompt cache (llama-server's
    /// `cache_prompt`); otherwise asked not to, where it can be asked
    /// (Ollama cannot: it always reuses what it can, and unique prompts
    /// leave it only the template's first tokens).
    pub cache_prompt: bool,
    pub api_key: Option<String>,
    /// No byte for this long: the request fails as stalled.
    pub stall: Duration,
    /// The whole request may not take longer.
    pub deadline: Duration,
}

impl RequestSpec {
    /// Whether the request takes Ollama's native route.
    pub fn is_ollama_native(&self) -> bool {
        self.api.is_ollama_native(self.kind)
    }
}

/// Why a request failed: its code and the reason in words.
pub(super) type Failure = (FailureCode, String);

/// Hand the body to `take` piece by piece as it arrives, with the arrival
/// time, until the server ends it. Fails on a stall (no byte for
/// `spec.stall`), the deadline, or a connection that breaks off; whether
/// the body that did arrive is a whole reply is for the caller to judge.
pub(super) async fn pump(
    resp: &mut reqwest::Response,
    spec: &RequestSpec,
    t0: Instant,
    mut take: impl FnMut(&[u8], Instant) -> Result<(), Failure>,
) -> Result<(), Failure> {
    let deadline = tokio::time::Instant::from_std(t0) + spec.deadline;
    loop {
        let next = tokio::select! {
            c = resp.chunk() => c,
            _ = tokio::time::sleep(spec.stall) => {
                let why = format!("the stream stalled: nothing for {:?}", spec.stall);
                return Err((FailureCode::TimedOut, why));
            }
            _ = tokio::time::sleep_until(deadline) => {
                let why = format!("the request took longer than {:?}", spec.deadline);
                return Err((FailureCode::TimedOut, why));
            }
        };
        match next {
            Ok(Some(bytes)) => take(&bytes, Instant::now())?,
            Ok(None) => return Ok(()),
            Err(e) => {
                let why = format!("the stream broke off: {}", e.without_url());
                return Err((FailureCode::StreamCut, why));
            }
        }
    }
}

/// A chunk carrying generated `text` arrived at `now`: the first stops the
/// TTFT clock, each later one gives an inter-token gap.
pub(super) fn mark_content(
    s: &mut RequestSample,
    text: &str,
    now: Instant,
    t0: Instant,
    last_content: &mut Option<Instant>,
) {
    s.content_chunks += 1;
    s.text.push_str(text);
    if s.ttft_ms.is_none() {
        s.ttft_ms = Some(ms(now - t0));
    }
    if let Some(prev) = *last_content {
        s.itl_ms.push(ms(now - prev));
    }
    *last_content = Some(now);
}

/// The reason for a body that ended before the server said it was done.
pub(super) fn cut_short(s: &RequestSample) -> Failure {
    let why = format!(
        "the server closed the stream before it ended (after {} content chunks)",
        s.content_chunks
    );
    (FailureCode::StreamCut, why)
}

pub(super) fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}
