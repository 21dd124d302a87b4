//! Ollama's native chat route, `/api/chat`: the request body, the NDJSON
//! stream, and Ollama's own timings.
//!
//! Why this route for Ollama rather than its OpenAI one: Ollama's
//! `/v1/chat/completions` is a translation layer that rewrites the request
//! into an `/api/chat` request, runs the same handler, and rewrites each
//! reply line into an SSE chunk, keeping the token counts (as `usage`, and
//! only when the version honours `stream_options`) but dropping the
//! durations. The native route streams the same tokens from the same
//! handler, so time to first token and inter-token gaps are the same
//! measurement less a JSON rewrite, and its final object adds what the
//! server measured itself:
//!
//! - `prompt_eval_count` and `prompt_eval_duration` give the server's
//!   prefill, `eval_count` and `eval_duration` its decode, in the same
//!   columns as llama-server's `timings` (durations are nanoseconds,
//!   stored as milliseconds);
//! - `load_duration` shows a request that paid for loading the model, and
//!   `total_duration` the whole request by Ollama's clock.
//!
//! What Ollama cannot be asked, and how the figures say so:
//!
//! - There is no `ignore_eos`: a request stops at the model's end of text
//!   or at `num_predict`, whichever comes first. The decoded count is what
//!   `eval_count` says, and the test's `completion_tokens_mean` shows any
//!   request that stopped early.
//! - There is no switch for its prompt cache, and it does not say how many
//!   prompt tokens it reused: `prompt_eval_count` counts them while
//!   `prompt_eval_duration` covers only the evaluated ones. Dyno's unique
//!   prompts leave it only the chat template's first tokens, so the server
//!   prefill rate stands; with `--prefix-cache` the reused share is the
//!   whole context, and no server prefill rate is derived
//!   ([`ServerTimings::prompt_n_counts_cache`]).
//! - A prompt longer than the model's context (`num_ctx`) is cut by Ollama
//!   to fit; the prompt count it reports, which the test records, shows it.
//!
//! The stream's faults become the same failures as on the SSE path: a
//! line that is not JSON or an `{"error": …}` line is `bad_stream`, a body
//! that ends before the `"done": true` object is `stream_cut`, and an HTTP
//! error before the stream is `server_error` ([`super::request`]).

use std::time::Instant;

use serde_json::{json, Value};

use super::sample::{
    cut_short, mark_content, pump, Failure, RequestSample, RequestSpec, ServerTimings, TokenSource,
};
use super::sse::clip;
use crate::vocab::failure::FailureCode;

/// The native chat route, under the server's base URL.
pub const CHAT_PATH: &str = "api/chat";

/// The longest line Dyno accepts: a server that never ends a line is
/// broken, and must not fill memory.
const MAX_LINE_BYTES: usize = 16 << 20;

/// The `/api/chat` body: the prompt as one user message, streamed, at
/// temperature 0, with `num_predict` as the generation length. Nothing
/// that would make Ollama reload the model (such as `num_ctx`) is sent:
/// the server is measured as it is configured.
pub fn body(spec: &RequestSpec) -> Value {
    json!({
        "model": spec.model,
        "messages": [{"role": "user", "content": spec.prompt}],
        "stream": true,
        "options": {"num_predict": spec.max_tokens, "temperature": 0},
    })
}

/// Bytes in, lines out: newline-delimited JSON as Ollama streams it. Bytes
/// may arrive split anywhere, even inside a UTF-8 character or a `\r\n`;
/// blank lines are skipped.
#[derive(Debug, Default)]
pub struct NdjsonDecoder {
    buf: Vec<u8>,
}

impl NdjsonDecoder {
    pub fn new() -> Self {
        Self::default()
    }

