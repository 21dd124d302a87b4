//! One streamed request, timed from the client's side.
//!
//! The clock starts just before the request is sent. Time to first token
//! stops at the first chunk that carries generated text (content or
//! reasoning), not at the first chunk: servers send a role-only chunk, and
//! some send it before prefill ends. Each later content chunk gives an
//! inter-token gap. Token counts come from the server when it reports them
//! (`usage`, llama-server's `timings`, or Ollama's final `done` object),
//! and the source is kept with the figure; without them Dyno counts content
//! chunks and says so.
//!
//! The body arrives as Server-Sent Events from the OpenAI routes and as
//! NDJSON from Ollama's native one ([`super::ollama`]); both are read
//! through the same [`pump`], so a stall, the deadline and a cut are judged
//! alike whichever format carries the tokens.

use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::detect::ServerKind;
use super::ollama;
use super::sse::{clip, SseData, SseDecoder};
use crate::vocab::failure::FailureCode;

/// Which route a request takes: the OpenAI-compatible ones, except that
/// chat against Ollama takes Ollama's native chat route ([`Api::path_for`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
#[serde(rename_all = "lowercase")]
pub enum Api {
    /// `/v1/chat/completions`: the prompt as one user message, through the
    /// model's chat template.
    Chat,
    /// `/v1/completions`: the raw prompt.
    Completions,
}

impl Api {
    /// The OpenAI-compatible path.
    pub fn path(self) -> &'static str {
        match self {
            Api::Chat => "v1/chat/completions",
            Api::Completions => "v1/completions",
        }
    }

    /// The path requests take on a server of this kind. Chat against
    /// Ollama goes to its native `/api/chat`: Ollama's OpenAI chat route is
    /// a translation layer in front of that same handler which drops
    /// Ollama's own timings, so the native route measures the same work and
    /// adds the server's clock (see [`super::ollama`]).
    pub fn path_for(self, kind: ServerKind) -> &'static str {
        if self.is_ollama_native(kind) {
            ollama::CHAT_PATH
        } else {
            self.path()
        }
    }

    /// Whether requests take Ollama's native route.
    pub fn is_ollama_native(self, kind: ServerKind) -> bool {
        self == Api::Chat && kind == ServerKind::Ollama
    }
}

/// Where a request's token counts came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
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
    /// [`super::tokens`]). Through the chat API the prompt count lacks the
    /// chat template's tokens.
    Tokenizer,
}

/// The server's own account of a request, by its clock: llama-server's
/// `timings` object, or Ollama's final `done` object with its nanoseconds
/// turned into milliseconds ([`super::ollama::timings`]).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, ts_rs::TS)]
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
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct RequestSample {
    pub start_ms: f64,
    /// Null when it failed.
    #[ts(type = "string | null")]
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
    #[ts(skip)]
    pub text: String,
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

    /// The JSON body. Fields beyond the OpenAI API go only to servers known
    /// to accept them: a strict server refuses unknown ones.
    pub fn body(&self) -> Value {
        if self.is_ollama_native() {
            return ollama::body(self);
        }
        let mut b = match self.api {
            Api::Chat => json!({
                "model": self.model,
                "messages": [{"role": "user", "content": self.prompt}],
            }),
            Api::Completions => json!({"model": self.model, "prompt": self.prompt}),
        };
        b["max_tokens"] = json!(self.max_tokens);
        b["stream"] = json!(true);
        b["stream_options"] = json!({"include_usage": true});
        b["temperature"] = json!(0);
        match self.kind {
            // Generate exactly max_tokens, so every request decodes the
            // same length, as llama-bench's tg does.
            ServerKind::LlamaServer => {
                b["ignore_eos"] = json!(true);
                b["cache_prompt"] = json!(self.cache_prompt);
                b["timings_per_token"] = json!(false);
            }
            ServerKind::Vllm => b["ignore_eos"] = json!(true),
            ServerKind::Ollama | ServerKind::LmStudio | ServerKind::OpenAi => {}
        }
        b
    }
}

/// Why a request failed: its code and the reason in words.
pub(super) type Failure = (FailureCode, String);

