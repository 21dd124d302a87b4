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

use serde_json::{json, Value};

use super::detect::ServerKind;
use super::ollama;
use super::sample::{cut_short, mark_content, ms, pump, Failure};
pub use super::sample::{Api, RequestSample, RequestSpec, ServerTimings, TokenSource};
use super::sse::{clip, SseData, SseDecoder};
use crate::vocab::failure::FailureCode;

impl Api {
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
}

impl RequestSpec {
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
