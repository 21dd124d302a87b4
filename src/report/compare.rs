//! `dyno compare A B`: the tests two runs (or two sweeps) share, with B ÷ A,
//! the change in percent, and a Welch t-test on the stored samples, so a 3%
//! "gain" inside the noise is not read as one. Works across machines: both
//! sides come from the store.
//!
//! A test is matched on everything that shapes its figure: the level (when
//! either side has several), the test, the rate, and the run's conditions
//! (threads, GPU layers, batch sizes, flash attention, KV cache type, mmap,
//! offload). Every result of both sides is accounted for: matched like for
//! like; paired across one difference in conditions, with that difference
//! named (so "threads 1 → 2" is what a change is put down to, never hidden);
//! or listed as unmatched with the reason. With several tests, the p-values
//! are adjusted with Holm's method, so one of twenty tests differing at 5%
//! by chance is not called significant.

use serde::{Deserialize, Serialize};

use super::{ConfigJson, Report, ResultJson};
use crate::bench::stats;
use crate::serve::report::ServeReport;
use crate::serve::ServeResult;
use crate::vocab::status::ResultStatus;

/// One matched test.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[cfg_attr(feature = "ts", ts(rename = "CompareTest"))]
pub struct Matched {
    /// The level (quant) of the model; empty when both sides have one level
    /// each and those are compared with each other.
    pub level: String,
    pub test: String,
    /// What the figures measure ("prefill", "decode", "decode_total"; for
    /// server runs also "ttft", a latency).
    pub rate: String,
    /// The figures' unit: "t/s", or "ms" for time to first token.
    pub unit: String,
    /// True for rates; false for latencies, where B below A is the gain.
    pub higher_is_better: bool,
    /// A's conditions ("threads 2, ngl 0, batch 2048/512, fa auto, kv f16, mmap auto").
    pub conditions: String,
    /// Conditions in which B differs from A ("threads 1 → 2"); empty when the
    /// two were measured alike.
    pub differs: Vec<String>,
    pub a_tokens_per_s: f64,
    pub b_tokens_per_s: f64,
    /// The means of A and B, in `unit` (the name is older than latencies
    /// in comparisons). Half-widths of the 95% confidence intervals follow.
    pub a_ci95_tokens_per_s: Option<f64>,
    pub b_ci95_tokens_per_s: Option<f64>,
    pub a_reps: usize,
    pub b_reps: usize,
    /// B ÷ A.
    pub ratio: f64,
    pub change_pct: f64,
    /// Two-sided Welch t-test on the repetitions; null with fewer than two
    /// repetitions on a side.
    pub p_value: Option<f64>,
    /// `p_value` adjusted with Holm's method over every test of this
    /// comparison that has one.
    pub p_adjusted: Option<f64>,
    /// `p_adjusted` < 0.05.
    pub significant: bool,
    /// A side's figure was disturbed by other programs (or repetitions too
    /// spread to trust): the change may be the disturbance's, and every
    /// form of the comparison marks it.
    pub a_disturbed: bool,
    pub b_disturbed: bool,
}

