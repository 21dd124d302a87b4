//! The result card of a server run (`dyno export serve:ID --format
//! png|svg`): the same 1200×630 picture as a run's card, drawn with its
//! helpers and colours, for what a server benchmark measures.
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

use super::card::{
    big_figures, fit, fit_bold, num, width_bold_px, width_px, BigFigure, Blocks, Svg, BAD, BG,
    CONTEXT_W, CONTEXT_X, FAMILY, HEIGHT, MUTED, PANEL, PP, TEXT, TG, TTFT, WIDTH,
};
use crate::serve::report::ServeReport;
use crate::serve::request::TokenSource;
use crate::serve::ServeResult;
use crate::units::human_bytes;
use crate::vocab::status::{ResultStatus, RunStatus};

/// Total output across parallel requests: a colour of its own, so it is
/// never read as the per-request decode rate (amber, as on a run's card).
const TOTAL: &str = "#34d399";
/// TTFT's p99 bar, drawn faint behind the p50 one.
const TTFT_TAIL: &str = "#574a8c";

/// Rows the chart holds at a readable size; a bigger run shows the first
/// ones and says how many more there are.
const MAX_ROWS: usize = 12;
/// The chart's area: below the panel titles, above the notes, left of the
/// context column.
const CHART_LEFT: f64 = 40.0;
const CHART_RIGHT: f64 = CONTEXT_X - 34.0;
const CHART_TOP: f64 = 200.0;
const CHART_BOTTOM: f64 = 490.0;
/// The context column's panel ends above the notes, which run the card's
/// whole width.
const CONTEXT_BOTTOM: f64 = 508.0;
const NOTES_Y: f64 = 530.0;

/// One test's row: its figures, or why it has none.
#[derive(Debug, Clone, PartialEq)]
struct Row {
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

fn rows(r: &ServeReport) -> Vec<Row> {
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
            Row {
                label: label(t, &v),
                decode_p50: m.decode_tokens_per_s.as_ref().map(|p| p.p50.value),
                total: measured.then_some(m.total_output_tokens_per_s),
                ttft_p50_ms: m.ttft_ms.as_ref().map(|p| p.p50.value),
                ttft_p99_ms: m.ttft_ms.as_ref().map(|p| p.p99.value),
                knee: measured
                    && r.knees.iter().any(|k| {
                        (k.n_prompt, k.n_gen, k.n_depth, k.concurrency)
                            == (
                                t.spec.n_prompt,
                                t.spec.n_gen,
                                t.spec.n_depth,
                                t.spec.concurrency,
                            )
                    }),
                failed,
            }
        })
        .collect()
}

/// One bar of a panel: the value, a faint longer bar behind it (a tail
/// percentile) where there is one, and the text written beside it.
struct Bar {
    value: Option<f64>,
    tail: Option<f64>,
    text: String,
}

/// Where a panel sits and what it says above its bars.
struct PanelSpec<'a> {
    x: f64,
    w: f64,
    title: &'a str,
    unit: &'a str,
    colour: &'a str,
}

/// A panel of bars on its own scale: a title in the panel's colour, its
/// unit under it, then one bar per row with its figure beside it. The
/// figures' column is as wide as the widest figure, so long ones (p50 and
/// p99 together) shorten the bars rather than run into the next panel.
fn panel(s: &mut Svg, p: &PanelSpec, row_h: f64, bars: &[Bar]) {
    s.text(
        p.x,
        CHART_TOP - 32.0,
        14.0,
        p.colour,
        "bold",
        &fit_bold(p.title, 14.0, p.w),
    );
    s.text(
        p.x,
        CHART_TOP - 13.0,
        13.0,
        MUTED,
        "normal",
        &fit(p.unit, 13.0, p.w),
    );
    let size = if row_h < 30.0 { 14.0 } else { 15.0 };
    let max = bars
        .iter()
        .flat_map(|b| [b.value, b.tail])
        .flatten()
        .fold(0.0_f64, f64::max);
    let text_w = bars
        .iter()
        .map(|b| width_px(&b.text, size))
        .fold(0.0_f64, f64::max);
    let bar_w = (p.w - text_w - 8.0).max(p.w * 0.25);
    let scale = |v: f64| if max > 0.0 { bar_w * v / max } else { 0.0 };
    for (i, b) in bars.iter().enumerate() {
        let y = CHART_TOP + i as f64 * row_h;
        let h = (row_h * 0.62).min(24.0);
        let by = y + (row_h - h) / 2.0;
        // A row with nothing to draw (a failed test) is left bare for its
        // reason, written across the panels.
        if b.value.is_none() && b.tail.is_none() && b.text.is_empty() {
            continue;
        }
        s.rect(p.x, by, bar_w, h, PANEL, 3.0);
        if let Some(t) = b.tail {
            s.rect(p.x, by, scale(t).max(2.0), h, TTFT_TAIL, 3.0);
        }
        if let Some(v) = b.value {
            s.rect(p.x, by, scale(v).max(2.0), h, p.colour, 3.0);
        }
        if !b.text.is_empty() {
            let t = fit(&b.text, size, p.w - bar_w - 6.0);
            s.text(
                p.x + bar_w + 6.0,
                by + h * 0.5 + size * 0.36,
                size,
                TEXT,
                "normal",
                &t,
            );
        }
    }
}

