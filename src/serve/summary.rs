//! One test's requests summed up, and the concurrency knee.
//!
//! Per-request figures (what one user waits for) and totals across the
//! concurrent requests (what the server delivers) are kept apart, as are
//! the client's clock (network and queueing inside) and the server's own
//! (llama-server's `timings`, Ollama's final `done` object).

use serde::{Deserialize, Serialize};

use super::request::{RequestSample, TokenSource};
use super::stats::{percentiles, Percentiles};
pub use crate::vocab::serve::Slo;

impl Slo {
    pub fn is_set(&self) -> bool {
        self.ttft_ms.is_some() || self.itl_ms.is_some()
    }

    pub fn met_by(&self, r: &RequestSample) -> bool {
        let itl = (!r.itl_ms.is_empty())
            .then(|| r.itl_per_token_ms().sum::<f64>() / r.itl_ms.len() as f64);
        r.ok()
            && self
                .ttft_ms
                .is_none_or(|b| r.ttft_ms.is_some_and(|t| t <= b))
            && self.itl_ms.is_none_or(|b| itl.is_some_and(|t| t <= b))
    }
}

/// Requests that met the SLO.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Goodput {
    pub slo: Slo,
    pub met: usize,
    /// Share of all requests sent (failed ones count as missed).
    pub fraction: f64,
    /// Good requests per second of the test's wall time.
    pub requests_per_s: f64,
}

/// Figures of one test: its requests, per request and in total.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct TestSummary {
    pub requests: usize,
    pub ok: usize,
    pub failed: usize,
    /// Each distinct failure reason with how many requests it stopped.
    pub errors: Vec<(String, usize)>,
    /// Requests sent a second time because the server closed their pooled
    /// connection before reading them; their clocks restarted with the
    /// second send. Said, never hidden: many means a server dropping
    /// connections.
    #[serde(default)]
    pub retries: usize,
    /// Where the token counts came from (the most common source).
    pub token_source: Option<TokenSource>,
    pub prompt_tokens_mean: Option<f64>,
    pub completion_tokens_mean: Option<f64>,
    /// Prompt tokens the server served from its cache, on average.
    pub cached_tokens_mean: Option<f64>,
    /// Per request, the client's clock.
    pub ttft_ms: Option<Percentiles>,
    pub itl_ms: Option<Percentiles>,
    pub tpot_ms: Option<Percentiles>,
    pub e2e_ms: Option<Percentiles>,
    pub prefill_tokens_per_s: Option<Percentiles>,
    pub decode_tokens_per_s: Option<Percentiles>,
    /// Per request, the server's own clock (llama-server, and Ollama on
    /// its native route; Ollama's prefill is left out with `--prefix-cache`,
    /// see `ServerTimings::prompt_n_counts_cache`).
    pub server_prefill_tokens_per_s: Option<Percentiles>,
    pub server_decode_tokens_per_s: Option<Percentiles>,
    /// Totals over the test's wall time (first send to last end): what the
    /// server delivered to all requests together.
    pub wall_ms: f64,
    pub total_output_tokens_per_s: f64,
    pub total_prompt_tokens_per_s: f64,
    pub requests_per_s: f64,
    pub goodput: Option<Goodput>,
}

fn mean(v: impl Iterator<Item = f64>) -> Option<f64> {
    let (s, n) = v.fold((0.0, 0usize), |(s, n), x| (s + x, n + 1));
    (n > 0).then(|| s / n as f64)
}

