//! The card of a server run (`dyno export serve:ID --format png|svg`), for
//! what a server benchmark measures.
//!
//! A server run answers two questions that must never share a bar: how fast
//! one request is served (per-request decode, the median over requests) and
//! how much the server delivers to all parallel requests together (total
//! output). They get separate panels, scales and colours, and time to first
//! token, a latency, gets a third in milliseconds. The conditions that give
//! the figures their meaning (server, model, API, lengths, depths,
//! concurrency, requests, prompt cache, where token counts came from, SLO)
//! sit beside them. Like every export, it is drawn from the scrubbed
//! document, so it shows no host or model folder the JSON leaves out.

use std::fmt::Write as _;

use super::canvas::{fit_start, measure};
use super::draw::{CONTEXT_SIZE, CONTEXT_TEXT_W};
use super::run::num;
use super::spec::{Bar, Bars, Block, Body, CardSpec, Colour, Figure, Line, Panel, Row, Tone};
use crate::serve::report::ServeReport;
use crate::serve::request::TokenSource;
use crate::serve::ServeResult;
use crate::units::human_bytes;
use crate::vocab::status::{ResultStatus, RunStatus};

/// One test's figures, or why it has none.
#[derive(Debug, Clone, PartialEq)]
struct Figures {
    label: String,
    /// Per request: decode t/s, the median over the test's requests.
    decode_p50: Option<f64>,
    /// All requests together: output tokens over the test's wall time.
    total: Option<f64>,
    ttft_p50_ms: Option<f64>,
    ttft_p99_ms: Option<f64>,
    /// Where total output stops growing with concurrency.
    knee: bool,
    failed: Option<String>,
}

/// Which of a test's dimensions differ between the run's tests: only those
/// name a row, and the ones all tests share are stated once as conditions.
struct Varies {
    prompt: bool,
    gen: bool,
    depth: bool,
    concurrency: bool,
}

fn varies(results: &[ServeResult]) -> Varies {
    let differs =
        |f: &dyn Fn(&ServeResult) -> u32| results.windows(2).any(|w| f(&w[0]) != f(&w[1]));
    Varies {
        prompt: differs(&|r| r.spec.n_prompt),
        gen: differs(&|r| r.spec.n_gen),
        depth: differs(&|r| r.spec.n_depth),
        concurrency: differs(&|r| r.spec.concurrency),
    }
}

/// The varying parts of a group of tests that differ only in concurrency,
/// in llama-bench's words: `pp512`, `tg128` or `pp512+tg128`, and `@d4096`.
fn group_parts(v: &Varies, n_prompt: u32, n_gen: u32, n_depth: u32) -> Vec<String> {
    let mut parts = Vec::new();
    match (v.prompt, v.gen) {
        (true, true) => parts.push(format!("pp{n_prompt}+tg{n_gen}")),
        (true, false) => parts.push(format!("pp{n_prompt}")),
        (false, true) => parts.push(format!("tg{n_gen}")),
        (false, false) => {}
    }
    if v.depth {
        parts.push(format!("@d{n_depth}"));
    }
    parts
}

/// A row's name in the test's own words (`pp512+tg128 @d0 c4`), cut to the
/// parts that vary; a lone test keeps its whole name.
fn label(r: &ServeResult, v: &Varies) -> String {
    let t = &r.spec;
    let mut parts = group_parts(v, t.n_prompt, t.n_gen, t.n_depth);
    if v.concurrency {
        parts.push(format!("c{}", t.concurrency));
    }
    if parts.is_empty() {
        r.test.clone()
    } else {
        parts.join(" ")
    }
}

fn rows(r: &ServeReport) -> Vec<Figures> {
    let v = varies(&r.results);
    r.results
        .iter()
        .map(|t| {
            let m = &t.summary;
            let measured = t.status == ResultStatus::Ok && m.ok > 0;
            let failed = (!measured).then(|| {
                t.error
                    .clone()
                    .unwrap_or_else(|| t.status.as_str().to_string())
            });
            let s = &t.spec;
            Figures {
                label: label(t, &v),
                decode_p50: m.decode_tokens_per_s.as_ref().map(|p| p.p50.value),
                total: measured.then_some(m.total_output_tokens_per_s),
                ttft_p50_ms: m.ttft_ms.as_ref().map(|p| p.p50.value),
                ttft_p99_ms: m.ttft_ms.as_ref().map(|p| p.p99.value),
                knee: measured
                    && r.knees.iter().any(|k| {
                        (k.n_prompt, k.n_gen, k.n_depth, k.concurrency)
                            == (s.n_prompt, s.n_gen, s.n_depth, s.concurrency)
                    }),
                failed,
            }
        })
        .collect()
}