/// The card as an SVG document, 1200×630: the header, the three panels
/// with a row per test, the conditions on the right, notes under the chart
/// (failures, the knee), and the client machine and endpoint at the foot.
pub fn svg(r: &ServeReport) -> String {
    let all = rows(r);
    let mut s = Svg(String::new());
    let _ = writeln!(
        s.0,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" font-family="{FAMILY}, sans-serif">"#
    );
    s.rect(0.0, 0.0, WIDTH as f64, HEIGHT as f64, BG, 0.0);
    header(&mut s, r);
    chart(&mut s, &all);
    notes(&mut s, r, &all);
    context(&mut s, r);
    footer(&mut s, r);
    s.0.push_str("</svg>\n");
    s.0
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

/// The brand and what the card shows, the status, then the server and
/// model as the title, and how to read the figures.
fn header(s: &mut Svg, r: &ServeReport) {
    s.text(40.0, 52.0, 17.0, PP, "bold", "DYNO");
    let n = r.results.len();
    let what = format!(
        "server benchmark · {n} test{} · run serve:{}",
        if n == 1 { "" } else { "s" },
        r.run_id
    );
    s.text(106.0, 52.0, 17.0, MUTED, "normal", &fit(&what, 17.0, 800.0));
    let (status, colour) = match r.status {
        RunStatus::Ok => ("status ok".to_string(), MUTED),
        other => (other.as_str().to_uppercase(), BAD),
    };
    let sx = WIDTH as f64 - 40.0 - width_bold_px(&status, 17.0);
    s.text(sx, 52.0, 17.0, colour, "bold", &status);
    // The model file where the server names one (llama-server); else the
    // name the requests used (Ollama's `qwen3:8b`), as it is.
    let model = r
        .server
        .model_path
        .as_deref()
        .map_or(r.server.model.as_str(), file_name);
    let title = format!("{} · {model}", server_label(r));
    // Model file names run long; a smaller title keeps the quant at their
    // end before any of it is cut.
    let mut size = 32.0;
    while size > 24.0 && width_bold_px(&title, size) > 1120.0 {
        size -= 2.0;
    }
    s.text(
        40.0,
        92.0,
        size,
        TEXT,
        "bold",
        &fit_bold(&title, size, 1120.0),
    );
    s.text(
        40.0,
        122.0,
        16.0,
        MUTED,
        "normal",
        &fit(
            "per request: the median (p50) over a test's requests, on Dyno's clock · total: every parallel request together",
            16.0,
            1120.0,
        ),
    );
}

/// The rows' labels, then the three panels. A failed test says why across
/// its row instead of bars; a run with more tests than fit shows the first
/// ones and a count of the rest.
fn chart(s: &mut Svg, all: &[Row]) {
    if let [one] = all {
        if one.failed.is_none() {
            lone(s, one);
            return;
        }
    }
    let shown: &[Row] = if all.len() > MAX_ROWS {
        &all[..MAX_ROWS - 1]
    } else {
        all
    };
    let n_lines = if all.len() > MAX_ROWS {
        MAX_ROWS
    } else {
        all.len()
    };
    let row_h = ((CHART_BOTTOM - CHART_TOP) / n_lines.max(1) as f64).min(44.0);
    let size = if row_h < 30.0 { 14.0 } else { 16.0 };
    let label_w = shown
        .iter()
        .map(|r| width_bold_px(&r.label, size))
        .fold(0.0_f64, f64::max)
        .clamp(48.0, 200.0);
    row_labels(s, all, shown, row_h, size, label_w);
    let gap = 18.0;
    let px = CHART_LEFT + label_w + 14.0;
    let pw = (CHART_RIGHT - px - 2.0 * gap) / 3.0;
    let (decode, total, ttft) = bars(shown);
    let panels = [
        (
            PanelSpec {
                x: px,
                w: pw,
                title: "PER REQUEST",
                unit: "decode t/s · p50",
                colour: TG,
            },
            decode,
        ),
        (
            PanelSpec {
                x: px + pw + gap,
                w: pw,
                title: "ALL REQUESTS",
                unit: "total output t/s",
                colour: TOTAL,
            },
            total,
        ),
        (
            PanelSpec {
                x: px + 2.0 * (pw + gap),
                w: pw,
                title: "FIRST TOKEN",
                unit: "TTFT ms · p50 / p99",
                colour: TTFT,
            },
            ttft,
        ),
    ];
    for (spec, bars) in &panels {
        panel(s, spec, row_h, bars);
    }
    for (i, row) in shown.iter().enumerate() {
        if let Some(why) = &row.failed {
            let y = CHART_TOP + i as f64 * row_h + row_h / 2.0 + 5.0;
            let line = fit(&format!("failed: {why}"), 14.0, CHART_RIGHT - px - 8.0);
            s.text(px + 8.0, y, 14.0, BAD, "normal", &line);
        }
    }
}

/// A run of one test: its label, then its three figures written large, as
/// the run card writes a lone run (a bar scaled to itself says nothing).
fn lone(s: &mut Svg, row: &Row) {
    let top = CHART_TOP + 10.0;
    let label_w = width_bold_px(&row.label, 16.0).clamp(48.0, 200.0);
    s.text(
        CHART_LEFT,
        top + 112.0,
        16.0,
        TEXT,
        "bold",
        &fit_bold(&row.label, 16.0, label_w),
    );
    let gap = 18.0;
    let px = CHART_LEFT + label_w + 24.0;
    let pw = (CHART_RIGHT - px - 2.0 * gap) / 3.0;
    let ttft_unit = match row.ttft_p99_ms {
        Some(p99) => format!("ms, median · p99 {} ms", num(p99)),
        None => "ms, the median request".to_string(),
    };
    big_figures(
        s,
        px,
        pw + gap,
        top,
        &[
            BigFigure {
                title: "per request".into(),
                colour: TG,
                value: row.decode_p50.map(num),
                unit: "decode t/s of the median request".into(),
                missing: "no decode rate: no request streamed two tokens",
            },
            BigFigure {
                title: "all requests".into(),
                colour: TOTAL,
                value: row.total.map(num),
                unit: "output t/s, every request together".into(),
                missing: "no request finished",
            },
            BigFigure {
                title: "first token".into(),
                colour: TTFT,
                value: row.ttft_p50_ms.map(num),
                unit: ttft_unit,
                missing: "no first token arrived",
            },
        ],
    );
}

/// The rows' labels down the left, a failed row's in red, and a count of
/// the tests that did not fit.
fn row_labels(s: &mut Svg, all: &[Row], shown: &[Row], row_h: f64, size: f64, label_w: f64) {
    for (i, row) in shown.iter().enumerate() {
        let y = CHART_TOP + i as f64 * row_h + row_h / 2.0 + size * 0.36;
        let colour = if row.failed.is_some() { BAD } else { TEXT };
        s.text(
            CHART_LEFT,
            y,
            size,
            colour,
            "bold",
            &fit_bold(&row.label, size, label_w),
        );
    }
    if all.len() > shown.len() {
        let y = CHART_TOP + shown.len() as f64 * row_h + row_h / 2.0 + size * 0.36;
        let more = format!(
            "+{} more tests (dyno serve-show lists them all)",
            all.len() - shown.len()
        );
        s.text(
            CHART_LEFT,
            y,
            size,
            MUTED,
            "normal",
            &fit(&more, size, 600.0),
        );
    }
}

/// The three panels' bars: per-request decode, total output (the knee
/// marked), and TTFT with its tail.
fn bars(shown: &[Row]) -> (Vec<Bar>, Vec<Bar>, Vec<Bar>) {
    let text = |v: Option<f64>| v.map(num).unwrap_or_default();
    let decode: Vec<Bar> = shown
        .iter()
        .map(|r| Bar {
            value: r.decode_p50,
            tail: None,
            text: text(r.decode_p50),
        })
        .collect();
    let total: Vec<Bar> = shown
        .iter()
        .map(|r| Bar {
            value: r.total,
            tail: None,
            text: match (r.total, r.knee) {
                (Some(v), true) => format!("{} ◆", num(v)),
                (v, _) => text(v),
            },
        })
        .collect();
    let ttft: Vec<Bar> = shown
        .iter()
        .map(|r| Bar {
            value: r.ttft_p50_ms,
            tail: r.ttft_p99_ms,
            text: match (r.ttft_p50_ms, r.ttft_p99_ms) {
                (Some(a), Some(b)) => format!("{} / {}", num(a), num(b)),
                (a, _) => text(a),
            },
        })
        .collect();
    (decode, total, ttft)
}

/// Under the chart, two lines at most: what went wrong (the run's error,
/// tests where some requests failed), then where the knee is.
fn notes(s: &mut Svg, r: &ServeReport, all: &[Row]) {
    let mut lines: Vec<(String, &str)> = Vec::new();
    if let Some(e) = r.error.as_deref().filter(|_| r.status != RunStatus::Ok) {
        // A failed test's reason is already across its row.
        if !all.iter().any(|row| row.failed.as_deref() == Some(e)) {
            lines.push((format!("run {}: {e}", r.status), BAD));
        }
    }
    let v = varies(&r.results);
    for t in r.results.iter() {
        if let (ResultStatus::Ok, Some(e)) = (t.status, t.error.as_deref()) {
            lines.push((format!("{}: {e}", label(t, &v)), BAD));
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
        lines.push((
            format!(
                "◆ knee, the lowest concurrency with 90% of the best total output: {}",
                knees.join(", ")
            ),
            TEXT,
        ));
    }
    let many = lines.len() > 2;
    for (i, (line, colour)) in lines.iter().take(2).enumerate() {
        let line = if many && i == 1 {
            format!("{line} (and {} more notes)", lines.len() - 2)
        } else {
            line.clone()
        };
        let w = WIDTH as f64 - 2.0 * CHART_LEFT;
        s.text(
            CHART_LEFT,
            NOTES_Y + 21.0 * i as f64,
            14.0,
            colour,
            "normal",
            &fit(&line, 14.0, w),
        );
    }
}

/// `s` cut at its start to fit `max` pixels, keeping the first word (what
/// the line is) and the end: a model path's file name matters more than
/// its folders.
fn fit_start(s: &str, size: f64, max: f64) -> String {
    if width_px(s, size) <= max {
        return s.to_string();
    }
    let (head, rest) = s.split_once(' ').unwrap_or(("", s));
    let mut tail: Vec<char> = rest.chars().collect();
    while !tail.is_empty() && width_px(&format!("{head} …{}", String::from_iter(&tail)), size) > max
    {
        tail.remove(0);
    }
    format!("{head} …{}", String::from_iter(&tail))
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
fn context(s: &mut Svg, r: &ServeReport) {
    s.rect(
        CONTEXT_X - 18.0,
        150.0,
        CONTEXT_W + 36.0,
        CONTEXT_BOTTOM - 150.0,
        PANEL,
        10.0,
    );
    let mut blocks = Blocks {
        y: 180.0,
        bottom: CONTEXT_BOTTOM,
    };
    blocks.block(s, "SERVER", &server_lines(r));
    blocks.block(s, "CONDITIONS", &condition_lines(r));
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
        blocks.block(s, "SERVICE-LEVEL OBJECTIVE", &l);
    }
}

/// The server as it described itself: kind and build, model, file, slots.
fn server_lines(r: &ServeReport) -> Vec<String> {
    let sv = &r.server;
    let mut server = vec![
        server_label(r),
        fit_start(&format!("model {}", sv.model), 15.0, CONTEXT_W),
    ];
    if let Some(p) = sv.model_path.as_deref().filter(|p| *p != sv.model) {
        server.push(fit_start(&format!("file {p}"), 15.0, CONTEXT_W));
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
    if width_px(&lengths, 15.0) <= CONTEXT_W {
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

/// The foot: the client machine Dyno measured from (the server may be
/// elsewhere), then when, by which Dyno, against which endpoint (as the
/// document has it: another machine's host reads `<host>`).
fn footer(s: &mut Svg, r: &ServeReport) {
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
    s.text(
        40.0,
        584.0,
        14.0,
        MUTED,
        "normal",
        &fit(&client, 14.0, 1120.0),
    );
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
    s.text(
        40.0,
        607.0,
        14.0,
        MUTED,
        "normal",
        &fit(&foot, 14.0, 1120.0),
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::card;
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
    fn test(n_depth: u32, c: u32, itl: f64, slo: &Slo) -> ServeResult {
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
    fn sweep() -> ServeReport {
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

    /// Every text node of the card: its x, y, font size and (unescaped)
    /// text.
    fn texts(svg: &str) -> Vec<(f64, f64, f64, String)> {
        let attr = |node: &str, name: &str| -> f64 {
            let at = node.find(&format!(" {name}=\"")).unwrap() + name.len() + 3;
            node[at..at + node[at..].find('"').unwrap()]
                .parse()
                .unwrap()
        };
        svg.lines()
            .filter(|l| l.starts_with("<text "))
            .map(|l| {
                let open = &l[..l.find('>').unwrap()];
                let body = &l[open.len() + 1..l.rfind("</text>").unwrap()];
                let body = body
                    .replace("&lt;", "<")
                    .replace("&gt;", ">")
                    .replace("&quot;", "\"")
                    .replace("&apos;", "'")
                    .replace("&amp;", "&");
                (
                    attr(open, "x"),
                    attr(open, "y"),
                    attr(open, "font-size"),
                    body,
                )
            })
            .collect()
    }

    fn x_of(svg: &str, text: &str) -> f64 {
        texts(svg)
            .into_iter()
            .find(|t| t.3 == text)
            .unwrap_or_else(|| panic!("no text {text:?} in the card"))
            .0
    }

    #[test]
    fn the_card_states_the_conditions_of_its_figures() {
        let svg = svg(&sweep());
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
            "2025-06-01 · dyno 0.9.0 · endpoint http://&lt;host&gt;:8080",
        ] {
            assert!(svg.contains(want), "{want:?} missing from\n{svg}");
        }
        // Rows are named by what varies between tests (depth, concurrency);
        // the lengths all tests share are stated once, above.
        assert!(svg.contains(">@d4096 c2</text>"), "{svg}");
        assert!(!svg.contains(">pp512+tg128 @d0 c1</text>"));
    }

    #[test]
    fn per_request_decode_and_total_output_stay_in_separate_panels() {
        let r = sweep();
        let svg = svg(&r);
        let t = &r.results[2];
        let decode = num(t.summary.decode_tokens_per_s.as_ref().unwrap().p50.value);
        let total = num(t.summary.total_output_tokens_per_s);
        assert_ne!(decode, total);
        // Four requests side by side: more in total, each one slower.
        assert!(
            t.summary.total_output_tokens_per_s
                > t.summary.decode_tokens_per_s.as_ref().unwrap().p50.value
        );
        let decode_x = x_of(&svg, "PER REQUEST");
        let total_x = x_of(&svg, "ALL REQUESTS");
        let ttft_x = x_of(&svg, "FIRST TOKEN");
        assert!(decode_x < total_x && total_x < ttft_x);
        // Each figure is written inside its own panel, the knee marked.
        let at = x_of(&svg, &decode);
        assert!(decode_x < at && at < total_x, "{at}");
        let at = x_of(&svg, &format!("{total} ◆"));
        assert!(total_x < at && at < ttft_x, "{at}");
        let ttft = t.summary.ttft_ms.as_ref().unwrap();
        let at = x_of(
            &svg,
            &format!("{} / {}", num(ttft.p50.value), num(ttft.p99.value)),
        );
        assert!(ttft_x < at, "{at}");
        assert!(svg.contains("best total output: c4 (@d0)"), "{svg}");
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
        let svg = svg(&r);
        assert!(
            svg.contains(&format!(
                r#"fill="{BAD}" font-weight="normal">failed: HTTP 503: no slot available</text>"#
            )),
            "{svg}"
        );
        assert!(svg.contains(&format!(r#"fill="{BAD}" font-weight="bold">@d0 c2</text>"#)));
        assert!(svg.contains("@d4096 c2: 1 of 4 requests failed: stalled"));
        assert!(svg.contains(">FAILED</text>"));
        // The run's error is the failed test's: said once, on its row.
        assert!(!svg.contains("run failed:"));
    }

    #[test]
    fn a_scrubbed_card_names_no_host_and_no_model_folder() {
        let svg = svg(&scrubbed(sweep(), false));
        assert!(!svg.contains("/home/ana"), "{svg}");
        assert!(svg.contains("&lt;host&gt;"));
        assert!(svg.contains("model Qwen3-8B-Q4_K_M.gguf"));
        // Asked for, the path is shown, cut at its start to keep the file.
        let shown = super::svg(&scrubbed(sweep(), true));
        assert!(shown.contains("model …"), "{shown}");
        assert!(shown.contains("/models/Qwen3-8B-Q4_K_M.gguf</text>"));
    }

    #[test]
    fn many_tests_show_the_first_ones_and_count_the_rest() {
        let mut r = sweep();
        let slo = r.plan.slo;
        r.results = (0..15)
            .map(|i| test(i * 1024, 1 + i % 3, 20.0, &slo))
            .collect();
        let svg = svg(&r);
        assert!(svg.contains("+4 more tests"), "{svg}");
        assert!(svg.contains(">@d10240 c2</text>"));
        assert!(!svg.contains(">@d11264 c1</text>"));
    }

    #[test]
    fn no_text_runs_off_the_card_or_into_the_context_column() {
        let one = {
            let mut r = sweep();
            r.results.truncate(1);
            r.knees.clear();
            r.plan.depths = vec![0];
            r.plan.concurrency = vec![1];
            r
        };
        let mut many = sweep();
        let slo = many.plan.slo;
        many.results = (0..15)
            .map(|i| test(i * 1024, 1 + i % 3, 20.0, &slo))
            .collect();
        for r in [sweep(), one, many] {
            let svg = svg(&r);
            for (x, y, size, text) in texts(&svg) {
                let end = x + width_px(&text, size);
                assert!(end <= WIDTH as f64 - 20.0, "{text:?} ends at {end}");
                // The column's panel spans y 150 to 522: text left of it
                // at that height must end before it.
                let beside = (150.0..=CONTEXT_BOTTOM + size).contains(&y);
                if x < CONTEXT_X - 18.0 && beside {
                    assert!(end <= CONTEXT_X - 18.0, "{text:?} runs into the column");
                }
            }
        }
    }

    #[test]
    fn the_card_renders_as_a_1200_by_630_png() {
        let bytes = card::png(&svg(&sweep())).unwrap();
        assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
        let be = |at: usize| u32::from_be_bytes(bytes[at..at + 4].try_into().unwrap());
        assert_eq!((be(16), be(20)), (1200, 630));
    }

    #[test]
    fn a_lone_test_keeps_its_whole_name_and_is_written_large() {
        let mut r = sweep();
        r.results.truncate(1);
        let svg = svg(&r);
        assert!(svg.contains(">pp512+tg128 @d0 c1</text>"));
        // Its three figures large, as the run card writes a lone run, not
        // three bars each as long as the panel.
        let texts = texts(&svg);
        let large: Vec<&str> = texts
            .iter()
            .filter(|t| t.2 >= 24.0)
            .map(|t| t.3.as_str())
            .collect();
        let row = &rows(&r)[0];
        for v in [row.decode_p50, row.total, row.ttft_p50_ms] {
            let v = num(v.expect("the fixture measured it"));
            assert!(
                large.contains(&v.as_str()),
                "{v} is not written large: {large:?}"
            );
        }
        assert!(!svg.contains("PER REQUEST"), "no bar panels");
        // In the chart: the context column cuts a long model path at its
        // start on purpose, keeping the file name.
        let cut: Vec<&str> = texts
            .iter()
            .filter(|t| t.0 < CONTEXT_X - 18.0 && t.3.contains('…'))
            .map(|t| t.3.as_str())
            .collect();
        assert!(cut.is_empty(), "nothing is cut: {cut:?}");
    }
}
