//! How good the predictions were: each run's stored prediction (made before
//! it was measured) against what it measured.
//!
//! The error of one test is `|predicted ÷ measured − 1|`. Per phase the
//! report gives its median and 90th percentile, the median ratio (above 1:
//! the model promises too much), and how often the measured rate fell inside
//! the predicted interval, which says whether the intervals are honest.

use serde::{Deserialize, Serialize};

use super::Phase;
use crate::store::PredictedResultRow;

/// One test: predicted against measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct AccuracyPair {
    pub run_id: i64,
    pub test: String,
    pub phase: Phase,
    pub predicted_tokens_per_s: f64,
    pub measured_tokens_per_s: f64,
    pub ratio: f64,
    pub within_interval: bool,
    /// "machine" or "prior".
    pub basis: String,
    /// The measured figure was disturbed: listed, but in the phases'
    /// figures only when asked for, since it says more about the other
    /// programs than about the prediction.
    pub disturbed: bool,
}

/// One phase's errors.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct PhaseAccuracy {
    pub phase: Phase,
    pub n: usize,
    pub median_abs_error: f64,
    pub p90_abs_error: f64,
    pub median_ratio: f64,
    /// Share of measured rates inside the predicted interval.
    pub within_interval: f64,
}

/// The memory estimate against the peak RSS the runs measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct MemoryAccuracy {
    pub n: usize,
    /// Median of estimated ÷ measured peak RSS (above 1: the estimate errs
    /// on the safe side, as it is meant to).
    pub median_ratio: f64,
    pub min_ratio: f64,
    pub max_ratio: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct AccuracyReport {
    /// Over the clean pairs, or every pair when disturbed ones were asked
    /// for.
    pub phases: Vec<PhaseAccuracy>,
    /// Disturbed pairs the phases leave out (0 when they were asked for).
    pub disturbed_left_out: usize,
    pub memory: Option<MemoryAccuracy>,
    pub pairs: Vec<AccuracyPair>,
}

/// The `q` quantile (0..1) of sorted values, linear between neighbours.
fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let pos = q * (sorted.len() - 1) as f64;
    let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
    sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo as f64)
}

fn sorted(mut v: Vec<f64>) -> Vec<f64> {
    v.sort_by(f64::total_cmp);
    v
}

