//! A sweep's report: the `dyno bench` document plus the sweep, its levels,
//! quality per run, the Pareto frontier (decode speed against KLD) and a
//! one-line recommendation. Built from the store, like every report.

use serde::{Deserialize, Serialize};

use super::{Report, ResultJson, RunJson};
use crate::error::{DynoError, Result};
use crate::machine::Machine;
use crate::store::{QualityKey, Store, SweepRow};
use crate::vocab::failure::FailureCode;
use crate::vocab::status::{LevelStatus, ResultStatus, RunStatus, SweepStatus};
use crate::vocab::TestKind;

/// A level may be recommended when its mean KLD stays at or below this:
/// around where quantisation noise becomes noticeable in use.
pub const RECOMMEND_MAX_KLD: f64 = 0.1;

#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[cfg_attr(feature = "ts", ts(rename = "SweepDoc"))]
pub struct SweepReport {
    pub sweep_id: i64,
    #[serde(flatten)]
    pub report: Report,
    pub sweep: SweepJson,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[cfg_attr(feature = "ts", ts(rename = "SweepInfo"))]
pub struct SweepJson {
    pub id: i64,
    pub status: SweepStatus,
    /// "files", "dir", "from", "repo" or "shape".
    pub source_kind: Option<String>,
    /// The stored spec: source, levels, plan and quality settings.
    #[cfg_attr(
        feature = "ts",
        ts(
            type = "{ source: Record<string, unknown>; levels: Array<string> | null; request: Record<string, unknown> & { reps?: number }; quality: { tokens: number; topk: number } | null }"
        )
    )]
    pub spec: serde_json::Value,
    pub created_at: String,
    pub finished_at: Option<String>,
    /// sha256 of the model every level's quality is measured against.
    pub reference_sha256: Option<String>,
    pub quality_text: Option<String>,
    pub levels: Vec<LevelJson>,
    /// Recommendation in one line, or null when nothing was measured.
    pub recommendation: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[cfg_attr(feature = "ts", ts(rename = "SweepLevel"))]
pub struct LevelJson {
    pub level: String,
    /// "file", "base" or "quantized".
    pub origin: String,
    pub path: Option<String>,
    pub status: LevelStatus,
    #[cfg_attr(feature = "ts", ts(type = "string | null"))]
    pub error_code: Option<FailureCode>,
    pub error: Option<String>,
    pub quality_error: Option<String>,
    /// Time llama.cpp's quantizer took to make the file, when this sweep made it.
    pub quantize_ms: Option<f64>,
    pub run_ids: Vec<i64>,
    /// No other level decodes faster at a lower KLD.
    pub pareto: bool,
}

/// Mean of the first result of a kind: the level's pp, tg or TTFT figure.
fn first_of(run: &RunJson, kind: TestKind) -> Option<&ResultJson> {
    run.results
        .iter()
        .find(|r| r.kind == kind && r.status == ResultStatus::Ok)
}

pub fn decode_tps(run: &RunJson) -> Option<f64> {
    first_of(run, TestKind::Gen).and_then(|r| r.mean_tokens_per_s)
}

/// Indices of the points on the frontier of (speed up, divergence down).
pub fn pareto(points: &[(f64, f64)]) -> Vec<usize> {
    (0..points.len())
        .filter(|&i| {
            let (s, k) = points[i];
            !points
                .iter()
                .any(|&(s2, k2)| s2 >= s && k2 <= k && (s2 > s || k2 < k))
        })
        .collect()
}

/// Each run's quality figures, from the store's cache of them, for a sweep
/// that measured quality.
async fn attach_quality(store: &Store, sweep: &SweepRow, report: &mut Report) -> Result<()> {
    let text_sha = crate::quality::text_sha256();
    if let (Some(ref_sha), Some(tokens), Some(topk)) = (
        sweep.reference_sha256.as_deref(),
        sweep.quality_tokens,
        sweep.quality_topk,
    ) {
        let n_chunks = crate::quality::n_chunks(tokens as u32);
        for run in &mut report.runs {
            let key = QualityKey {
                model_sha256: &run.model.sha256,
                reference_sha256: ref_sha,
                text_sha256: &text_sha,
                chunk_tokens: crate::quality::CHUNK_TOKENS,
                n_chunks,
                topk: topk as u32,
            };
            run.quality = store.quality(&key).await?.map(|q| super::QualityJson {
                ppl: q.ppl,
                kld_mean: q.kld_mean,
                kld_p99: q.kld_p99,
                top1_agreement: q.top1_agreement,
                is_reference: q.model_sha256 == ref_sha,
                reference_sha256: ref_sha.to_string(),
                n_positions: q.n_positions as u64,
                text: crate::quality::TEXT_SOURCE.to_string(),
                chunk_tokens: q.chunk_tokens as u32,
                n_chunks: q.n_chunks as u32,
                topk: q.topk as u32,
            });
        }
    }
    Ok(())
}