/// The card of a server run.
pub fn spec(r: &ServeReport) -> CardSpec {
    let rows = rows(r);
    let n = r.results.len();
    // The model file where the server names one (llama-server); else the
    // name the requests used (Ollama's `qwen3:8b`), as it is.
    let model = r
        .server
        .model_path
        .as_deref()
        .map_or(r.server.model.as_str(), file_name);
    CardSpec {
        kind: format!(
            "server benchmark · {n} test{} · run serve:{}",
            if n == 1 { "" } else { "s" },
            r.run_id
        ),
        status: Some(match r.status {
            RunStatus::Ok => Line::new("status ok", Tone::Muted),
            other => Line::new(other.as_str().to_uppercase(), Tone::Bad),
        }),
        title: format!("{} · {model}", server_label(r)),
        subtitle: "per request: the median (p50) over a test's requests, on Dyno's clock · total: every parallel request together".into(),
        body: body(&rows),
        context: context(r),
        notes: notes(r, &rows),
        footer: footer(r),
    }
}

/// A model path's file name: the title names the file, not its folders
/// (which the scrubbed document has already dropped unless asked for, when
/// the context column shows them).
fn file_name(p: &str) -> &str {
    p.rsplit(['/', '\\']).next().unwrap_or(p)
}

fn server_label(r: &ServeReport) -> String {
    let s = &r.server;
    match &s.version {
        Some(v) => format!("{} {v}", s.kind.label()),
        None => s.kind.label().to_string(),
    }
}

/// A lone measured test's figures written large, or three panels: per-request
/// decode, total output (the knee marked) and TTFT with its tail.
fn body(rows: &[Figures]) -> Body {
    if let [one] = rows {
        if one.failed.is_none() {
            return lone(one);
        }
    }
    let text = |v: Option<f64>| v.map(num).unwrap_or_default();
    let bars = |f: &dyn Fn(&Figures) -> Bar| rows.iter().map(f).collect::<Vec<_>>();
    Body::Bars(Bars {
        rows: rows
            .iter()
            .map(|r| Row {
                label: r.label.clone(),
                failed: r.failed.clone(),
            })
            .collect(),
        panels: vec![
            Panel {
                title: "PER REQUEST".into(),
                unit: "decode t/s · p50".into(),
                colour: Colour::Decode,
                bars: bars(&|r| Bar {
                    value: r.decode_p50,
                    tail: None,
                    text: text(r.decode_p50),
                }),
            },
            Panel {
                title: "ALL REQUESTS".into(),
                unit: "total output t/s".into(),
                colour: Colour::Total,
                bars: bars(&|r| Bar {
                    value: r.total,
                    tail: None,
                    text: match (r.total, r.knee) {
                        (Some(v), true) => format!("{} ◆", num(v)),
                        (v, _) => text(v),
                    },
                }),
            },
            Panel {
                title: "FIRST TOKEN".into(),
                unit: "TTFT ms · p50 / p99".into(),
                colour: Colour::FirstToken,
                bars: bars(&|r| Bar {
                    value: r.ttft_p50_ms,
                    tail: r.ttft_p99_ms,
                    text: match (r.ttft_p50_ms, r.ttft_p99_ms) {
                        (Some(a), Some(b)) => format!("{} / {}", num(a), num(b)),
                        (a, _) => text(a),
                    },
                }),
            },
        ],
        rest: "tests (dyno serve-show lists them all)".into(),
    })
}

/// A run of one test: its three figures written large, as a run's card
/// writes a lone run (a bar scaled to itself says nothing).
fn lone(row: &Figures) -> Body {
    let ttft_unit = match row.ttft_p99_ms {
        Some(p99) => format!("ms, median · p99 {} ms", num(p99)),
        None => "ms, the median request".to_string(),
    };
    Body::Figures {
        label: row.label.clone(),
        figures: vec![
            Figure {
                title: "per request".into(),
                colour: Colour::Decode,
                value: row.decode_p50.map(num),
                unit: "decode t/s of the median request".into(),
                missing: "no decode rate: no request streamed two tokens".into(),
            },
            Figure {
                title: "all requests".into(),
                colour: Colour::Total,
                value: row.total.map(num),
                unit: "output t/s, every request together".into(),
                missing: "no request finished".into(),
            },
            Figure {
                title: "first token".into(),
                colour: Colour::FirstToken,
                value: row.ttft_p50_ms.map(num),
                unit: ttft_unit,
                missing: "no first token arrived".into(),
            },
        ],
    }
}

