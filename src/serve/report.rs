//! A stored server run as a document (`dyno serve-bench --json`,
//! `dyno serve-show`) and as a table.
//!
//! The document is rebuilt from the store, so a run read back later says
//! exactly what it said when it ran. The host is redacted unless asked for
//! (`--show-host`), since these documents are made to be shared; the API
//! key was never stored.

use serde::{Deserialize, Serialize};

use super::summary::knee;
use super::{Endpoint, ServePlan, ServeResult, ServeTest, ServerInfo};
use crate::error::{DynoError, Result};
use crate::store::Store;
use crate::units::human_bytes;
use crate::vocab::failure::FailureCode;
use crate::vocab::status::{ResultStatus, RunStatus};

pub const SCHEMA: &str = "dyno.serve/1";

/// The machine Dyno ran on (the client; the server may be elsewhere).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct ClientMachine {
    pub cpu: String,
    pub cores_logical: i64,
    pub memory_bytes: i64,
    pub os: Option<String>,
}

/// Where total throughput stops growing with concurrency, per group of
/// tests that differ only in concurrency.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Knee {
    pub n_prompt: u32,
    pub n_gen: u32,
    pub n_depth: u32,
    pub concurrency: u32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct ServeReport {
    pub schema: String,
    pub run_id: i64,
    pub status: RunStatus,
    #[cfg_attr(feature = "ts", ts(type = "string | null"))]
    pub error_code: Option<FailureCode>,
    pub error: Option<String>,
    /// The server's base URL; the host reads `<host>` unless it is this
    /// machine or the host was asked for.
    pub endpoint: String,
    pub server: ServerInfo,
    pub plan: ServePlan,
    pub machine: Option<ClientMachine>,
    pub dyno_version: String,
    pub started_at: String,
    pub finished_at: Option<String>,
    pub results: Vec<ServeResult>,
    pub knees: Vec<Knee>,
}

/// Read a stored server run back as its document.
pub async fn load(store: &Store, run_id: i64, show_host: bool) -> Result<ServeReport> {
    let mut run = store.server_run(run_id).await?.ok_or_else(|| {
        DynoError::NotFound(format!(
            "no server run {run_id}; `dyno serve-runs` lists them"
        ))
    })?;
    let bad = |what: &str| {
        DynoError::BadInput(format!(
            "server run {run_id}'s stored {what} does not read back (written by another Dyno version?)"
        ))
    };
    // Taken out of the row, which keeps its plain columns for below.
    let server: ServerInfo = std::mem::take(&mut run.server)
        .into_inner()
        .ok_or_else(|| bad("server"))?;
    let plan: ServePlan = std::mem::take(&mut run.plan)
        .into_inner()
        .ok_or_else(|| bad("plan"))?;
    // Hiding the host hides it everywhere: the endpoint, and every error
    // text, which can quote the server's URL.
    let hide = Endpoint::parse(&run.endpoint).ok().filter(|_| !show_host);
    let scrub = |t: Option<String>| match (&hide, t) {
        (Some(e), Some(t)) => Some(e.scrub(&t)),
        (_, t) => t,
    };
    let mut results = Vec::new();
    for r in store.server_results(run_id).await? {
        let mut samples = r.requests.into_inner().ok_or_else(|| bad("requests"))?;
        for x in &mut samples {
            x.error = scrub(x.error.take());
        }
        results.push(ServeResult {
            test: r.test,
            spec: ServeTest {
                n_prompt: r.n_prompt as u32,
                n_gen: r.n_gen as u32,
                n_depth: r.n_depth as u32,
                concurrency: r.concurrency as u32,
            },
            status: r.status,
            error: scrub(r.error),
            summary: super::summary::summarize(&samples, r.wall_ms, &plan.slo),
            samples,
        });
    }
    let endpoint = match &hide {
        Some(e) => e.redacted(),
        None => run.endpoint.clone(),
    };
    let machine = match run.machine_id {
        Some(id) => store.machine(id).await.ok().map(|m| ClientMachine {
            cpu: m.cpu,
            cores_logical: m.cores_logical,
            memory_bytes: m.memory_bytes,
            os: m.os,
        }),
        None => None,
    };
    Ok(ServeReport {
        schema: SCHEMA.into(),
        run_id,
        status: run.status,
        error_code: run.error_code,
        error: scrub(run.error),
        endpoint,
        server,
        knees: knees(&results),
        plan,
        machine,
        dyno_version: run.dyno_version,
        started_at: run.started_at,
        finished_at: run.finished_at,
        results,
    })
}

/// Tests that differ only in concurrency: (prompt, gen, depth) and each
/// test's (concurrency, total output tokens/s).
type Group = ((u32, u32, u32), Vec<(u32, f64)>);

fn knees(results: &[ServeResult]) -> Vec<Knee> {
    let mut groups: Vec<Group> = Vec::new();
    for r in results.iter().filter(|r| r.status == ResultStatus::Ok) {
        let key = (r.spec.n_prompt, r.spec.n_gen, r.spec.n_depth);
        let point = (r.spec.concurrency, r.summary.total_output_tokens_per_s);
        match groups.iter_mut().find(|g| g.0 == key) {
            Some(g) => g.1.push(point),
            None => groups.push((key, vec![point])),
        }
    }
    groups
        .into_iter()
        .filter_map(|(k, pts)| {
            knee(&pts).map(|c| Knee {
                n_prompt: k.0,
                n_gen: k.1,
                n_depth: k.2,
                concurrency: c,
            })
        })
        .collect()
}