pub fn summarize(reqs: &[RequestSample], wall_ms: f64, slo: &Slo) -> TestSummary {
    let ok: Vec<&RequestSample> = reqs.iter().filter(|r| r.ok()).collect();
    let mut errors: Vec<(String, usize)> = Vec::new();
    for r in reqs.iter().filter(|r| !r.ok()) {
        let why = r.error.clone().unwrap_or_default();
        match errors.iter_mut().find(|e| e.0 == why) {
            Some(e) => e.1 += 1,
            None => errors.push((why, 1)),
        }
    }
    let mut sources: Vec<(TokenSource, usize)> = Vec::new();
    for s in ok.iter().filter_map(|r| r.token_source) {
        match sources.iter_mut().find(|e| e.0 == s) {
            Some(e) => e.1 += 1,
            None => sources.push((s, 1)),
        }
    }
    let token_source = sources.iter().max_by_key(|e| e.1).map(|e| e.0);
    let of = |f: &dyn Fn(&RequestSample) -> Option<f64>| {
        percentiles(&ok.iter().filter_map(|r| f(r)).collect::<Vec<_>>())
    };
    let itl: Vec<f64> = ok.iter().flat_map(|r| r.itl_per_token_ms()).collect();
    let secs = (wall_ms / 1e3).max(1e-9);
    let out_tokens: u64 = ok.iter().map(|r| r.generated()).sum();
    let prompt_tokens: u64 = ok.iter().filter_map(|r| r.prefilled_tokens()).sum();
    let goodput = slo.is_set().then(|| {
        let met = reqs.iter().filter(|r| slo.met_by(r)).count();
        Goodput {
            slo: *slo,
            met,
            fraction: if reqs.is_empty() {
                0.0
            } else {
                met as f64 / reqs.len() as f64
            },
            requests_per_s: met as f64 / secs,
        }
    });
    TestSummary {
        requests: reqs.len(),
        ok: ok.len(),
        failed: reqs.len() - ok.len(),
        errors,
        retries: reqs.iter().filter(|r| r.retries > 0).count(),
        token_source,
        prompt_tokens_mean: mean(ok.iter().filter_map(|r| r.prompt_tokens.map(|t| t as f64))),
        completion_tokens_mean: mean(ok.iter().map(|r| r.generated() as f64)),
        cached_tokens_mean: mean(ok.iter().filter_map(|r| r.cached_tokens.map(|t| t as f64))),
        ttft_ms: of(&|r| r.ttft_ms),
        itl_ms: percentiles(&itl),
        tpot_ms: of(&|r| r.tpot_ms()),
        e2e_ms: of(&|r| Some(r.e2e_ms)),
        prefill_tokens_per_s: of(&|r| r.prefill_tokens_per_s()),
        decode_tokens_per_s: of(&|r| r.decode_tokens_per_s()),
        server_prefill_tokens_per_s: of(&|r| r.server_prefill_tokens_per_s()),
        server_decode_tokens_per_s: of(&|r| r.server_decode_tokens_per_s()),
        wall_ms,
        total_output_tokens_per_s: out_tokens as f64 / secs,
        total_prompt_tokens_per_s: prompt_tokens as f64 / secs,
        requests_per_s: ok.len() as f64 / secs,
        goodput,
    }
}

