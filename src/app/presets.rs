//! One benchmark vocabulary for every button and command: Quick, Standard
//! (llama-bench's defaults) and Thorough. A person picks how long to spend,
//! not prompt lengths; and because every run of one preset measures the same
//! tests, runs of one preset always compare, whichever button started them.
//! Anything else is Custom: the options given one by one.
//!
//! Before a run starts, a preset shows its plan and a time estimate. The
//! estimate comes from this machine's own stored runs when there are any
//! (their effective memory bandwidth in decode and compute rate in prefill,
//! scaled to the model's weight bytes and parameters), otherwise from rough
//! priors, and it says which; it is a guide for the person waiting, never a
//! figure that is reported as measured.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::bench::figures::Rate;
use crate::error::Result;
use crate::machine::Machine;
use crate::store::Store;
use crate::vocab::status::RunStatus;
use crate::vocab::Named;
use crate::vocab::TestKind;

/// How long to spend measuring.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "snake_case")]
pub enum Preset {
    /// About a minute on a small model: pp128, tg32, 3 repetitions.
    Quick,
    /// llama-bench's defaults: pp512, tg128, 5 repetitions.
    Standard,
    /// Longer prompts and more repetitions: pp512 and pp2048, tg128, 10
    /// repetitions, for tight confidence intervals.
    Thorough,
}

/// What a preset measures. Each level (or model) runs every pp and tg test,
/// plus pp+tg of the first pair for the time to first token.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[cfg_attr(feature = "ts", ts(rename = "PresetPlan"))]
pub struct Plan {
    pub preset: Preset,
    pub label: &'static str,
    pub about: &'static str,
    pub n_prompt: Vec<u32>,
    pub n_gen: Vec<u32>,
    pub reps: u32,
}

impl Named for Preset {
    const VALUES: &'static [Preset] = &[Preset::Quick, Preset::Standard, Preset::Thorough];

    fn name(self) -> &'static str {
        match self {
            Preset::Quick => "quick",
            Preset::Standard => "standard",
            Preset::Thorough => "thorough",
        }
    }

    fn help(self) -> Option<&'static str> {
        Some(match self {
            Preset::Quick => "about a minute on a small model: pp128, tg32, 3 repetitions",
            Preset::Standard => "llama-bench's defaults: pp512, tg128, 5 repetitions",
            Preset::Thorough => "pp512 and pp2048, tg128, 10 repetitions",
        })
    }
}

impl Preset {
    pub const ALL: [Preset; 3] = [Preset::Quick, Preset::Standard, Preset::Thorough];

    /// Set `request`'s lengths and repetitions to this preset's, with the
    /// time to first token from its first pair (as a sweep measures it);
    /// the rest of the request is left as it is.
    pub fn apply(self, request: &mut crate::bench::plan::BenchRequest) {
        let plan = self.plan();
        request.prompt_gen = vec![(plan.n_prompt[0], plan.n_gen[0])];
        request.n_prompt = plan.n_prompt;
        request.n_gen = plan.n_gen;
        request.reps = plan.reps;
    }

    pub fn plan(self) -> Plan {
        let (label, about, n_prompt, n_gen, reps) = match self {
            Preset::Quick => (
                "Quick",
                "a first look: short prompt and reply, 3 repetitions",
                vec![128],
                vec![32],
                3,
            ),
            Preset::Standard => (
                "Standard",
                "llama-bench's defaults, so figures compare with llama-bench's",
                vec![512],
                vec![128],
                5,
            ),
            Preset::Thorough => (
                "Thorough",
                "a long prompt too, and 10 repetitions for narrow confidence intervals",
                vec![512, 2048],
                vec![128],
                10,
            ),
        };
        Plan {
            preset: self,
            label,
            about,
            n_prompt,
            n_gen,
            reps,
        }
    }
}

impl Plan {
    /// The tests one model runs, by name: "pp512", "tg128", "pp512+tg128".
    pub fn tests(&self) -> Vec<String> {
        let mut t: Vec<String> = self.n_prompt.iter().map(|p| format!("pp{p}")).collect();
        t.extend(self.n_gen.iter().map(|n| format!("tg{n}")));
        if let (Some(p), Some(n)) = (self.n_prompt.first(), self.n_gen.first()) {
            t.push(format!("pp{p}+tg{n}"));
        }
        t
    }

    /// Tokens each test prefills and decodes, warm-up included, in the
    /// order of [`Plan::tests`].
    fn test_tokens(&self) -> Vec<(f64, f64)> {
        let runs = f64::from(self.reps + 1);
        let mut t: Vec<(f64, f64)> = self
            .n_prompt
            .iter()
            .map(|&p| (f64::from(p) * runs, 0.0))
            .collect();
        t.extend(self.n_gen.iter().map(|&n| (0.0, f64::from(n) * runs)));
        if let (Some(&p), Some(&n)) = (self.n_prompt.first(), self.n_gen.first()) {
            t.push((f64::from(p) * runs, f64::from(n) * runs));
        }
        t
    }
}