fn p50(p: &Option<super::stats::Percentiles>) -> String {
    p.as_ref()
        .map(|p| format!("{:.1}", p.p50.value))
        .unwrap_or_else(|| "-".into())
}

/// The highest percentile `p`'s sample supports, with its name: p99 from
/// 100 values, p90 from 10, else the largest value, called so (the p99 of
/// five requests is their maximum, and should say so).
fn tail(p: &Option<super::stats::Percentiles>) -> String {
    p.as_ref()
        .map(|p| match p.n {
            n if n >= 100 => format!("{:.1} (p99)", p.p99.value),
            n if n >= 10 => format!("{:.1} (p90)", p.p90.value),
            n => format!("{:.1} (max of {n})", p.max),
        })
        .unwrap_or_else(|| "-".into())
}

/// The run as Markdown: its conditions, then one row per test. Per-request
/// figures are medians (p50) with the tail the sample supports beside the
/// latencies; totals are
/// across the test's concurrent requests.
pub fn table(r: &ServeReport) -> String {
    let mut out = String::new();
    let s = &r.server;
    out.push_str(&format!(
        "server run {} · {} {} · model {} · {} · {}\n",
        r.run_id,
        s.kind.label(),
        s.version.as_deref().unwrap_or(""),
        s.model,
        r.endpoint,
        r.status
    ));
    out.push_str(&format!("{}\n\n", conditions(r).join(" · ")));
    out.push_str("| test | ok | tokens from | TTFT p50 ms | TTFT tail ms | ITL p50 ms | TPOT p50 ms | prefill t/s p50 | decode t/s p50 | server pp t/s | server tg t/s | total out t/s | goodput |\n");
    out.push_str("| ---- | -: | ----------- | ----------: | ----------: | ---------: | ----------: | --------------: | -------------: | ------------: | ------------: | ------------: | ------: |\n");
    for t in &r.results {
        out.push_str(&result_row(t));
    }
    for t in r.results.iter().filter(|t| t.error.is_some()) {
        out.push_str(&format!(
            "\n{} {}: {}",
            t.test,
            t.status.as_str().to_uppercase(),
            t.error.as_deref().unwrap_or_default()
        ));
    }
    for t in r.results.iter().filter(|t| t.summary.retries > 0) {
        out.push_str(&format!(
            "\n{}: {} of {} requests were sent again after the server closed their connection unread (their TTFT and E2E start at the second send)",
            t.test, t.summary.retries, t.summary.requests
        ));
    }
    for k in &r.knees {
        out.push_str(&format!(
            "\nknee of pp{}+tg{} @d{}: concurrency {} reaches 90% of the best total output rate",
            k.n_prompt, k.n_gen, k.n_depth, k.concurrency
        ));
    }
    if let Some(e) = &r.error {
        out.push_str(&format!("\nrun {}: {e}", r.status));
    }
    out.push('\n');
    out
}

/// The conditions line above the table: what every figure in it holds.
fn conditions(r: &ServeReport) -> Vec<String> {
    let s = &r.server;
    let mut cond = vec![
        format!("api {}", r.plan.api.path_for(r.server.kind)),
        format!("{} requests per test", r.plan.requests),
        if r.plan.prefix_cache {
            "prefix cache on (depth context shared)".into()
        } else {
            "prefix cache defeated (unique prompts)".into()
        },
    ];
    if let Some(n) = s.slots {
        cond.push(format!("{n} server slots"));
    }
    if let Some(t) = &r.plan.tokenizer {
        cond.push(format!("tokens the server did not count: counted with {t}"));
    }
    if let Some(n) = s.n_ctx {
        cond.push(format!("server context {n}"));
    }
    // TTFT is a client's: it holds opening the request's connection.
    cond.push(match &s.connect {
        Some(c) => c.words(),
        None => "each TTFT includes opening a connection (its cost was not measured)".into(),
    });
    if let Some(m) = &r.machine {
        cond.push(format!(
            "client {} ({} threads, {})",
            m.cpu,
            m.cores_logical,
            human_bytes(m.memory_bytes as u64)
        ));
    }
    cond
}

/// One test's row of the table.
fn result_row(t: &ServeResult) -> String {
    let m = &t.summary;
    let good = m
        .goodput
        .as_ref()
        .map(|g| format!("{:.0}%", g.fraction * 100.0))
        .unwrap_or_else(|| "-".into());
    let source = m
        .token_source
        .map(|s| serde_json::to_value(s).expect("serialises"))
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_else(|| "-".into());
    format!(
        "| {} | {}/{} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {:.1} | {} |\n",
        t.test,
        m.ok,
        m.requests,
        source,
        p50(&m.ttft_ms),
        tail(&m.ttft_ms),
        p50(&m.itl_ms),
        p50(&m.tpot_ms),
        p50(&m.prefill_tokens_per_s),
        p50(&m.decode_tokens_per_s),
        p50(&m.server_prefill_tokens_per_s),
        p50(&m.server_decode_tokens_per_s),
        m.total_output_tokens_per_s,
        good
    )
}
