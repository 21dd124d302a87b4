//! `dyno compare A B`: the tests two runs (or two sweeps) share, matched by
//! test (and level, for sweeps), with B ÷ A, the change in percent, and a
//! Welch t-test on the stored samples, so a 3% "gain" inside the noise is
//! not read as one. Works across machines: both sides come from the store.

use serde::{Deserialize, Serialize};

use super::{Report, ResultJson};
use crate::bench::stats;

/// One matched test.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Matched {
    /// The level (sweeps) or quant (runs) of the model.
    pub level: String,
    pub test: String,
    /// What the figures measure ("prefill", "decode", "decode_total").
    pub rate: String,
    pub a_tokens_per_s: f64,
    pub b_tokens_per_s: f64,
    /// B ÷ A.
    pub ratio: f64,
    pub change_pct: f64,
    /// Two-sided Welch t-test on the repetitions; null with fewer than two
    /// repetitions on a side.
    pub p_value: Option<f64>,
    /// p < 0.05.
    pub significant: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Comparison {
    pub a: String,
    pub b: String,
    pub a_machine: String,
    pub b_machine: String,
    pub tests: Vec<Matched>,
    /// Tests only one side has.
    pub unmatched: Vec<String>,
}

/// (level, test, rate, result) of every ok result with samples.
fn keyed(r: &Report, by_level: bool) -> Vec<(String, &ResultJson)> {
    let mut out = Vec::new();
    for run in &r.runs {
        for res in run
            .results
            .iter()
            .filter(|x| x.status == "ok" && !x.samples_tokens_per_s.is_empty())
        {
            let level = if by_level {
                run.model.quant.clone()
            } else {
                String::new()
            };
            let key = format!("{level}|{}|{:?}", res.test, res.rate);
            if !out.iter().any(|(k, _)| k == &key) {
                out.push((key, res));
            }
        }
    }
    out
}

/// Match `a` and `b` by test; with `by_level` (sweeps, or runs of
/// different quants) the level is part of the match.
pub fn compare(a_name: &str, a: &Report, b_name: &str, b: &Report, by_level: bool) -> Comparison {
    let ka = keyed(a, by_level);
    let kb = keyed(b, by_level);
    let mut tests = Vec::new();
    let mut unmatched = Vec::new();
    for (key, ra) in &ka {
        let Some((_, rb)) = kb.iter().find(|(k, _)| k == key) else {
            unmatched.push(format!("{a_name}: {}", key.replace('|', " ")));
            continue;
        };
        let sa = &ra.samples_tokens_per_s;
        let sb = &rb.samples_tokens_per_s;
        let (ma, mb) = (stats::mean(sa), stats::mean(sb));
        let p = stats::welch(sa, sb).map(|w| w.2);
        let level = key.split('|').next().unwrap_or("").to_string();
        tests.push(Matched {
            level,
            test: ra.test.clone(),
            rate: serde_json::to_value(ra.rate)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default(),
            a_tokens_per_s: ma,
            b_tokens_per_s: mb,
            ratio: mb / ma,
            change_pct: (mb / ma - 1.0) * 100.0,
            p_value: p,
            significant: p.is_some_and(|p| p < 0.05),
        });
    }
    for (key, _) in &kb {
        if !ka.iter().any(|(k, _)| k == key) {
            unmatched.push(format!("{b_name}: {}", key.replace('|', " ")));
        }
    }
    Comparison {
        a: a_name.into(),
        b: b_name.into(),
        a_machine: a.machine.cpu.clone(),
        b_machine: b.machine.cpu.clone(),
        tests,
        unmatched,
    }
}

/// The comparison as a Markdown table; `*` marks p < 0.05.
pub fn markdown(c: &Comparison) -> String {
    let mut out = format!(
        "A = {} ({}), B = {} ({})\n\n| level | test | A t/s | B t/s | B÷A | change | p | |\n| ----- | ---- | ----: | ----: | --: | -----: | -: | - |\n",
        c.a, c.a_machine, c.b, c.b_machine
    );
    for t in &c.tests {
        out.push_str(&format!(
            "| {} | {} ({}) | {:.2} | {:.2} | {:.3} | {:+.1}% | {} | {} |\n",
            if t.level.is_empty() { "-" } else { &t.level },
            t.test,
            t.rate,
            t.a_tokens_per_s,
            t.b_tokens_per_s,
            t.ratio,
            t.change_pct,
            t.p_value
                .map(|p| format!("{p:.3}"))
                .unwrap_or_else(|| "-".into()),
            if t.significant { "*" } else { "" }
        ));
    }
    if c.tests.is_empty() {
        out.push_str("\nno test is in both; compare runs of the same tests\n");
    }
    for u in &c.unmatched {
        out.push_str(&format!("only in {u}\n"));
    }
    out.push_str("\n* the difference is significant at 5% (Welch's t-test on the repetitions)\n");
    out
}