/// How past predictions did against what was measured; disturbed figures
/// count only with `include_disturbed`.
pub fn report(rows: &[PredictedResultRow], include_disturbed: bool) -> AccuracyReport {
    let mut pairs = Vec::new();
    let mut memory = Vec::new();
    let mut last_run = None;
    for r in rows {
        let Some(pred) = r.prediction.as_ref() else {
            continue;
        };
        if last_run != Some(r.run_id) {
            last_run = Some(r.run_id);
            if let Some(rss) = r.peak_rss_bytes.filter(|b| *b > 0) {
                memory.push(pred.memory_bytes as f64 / rss as f64);
            }
        }
        let Some(t) = pred.for_test(&r.test) else {
            continue;
        };
        let e = t.estimate;
        let m = r.mean_tokens_per_s;
        pairs.push(AccuracyPair {
            run_id: r.run_id,
            test: r.test.clone(),
            phase: t.phase,
            predicted_tokens_per_s: e.tokens_per_s,
            measured_tokens_per_s: m,
            ratio: e.tokens_per_s / m,
            within_interval: e.low <= m && m <= e.high,
            basis: t.basis.source.clone(),
            disturbed: r.disturbed,
        });
    }
    let phases = [Phase::Prefill, Phase::Decode]
        .into_iter()
        .filter_map(|phase| {
            let mine: Vec<&AccuracyPair> = pairs
                .iter()
                .filter(|p| p.phase == phase && (include_disturbed || !p.disturbed))
                .collect();
            if mine.is_empty() {
                return None;
            }
            let errs = sorted(mine.iter().map(|p| (p.ratio - 1.0).abs()).collect());
            let ratios = sorted(mine.iter().map(|p| p.ratio).collect());
            Some(PhaseAccuracy {
                phase,
                n: mine.len(),
                median_abs_error: quantile(&errs, 0.5),
                p90_abs_error: quantile(&errs, 0.9),
                median_ratio: quantile(&ratios, 0.5),
                within_interval: mine.iter().filter(|p| p.within_interval).count() as f64
                    / mine.len() as f64,
            })
        })
        .collect();
    let memory = (!memory.is_empty()).then(|| {
        let m = sorted(memory);
        MemoryAccuracy {
            n: m.len(),
            median_ratio: quantile(&m, 0.5),
            min_ratio: m[0],
            max_ratio: m[m.len() - 1],
        }
    });
    AccuracyReport {
        disturbed_left_out: if include_disturbed {
            0
        } else {
            pairs.iter().filter(|p| p.disturbed).count()
        },
        phases,
        memory,
        pairs,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::predict::{Basis, Estimate, RunPrediction, TestPrediction};

    fn row(run_id: i64, test: &str, measured: f64, pred: &RunPrediction) -> PredictedResultRow {
        PredictedResultRow {
            run_id,
            prediction: crate::store::Doc::new(Some(pred.clone())),
            peak_rss_bytes: Some(100),
            test: test.into(),
            kind: if test.starts_with("pp") {
                crate::vocab::TestKind::Prompt
            } else {
                crate::vocab::TestKind::Gen
            },
            n_prompt: 512,
            n_gen: 128,
            n_depth: 0,
            mean_tokens_per_s: measured,
            disturbed: false,
        }
    }

    fn prediction(pp: f64, tg: f64) -> RunPrediction {
        let t = |test: &str, phase, v: f64| TestPrediction {
            test: test.into(),
            phase,
            estimate: Estimate {
                tokens_per_s: v,
                low: v * 0.8,
                high: v * 1.25,
            },
            basis: Basis {
                source: "machine".into(),
                runs: 1,
                models: 1,
                level_seen: true,
                model_seen: false,
                by_shape: false,
                text: String::new(),
            },
        };
        RunPrediction {
            made_at: String::new(),
            tests: vec![
                t("pp512", Phase::Prefill, pp),
                t("tg128", Phase::Decode, tg),
            ],
            memory_bytes: 150,
        }
    }

    #[test]
    fn errors_are_per_phase_with_median_p90_and_interval_coverage() {
        let mut rows = Vec::new();
        // Decode predicted 100 against 100, 110, 80, 125, 50 measured.
        for (i, m) in [100.0, 110.0, 80.0, 125.0, 50.0].iter().enumerate() {
            let p = prediction(300.0, 100.0);
            rows.push(row(i as i64, "pp512", 300.0, &p));
            rows.push(row(i as i64, "tg128", *m, &p));
        }
        let r = report(&rows, false);
        assert_eq!(r.phases.len(), 2);
        let pp = &r.phases[0];
        assert_eq!(
            (pp.phase, pp.n, pp.median_abs_error),
            (Phase::Prefill, 5, 0.0)
        );
        let tg = &r.phases[1];
        assert_eq!(tg.n, 5);
        // |100/m − 1|: 0, 0.0909, 0.25, 0.2, 1.0 → median 0.2.
        assert!((tg.median_abs_error - 0.2).abs() < 1e-12);
        assert!(tg.p90_abs_error > 0.25 && tg.p90_abs_error <= 1.0);
        // Inside [80, 125]: 100, 110, 80, 125.
        assert!((tg.within_interval - 0.8).abs() < 1e-12);
        let mem = r.memory.unwrap();
        assert_eq!((mem.n, mem.median_ratio), (5, 1.5));
    }

    #[test]
    fn a_test_the_prediction_did_not_cover_is_left_out() {
        let p = prediction(300.0, 100.0);
        let r = report(&[row(1, "pp512+tg128", 90.0, &p)], false);
        assert!(r.pairs.is_empty() && r.phases.is_empty());
    }
}