/// Under the chart: what went wrong (the run's error, tests where some
/// requests failed), then where the knee is.
fn notes(r: &ServeReport, rows: &[Figures]) -> Vec<Line> {
    let mut lines = Vec::new();
    if let Some(e) = r.error.as_deref().filter(|_| r.status != RunStatus::Ok) {
        // A failed test's reason is already across its row.
        if !rows.iter().any(|row| row.failed.as_deref() == Some(e)) {
            lines.push(Line::new(format!("run {}: {e}", r.status), Tone::Bad));
        }
    }
    let v = varies(&r.results);
    for t in r.results.iter() {
        if let (ResultStatus::Ok, Some(e)) = (t.status, t.error.as_deref()) {
            lines.push(Line::new(format!("{}: {e}", label(t, &v)), Tone::Bad));
        }
    }
    // Each knee named as its rows are: by the lengths and depth, where
    // those differ between tests.
    let knees: Vec<String> = r
        .knees
        .iter()
        .map(|k| {
            let group = group_parts(&v, k.n_prompt, k.n_gen, k.n_depth);
            if group.is_empty() {
                format!("c{}", k.concurrency)
            } else {
                format!("c{} ({})", k.concurrency, group.join(" "))
            }
        })
        .collect();
    if !knees.is_empty() {
        lines.push(Line::new(
            format!(
                "◆ knee, the lowest concurrency with 90% of the best total output: {}",
                knees.join(", ")
            ),
            Tone::Plain,
        ));
    }
    lines
}

/// A list of lengths as the plan gives them: "512" or "128, 512".
fn list(v: &[u32]) -> String {
    v.iter().map(u32::to_string).collect::<Vec<_>>().join(", ")
}

fn token_source(t: TokenSource) -> &'static str {
    match t {
        TokenSource::Usage => "usage",
        TokenSource::Timings => "timings",
        TokenSource::Chunks => "chunks (estimate)",
        TokenSource::Tokenizer => "the model's tokenizer",
    }
}

/// The right column: the server as it described itself, then the
/// conditions every figure was measured under, then the SLO and goodput.
fn context(r: &ServeReport) -> Vec<Block> {
    let mut blocks = vec![
        Block::new("SERVER", server_lines(r)),
        Block::new("CONDITIONS", condition_lines(r)),
    ];
    let p = &r.plan;
    if p.slo.is_set() {
        let mut bounds = Vec::new();
        if let Some(b) = p.slo.ttft_ms {
            bounds.push(format!("TTFT ≤ {} ms", num(b)));
        }
        if let Some(b) = p.slo.itl_ms {
            bounds.push(format!("ITL ≤ {} ms", num(b)));
        }
        let mut l = vec![bounds.join(" · ")];
        let v = varies(&r.results);
        let good: Vec<(String, f64)> = r
            .results
            .iter()
            .filter_map(|t| Some((label(t, &v), t.summary.goodput.as_ref()?.fraction)))
            .collect();
        let pct = |f: f64| format!("{:.0}%", f * 100.0);
        let worst = good.iter().min_by(|a, b| a.1.total_cmp(&b.1));
        let best = good.iter().map(|g| g.1).fold(f64::NEG_INFINITY, f64::max);
        match worst {
            Some(w) if good.len() == 1 || w.1 == best => {
                l.push(format!("goodput {} of requests", pct(w.1)));
            }
            Some(w) => l.push(format!("goodput {} ({}) to {}", pct(w.1), w.0, pct(best))),
            None => {}
        }
        blocks.push(Block::new("SERVICE-LEVEL OBJECTIVE", l));
    }
    blocks
}

/// The server as it described itself: kind and build, model, file, slots.
/// A model path is cut at its start, keeping the file name.
fn server_lines(r: &ServeReport) -> Vec<String> {
    let sv = &r.server;
    let path =
        |what: &str, p: &str| fit_start(&format!("{what} {p}"), CONTEXT_SIZE, CONTEXT_TEXT_W);
    let mut server = vec![server_label(r), path("model", &sv.model)];
    if let Some(p) = sv.model_path.as_deref().filter(|p| *p != sv.model) {
        server.push(path("file", p));
    }
    let mut slots = Vec::new();
    if let Some(n) = sv.slots {
        slots.push(format!("{n} slots"));
    }
    if let Some(n) = sv.n_ctx {
        slots.push(format!("{n}-token context per slot"));
    }
    if !slots.is_empty() {
        server.push(slots.join(" · "));
    }
    server
}