    /// Feed bytes; returns the lines they complete, or why the stream is
    /// not text.
    pub fn push(&mut self, bytes: &[u8]) -> Result<Vec<String>, String> {
        self.buf.extend_from_slice(bytes);
        let mut out = Vec::new();
        while let Some(nl) = self.buf.iter().position(|&b| b == b'\n') {
            let mut line: Vec<u8> = self.buf.drain(..=nl).collect();
            line.pop();
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            let line =
                String::from_utf8(line).map_err(|_| "the stream is not UTF-8 text".to_string())?;
            if !line.trim().is_empty() {
                out.push(line);
            }
        }
        if self.buf.len() > MAX_LINE_BYTES {
            return Err("the stream sent more than 16 MiB without a line break".into());
        }
        Ok(out)
    }

    /// The end of the body: a last line without its newline still counts.
    pub fn finish(&mut self) -> Option<String> {
        let rest = std::mem::take(&mut self.buf);
        let line = String::from_utf8_lossy(&rest).trim().to_string();
        (!line.is_empty()).then_some(line)
    }
}

/// Ollama's final object as [`ServerTimings`], nanoseconds turned into
/// milliseconds. `None` without `eval_count` and `eval_duration` (Ollama
/// leaves out a zero, so a reply of no tokens has none). A missing prompt
/// count or duration reads as 0, which gives no prefill rate.
/// `reused_cache`: the request asked to reuse a cached context (see
/// [`ServerTimings::prompt_n_counts_cache`]).
pub fn timings(done: &Value, reused_cache: bool) -> Option<ServerTimings> {
    let n = |k: &str| done.get(k).and_then(Value::as_u64);
    let ns_to_ms = |k: &str| done.get(k).and_then(Value::as_f64).map(|ns| ns / 1e6);
    let (predicted_n, predicted_ms) = (n("eval_count")?, ns_to_ms("eval_duration")?);
    Some(ServerTimings {
        prompt_n: n("prompt_eval_count").unwrap_or(0),
        prompt_ms: ns_to_ms("prompt_eval_duration").unwrap_or(0.0),
        predicted_n,
        predicted_ms,
        cache_n: None,
        prompt_n_counts_cache: reused_cache,
        load_ms: ns_to_ms("load_duration"),
        total_ms: ns_to_ms("total_duration"),
    })
}

/// Read one NDJSON line into the sample. Returns whether it was the final
/// `"done": true` object.
fn take_line(
    s: &mut RequestSample,
    text: &str,
    now: Instant,
    t0: Instant,
    last_content: &mut Option<Instant>,
    reused_cache: bool,
) -> Result<bool, String> {
    let v: Value = serde_json::from_str(text).map_err(|e| {
        format!(
            "the stream sent a line that is not JSON ({e}): '{}'",
            clip(text)
        )
    })?;
    if let Some(err) = v.get("error") {
        let msg = err
            .as_str()
            .map(str::to_string)
            .unwrap_or_else(|| err.to_string());
        return Err(format!(
            "the server reported an error mid-stream: {}",
            clip(&msg)
        ));
    }
    let message = v.get("message");
    // Thinking is generated text too, as `reasoning_content` is on the SSE
    // path: a reasoning model's first token is its first thought.
    let generated: String = ["content", "thinking"]
        .into_iter()
        .filter_map(|k| message.and_then(|m| m.get(k)).and_then(Value::as_str))
        .collect();
    if !generated.is_empty() {
        mark_content(s, &generated, now, t0, last_content);
    }
    if v.get("done").and_then(Value::as_bool) != Some(true) {
        return Ok(false);
    }
    s.finish_reason = v
        .get("done_reason")
        .and_then(Value::as_str)
        .map(str::to_string)
        .or_else(|| Some("stop".into()));
    if let Some(t) = timings(&v, reused_cache) {
        s.token_source = Some(TokenSource::Timings);
        s.completion_tokens = Some(t.predicted_n);
        s.prompt_tokens = v.get("prompt_eval_count").and_then(Value::as_u64);
        s.timings = Some(t);
    }
    Ok(true)
}

