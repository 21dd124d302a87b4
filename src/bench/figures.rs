//! Turning one test's raw samples into the figures Dyno reports.
//!
//! Each figure is computed per repetition first (tokens over that
//! repetition's time) and then summarised, as llama-bench averages per-sample
//! t/s. Prefill, decode, time to first token and parallel totals are kept
//! apart: no figure here ever divides tokens of one phase by time of another.

use serde::{Deserialize, Serialize};

use super::stats::{self, Summary};
use crate::vocab::{Sample, TestKind, TestSpec};

/// Which rate a result's headline `*_tokens_per_s` fields measure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "snake_case")]
pub enum Rate {
    /// Prompt tokens per second of prefill (pp tests).
    #[default]
    Prefill,
    /// Generated tokens per second of one sequence (tg and pp+tg tests).
    Decode,
    /// Generated tokens per second summed over all parallel sequences.
    DecodeTotal,
}

/// Samples of one quantity with their summary; the unit is in the name of
/// the field that holds it (`_tokens_per_s`, `_ms`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[cfg_attr(feature = "ts", ts(rename = "Stats"))]
pub struct Figures {
    pub samples: Vec<f64>,
    /// In JSON (and in the UI's `Stats`) its fields sit beside `samples`,
    /// as they did before `Figures` reused [`Summary`].
    #[serde(flatten)]
    #[cfg_attr(feature = "ts", ts(flatten))]
    pub summary: Summary,
}

impl Figures {
    /// The samples with their summary; `None` where [`stats::summarize`]
    /// gives none (no samples, or one that is not finite).
    pub fn of(samples: Vec<f64>) -> Option<Figures> {
        let summary = stats::summarize(&samples)?;
        Some(Figures { samples, summary })
    }
}

/// A figure reads as its summary (`f.mean`, `f.ci95`): the samples are kept
/// beside it for whoever wants them, and never change what it says.
impl std::ops::Deref for Figures {
    type Target = Summary;

    fn deref(&self) -> &Summary {
        &self.summary
    }
}

/// Everything derived from one test's samples.
#[derive(Debug, Clone, PartialEq)]
pub struct TestFigures {
    pub rate: Rate,
    /// The headline rate (what `rate` names).
    pub headline: Option<Figures>,
    pub prefill_tokens_per_s: Option<Figures>,
    pub decode_tokens_per_s: Option<Figures>,
    /// Parallel tests: decode speed each sequence sees.
    pub decode_per_sequence_tokens_per_s: Option<Figures>,
    pub ttft_ms: Option<Figures>,
}

fn per_second(tokens: u64, ns: u64) -> Option<f64> {
    (ns > 0).then(|| tokens as f64 * 1e9 / ns as f64)
}

fn collect(samples: &[Sample], f: impl Fn(&Sample) -> Option<f64>) -> Option<Figures> {
    let v: Option<Vec<f64>> = samples.iter().map(f).collect();
    v.filter(|v| !v.is_empty()).and_then(Figures::of)
}