/// Marks the levels on the speed-quality frontier, taking each level's
/// first run with both figures.
fn mark_frontier(report: &Report, level_json: &mut [LevelJson]) {
    let mut points = Vec::new();
    let mut point_level = Vec::new();
    for (li, lj) in level_json.iter().enumerate() {
        let Some(run) = lj
            .run_ids
            .first()
            .and_then(|id| report.runs.iter().find(|r| r.run_id == *id))
        else {
            continue;
        };
        if let (Some(tg), Some(q)) = (decode_tps(run), &run.quality) {
            points.push((tg, q.kld_mean));
            point_level.push(li);
        }
    }
    for i in pareto(&points) {
        level_json[point_level[i]].pareto = true;
    }
}

pub async fn build(store: &Store, sweep_id: i64, here: &Machine) -> Result<SweepReport> {
    let sweep: SweepRow = store
        .sweep(sweep_id)
        .await?
        .filter(|s| s.kind == "sweep")
        .ok_or_else(|| {
            DynoError::NotFound(format!(
                "no sweep {sweep_id} in {}; `dyno sweeps` lists them",
                store.path().display()
            ))
        })?;
    let levels = store.levels(sweep_id).await?;
    let mut rows = Vec::new();
    let mut run_level = Vec::new();
    let mut level_json = Vec::new();
    for l in &levels {
        let runs = store.level_runs(l).await?;
        for r in &runs {
            run_level.push(level_json.len());
            rows.push(r.clone());
        }
        level_json.push(LevelJson {
            level: l.level.clone(),
            origin: l.origin.clone(),
            path: l.path.clone(),
            status: l.status,
            error_code: l.error_code.clone(),
            error: l.error.clone(),
            quality_error: l.quality_error.clone(),
            quantize_ms: l.quantize_ms,
            run_ids: runs.iter().map(|r| r.id).collect(),
            pareto: false,
        });
    }
    let mut report = super::build(store, &rows, here).await?;
    attach_quality(store, &sweep, &mut report).await?;
    mark_frontier(&report, &mut level_json);
    let recommendation = recommend(&report, &level_json);
    let spec = match sweep.args.as_ref().and_then(|a| a.spec()) {
        Some(s) => serde_json::to_value(s).expect("a sweep's spec serialises"),
        None => serde_json::Value::Null,
    };
    Ok(SweepReport {
        sweep_id,
        report,
        sweep: SweepJson {
            id: sweep.id,
            status: sweep.status.unwrap_or(SweepStatus::Running),
            source_kind: sweep.source_kind,
            spec,
            created_at: sweep.created_at,
            finished_at: sweep.finished_at,
            quality_text: sweep
                .reference_sha256
                .as_ref()
                .map(|_| crate::quality::TEXT_SOURCE.to_string()),
            reference_sha256: sweep.reference_sha256,
            levels: level_json,
            recommendation,
        },
    })
}

fn level_run<'a>(report: &'a Report, l: &LevelJson) -> Option<&'a RunJson> {
    l.run_ids
        .first()
        .and_then(|id| report.runs.iter().find(|r| r.run_id == *id))
        .filter(|r| r.status == RunStatus::Ok)
}

/// Whether `a`'s decode differs from `b`'s beyond the noise, for the
/// recommendation: the same Welch t-test `dyno compare` uses, so the line
/// never calls a level faster where compare finds no significant
/// difference. Empty when `a` is `b` or the difference is significant.
fn significance(a: &RunJson, b: &RunJson) -> String {
    if a.run_id == b.run_id {
        return String::new();
    }
    let samples = |r: &RunJson| first_of(r, TestKind::Gen).map(|x| x.samples_tokens_per_s.clone());
    let (Some(sa), Some(sb)) = (samples(a), samples(b)) else {
        return String::new();
    };
    match crate::bench::stats::welch(&sb, &sa) {
        None => format!(
            ", untested: fewer than 2 repetitions ({} and {})",
            sa.len(),
            sb.len()
        ),
        Some((_, _, p)) if p >= 0.05 => {
            format!(", but not significantly different (Welch p = {p:.2})")
        }
        Some(_) => String::new(),
    }
}