/// The conditions every figure was measured under.
fn condition_lines(r: &ServeReport) -> Vec<String> {
    let p = &r.plan;
    let api = match p.api {
        crate::serve::Api::Chat => "chat",
        crate::serve::Api::Completions => "completions",
    };
    let mut sources: Vec<TokenSource> = Vec::new();
    for t in r.results.iter().filter_map(|t| t.summary.token_source) {
        if !sources.contains(&t) {
            sources.push(t);
        }
    }
    let sources = if sources.is_empty() {
        "-".to_string()
    } else {
        sources
            .into_iter()
            .map(token_source)
            .collect::<Vec<_>>()
            .join(", ")
    };
    let lengths = format!(
        "prompt {} · generate {} tokens",
        list(&p.n_prompt),
        list(&p.n_gen)
    );
    let mut conditions = vec![format!("{api} API · /{}", p.api.path_for(r.server.kind))];
    // Several lengths of each may not fit one line; each gets its own
    // rather than being cut.
    if measure(&lengths, CONTEXT_SIZE, false) <= CONTEXT_TEXT_W {
        conditions.push(lengths);
    } else {
        conditions.push(format!("prompt {} tokens", list(&p.n_prompt)));
        conditions.push(format!("generate {} tokens", list(&p.n_gen)));
    }
    conditions.extend([
        format!("context depth {} tokens", list(&p.depths)),
        format!(
            "concurrency {} · {} requests per test",
            list(&p.concurrency),
            p.requests
        ),
        if p.prefix_cache {
            "prompt cache reused (depth context shared)".to_string()
        } else {
            "prompt cache defeated (unique prompts)".to_string()
        },
        format!("token counts from {sources}"),
    ]);
    if let Some(c) = &r.server.connect {
        conditions.push(format!(
            "TTFT holds a new connection: {:.2} ms{}",
            c.total_ms(),
            if c.tls_ms.is_some() {
                " (TCP + TLS)"
            } else {
                ""
            }
        ));
    }
    conditions
}