/// Read the NDJSON stream to its end, timing each line that carries
/// generated text. Fails on a stall, the deadline, a cut, a line that is
/// not JSON, an error line, a stream that never sends its `done` object,
/// or one that holds no generated text.
pub(super) async fn read_stream(
    mut resp: reqwest::Response,
    spec: &RequestSpec,
    s: &mut RequestSample,
    t0: Instant,
) -> Result<(), Failure> {
    let bad = |why: String| (FailureCode::BadStream, why);
    let reused_cache = spec.cache_prompt;
    let mut lines = NdjsonDecoder::new();
    let mut last_content: Option<Instant> = None;
    let mut done = false;
    pump(&mut resp, spec, t0, |bytes, now| {
        for line in lines.push(bytes).map_err(bad)? {
            done |= take_line(s, &line, now, t0, &mut last_content, reused_cache).map_err(bad)?;
        }
        Ok(())
    })
    .await?;
    if let Some(line) = lines.finish() {
        let now = Instant::now();
        done |= take_line(s, &line, now, t0, &mut last_content, reused_cache).map_err(bad)?;
    }
    if !done {
        return Err(cut_short(s));
    }
    if s.ttft_ms.is_none() {
        return Err(bad("the stream ended without any generated text".into()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::serve::detect::ServerKind;
    use crate::serve::sample::Api;

    #[test]
    fn lines_split_anywhere_come_out_whole() {
        // A CRLF, a blank line, and a character of three UTF-8 bytes that a
        // cut can fall inside.
        let stream = "{\"a\":\"…\"}\r\n\n{\"b\":2}\n{\"done\":true}\n".as_bytes();
        for cut in 0..=stream.len() {
            let mut d = NdjsonDecoder::new();
            let mut got = d.push(&stream[..cut]).unwrap();
            got.extend(d.push(&stream[cut..]).unwrap());
            assert_eq!(
                got,
                vec!["{\"a\":\"…\"}", "{\"b\":2}", "{\"done\":true}"],
                "cut at {cut}"
            );
            assert_eq!(d.finish(), None, "cut at {cut}");
        }
    }

    #[test]
    fn a_last_line_without_its_newline_counts() {
        let mut d = NdjsonDecoder::new();
        assert_eq!(d.push(b"{\"a\":1}\n{\"done\":").unwrap(), vec!["{\"a\":1}"]);
        assert_eq!(d.push(b"true}").unwrap(), Vec::<String>::new());
        assert_eq!(d.finish(), Some("{\"done\":true}".to_string()));
        assert_eq!(d.finish(), None);
    }

    #[test]
    fn a_body_that_is_not_text_is_refused() {
        let mut d = NdjsonDecoder::new();
        assert!(d.push(b"\xff\xfe\n").unwrap_err().contains("UTF-8"));
    }

    /// Ollama's final object: 512 prompt tokens in 250 ms, 16 generated in
    /// 200 ms, 3 ms of load, nanoseconds all.
    fn done_object() -> Value {
        json!({"model": "m", "message": {"role": "assistant", "content": ""},
               "done": true, "done_reason": "length",
               "total_duration": 460_000_000u64, "load_duration": 3_000_000u64,
               "prompt_eval_count": 512, "prompt_eval_duration": 250_000_000u64,
               "eval_count": 16, "eval_duration": 200_000_000u64})
    }

    #[test]
    fn nanoseconds_become_the_server_prefill_and_decode_figures() {
        let t = timings(&done_object(), false).unwrap();
        assert_eq!((t.prompt_n, t.predicted_n), (512, 16));
        assert_eq!((t.prompt_ms, t.predicted_ms), (250.0, 200.0));
        assert_eq!((t.load_ms, t.total_ms), (Some(3.0), Some(460.0)));
        assert_eq!(t.cache_n, None);
        let s = RequestSample {
            timings: Some(t),
            ..RequestSample::default()
        };
        let close = |a: f64, b: f64| (a - b).abs() < 1e-9 * b;
        assert!(close(s.server_decode_tokens_per_s().unwrap(), 80.0));
        assert!(close(s.server_prefill_tokens_per_s().unwrap(), 2048.0));

        // A cached context counted in prompt_eval_count but not evaluated
        // in prompt_eval_duration gives no prefill rate; decode stands.
        let cached = RequestSample {
            timings: timings(&done_object(), true),
            ..RequestSample::default()
        };
        assert_eq!(cached.server_prefill_tokens_per_s(), None);
        assert!(close(cached.server_decode_tokens_per_s().unwrap(), 80.0));

        // Ollama leaves out zeros: no prompt duration, no prefill rate; no
        // eval count, no timings at all.
        let mut v = done_object();
        v.as_object_mut().unwrap().remove("prompt_eval_duration");
        let s = RequestSample {
            timings: timings(&v, false),
            ..RequestSample::default()
        };
        assert_eq!(s.server_prefill_tokens_per_s(), None);
        v.as_object_mut().unwrap().remove("eval_count");
        assert_eq!(timings(&v, false), None);
    }

    #[test]
    fn lines_give_ttft_gaps_counts_and_the_source() {
        let t0 = Instant::now();
        let mut s = RequestSample::default();
        let mut last = None;
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        let line = |v: Value| v.to_string();
        let msg = |k: &str, text: &str| {
            line(json!({"message": {"role": "assistant", k: text}, "done": false}))
        };
        // An empty first line is not a token; a thought is.
        assert!(!take_line(&mut s, &msg("content", ""), at(5), t0, &mut last, false).unwrap());
        assert!(!take_line(&mut s, &msg("thinking", "hm"), at(40), t0, &mut last, false).unwrap());
        assert!(!take_line(&mut s, &msg("content", " a"), at(50), t0, &mut last, false).unwrap());
        let done = line(done_object());
        assert!(take_line(&mut s, &done, at(51), t0, &mut last, false).unwrap());
        assert_eq!(s.content_chunks, 2);
        assert!((s.ttft_ms.unwrap() - 40.0).abs() < 1e-6);
        assert_eq!(s.itl_ms.len(), 1);
        assert!((s.itl_ms[0] - 10.0).abs() < 1e-6);
        assert_eq!(s.token_source, Some(TokenSource::Timings));
        assert_eq!(
            (s.prompt_tokens, s.completion_tokens),
            (Some(512), Some(16))
        );
        assert_eq!(s.cached_tokens, None);
        assert_eq!(s.finish_reason.as_deref(), Some("length"));
        assert!(s.timings.is_some());
    }

    #[test]
    fn a_line_that_is_not_json_or_an_error_line_is_refused_with_the_reason() {
        let t0 = Instant::now();
        let mut s = RequestSample::default();
        let mut last = None;
        let e = take_line(&mut s, "data: {\"a\":1}", t0, t0, &mut last, false).unwrap_err();
        assert!(e.contains("not JSON") && e.contains("data: {"), "{e}");
        let e = take_line(
            &mut s,
            r#"{"error":"model runner has unexpectedly stopped"}"#,
            t0,
            t0,
            &mut last,
            false,
        )
        .unwrap_err();
        assert!(e.contains("mid-stream: model runner has"), "{e}");
    }

    #[test]
    fn chat_against_ollama_takes_the_native_route_with_its_options() {
        assert_eq!(Api::Chat.path_for(ServerKind::Ollama), "api/chat");
        assert_eq!(
            Api::Completions.path_for(ServerKind::Ollama),
            "v1/completions"
        );
        assert_eq!(
            Api::Chat.path_for(ServerKind::LlamaServer),
            "v1/chat/completions"
        );
        let spec = RequestSpec {
            url: "http://127.0.0.1:11434/api/chat".into(),
            api: Api::Chat,
            kind: ServerKind::Ollama,
            model: "qwen3:0.6b".into(),
            prompt: "hello".into(),
            max_tokens: 16,
            cache_prompt: false,
            api_key: None,
            stall: Duration::from_secs(1),
            deadline: Duration::from_secs(1),
        };
        let b = spec.body();
        assert_eq!(b["messages"][0]["content"], "hello");
        assert_eq!(b["stream"], true);
        assert_eq!(b["options"]["num_predict"], 16);
        assert_eq!(b["options"]["temperature"], 0);
        assert!(b.get("stream_options").is_none() && b.get("max_tokens").is_none());
    }
}