/// One plain line: the fastest level on the frontier whose KLD stays within
/// [`RECOMMEND_MAX_KLD`], with its decode speed relative to the most
/// precise level measured.
fn recommend(report: &Report, levels: &[LevelJson]) -> Option<String> {
    let measured: Vec<(&LevelJson, &RunJson, f64)> = levels
        .iter()
        .filter_map(|l| level_run(report, l).map(|r| (l, r)))
        .filter_map(|(l, r)| decode_tps(r).map(|tg| (l, r, tg)))
        .collect();
    let (top_level, _, top_tg) = measured.first()?;
    let with_quality: Vec<_> = measured
        .iter()
        .filter(|(_, r, _)| r.quality.is_some())
        .collect();
    if with_quality.is_empty() {
        let (l, r, tg) = measured.iter().max_by(|a, b| a.2.total_cmp(&b.2))?;
        return Some(format!(
            "{}: the fastest decode, {:.2} t/s ({:.1}× {}{}); quality was not measured, so this says nothing about what the quantisation costs",
            l.level,
            tg,
            tg / top_tg,
            top_level.level,
            significance(r, measured[0].1)
        ));
    }
    let best = with_quality
        .iter()
        .filter(|(l, r, _)| {
            l.pareto
                && r.quality
                    .as_ref()
                    .is_some_and(|q| q.kld_mean <= RECOMMEND_MAX_KLD)
        })
        .max_by(|a, b| a.2.total_cmp(&b.2));
    match best {
        Some((l, r, tg)) => {
            let q = r.quality.as_ref().expect("filtered");
            if l.level == top_level.level {
                Some(format!(
                    "{}: no faster level keeps the KL divergence within {RECOMMEND_MAX_KLD}; {} decodes at {tg:.2} t/s",
                    l.level, l.level
                ))
            } else {
                let top_run = measured.first().map(|m| m.1)?;
                Some(format!(
                    "{}: {:.1}× the decode speed of {}{} at KLD {:.3} (top-1 agreement {:.1}%, {})",
                    l.level,
                    tg / top_tg,
                    top_level.level,
                    significance(r, top_run),
                    q.kld_mean,
                    q.top1_agreement * 100.0,
                    super::table::weight_size(&r.model)
                ))
            }
        }
        None => {
            let (l, r, _) = with_quality.iter().min_by(|a, b| {
                let k = |x: &RunJson| x.quality.as_ref().map(|q| q.kld_mean).unwrap_or(f64::MAX);
                k(a.1).total_cmp(&k(b.1))
            })?;
            Some(format!(
                "no level keeps the KL divergence within {RECOMMEND_MAX_KLD} of the reference; the closest is {} at KLD {:.3}",
                l.level,
                r.quality.as_ref().map(|q| q.kld_mean).unwrap_or(f64::NAN)
            ))
        }
    }
}

fn cell(v: Option<f64>, digits: usize) -> String {
    v.map(|v| format!("{v:.digits$}"))
        .unwrap_or_else(|| "-".into())
}

fn mean_sd(r: Option<&ResultJson>, pick: fn(&ResultJson) -> Option<(f64, f64)>) -> String {
    r.and_then(pick)
        .map(|(m, s)| format!("{m:.2} ± {s:.2}"))
        .unwrap_or_else(|| "-".into())
}

/// The sweep's table: a row per level (failed levels with their reason),
/// then the conditions and the recommendation.
/// A level's cell: its name, marked when its weights are synthetic, or
/// with how its run ended.
fn level_label(l: &LevelJson, r: &RunJson) -> String {
    if r.status != RunStatus::Ok {
        format!(
            "{} ({}: {})",
            l.level,
            r.status,
            r.error.as_deref().unwrap_or("?").replace('|', "/")
        )
    } else if r.model.synthetic.is_some() {
        format!("{} (synthetic)", l.level)
    } else {
        l.level.clone()
    }
}