/// The client machine Dyno measured from (the server may be elsewhere),
/// then when, by which Dyno, against which endpoint (as the document has
/// it: another machine's host reads `<host>`).
fn footer(r: &ServeReport) -> Vec<String> {
    let client = match &r.machine {
        Some(m) => {
            let mut l = format!(
                "client {} · {} threads · {} RAM",
                m.cpu,
                m.cores_logical,
                human_bytes(m.memory_bytes.max(0) as u64)
            );
            if let Some(os) = &m.os {
                let _ = write!(l, " · {os}");
            }
            l
        }
        None => "client machine not recorded".to_string(),
    };
    let date = r.started_at.get(..10).unwrap_or(&r.started_at);
    let mut foot = format!("{date} · dyno {} · endpoint {}", r.dyno_version, r.endpoint);
    if r.plan.requests < 100 {
        // p99 needs hundreds of requests; with fewer it is near the slowest.
        let _ = write!(
            foot,
            " · p99 of {} requests is close to their slowest",
            r.plan.requests
        );
    }
    vec![client, foot]
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::report::export::serve::scrubbed;
    use crate::serve::report::{ClientMachine, Knee, SCHEMA};
    use crate::serve::summary::summarize;
    use crate::serve::{RequestSample, ServePlan, ServeTest, ServerInfo, ServerKind, Slo};
    use crate::vocab::failure::FailureCode;

    /// A request of `n` tokens: the first after `ttft` ms, then one every
    /// `itl` ms.
    fn req(ttft: f64, n: u64, itl: f64) -> RequestSample {
        RequestSample {
            ttft_ms: Some(ttft),
            e2e_ms: ttft + itl * (n - 1) as f64,
            completion_tokens: Some(n),
            prompt_tokens: Some(512),
            itl_ms: vec![itl; n as usize - 1],
            content_chunks: n as u32,
            token_source: Some(TokenSource::Usage),
            ..RequestSample::default()
        }
    }

    /// A test at concurrency `c` whose requests each decode at 1000 / `itl`
    /// t/s, `c` at a time.
    pub(in crate::report::card) fn test(n_depth: u32, c: u32, itl: f64, slo: &Slo) -> ServeResult {
        let samples: Vec<RequestSample> = (0..4).map(|_| req(80.0 * c as f64, 129, itl)).collect();
        let wall = samples[0].e2e_ms * 4.0 / c as f64;
        let spec = ServeTest {
            n_prompt: 512,
            n_gen: 128,
            n_depth,
            concurrency: c,
        };
        ServeResult {
            test: spec.name(),
            spec,
            status: ResultStatus::Ok,
            error: None,
            summary: summarize(&samples, wall, slo),
            samples,
        }
    }

    fn report(results: Vec<ServeResult>, plan: ServePlan) -> ServeReport {
        ServeReport {
            schema: SCHEMA.into(),
            run_id: 7,
            status: RunStatus::Ok,
            error_code: None,
            error: None,
            endpoint: "http://<host>:8080".into(),
            server: ServerInfo {
                kind: ServerKind::LlamaServer,
                version: Some("b6123".into()),
                model: "/home/ana/models/Qwen3-8B-Q4_K_M.gguf".into(),
                models: vec!["/home/ana/models/Qwen3-8B-Q4_K_M.gguf".into()],
                model_path: Some("/home/ana/models/Qwen3-8B-Q4_K_M.gguf".into()),
                n_ctx: Some(8192),
                slots: Some(4),
                connect: None,
            },
            knees: Vec::new(),
            plan,
            machine: Some(ClientMachine {
                cpu: "AMD Ryzen 7 7840U".into(),
                cores_logical: 16,
                memory_bytes: 32 << 30,
                os: Some("Linux 6.8".into()),
            }),
            dyno_version: "0.9.0".into(),
            started_at: "2025-06-01T10:00:00Z".into(),
            finished_at: Some("2025-06-01T10:05:00Z".into()),
            results,
        }
    }

    /// A concurrency sweep, 1, 2 and 4 at two depths, with its knee.
    pub(in crate::report::card) fn sweep() -> ServeReport {
        let slo = Slo {
            ttft_ms: Some(1000.0),
            itl_ms: None,
        };
        let plan = ServePlan {
            depths: vec![0, 4096],
            concurrency: vec![1, 2, 4],
            requests: 4,
            slo,
            ..ServePlan::default()
        };
        let mut results = Vec::new();
        for d in [0, 4096] {
            for (c, itl) in [(1, 20.0), (2, 25.0), (4, 40.0)] {
                results.push(test(d, c, itl, &slo));
            }
        }
        let mut r = report(results, plan);
        r.knees = vec![Knee {
            n_prompt: 512,
            n_gen: 128,
            n_depth: 0,
            concurrency: 4,
        }];
        r
    }

    /// A run of the sweep's first test alone.
    pub(in crate::report::card) fn one_test() -> ServeReport {
        let mut r = sweep();
        r.results.truncate(1);
        r.knees.clear();
        r.plan.depths = vec![0];
        r.plan.concurrency = vec![1];
        r
    }

    #[test]
    fn the_card_states_the_conditions_of_its_figures() {
        let s = spec(&sweep());
        let all = s.all_text();
        for want in [
            "llama-server b6123 · Qwen3-8B-Q4_K_M.gguf",
            "chat API · /v1/chat/completions",
            "prompt 512 · generate 128 tokens",
            "context depth 0, 4096 tokens",
            "concurrency 1, 2, 4 · 4 requests per test",
            "prompt cache defeated (unique prompts)",
            "token counts from usage",
            "4 slots · 8192-token context per slot",
            "TTFT ≤ 1000 ms",
            "goodput 100% of requests",
            "client AMD Ryzen 7 7840U · 16 threads · 32.00 GiB RAM · Linux 6.8",
        ] {
            assert!(
                all.iter().any(|t| t == want),
                "{want:?} missing from\n{all:#?}"
            );
        }
        assert!(s.footer[1].starts_with("2025-06-01 · dyno 0.9.0 · endpoint http://<host>:8080"));
        assert_eq!(s.status, Some(Line::new("status ok", Tone::Muted)));
        // Rows are named by what varies between tests (depth, concurrency);
        // the lengths all tests share are stated once, above.
        let labels: Vec<&str> = s.bars().rows.iter().map(|r| r.label.as_str()).collect();
        assert_eq!(
            labels,
            [
                "@d0 c1",
                "@d0 c2",
                "@d0 c4",
                "@d4096 c1",
                "@d4096 c2",
                "@d4096 c4"
            ]
        );
    }

    #[test]
    fn per_request_decode_and_total_output_stay_in_separate_panels() {
        let r = sweep();
        let s = spec(&r);
        let b = s.bars();
        let titles: Vec<&str> = b.panels.iter().map(|p| p.title.as_str()).collect();
        assert_eq!(titles, ["PER REQUEST", "ALL REQUESTS", "FIRST TOKEN"]);
        let colours: Vec<Colour> = b.panels.iter().map(|p| p.colour).collect();
        assert_eq!(colours, [Colour::Decode, Colour::Total, Colour::FirstToken]);
        let t = &r.results[2];
        let decode = t.summary.decode_tokens_per_s.as_ref().unwrap().p50.value;
        let total = t.summary.total_output_tokens_per_s;
        // Four requests side by side: more in total, each one slower.
        assert!(total > decode);
        assert_eq!(b.panels[0].bars[2].value, Some(decode));
        assert_eq!(b.panels[0].bars[2].text, num(decode));
        assert_eq!(b.panels[1].bars[2].value, Some(total));
        // The knee is marked where total output stops growing.
        assert_eq!(b.panels[1].bars[2].text, format!("{} ◆", num(total)));
        let ttft = t.summary.ttft_ms.as_ref().unwrap();
        let bar = &b.panels[2].bars[2];
        assert_eq!(
            (bar.value, bar.tail),
            (Some(ttft.p50.value), Some(ttft.p99.value))
        );
        assert_eq!(
            bar.text,
            format!("{} / {}", num(ttft.p50.value), num(ttft.p99.value))
        );
        let knee = s.notes.last().unwrap();
        assert!(
            knee.text.ends_with("best total output: c4 (@d0)"),
            "{knee:?}"
        );
    }

    #[test]
    fn a_failed_test_says_why_across_its_row() {
        let mut r = sweep();
        let bad = &mut r.results[1];
        bad.status = ResultStatus::Failed;
        bad.error = Some("HTTP 503: no slot available".into());
        bad.samples = vec![RequestSample {
            error_code: Some(FailureCode::ServerError),
            error: bad.error.clone(),
            ..RequestSample::default()
        }];
        bad.summary = summarize(&bad.samples, 10.0, &r.plan.slo);
        r.results[4].error = Some("1 of 4 requests failed: stalled".into());
        r.status = RunStatus::Failed;
        r.error = Some("HTTP 503: no slot available".into());
        let s = spec(&r);
        let row = &s.bars().rows[1];
        assert_eq!(row.label, "@d0 c2");
        assert_eq!(row.failed.as_deref(), Some("HTTP 503: no slot available"));
        assert!(s.bars().panels.iter().all(|p| p.bars[1].value.is_none()));
        assert_eq!(s.status, Some(Line::new("FAILED", Tone::Bad)));
        assert_eq!(
            s.notes[0],
            Line::new("@d4096 c2: 1 of 4 requests failed: stalled", Tone::Bad)
        );
        // The run's error is the failed test's: said once, on its row.
        assert!(!s.notes.iter().any(|n| n.text.starts_with("run failed:")));
    }

    #[test]
    fn a_scrubbed_card_names_no_host_and_no_model_folder() {
        let all = spec(&scrubbed(sweep(), false)).all_text();
        assert!(!all.iter().any(|t| t.contains("/home/ana")), "{all:#?}");
        assert!(all.iter().any(|t| t.contains("<host>")));
        assert!(all.iter().any(|t| t == "model Qwen3-8B-Q4_K_M.gguf"));
        // Asked for, the path is shown, cut at its start to keep the file.
        let shown = spec(&scrubbed(sweep(), true));
        let server = &shown.block("SERVER").unwrap().lines;
        assert!(
            server[1].starts_with("model …") && server[1].ends_with("/models/Qwen3-8B-Q4_K_M.gguf"),
            "{server:?}"
        );
    }

    #[test]
    fn a_lone_test_keeps_its_whole_name_and_is_written_large() {
        let r = one_test();
        let s = spec(&r);
        let Body::Figures { label, figures } = &s.body else {
            panic!("no bar panels for one test: {:?}", s.body);
        };
        assert_eq!(label, "pp512+tg128 @d0 c1");
        let row = &rows(&r)[0];
        let values: Vec<Option<String>> = figures.iter().map(|f| f.value.clone()).collect();
        let want: Vec<Option<String>> = [row.decode_p50, row.total, row.ttft_p50_ms]
            .iter()
            .map(|v| Some(num(v.expect("the fixture measured it"))))
            .collect();
        assert_eq!(values, want);
        assert!(figures[2].unit.contains("p99"), "{:?}", figures[2]);
    }
}
