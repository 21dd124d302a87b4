//! What a server costs over the engine under it: the same model measured
//! through the server (`serve`) and in-process (`bench`), test by test.
//!
//! Each server test at concurrency 1 is matched with the in-process pp+tg
//! test of the same prompt, generation and depth. The ratios are server ÷
//! engine: below 1 for a rate means the server is slower, above 1 for TTFT
//! means it makes the user wait longer. The server's side is its client
//! figures (network, queueing, the chat template and sampling inside), the
//! engine's is llama-bench's method; the server's own clock is shown beside
//! them where llama-server reports it.

use serde::{Deserialize, Serialize};

use crate::report::Report;
use crate::serve::report::ServeReport;
use crate::vocab::status::ResultStatus;

/// One matched test.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct EngineComparison {
    pub test: String,
    pub engine_run_id: i64,
    pub server_prefill_tokens_per_s: Option<f64>,
    pub engine_prefill_tokens_per_s: Option<f64>,
    pub prefill_ratio: Option<f64>,
    pub server_decode_tokens_per_s: Option<f64>,
    pub engine_decode_tokens_per_s: Option<f64>,
    pub decode_ratio: Option<f64>,
    pub server_ttft_ms: Option<f64>,
    pub engine_ttft_ms: Option<f64>,
    pub ttft_ratio: Option<f64>,
    /// Prompt tokens the server counted (template included), against the
    /// engine's exact prompt length: the two differ by the chat template.
    pub server_prompt_tokens: Option<f64>,
}

fn ratio(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => Some(a / b),
        _ => None,
    }
}

/// Match every concurrency-1 server test with the engine's pp+tg test of
/// the same lengths and depth. Server figures are medians (p50), the
/// engine's are means, as each report states them.
pub fn compare_with_engine(server: &ServeReport, engine: &Report) -> Vec<EngineComparison> {
    let mut out = Vec::new();
    for t in server
        .results
        .iter()
        .filter(|t| t.spec.concurrency == 1 && t.status == ResultStatus::Ok)
    {
        let found = engine.runs.iter().find_map(|run| {
            run.results
                .iter()
                .find(|r| {
                    r.kind == "prompt_gen"
                        && r.status == ResultStatus::Ok
                        && r.n_prompt == t.spec.n_prompt
                        && r.n_gen == t.spec.n_gen
                        && r.n_depth == t.spec.n_depth
                })
                .map(|r| (run.run_id, r))
        });
        let Some((run_id, e)) = found else { continue };
        let m = &t.summary;
        let p50 = |p: &Option<crate::serve::stats::Percentiles>| p.as_ref().map(|p| p.p50.value);
        let sp = p50(&m.prefill_tokens_per_s);
        let sd = p50(&m.decode_tokens_per_s);
        let st = p50(&m.ttft_ms);
        let ep = e.prefill_tokens_per_s.as_ref().map(|f| f.summary.mean);
        let ed = e.decode_tokens_per_s.as_ref().map(|f| f.summary.mean);
        let et = e.ttft_ms;
        out.push(EngineComparison {
            test: t.test.clone(),
            engine_run_id: run_id,
            server_prefill_tokens_per_s: sp,
            engine_prefill_tokens_per_s: ep,
            prefill_ratio: ratio(sp, ep),
            server_decode_tokens_per_s: sd,
            engine_decode_tokens_per_s: ed,
            decode_ratio: ratio(sd, ed),
            server_ttft_ms: st,
            engine_ttft_ms: et,
            ttft_ratio: ratio(st, et),
            server_prompt_tokens: m.prompt_tokens_mean,
        });
    }
    out
}

/// The comparison as Markdown.
pub fn comparison_table(rows: &[EngineComparison]) -> String {
    let f = |v: Option<f64>, d: usize| v.map_or("-".to_string(), |v| format!("{v:.d$}"));
    let mut out = String::from(
        "\nserver against engine (server p50 ÷ in-process mean; same model, lengths and depth)\n\n\
         | test | engine run | prefill t/s server | engine | ratio | decode t/s server | engine | ratio | TTFT ms server | engine | ratio |\n\
         | ---- | ---------: | -----------------: | -----: | ----: | ----------------: | -----: | ----: | -------------: | -----: | ----: |\n",
    );
    for r in rows {
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
            r.test,
            r.engine_run_id,
            f(r.server_prefill_tokens_per_s, 1),
            f(r.engine_prefill_tokens_per_s, 1),
            f(r.prefill_ratio, 2),
            f(r.server_decode_tokens_per_s, 1),
            f(r.engine_decode_tokens_per_s, 1),
            f(r.decode_ratio, 2),
            f(r.server_ttft_ms, 1),
            f(r.engine_ttft_ms, 1),
            f(r.ttft_ratio, 2),
        ));
    }
    out
}