/// What an estimate rests on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[cfg_attr(feature = "ts", ts(rename = "EstimateBasis"))]
#[serde(rename_all = "snake_case")]
pub enum Basis {
    /// Rates of this machine's stored runs, scaled to the model.
    StoredRuns,
    /// No stored run to learn from: rough priors for a CPU.
    Prior,
}

/// A preset's plan for one model, with how long it should take.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[cfg_attr(feature = "ts", ts(rename = "PresetEstimate"))]
pub struct Estimate {
    pub plan: Plan,
    pub tests: Vec<String>,
    /// Seconds for the whole plan, model loads included.
    pub seconds: f64,
    /// Seconds for each of `tests`, in order (warm-up included): `seconds`
    /// is their sum and `load_seconds`.
    pub test_seconds: Vec<f64>,
    /// Seconds to load the model once, before its first test.
    pub load_seconds: f64,
    /// A range around `seconds`: the estimate is rough.
    pub seconds_low: f64,
    pub seconds_high: f64,
    pub basis: Basis,
    /// Stored runs the rates came from.
    pub runs_used: usize,
}

/// The rates of this machine per byte and per parameter: decode reads every
/// weight byte once per token; prefill does about two operations per
/// parameter per token.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rates {
    /// Weight bytes × decode tokens/s.
    pub decode_bytes_per_s: f64,
    /// 2 × parameters × prefill tokens/s.
    pub prefill_flops: f64,
}

impl Rates {
    /// For a CPU with `cores` physical cores when nothing was measured yet:
    /// conservative, so the wait is rarely longer than said.
    pub fn prior(cores: usize) -> Rates {
        let cores = cores.max(1) as f64;
        Rates {
            decode_bytes_per_s: 2e9 * cores,
            prefill_flops: 10e9 * cores,
        }
    }

    /// The median rates of stored runs given as (weight bytes, parameters,
    /// prefill t/s, decode t/s); None without a usable one.
    pub fn from_runs(runs: &[(u64, u64, Option<f64>, Option<f64>)]) -> Option<Rates> {
        let median = |mut v: Vec<f64>| -> Option<f64> {
            v.retain(|x| x.is_finite() && *x > 0.0);
            if v.is_empty() {
                return None;
            }
            v.sort_by(f64::total_cmp);
            Some(v[v.len() / 2])
        };
        let decode = median(
            runs.iter()
                .filter_map(|&(b, _, _, tg)| tg.map(|t| b as f64 * t))
                .collect(),
        )?;
        let prefill = median(
            runs.iter()
                .filter_map(|&(_, p, pp, _)| pp.map(|t| 2.0 * p as f64 * t))
                .collect(),
        )?;
        Some(Rates {
            decode_bytes_per_s: decode,
            prefill_flops: prefill,
        })
    }

    /// Seconds for `plan` on a model of `weight_bytes` and `n_params`,
    /// loading it `loads` times.
    pub fn seconds(&self, plan: &Plan, weight_bytes: u64, n_params: u64, loads: u32) -> f64 {
        self.test_seconds(plan, weight_bytes, n_params)
            .iter()
            .sum::<f64>()
            + load_seconds(weight_bytes) * f64::from(loads)
    }

    /// Seconds for each of `plan`'s tests (warm-up included, loads not), in
    /// the order of [`Plan::tests`]: the running ETA spreads the estimate
    /// over the tests with these, as a long decode test takes longer than a
    /// prefill test.
    pub fn test_seconds(&self, plan: &Plan, weight_bytes: u64, n_params: u64) -> Vec<f64> {
        let pp_rate = self.prefill_flops / (2.0 * n_params.max(1) as f64);
        let tg_rate = self.decode_bytes_per_s / weight_bytes.max(1) as f64;
        plan.test_tokens()
            .iter()
            .map(|(pp, tg)| pp / pp_rate + tg / tg_rate)
            .collect()
    }
}

/// A load reads the file at about 1 GB/s, and starts a worker.
fn load_seconds(weight_bytes: u64) -> f64 {
    1.0 + weight_bytes as f64 / 1e9
}

/// Every preset's estimate for `model`, Quick first: `dyno presets` and
/// the app's preset buttons.
pub async fn estimates(store: &Store, model: &Path) -> Result<Vec<Estimate>> {
    let mut all = Vec::with_capacity(Preset::ALL.len());
    for p in Preset::ALL {
        all.push(estimate(store, model, p).await?);
    }
    Ok(all)
}