/// Send one request and time it. Never returns an error: a failure is a
/// sample with its code and reason, so a batch records it and goes on.
pub async fn send(
    client: &reqwest::Client,
    spec: &RequestSpec,
    batch_t0: Instant,
) -> RequestSample {
    let mut s = RequestSample::default();
    let mut t0 = Instant::now();
    s.start_ms = ms(t0 - batch_t0);
    let outcome = match open_stream(client, spec, &mut s, &mut t0, batch_t0).await {
        Ok(resp) if spec.is_ollama_native() => ollama::read_stream(resp, spec, &mut s, t0).await,
        Ok(resp) => read_stream(resp, spec, &mut s, t0).await,
        Err(f) => Err(f),
    };
    s.e2e_ms = ms(t0.elapsed());
    match outcome {
        Ok(()) => {
            s.token_source.get_or_insert(TokenSource::Chunks);
        }
        Err((code, why)) => {
            s.error_code = Some(code);
            s.error = Some(why);
        }
    }
    s
}

/// Send the request and get a 2xx response whose body is the stream.
/// `t0` is the request's clock: restarted if the request is sent again.
async fn open_stream(
    client: &reqwest::Client,
    spec: &RequestSpec,
    s: &mut RequestSample,
    t0: &mut Instant,
    batch_t0: Instant,
) -> Result<reqwest::Response, Failure> {
    let post = || {
        let req = client.post(&spec.url).json(&spec.body());
        match &spec.api_key {
            Some(k) => req.bearer_auth(k),
            None => req,
        }
    };
    let deadline = |t0: Instant| tokio::time::Instant::from_std(t0) + spec.deadline;
    let mut sent = tokio::time::timeout_at(deadline(*t0), post().send()).await;
    // A pooled connection the server had just closed (llama-server closes
    // a keep-alive connection after a few requests) fails before the
    // request reaches it. Sent again once on a fresh connection, with the
    // clock restarted, and counted.
    if matches!(&sent, Ok(Err(e)) if e.is_request() && !e.is_timeout() && !e.is_connect()) {
        s.retries += 1;
        *t0 = Instant::now();
        s.start_ms = ms(*t0 - batch_t0);
        sent = tokio::time::timeout_at(deadline(*t0), post().send()).await;
    }
    let resp = match sent {
        Err(_) => {
            let why = format!("no response within {:?}", spec.deadline);
            return Err((FailureCode::TimedOut, why));
        }
        Ok(Err(e)) => {
            // The run stores its server's address once, in a column an
            // export can hide; reqwest names the URL in its text too.
            let why = format!("cannot reach the server: {}", e.without_url());
            return Err((FailureCode::Unreachable, why));
        }
        Ok(Ok(r)) => r,
    };
    let status = resp.status();
    if status.is_success() {
        return Ok(resp);
    }
    let body = error_body(resp).await;
    let hint = match status.as_u16() {
        401 | 403 => "; check the API key (--api-key or DYNO_API_KEY)",
        404 => "; check the model name (--model) and that the server has this API",
        _ => "",
    };
    Err((
        FailureCode::ServerError,
        format!(
            "the server answered HTTP {status}: {}{hint}",
            clip(body.trim())
        ),
    ))
}

/// The start of an error reply's body, for the message: at most 64 KiB and
/// 5 s of it, so a server that answers an error with an endless body is
/// neither waited on nor held in memory.
async fn error_body(mut resp: reqwest::Response) -> String {
    const MAX: usize = 64 << 10;
    let mut out = Vec::new();
    let read = async {
        while let Ok(Some(chunk)) = resp.chunk().await {
            out.extend_from_slice(&chunk);
            if out.len() >= MAX {
                out.truncate(MAX);
                break;
            }
        }
    };
    let _ = tokio::time::timeout(Duration::from_secs(5), read).await;
    String::from_utf8_lossy(&out).into_owned()
}

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