/// The knee of a concurrency sweep: the lowest concurrency whose total
/// output rate reaches 90% of the best one. Beyond it, more parallel
/// requests mostly make each one slower. `None` with fewer than two levels.
pub fn knee(points: &[(u32, f64)]) -> Option<u32> {
    if points.len() < 2 {
        return None;
    }
    let best = points.iter().map(|p| p.1).fold(f64::NEG_INFINITY, f64::max);
    let mut sorted = points.to_vec();
    sorted.sort_by_key(|p| p.0);
    sorted.iter().find(|p| p.1 >= 0.9 * best).map(|p| p.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vocab::failure::FailureCode;

    fn req(ttft: f64, e2e: f64, n: u64, itl: f64) -> RequestSample {
        RequestSample {
            ttft_ms: Some(ttft),
            e2e_ms: e2e,
            completion_tokens: Some(n),
            prompt_tokens: Some(100),
            itl_ms: vec![itl; n as usize - 1],
            content_chunks: n as u32,
            token_source: Some(TokenSource::Usage),
            ..RequestSample::default()
        }
    }

    #[test]
    fn per_request_and_total_figures_are_kept_apart() {
        // Two requests side by side, each 11 tokens over 1 s after a 100 ms
        // TTFT: 10 tok/s each after the first token, but 22 tokens in the
        // 1.1 s the pair took: 20 tok/s in total.
        let reqs = [req(100.0, 1100.0, 11, 100.0), req(100.0, 1100.0, 11, 100.0)];
        let s = summarize(&reqs, 1100.0, &Slo::default());
        assert_eq!(s.decode_tokens_per_s.as_ref().unwrap().p50.value, 10.0);
        assert!((s.total_output_tokens_per_s - 20.0).abs() < 1e-9);
        assert_eq!(s.prefill_tokens_per_s.as_ref().unwrap().mean, 1000.0);
        assert_eq!(s.tpot_ms.as_ref().unwrap().mean, 100.0);
        assert!(s.goodput.is_none());
        assert_eq!(s.retries, 0);
        let again = RequestSample {
            retries: 1,
            ..req(100.0, 1100.0, 11, 100.0)
        };
        assert_eq!(
            summarize(&[again, reqs[0].clone()], 1100.0, &Slo::default()).retries,
            1
        );
    }

    /// With a shared prefix the server holds cached, only the rest was
    /// prefilled: by the server's count where it gives one, else less the
    /// prefix this Dyno sent first. Never the whole prompt.
    /// A server that sends four tokens per event: the gap between events
    /// is four tokens' time, and the SLO is judged per token.
    #[test]
    fn inter_token_latency_is_per_token_when_chunks_carry_several() {
        let r = RequestSample {
            completion_tokens: Some(40),
            content_chunks: 10,
            itl_ms: vec![80.0; 9],
            ..req(100.0, 1000.0, 40, 20.0)
        };
        let s = summarize(std::slice::from_ref(&r), 1000.0, &Slo::default());
        assert_eq!(s.itl_ms.unwrap().p50.value, 20.0);
        let slo = Slo {
            itl_ms: Some(25.0),
            ..Slo::default()
        };
        assert!(slo.met_by(&r));
        // One token per chunk, as llama-server sends them: unchanged.
        let one = req(100.0, 1000.0, 10, 80.0);
        assert_eq!(one.itl_per_token_ms().next(), Some(80.0));
    }

    #[test]
    fn a_cached_prefix_is_not_counted_as_prefilled() {
        let at = |cached: Option<u64>| RequestSample {
            prompt_tokens: Some(120),
            cached_tokens: cached,
            shared_prefix_tokens: Some(100),
            ttft_ms: Some(100.0),
            ..req(100.0, 1100.0, 11, 100.0)
        };
        let unknown = summarize(&[at(None)], 1000.0, &Slo::default());
        assert_eq!(unknown.prefill_tokens_per_s.unwrap().mean, 200.0);
        assert_eq!(unknown.total_prompt_tokens_per_s, 20.0);
        let counted = summarize(&[at(Some(90))], 1000.0, &Slo::default());
        assert_eq!(counted.prefill_tokens_per_s.unwrap().mean, 300.0);
        assert_eq!(counted.total_prompt_tokens_per_s, 30.0);
    }

    #[test]
    fn goodput_counts_failures_as_missed() {
        let bad = RequestSample {
            error_code: Some(FailureCode::ServerError),
            error: Some("HTTP 503".into()),
            ..RequestSample::default()
        };
        let reqs = [
            req(100.0, 500.0, 5, 50.0),
            req(2000.0, 3000.0, 5, 50.0),
            bad,
        ];
        let slo = Slo {
            ttft_ms: Some(1000.0),
            itl_ms: Some(100.0),
        };
        let s = summarize(&reqs, 3000.0, &slo);
        let g = s.goodput.unwrap();
        assert_eq!((g.met, s.failed), (1, 1));
        assert!((g.fraction - 1.0 / 3.0).abs() < 1e-9);
        assert_eq!(s.errors, vec![("HTTP 503".to_string(), 1)]);
    }

    #[test]
    fn the_knee_is_where_total_throughput_stops_growing() {
        assert_eq!(knee(&[(1, 10.0), (2, 19.0), (4, 30.0), (8, 31.0)]), Some(4));
        assert_eq!(knee(&[(1, 10.0)]), None);
    }
}