/// A result of one side with no counterpart on the other.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[cfg_attr(feature = "ts", ts(rename = "CompareUnmatched"))]
pub struct Unmatched {
    /// "A" or "B".
    pub side: String,
    pub level: String,
    pub test: String,
    pub rate: String,
    pub conditions: String,
    /// Why it has no counterpart, for a person.
    pub reason: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[cfg_attr(feature = "ts", ts(rename = "CompareDoc"))]
pub struct Comparison {
    pub a: String,
    pub b: String,
    pub a_machine: String,
    pub b_machine: String,
    pub tests: Vec<Matched>,
    pub unmatched: Vec<Unmatched>,
    /// How `significant` was decided, in words.
    pub method: String,
}

/// The conditions of a run that change a figure, as (name, value) pairs.
/// Repetitions and warm-up are left out: they change the interval, not what
/// is measured.
pub fn conditions(c: &ConfigJson) -> Vec<(&'static str, String)> {
    let ngl = match (c.fit_margin_mib, c.n_gpu_layers_requested) {
        (Some(m), _) => format!("fit {m} MiB"),
        (None, Some(n)) => n.to_string(),
        (None, None) => "auto".into(),
    };
    let mut v = vec![
        ("threads", c.n_threads.to_string()),
        ("ngl", ngl),
        ("batch", format!("{}/{}", c.n_batch, c.n_ubatch)),
        ("fa", c.flash_attn.clone()),
        ("kv", c.cache_type.clone()),
        (
            "mmap",
            match c.use_mmap {
                None => "auto".into(),
                Some(true) => "on".into(),
                Some(false) => "off".into(),
            },
        ),
    ];
    if c.split_mode != "layer" || c.main_gpu != 0 {
        v.push(("split", format!("{} gpu {}", c.split_mode, c.main_gpu)));
    }
    if c.devices.is_some() {
        v.push(("devices", c.devices_label()));
    }
    if c.no_kv_offload {
        v.push(("nkvo", "1".into()));
    }
    if let Some(n) = c.n_cpu_moe {
        v.push(("ncmoe", n.to_string()));
    }
    if let Some(o) = &c.tensor_overrides {
        v.push(("ot", o.clone()));
    }
    if let Some(r) = &c.rpc {
        v.push(("rpc", r.join(",")));
    }
    v
}

fn join(c: &[(&'static str, String)]) -> String {
    c.iter()
        .map(|(k, v)| format!("{k} {v}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// One side's figure with what it is matched on.
struct Entry {
    level: String,
    test: String,
    rate: String,
    conds: Vec<(&'static str, String)>,
    /// The repetitions (a run) or the requests (a server run).
    samples: Vec<f64>,
    ci95: Option<f64>,
    unit: &'static str,
    higher_is_better: bool,
    disturbed: bool,
}

impl Entry {
    fn what(&self) -> (&str, &str, &str) {
        (&self.level, &self.test, &self.rate)
    }
}

fn rate_name(r: &ResultJson) -> String {
    serde_json::to_value(r.rate)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

/// Every ok result with samples, with the level when `by_level`.
fn entries(r: &Report, by_level: bool) -> Vec<Entry> {
    let mut out = Vec::new();
    for run in &r.runs {
        let conds = conditions(&run.config);
        for res in run
            .results
            .iter()
            .filter(|x| x.status == ResultStatus::Ok && !x.samples_tokens_per_s.is_empty())
        {
            out.push(Entry {
                level: if by_level {
                    run.model.quant.clone()
                } else {
                    String::new()
                },
                test: res.test.clone(),
                rate: rate_name(res),
                conds: conds.clone(),
                samples: res.samples_tokens_per_s.clone(),
                ci95: res.ci95_tokens_per_s,
                unit: "t/s",
                higher_is_better: true,
                disturbed: res.disturbed,
            });
        }
    }
    out
}

fn levels(r: &Report) -> usize {
    let mut q: Vec<&str> = r.runs.iter().map(|x| x.model.quant.as_str()).collect();
    q.sort_unstable();
    q.dedup();
    q.len()
}

/// What differs from `a` in `b`, as "threads 1 → 2".
fn differences(a: &[(&'static str, String)], b: &[(&'static str, String)]) -> Vec<String> {
    let mut out = Vec::new();
    for (k, va) in a {
        let vb = b.iter().find(|(kb, _)| kb == k).map(|(_, v)| v.as_str());
        if vb != Some(va.as_str()) {
            out.push(format!("{k} {va} → {}", vb.unwrap_or("default")));
        }
    }
    for (k, vb) in b {
        if !a.iter().any(|(ka, _)| ka == k) {
            out.push(format!("{k} default → {vb}"));
        }
    }
    out
}

fn matched(a: &Entry, b: &Entry) -> Matched {
    let (sa, sb) = (&a.samples, &b.samples);
    let (ma, mb) = (stats::mean(sa), stats::mean(sb));
    Matched {
        level: a.level.clone(),
        test: a.test.clone(),
        rate: a.rate.clone(),
        unit: a.unit.to_string(),
        higher_is_better: a.higher_is_better,
        conditions: join(&a.conds),
        differs: differences(&a.conds, &b.conds),
        a_tokens_per_s: ma,
        b_tokens_per_s: mb,
        a_ci95_tokens_per_s: a.ci95,
        b_ci95_tokens_per_s: b.ci95,
        a_reps: sa.len(),
        b_reps: sb.len(),
        ratio: mb / ma,
        change_pct: (mb / ma - 1.0) * 100.0,
        p_value: stats::welch(sa, sb).map(|w| w.2),
        p_adjusted: None,
        significant: false,
        a_disturbed: a.disturbed,
        b_disturbed: b.disturbed,
    }
}

/// Match `a` and `b`. The level is part of the match for sweeps
/// (`by_level`) and whenever either side has more than one level, so a run
/// meets the sweep level of its own quant; two single runs of different
/// quants are compared with each other.
pub fn compare(a_name: &str, a: &Report, b_name: &str, b: &Report, by_level: bool) -> Comparison {
    let by_level = by_level || levels(a) > 1 || levels(b) > 1;
    let ea = entries(a, by_level);
    let eb = entries(b, by_level);
    let sides = [
        (a_name, a.machine.cpu.as_str()),
        (b_name, b.machine.cpu.as_str()),
    ];
    match_entries(sides, "repetitions", &ea, &eb)
}

/// The conditions of a server run that change its figures: which server
/// (and build) served which model, through which API, and whether its
/// prompt cache was allowed to help.
fn serve_conditions(r: &ServeReport) -> Vec<(&'static str, String)> {
    let mut v = vec![
        ("server", r.server.label()),
        ("model", r.server.model.clone()),
        ("api", format!("{:?}", r.plan.api).to_lowercase()),
        (
            "prompt cache",
            if r.plan.prefix_cache {
                "reused"
            } else {
                "defeated"
            }
            .into(),
        ),
    ];
    if let Some(s) = r.server.slots {
        v.push(("slots", s.to_string()));
    }
    // Each TTFT holds its connection's set-up: https adds a TLS handshake.
    let scheme = r.endpoint.split("://").next().unwrap_or_default();
    if !scheme.is_empty() {
        v.push(("connection", scheme.to_string()));
    }
    v
}

/// A server test's figures as entries: time to first token (a latency),
/// prefill and decode per request, and the total output rate across the
/// test's concurrent requests (one figure per test, so it has no interval
/// and no test of significance). Per-request and total rates stay separate
/// entries, as everywhere else.
fn serve_entries(r: &ServeReport) -> Vec<Entry> {
    let conds = serve_conditions(r);
    let mut out = Vec::new();
    let ok = |t: &&ServeResult| t.status == ResultStatus::Ok && t.summary.ok > 0;
    for t in r.results.iter().filter(ok) {
        let reqs = t.samples.iter().filter(|s| s.ok());
        let per_request: [(&str, &'static str, bool, Vec<f64>); 3] = [
            (
                "ttft",
                "ms",
                false,
                reqs.clone().filter_map(|s| s.ttft_ms).collect(),
            ),
            (
                "prefill",
                "t/s",
                true,
                reqs.clone()
                    .filter_map(|s| s.prefill_tokens_per_s())
                    .collect(),
            ),
            (
                "decode",
                "t/s",
                true,
                reqs.filter_map(|s| s.decode_tokens_per_s()).collect(),
            ),
        ];
        let total = (
            "decode_total",
            "t/s",
            true,
            vec![t.summary.total_output_tokens_per_s],
        );
        for (rate, unit, higher_is_better, samples) in per_request.into_iter().chain([total]) {
            let Some(sum) = stats::summarize(&samples) else {
                continue;
            };
            out.push(Entry {
                level: String::new(),
                test: t.test.clone(),
                rate: rate.into(),
                conds: conds.clone(),
                samples,
                ci95: sum.ci95,
                unit,
                higher_is_better,
                // Server runs get no disturbance verdict.
                disturbed: false,
            });
        }
    }
    out
}

/// Compare two server runs test by test (`dyno compare serve:1 serve:2`):
/// two servers, two builds or two models measured with the same plan. The
/// conditions that differ (the server, its build, the model) are named on
/// every matched test, as for runs.
pub fn compare_servers(a_name: &str, a: &ServeReport, b_name: &str, b: &ServeReport) -> Comparison {
    let cpu = |r: &ServeReport| {
        r.machine
            .as_ref()
            .map(|m| m.cpu.clone())
            .unwrap_or_else(|| "unknown machine".into())
    };
    let (ma, mb) = (cpu(a), cpu(b));
    match_entries(
        [(a_name, ma.as_str()), (b_name, mb.as_str())],
        "requests",
        &serve_entries(a),
        &serve_entries(b),
    )
}

/// Pair the entries of two sides (like for like first, then a test left
/// alone on each side across its differences), test each pair, and list
/// what is left with why. `sides` are each side's name and machine;
/// `samples` names what the samples are, for the method's wording.
fn match_entries(
    sides: [(&str, &str); 2],
    samples: &str,
    ea: &[Entry],
    eb: &[Entry],
) -> Comparison {
    let mut used_a = vec![false; ea.len()];
    let mut used_b = vec![false; eb.len()];
    let mut pairs: Vec<(usize, usize)> = Vec::new();
    // Like for like first.
    for (i, x) in ea.iter().enumerate() {
        if let Some(j) = (0..eb.len())
            .find(|&j| !used_b[j] && eb[j].what() == x.what() && eb[j].conds == x.conds)
        {
            used_a[i] = true;
            used_b[j] = true;
            pairs.push((i, j));
        }
    }
    // Then a test left alone on each side, paired across its differences.
    for (i, x) in ea.iter().enumerate() {
        if used_a[i] {
            continue;
        }
        let left_a = (0..ea.len()).filter(|&k| !used_a[k] && ea[k].what() == x.what());
        let left_b: Vec<usize> = (0..eb.len())
            .filter(|&j| !used_b[j] && eb[j].what() == x.what())
            .collect();
        if left_a.count() == 1 && left_b.len() == 1 {
            used_a[i] = true;
            used_b[left_b[0]] = true;
            pairs.push((i, left_b[0]));
        }
    }
    let mut tests: Vec<Matched> = pairs
        .iter()
        .map(|&(i, j)| matched(&ea[i], &eb[j]))
        .collect();
    let adjusted = stats::holm(&tests.iter().map(|t| t.p_value).collect::<Vec<_>>());
    for (t, p) in tests.iter_mut().zip(adjusted) {
        t.p_adjusted = p;
        t.significant = p.is_some_and(|p| p < 0.05);
    }
    let mut unmatched = Vec::new();
    let mut left = |side: &str, other: &str, mine: &[Entry], used: &[bool], theirs: &[Entry]| {
        for (e, _) in mine.iter().zip(used).filter(|(_, u)| !**u) {
            let there: Vec<String> = theirs
                .iter()
                .filter(|t| t.what() == e.what())
                .map(|t| join(&t.conds))
                .collect();
            let what = if e.level.is_empty() {
                e.test.clone()
            } else {
                format!("{} at {}", e.test, e.level)
            };
            let reason = if there.is_empty() {
                format!("{other} has no {what} ({})", e.rate)
            } else {
                format!(
                    "{other} measured {what} only under other conditions ({}), and several results could pair; compare runs of one configuration",
                    there.join("; ")
                )
            };
            unmatched.push(Unmatched {
                side: side.into(),
                level: e.level.clone(),
                test: e.test.clone(),
                rate: e.rate.clone(),
                conditions: join(&e.conds),
                reason,
            });
        }
    };
    left("A", "B", ea, &used_a, eb);
    left("B", "A", eb, &used_b, ea);
    let n = tests.iter().filter(|t| t.p_value.is_some()).count();
    let method = if n > 1 {
        format!("Welch's t-test on the {samples}, p adjusted with Holm's method over {n} tests; significant: adjusted p < 0.05")
    } else {
        format!("Welch's t-test on the {samples}; significant: p < 0.05")
    };
    let [(a_name, a_machine), (b_name, b_machine)] = sides;
    Comparison {
        a: a_name.into(),
        b: b_name.into(),
        a_machine: a_machine.into(),
        b_machine: b_machine.into(),
        tests,
        unmatched,
        method,
    }
}

/// The comparison as a Markdown table; `*` marks a significant difference.
pub fn table(c: &Comparison) -> String {
    // Runs compare rates only, and keep their header; a server comparison
    // mixes rates with latencies, so each figure carries its unit.
    let mixed = c.tests.iter().any(|t| t.unit != "t/s");
    let (head_a, head_b) = if mixed {
        ("A", "B")
    } else {
        ("A t/s", "B t/s")
    };
    let fig = |v: f64, unit: &str, disturbed: bool| {
        let mark = if disturbed { " (disturbed)" } else { "" };
        if mixed {
            format!("{v:.2} {unit}{mark}")
        } else {
            format!("{v:.2}{mark}")
        }
    };
    let mut out = format!(
        "A = {} ({}), B = {} ({})\n\n| level | test | conditions | {head_a} | {head_b} | B÷A | change | p (adj.) | |\n| ----- | ---- | ---------- | ----: | ----: | --: | -----: | -: | - |\n",
        c.a, c.a_machine, c.b, c.b_machine
    );
    for t in &c.tests {
        let conditions = if t.differs.is_empty() {
            t.conditions.clone()
        } else {
            format!("**{}**", t.differs.join(", "))
        };
        out.push_str(&format!(
            "| {} | {} ({}) | {} | {} | {} | {:.3} | {:+.1}% | {} | {} |\n",
            if t.level.is_empty() { "-" } else { &t.level },
            t.test,
            t.rate,
            conditions,
            fig(t.a_tokens_per_s, &t.unit, t.a_disturbed),
            fig(t.b_tokens_per_s, &t.unit, t.b_disturbed),
            t.ratio,
            t.change_pct,
            t.p_adjusted
                .map(|p| format!("{p:.3}"))
                .unwrap_or_else(|| "-".into()),
            if t.significant { "*" } else { "" }
        ));
    }
    if c.tests.is_empty() {
        out.push_str("\nno test is in both; compare runs of the same tests (one preset, e.g. --preset standard)\n");
    }
    for u in &c.unmatched {
        let level = if u.level.is_empty() {
            String::new()
        } else {
            format!(" {}", u.level)
        };
        out.push_str(&format!(
            "only in {}: {}{level} ({}; {}): {}\n",
            u.side, u.test, u.rate, u.conditions, u.reason
        ));
    }
    if c.tests.iter().any(|t| t.a_disturbed || t.b_disturbed) {
        out.push_str("\n(disturbed): other programs were busy while that figure was timed; the change may be theirs (dyno show names them)\n");
    }
    if c.tests.iter().any(|t| !t.differs.is_empty()) {
        out.push_str("\nbold: the conditions that differ between A and B; the change is theirs as much as the runs'\n");
    }
    out.push_str(&format!("\n* significant at 5%: {}\n", c.method));
    if mixed {
        out.push_str("ttft: time to first token, a latency (lower is better); prefill and decode: per request; decode_total: all concurrent requests together, one figure per test\n");
    }
    out
}