/// Read the event stream to its end, timing each content chunk. Fails on
/// a stall, the deadline, a cut, or a stream that is not SSE and JSON, that
/// never finishes, or that holds no generated text.
async fn read_stream(
    mut resp: reqwest::Response,
    spec: &RequestSpec,
    s: &mut RequestSample,
    t0: Instant,
) -> Result<(), Failure> {
    let bad = |why: String| (FailureCode::BadStream, why);
    let mut sse = SseDecoder::new();
    let mut last_content: Option<Instant> = None;
    let mut done = false;
    pump(&mut resp, spec, t0, |bytes, now| {
        for ev in sse.push(bytes).map_err(bad)? {
            match ev {
                SseData::Done => done = true,
                SseData::Json(text) => {
                    take_chunk(s, &text, now, t0, &mut last_content).map_err(bad)?
                }
            }
        }
        Ok(())
    })
    .await?;
    if let Some(SseData::Json(text)) = sse.finish() {
        take_chunk(s, &text, Instant::now(), t0, &mut last_content).map_err(bad)?;
    }
    if !done && s.finish_reason.is_none() {
        return Err(cut_short(s));
    }
    if s.ttft_ms.is_none() {
        return Err(bad("the stream ended without any generated text".into()));
    }
    Ok(())
}

/// Read one streamed JSON chunk into the sample.
fn take_chunk(
    s: &mut RequestSample,
    text: &str,
    now: Instant,
    t0: Instant,
    last_content: &mut Option<Instant>,
) -> Result<(), String> {
    let v: Value = serde_json::from_str(text).map_err(|e| {
        format!(
            "the stream sent data that is not JSON ({e}): '{}'",
            clip(text)
        )
    })?;
    if let Some(err) = v.get("error") {
        let msg = err
            .get("message")
            .and_then(Value::as_str)
            .map(str::to_string)
            .unwrap_or_else(|| err.to_string());
        return Err(format!(
            "the server reported an error mid-stream: {}",
            clip(&msg)
        ));
    }
    let choice = v.get("choices").and_then(|c| c.get(0));
    if let Some(c) = choice {
        let delta = c.get("delta");
        let text_of = |k: &str| {
            delta
                .and_then(|d| d.get(k))
                .or_else(|| (k == "content").then(|| c.get("text")).flatten())
                .and_then(Value::as_str)
                .filter(|t| !t.is_empty())
        };
        let generated: String = ["content", "reasoning_content", "reasoning"]
            .into_iter()
            .filter_map(text_of)
            .collect();
        if !generated.is_empty() {
            mark_content(s, &generated, now, t0, last_content);
        }
        if let Some(r) = c.get("finish_reason").and_then(Value::as_str) {
            s.finish_reason = Some(r.to_string());
        }
    }
    if let Some(u) = v.get("usage").filter(|u| u.is_object()) {
        s.token_source = Some(TokenSource::Usage);
        s.prompt_tokens = u
            .get("prompt_tokens")
            .and_then(Value::as_u64)
            .or(s.prompt_tokens);
        s.completion_tokens = u
            .get("completion_tokens")
            .and_then(Value::as_u64)
            .or(s.completion_tokens);
        s.cached_tokens = u
            .get("prompt_tokens_details")
            .and_then(|d| d.get("cached_tokens"))
            .and_then(Value::as_u64)
            .or(s.cached_tokens);
    }
    if let Some(t) = v.get("timings").filter(|t| t.is_object()) {
        let f = |k: &str| t.get(k).and_then(Value::as_f64);
        if let (Some(pn), Some(pm), Some(gn), Some(gm)) = (
            f("prompt_n"),
            f("prompt_ms"),
            f("predicted_n"),
            f("predicted_ms"),
        ) {
            s.timings = Some(ServerTimings {
                prompt_n: pn as u64,
                prompt_ms: pm,
                predicted_n: gn as u64,
                predicted_ms: gm,
                cache_n: f("cache_n").map(|c| c as u64),
                prompt_n_counts_cache: false,
                load_ms: None,
                total_ms: None,
            });
            if s.cached_tokens.is_none() {
                s.cached_tokens = f("cache_n").map(|c| c as u64);
            }
            // Without `usage`, the server's timings still count tokens.
            if s.token_source.is_none() {
                s.token_source = Some(TokenSource::Timings);
                s.completion_tokens = Some(gn as u64);
                s.prompt_tokens = Some(pn as u64 + s.cached_tokens.unwrap_or(0));
            }
        }
    }
    Ok(())
}

pub(super) fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}
