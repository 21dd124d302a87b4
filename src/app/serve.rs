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

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::bench::{BenchInput, Measuring};
use crate::bench::plan::BenchRequest;
use crate::bench::Reporter;
use crate::error::Result;
use crate::machine::Machine;
use crate::report::Report;
use crate::serve::report::ServeReport;
use crate::serve::{self, Api, Endpoint, ServeEvent, ServePlan, ServeTarget, Slo};
use crate::store::Store;
use crate::vocab::status::ResultStatus;
use crate::vocab::TestKind;
use crate::worker::client::Cancel;

/// A server benchmark as the app's form and the CLI's options give it.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct ServeInput {
    pub url: String,
    pub model: Option<String>,
    /// Sent as a bearer token; never stored.
    pub api_key: Option<String>,
    pub api: Api,
    pub n_prompt: Vec<u32>,
    pub n_gen: Vec<u32>,
    pub n_depth: Vec<u32>,
    pub concurrency: Vec<u32>,
    pub requests: u32,
    pub prefix_cache: bool,
    pub slo_ttft_ms: Option<f64>,
    pub slo_itl_ms: Option<f64>,
    pub stall_s: f64,
    pub timeout_s: f64,
    /// The GGUF the server runs, to measure in-process too.
    #[cfg_attr(feature = "ts", ts(type = "string | null"))]
    pub engine: Option<PathBuf>,
    pub engine_threads: Option<u32>,
    /// A GGUF whose tokenizer counts tokens the server does not report;
    /// `engine` when not given.
    #[cfg_attr(feature = "ts", ts(type = "string | null"))]
    #[serde(default)]
    pub tokenizer: Option<PathBuf>,
    /// A PEM file of authorities to trust besides the public ones, for a
    /// server whose certificate a private authority signed.
    #[cfg_attr(feature = "ts", ts(type = "string | null"))]
    #[serde(default)]
    pub ca_cert: Option<PathBuf>,
    /// Show the host in the report instead of `<host>`.
    pub show_host: bool,
}

impl ServeInput {
    pub fn plan(&self) -> ServePlan {
        ServePlan {
            api: self.api,
            n_prompt: self.n_prompt.clone(),
            n_gen: self.n_gen.clone(),
            depths: self.n_depth.clone(),
            concurrency: self.concurrency.clone(),
            requests: self.requests,
            prefix_cache: self.prefix_cache,
            slo: Slo {
                ttft_ms: self.slo_ttft_ms,
                itl_ms: self.slo_itl_ms,
            },
            stall_s: self.stall_s,
            timeout_s: self.timeout_s,
            tokenizer: self
                .tokenizer_file()
                .and_then(|p| p.file_name())
                .map(|n| n.to_string_lossy().into_owned()),
        }
    }

    /// The GGUF whose tokenizer counts what the server does not.
    pub fn tokenizer_file(&self) -> Option<&std::path::Path> {
        self.tokenizer.as_deref().or(self.engine.as_deref())
    }
}

/// A server benchmark's document, with the engine comparison when the
/// model was measured in-process too.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct ServeOutcome {
    #[serde(flatten)]
    #[cfg_attr(feature = "ts", ts(flatten))]
    pub report: ServeReport,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub engine_comparison: Option<Vec<EngineComparison>>,
}

/// Measure the server (and the engine, with `engine` set) and store both.
pub async fn run(
    store: &Store,
    input: &ServeInput,
    cancel: &Cancel,
    on_event: &mut dyn FnMut(ServeEvent<'_>),
    bench_reporter: &mut dyn Reporter,
) -> Result<ServeOutcome> {
    let endpoint = Endpoint::parse(&input.url)?;
    let plan = input.plan();
    plan.validate()?;
    for m in [&input.engine, &input.tokenizer].into_iter().flatten() {
        // A bad file fails now, not after the server's tests.
        crate::model::inspect(m)?;
    }
    let ca_pem = input
        .ca_cert
        .as_deref()
        .map(crate::serve::connect::read_ca)
        .transpose()?;
    let machine = Machine::detect();
    let machine_id = store.upsert_machine(&machine).await?;
    let target = ServeTarget {
        endpoint: &endpoint,
        model: input.model.as_deref(),
        api_key: input.api_key.as_deref(),
        tokenizer: input.tokenizer_file(),
        ca_pem: ca_pem.as_deref(),
    };
    let (run_id, _) = serve::run(store, machine_id, &target, &plan, cancel, on_event).await?;
    let report = serve::report::load(store, run_id, input.show_host).await?;
    let engine_comparison = match &input.engine {
        Some(m) if !cancel.is_cancelled() => {
            let engine = engine_run(store, &machine, m, input, cancel, bench_reporter).await?;
            Some(compare_with_engine(&report, &engine))
        }
        _ => None,
    };
    Ok(ServeOutcome {
        report,
        engine_comparison,
    })
}

/// The in-process side: `dyno bench MODEL --pg P,N -d D -r R` with the
/// server plan's lengths, depths and request count, measured and stored by
/// the one benchmark use case ([`super::bench::run`]), as a normal bench run.
pub async fn engine_run(
    store: &Store,
    machine: &Machine,
    model: &std::path::Path,
    input: &ServeInput,
    cancel: &Cancel,
    reporter: &mut dyn Reporter,
) -> Result<Report> {
    let mut request =
        BenchRequest::defaults(input.engine_threads.unwrap_or(machine.default_threads()));
    request.n_prompt = vec![0];
    request.n_gen = vec![0];
    request.prompt_gen = input
        .n_prompt
        .iter()
        .flat_map(|&p| input.n_gen.iter().map(move |&n| (p, n)))
        .collect();
    request.n_depth = input.n_depth.clone();
    request.reps = input.requests.max(1);
    let bench = BenchInput {
        models: vec![model.to_path_buf()],
        request,
        retry_disturbed: 0,
        measuring: Measuring::default(),
    };
    let worker = super::bench::worker(super::bench::DEFAULT_TIMEOUT_S)?;
    let mut progress = EngineProgress(reporter);
    let benched = super::bench::run(
        store,
        machine,
        &bench,
        worker,
        cancel.clone(),
        &mut progress,
    )
    .await?;
    Ok(benched.report)
}

/// The engine side's progress: its runs' events go to the caller's
/// reporter; the plan's size and the notes between runs are the server
/// benchmark's to say, not the comparison's.
struct EngineProgress<'a>(&'a mut dyn Reporter);

impl Reporter for EngineProgress<'_> {
    fn event(&mut self, event: &crate::bench::BenchEvent<'_>) -> crate::bench::Flow {
        self.0.event(event)
    }
}

impl super::bench::BenchProgress for EngineProgress<'_> {
    fn planned(&mut self, _samples: u64) {}

    fn note(&mut self, text: &str) {
        tracing::info!("{text}");
    }
}

/// One matched test.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
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
                    r.kind == TestKind::PromptGen
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