pub fn levels_table(s: &SweepReport) -> String {
    let runs = &s.report.runs;
    let name_of = |kind: TestKind| {
        runs.iter()
            .flat_map(|r| r.results.iter())
            .find(|r| r.kind == kind)
            .map(|r| r.test.clone())
    };
    let pp = name_of(TestKind::Prompt).unwrap_or_else(|| "pp".into());
    let tg = name_of(TestKind::Gen).unwrap_or_else(|| "tg".into());
    let pg = name_of(TestKind::PromptGen);
    let mut out = String::new();
    out.push_str(&format!(
        "| level | size | bpw | {pp} t/s | {tg} t/s | TTFT ms{} | PPL | KLD | KLD p99 | top-1 % | frontier |\n",
        pg.as_ref().map(|p| format!(" ({p})")).unwrap_or_default()
    ));
    out.push_str("| ----- | ---: | --: | ---: | ---: | ---: | --: | --: | --: | --: | :-: |\n");
    for l in &s.sweep.levels {
        let lruns: Vec<&RunJson> = l
            .run_ids
            .iter()
            .filter_map(|id| runs.iter().find(|r| r.run_id == *id))
            .collect();
        if lruns.is_empty() {
            out.push_str(&format!(
                "| {} | - | - | {} | | | | | | | |\n",
                l.level,
                match &l.error {
                    Some(e) => format!("{}: {}", l.status, e.replace('|', "/")),
                    None => l.status.to_string(),
                }
            ));
            continue;
        }
        for r in lruns {
            let q = r.quality.as_ref();
            let label = level_label(l, r);
            out.push_str(&format!(
                "| {label} | {} | {:.2} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
                super::table::weight_size(&r.model),
                r.model.bits_per_weight,
                mean_sd(first_of(r, TestKind::Prompt), |x| x
                    .mean_tokens_per_s
                    .zip(x.stddev_tokens_per_s)),
                mean_sd(first_of(r, TestKind::Gen), |x| x
                    .mean_tokens_per_s
                    .zip(x.stddev_tokens_per_s)),
                cell(first_of(r, TestKind::PromptGen).and_then(|x| x.ttft_ms), 1),
                cell(q.map(|q| q.ppl), 3),
                if q.is_some_and(|q| q.is_reference) {
                    "ref".to_string()
                } else {
                    cell(q.map(|q| q.kld_mean), 4)
                },
                cell(q.map(|q| q.kld_p99), 4),
                cell(q.map(|q| q.top1_agreement * 100.0), 1),
                if l.pareto { "★" } else { "" }
            ));
        }
    }
    if let Some(r) = runs.first() {
        out.push_str(&format!(
            "\n{} · {} · {} · {}\n",
            s.report.machine.cpu,
            r.backend.as_deref().unwrap_or("-"),
            super::conditions(&r.config, super::Wording::Brief),
            r.llama_cpp_build
                .as_deref()
                .unwrap_or("llama.cpp build unknown")
        ));
    }
    if let Some(q) = runs.iter().find_map(|r| r.quality.as_ref()) {
        out.push_str(&format!(
            "quality: {} positions of {} ({} × {} tokens), KLD against the reference ({}), top-{} kept\n",
            q.n_positions,
            q.text,
            q.n_chunks,
            q.chunk_tokens,
            &q.reference_sha256[..12.min(q.reference_sha256.len())],
            if q.topk == 0 {
                "all".to_string()
            } else {
                q.topk.to_string()
            }
        ));
    }
    if let Some(r) = &s.sweep.recommendation {
        out.push_str(&format!("\n{r}\n"));
    }
    out.push_str(&super::table::synthetic_notes(&s.report));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture_runs() -> Vec<RunJson> {
        let v: serde_json::Value =
            serde_json::from_str(include_str!("../../tests/fixtures/sweep-export.json")).unwrap();
        serde_json::from_value(v["runs"].clone()).unwrap()
    }

    fn with_decode(mut r: RunJson, id: i64, samples: &[f64]) -> RunJson {
        r.run_id = id;
        let g = r
            .results
            .iter_mut()
            .find(|x| x.kind == TestKind::Gen)
            .unwrap();
        g.samples_tokens_per_s = samples.to_vec();
        r
    }

    #[test]
    fn the_recommendation_does_not_call_noise_faster() {
        let base = fixture_runs().remove(0);
        let top = with_decode(base.clone(), 1, &[100.0, 140.0, 60.0]);
        // 20% faster on average, but well inside the spread: p is large.
        let noisy = with_decode(base.clone(), 2, &[120.0, 170.0, 70.0]);
        assert!(
            significance(&noisy, &top)
                .starts_with(", but not significantly different (Welch p = 0."),
            "{}",
            significance(&noisy, &top)
        );
        // Clearly faster: nothing added.
        let fast = with_decode(base.clone(), 3, &[200.0, 201.0, 199.0]);
        let steady = with_decode(base.clone(), 4, &[100.0, 101.0, 99.0]);
        assert_eq!(significance(&fast, &steady), "");
        // One repetition: no test can say.
        let once = with_decode(base.clone(), 5, &[150.0]);
        assert!(significance(&once, &steady).contains("untested"));
        assert_eq!(significance(&top, &top), "");
    }

    #[test]
    fn the_frontier_keeps_levels_no_other_beats_on_both() {
        // (decode t/s, KLD): F16, Q8_0, Q4 (fast, worse), a dominated one.
        let pts = [(10.0, 0.0), (18.0, 0.001), (30.0, 0.05), (17.0, 0.02)];
        assert_eq!(pareto(&pts), [0, 1, 2]);
        // Ties on both are not dominated.
        assert_eq!(pareto(&[(1.0, 1.0), (1.0, 1.0)]), [0, 1]);
        assert!(pareto(&[]).is_empty());
    }
}
