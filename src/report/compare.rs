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
use crate::vocab::status::ResultStatus;

/// One matched test.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
#[ts(rename = "CompareTest")]
pub struct Matched {
    /// The level (quant) of the model; empty when both sides have one level
    /// each and those are compared with each other.
    pub level: String,
    pub test: String,
    /// What the figures measure ("prefill", "decode", "decode_total").
    pub rate: String,
    /// A's conditions ("threads 2, ngl 0, batch 2048/512, fa auto, kv f16, mmap auto").
    pub conditions: String,
    /// Conditions in which B differs from A ("threads 1 → 2"); empty when the
    /// two were measured alike.
    pub differs: Vec<String>,
    pub a_tokens_per_s: f64,
    pub b_tokens_per_s: f64,
    /// Half-widths of the 95% confidence intervals of the means.
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
}

/// A result of one side with no counterpart on the other.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
#[ts(rename = "CompareUnmatched")]
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

#[derive(Debug, Clone, Serialize, Deserialize, ts_rs::TS)]
#[ts(rename = "CompareDoc")]
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
    v
}

fn join(c: &[(&'static str, String)]) -> String {
    c.iter()
        .map(|(k, v)| format!("{k} {v}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// One side's result with what it is matched on.
struct Entry<'a> {
    level: String,
    test: String,
    rate: String,
    conds: Vec<(&'static str, String)>,
    res: &'a ResultJson,
}

impl Entry<'_> {
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
fn entries(r: &Report, by_level: bool) -> Vec<Entry<'_>> {
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
                res,
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
    let (sa, sb) = (&a.res.samples_tokens_per_s, &b.res.samples_tokens_per_s);
    let (ma, mb) = (stats::mean(sa), stats::mean(sb));
    Matched {
        level: a.level.clone(),
        test: a.test.clone(),
        rate: a.rate.clone(),
        conditions: join(&a.conds),
        differs: differences(&a.conds, &b.conds),
        a_tokens_per_s: ma,
        b_tokens_per_s: mb,
        a_ci95_tokens_per_s: a.res.ci95_tokens_per_s,
        b_ci95_tokens_per_s: b.res.ci95_tokens_per_s,
        a_reps: sa.len(),
        b_reps: sb.len(),
        ratio: mb / ma,
        change_pct: (mb / ma - 1.0) * 100.0,
        p_value: stats::welch(sa, sb).map(|w| w.2),
        p_adjusted: None,
        significant: false,
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
    left("A", "B", &ea, &used_a, &eb);
    left("B", "A", &eb, &used_b, &ea);
    let n = tests.iter().filter(|t| t.p_value.is_some()).count();
    let method = if n > 1 {
        format!("Welch's t-test on the repetitions, p adjusted with Holm's method over {n} tests; significant: adjusted p < 0.05")
    } else {
        "Welch's t-test on the repetitions; significant: p < 0.05".to_string()
    };
    Comparison {
        a: a_name.into(),
        b: b_name.into(),
        a_machine: a.machine.cpu.clone(),
        b_machine: b.machine.cpu.clone(),
        tests,
        unmatched,
        method,
    }
}

/// The comparison as a Markdown table; `*` marks a significant difference.
pub fn table(c: &Comparison) -> String {
    let mut out = format!(
        "A = {} ({}), B = {} ({})\n\n| level | test | conditions | A t/s | B t/s | B÷A | change | p (adj.) | |\n| ----- | ---- | ---------- | ----: | ----: | --: | -----: | -: | - |\n",
        c.a, c.a_machine, c.b, c.b_machine
    );
    for t in &c.tests {
        let conditions = if t.differs.is_empty() {
            t.conditions.clone()
        } else {
            format!("**{}**", t.differs.join(", "))
        };
        out.push_str(&format!(
            "| {} | {} ({}) | {} | {:.2} | {:.2} | {:.3} | {:+.1}% | {} | {} |\n",
            if t.level.is_empty() { "-" } else { &t.level },
            t.test,
            t.rate,
            conditions,
            t.a_tokens_per_s,
            t.b_tokens_per_s,
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
    if c.tests.iter().any(|t| !t.differs.is_empty()) {
        out.push_str("\nbold: the conditions that differ between A and B; the change is theirs as much as the runs'\n");
    }
    out.push_str(&format!("\n* significant at 5%: {}\n", c.method));
    out
}