/// How long `preset` should take on the model at `model` (one level), from
/// this machine's last stored runs, or from priors.
pub async fn estimate(store: &Store, model: &Path, preset: Preset) -> Result<Estimate> {
    let info = crate::model::inspect(model)?;
    let machine = Machine::detect();
    let machine_id = store.upsert_machine(&machine).await?;
    let rows: Vec<_> = store
        .runs(100)
        .await?
        .into_iter()
        .filter(|r| r.machine_id == machine_id && r.status == RunStatus::Ok)
        .take(30)
        .collect();
    let report = crate::report::build(store, &rows, &machine).await?;
    let seen: Vec<_> = report
        .runs
        .iter()
        .map(|r| {
            let mean = |rate: Rate| {
                r.results
                    .iter()
                    .find(|x| x.kind != TestKind::Parallel && x.rate == rate && x.n_depth == 0)
                    .and_then(|x| x.mean_tokens_per_s)
            };
            (
                r.model.weight_bytes,
                r.model.n_params,
                mean(Rate::Prefill),
                mean(Rate::Decode),
            )
        })
        .collect();
    let (rates, basis) = match Rates::from_runs(&seen) {
        Some(r) => (r, Basis::StoredRuns),
        None => (
            Rates::prior(machine.cores_physical.unwrap_or(machine.cores_logical)),
            Basis::Prior,
        ),
    };
    let plan = preset.plan();
    let seconds = rates.seconds(&plan, info.weight_bytes, info.n_params, 1);
    let test_seconds = rates.test_seconds(&plan, info.weight_bytes, info.n_params);
    let (low, high) = match basis {
        Basis::StoredRuns => (0.6, 1.6),
        Basis::Prior => (0.3, 2.0),
    };
    Ok(Estimate {
        tests: plan.tests(),
        plan,
        seconds,
        test_seconds,
        load_seconds: load_seconds(info.weight_bytes),
        seconds_low: seconds * low,
        seconds_high: seconds * high,
        basis,
        runs_used: if basis == Basis::StoredRuns {
            seen.len()
        } else {
            0
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn standard_is_llama_benchs_defaults() {
        let d = crate::bench::plan::BenchRequest::defaults(4);
        let p = Preset::Standard.plan();
        assert_eq!((p.n_prompt, p.n_gen, p.reps), (d.n_prompt, d.n_gen, d.reps));
    }

    #[test]
    fn each_preset_names_its_tests_and_quick_is_at_least_three_repetitions() {
        assert_eq!(
            Preset::Quick.plan().tests(),
            ["pp128", "tg32", "pp128+tg32"]
        );
        assert_eq!(
            Preset::Thorough.plan().tests(),
            ["pp512", "pp2048", "tg128", "pp512+tg128"]
        );
        // Fewer than 3 repetitions give a 95% interval too wide to read.
        assert!(Preset::ALL.iter().all(|p| p.plan().reps >= 3));
    }

    #[test]
    fn rates_come_from_the_median_run_and_scale_with_the_model() {
        // A 100 MB model at 40 t/s decode and 400 t/s prefill (1e8 params).
        let runs = [
            (100_000_000, 100_000_000, Some(400.0), Some(40.0)),
            (100_000_000, 100_000_000, Some(300.0), Some(30.0)),
            (100_000_000, 100_000_000, Some(500.0), Some(50.0)),
            (100_000_000, 100_000_000, None, None),
        ];
        let r = Rates::from_runs(&runs).unwrap();
        assert_eq!(r.decode_bytes_per_s, 4e9);
        assert_eq!(r.prefill_flops, 8e10);
        let plan = Preset::Standard.plan();
        // 6 runs (warm-up + 5) of 1024 prefill tokens and 256 decode tokens.
        let small = r.seconds(&plan, 100_000_000, 100_000_000, 0);
        assert!((small - (6.0 * 1024.0 / 400.0 + 6.0 * 256.0 / 40.0)).abs() < 1e-9);
        // Per test: pp512, tg128, then both for the time to first token.
        let each = r.test_seconds(&plan, 100_000_000, 100_000_000);
        assert_eq!(each.len(), plan.tests().len());
        assert!((each[0] - 6.0 * 512.0 / 400.0).abs() < 1e-9);
        assert!((each[1] - 6.0 * 128.0 / 40.0).abs() < 1e-9);
        assert!((each[2] - each[0] - each[1]).abs() < 1e-9);
        // Twice the model, twice the time (loads aside).
        let big = r.seconds(&plan, 200_000_000, 200_000_000, 0);
        assert!((big / small - 2.0).abs() < 1e-9);
        assert!(Rates::from_runs(&runs[3..]).is_none());
    }
}