/// Figures for a test's samples. A sample missing the phase a figure needs
/// (which a well-behaved worker never sends) leaves that figure `None`.
pub fn figures(test: &TestSpec, samples: &[Sample]) -> TestFigures {
    let np = u64::from(test.n_prompt);
    let ng = u64::from(test.n_gen);
    let seqs = u64::from(test.n_parallel.max(1));
    let prefill = |s: &Sample| s.prompt_ns.and_then(|ns| per_second(np * seqs, ns));
    let decode = |s: &Sample| s.gen_ns.and_then(|ns| per_second(ng * seqs, ns));
    match test.kind {
        TestKind::Prompt => {
            let p = collect(samples, prefill);
            TestFigures {
                rate: Rate::Prefill,
                headline: p.clone(),
                prefill_tokens_per_s: p,
                decode_tokens_per_s: None,
                decode_per_sequence_tokens_per_s: None,
                ttft_ms: None,
            }
        }
        TestKind::Gen => {
            let d = collect(samples, decode);
            TestFigures {
                rate: Rate::Decode,
                headline: d.clone(),
                prefill_tokens_per_s: None,
                decode_tokens_per_s: d,
                decode_per_sequence_tokens_per_s: None,
                ttft_ms: None,
            }
        }
        TestKind::PromptGen => {
            let d = collect(samples, decode);
            TestFigures {
                rate: Rate::Decode,
                headline: d.clone(),
                prefill_tokens_per_s: collect(samples, prefill),
                decode_tokens_per_s: d,
                decode_per_sequence_tokens_per_s: None,
                ttft_ms: collect(samples, |s| s.ttft_ns.map(|ns| ns as f64 / 1e6)),
            }
        }
        TestKind::Parallel => {
            let total = collect(samples, decode);
            TestFigures {
                rate: Rate::DecodeTotal,
                headline: total.clone(),
                prefill_tokens_per_s: if np > 0 {
                    collect(samples, prefill)
                } else {
                    None
                },
                decode_tokens_per_s: total,
                decode_per_sequence_tokens_per_s: collect(samples, |s| {
                    s.gen_ns.and_then(|ns| per_second(ng, ns))
                }),
                ttft_ms: None,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(kind: TestKind, p: u32, n: u32, npl: u32) -> TestSpec {
        TestSpec {
            kind,
            n_prompt: p,
            n_gen: n,
            n_depth: 0,
            n_parallel: npl,
        }
    }

    fn s(total: u64, p: Option<u64>, g: Option<u64>, t: Option<u64>) -> Sample {
        Sample {
            total_ns: total,
            prompt_ns: p,
            gen_ns: g,
            ttft_ns: t,
        }
    }

    #[test]
    fn prefill_rate_is_mean_of_per_repetition_rates() {
        // 512 tokens in 0.5 s and in 1 s: 1024 and 512 t/s, mean 768 (not
        // 1024 / 1.5 s = 682.7, which a total-time average would give).
        let t = spec(TestKind::Prompt, 512, 0, 1);
        let f = figures(
            &t,
            &[
                s(500_000_000, Some(500_000_000), None, None),
                s(1_000_000_000, Some(1_000_000_000), None, None),
            ],
        );
        assert_eq!(f.rate, Rate::Prefill);
        let h = f.headline.unwrap();
        assert_eq!(h.samples, vec![1024.0, 512.0]);
        assert_eq!(h.mean, 768.0);
        assert!(f.decode_tokens_per_s.is_none() && f.ttft_ms.is_none());
    }

    #[test]
    fn prompt_gen_keeps_phases_apart() {
        // pp100 in 0.1 s (1000 t/s), first token after 0.101 s, tg10 in 0.5 s (20 t/s).
        let t = spec(TestKind::PromptGen, 100, 10, 1);
        let f = figures(
            &t,
            &[s(
                600_000_000,
                Some(100_000_000),
                Some(500_000_000),
                Some(101_000_000),
            )],
        );
        assert_eq!(f.rate, Rate::Decode);
        assert_eq!(f.prefill_tokens_per_s.unwrap().mean, 1000.0);
        assert_eq!(f.decode_tokens_per_s.as_ref().unwrap().mean, 20.0);
        assert_eq!(f.headline, f.decode_tokens_per_s);
        assert_eq!(f.ttft_ms.unwrap().mean, 101.0);
    }

    #[test]
    fn parallel_reports_total_and_per_sequence() {
        // 4 sequences x tg8 in 0.2 s: 160 t/s total, 40 t/s per sequence;
        // 4 x pp16 in 0.032 s: 2000 t/s prefill.
        let t = spec(TestKind::Parallel, 16, 8, 4);
        let f = figures(
            &t,
            &[s(232_000_000, Some(32_000_000), Some(200_000_000), None)],
        );
        assert_eq!(f.rate, Rate::DecodeTotal);
        assert_eq!(f.headline.unwrap().mean, 160.0);
        assert_eq!(f.decode_per_sequence_tokens_per_s.unwrap().mean, 40.0);
        assert_eq!(f.prefill_tokens_per_s.unwrap().mean, 2000.0);
    }

    #[test]
    fn no_samples_or_zero_time_give_no_figure() {
        let t = spec(TestKind::Gen, 0, 8, 1);
        assert!(figures(&t, &[]).headline.is_none());
        assert!(figures(&t, &[s(0, None, Some(0), None)]).headline.is_none());
    }
}
