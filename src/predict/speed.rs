//! The speed model: seconds per token from a model's shape, with rates
//! fitted on this machine's own stored runs.
//!
//! Per token, a test costs
//!
//! ```text
//! seconds = a · work + b · layers
//! ```
//!
//! where `work` is the bytes a decode step reads (weights actually touched
//! plus the KV cache at the test's depth) or the operations a prompt token
//! needs, `a` is the inverse of the effective bandwidth or compute rate and
//! `b` is a fixed cost per layer (the graph's kernels and the threads'
//! barriers, which dominate small models on a CPU). `a` and `b` are fitted
//! per device (CPU or GPU) and phase by least squares on relative error, so a
//! fast test weighs as much as a slow one. Each quantisation level then gets
//! a factor, the geometric mean of measured ÷ fitted over the runs of that
//! level: a K-quant's unpacking costs more per byte than Q8_0's, and that is
//! what the factor learns. Without runs, documented priors stand in and the
//! prediction says so.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::model::shape::ModelShape;

/// Prefill (prompt processing) or decode (generation): never blended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, ts_rs::TS)]
#[serde(rename_all = "snake_case")]
#[ts(rename = "PredictPhase")]
pub enum Phase {
    Prefill,
    Decode,
}

impl Phase {
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Prefill => "prefill",
            Phase::Decode => "decode",
        }
    }
}

/// Where the layers run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Device {
    Cpu,
    Gpu,
}

/// One measured test of one stored run on this machine.
#[derive(Debug, Clone)]
pub struct Observation {
    pub run_id: i64,
    pub model_sha256: String,
    /// The quantisation level the file says it is.
    pub level: String,
    pub threads: u32,
    pub device: Device,
    pub phase: Phase,
    pub n_prompt: u64,
    pub n_gen: u64,
    pub depth: u64,
    pub tokens_per_s: f64,
    pub shape: ModelShape,
    /// Something else competed with it (`crate::telemetry::disturbance`):
    /// used only where no clean observation exists.
    pub disturbed: bool,
}

/// What one test asks of a model: its lengths.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Lengths {
    pub n_prompt: u64,
    pub n_gen: u64,
    pub depth: u64,
}

/// The work of one token of `phase` (bytes read or operations).
pub fn work(shape: &ModelShape, phase: Phase, l: Lengths) -> f64 {
    match phase {
        // Decode reads a cache that grows from `depth` to `depth + n_gen`.
        Phase::Decode => shape.decode_bytes_at(l.depth + l.n_gen / 2),
        Phase::Prefill => shape.prefill_flops_at(l.n_prompt, l.depth),
    }
}

/// Documented starting points, used while this machine has no runs of a
/// device and phase. They are deliberately plain: a CPU's decode reaches
/// about 45% of its measured read bandwidth in llama.cpp, a GPU's about 70%
/// of its datasheet bandwidth, and a CPU core about 15 GFLOP/s of quantised
/// matrix products.
#[derive(Debug, Clone, Copy)]
pub struct Priors {
    /// Measured host read bandwidth, bytes/s.
    pub host_bandwidth: Option<f64>,
    /// The GPU's datasheet bandwidth, bytes/s.
    pub gpu_bandwidth: Option<f64>,
    pub threads: u32,
}

impl Priors {
    fn coefficients(&self, device: Device, phase: Phase) -> (f64, f64) {
        match (device, phase) {
            (Device::Cpu, Phase::Decode) => {
                (1.0 / (0.45 * self.host_bandwidth.unwrap_or(20e9)), 20e-6)
            }
            (Device::Gpu, Phase::Decode) => {
                (1.0 / (0.7 * self.gpu_bandwidth.unwrap_or(400e9)), 10e-6)
            }
            (Device::Cpu, Phase::Prefill) => (1.0 / (f64::from(self.threads.max(1)) * 15e9), 0.0),
            (Device::Gpu, Phase::Prefill) => (1.0 / 20e12, 0.0),
        }
    }
}

/// Fitted coefficients for one device and phase.
#[derive(Debug, Clone, Serialize)]
pub struct Fit {
    /// Seconds per unit of work (byte or operation).
    pub a: f64,
    /// Seconds per layer per token.
    pub b: f64,
    /// Level → (measured ÷ fitted, observations).
    pub level_factor: BTreeMap<String, (f64, usize)>,
    /// Standard deviation of log(measured ÷ predicted) over the
    /// observations, level factors applied: the noise the fit cannot explain.
    pub log_sd: f64,
    pub n_obs: usize,
    pub runs: Vec<i64>,
    pub models: Vec<String>,
    /// Thread count the observations were taken with, when they agree.
    pub threads: Option<u32>,
    /// The observations were all disturbed (there were no clean ones).
    pub disturbed: bool,
}

impl Fit {
    fn prior(p: &Priors, device: Device, phase: Phase) -> Fit {
        let (a, b) = p.coefficients(device, phase);
        Fit {
            a,
            b,
            level_factor: BTreeMap::new(),
            log_sd: 0.0,
            n_obs: 0,
            runs: Vec::new(),
            models: Vec::new(),
            threads: None,
            disturbed: false,
        }
    }

    fn raw_seconds(&self, work: f64, layers: f64) -> f64 {
        self.a * work + self.b * layers
    }
}

/// Least squares of `a·x + b·L ≈ y` in relative terms. Falls back to the
/// prior's per-layer cost when the observations cannot tell the two apart
/// (one model, one size), and keeps both coefficients non-negative.
fn fit_ab(points: &[(f64, f64, f64)], prior: (f64, f64)) -> (f64, f64) {
    // Rows divided by y: u = x/y, v = L/y, target 1.
    let (mut uu, mut uv, mut vv, mut u1, mut v1) = (0.0, 0.0, 0.0, 0.0, 0.0);
    for &(x, l, y) in points {
        let (u, v) = (x / y, l / y);
        uu += u * u;
        uv += u * v;
        vv += v * v;
        u1 += u;
        v1 += v;
    }
    let a_given_b = |b: f64| ((u1 - b * v1) / uu).max(0.0);
    let det = uu * vv - uv * uv;
    // Relative to the diagonal's scale: below this the columns are
    // proportional and any split between a and b fits equally well.
    if points.len() >= 3 && det > 1e-6 * uu * vv {
        let a = (u1 * vv - v1 * uv) / det;
        let b = (uu * v1 - uv * u1) / det;
        if a > 0.0 && b >= 0.0 {
            return (a, b);
        }
        if a > 0.0 {
            return (a_given_b(0.0), 0.0);
        }
    }
    let a = a_given_b(prior.1);
    if a > 0.0 {
        (a, prior.1)
    } else {
        (prior.0, prior.1)
    }
}

/// Every fit this machine's runs support.
#[derive(Debug, Clone, Serialize)]
pub struct Calibration {
    pub fits: BTreeMap<(Device, Phase), Fit>,
    #[serde(skip)]
    pub priors: Priors,
}

impl Calibration {
    /// Fit each device and phase on `obs`. Where some observations were taken
    /// at `threads` (the thread count to predict for), only those are used:
    /// a CPU's rates change with the threads given to it.
    pub fn fit(obs: &[Observation], priors: Priors) -> Calibration {
        let mut fits = BTreeMap::new();
        for device in [Device::Cpu, Device::Gpu] {
            for phase in [Phase::Prefill, Phase::Decode] {
                let mut mine: Vec<&Observation> = obs
                    .iter()
                    .filter(|o| o.device == device && o.phase == phase && o.tokens_per_s > 0.0)
                    .collect();
                // A disturbed figure understates the machine; it is better
                // than a prior, but never mixed with clean ones.
                if mine.iter().any(|o| !o.disturbed) {
                    mine.retain(|o| !o.disturbed);
                }
                let same_threads: Vec<&Observation> = mine
                    .iter()
                    .copied()
                    .filter(|o| o.threads == priors.threads)
                    .collect();
                let use_obs = if device == Device::Cpu && !same_threads.is_empty() {
                    same_threads
                } else {
                    mine
                };
                let prior = Fit::prior(&priors, device, phase);
                fits.insert((device, phase), fit_one(&use_obs, prior));
            }
        }
        Calibration { fits, priors }
    }

    pub fn fit_for(&self, device: Device, phase: Phase) -> &Fit {
        &self.fits[&(device, phase)]
    }
}

fn fit_one(obs: &[&Observation], prior: Fit) -> Fit {
    if obs.is_empty() {
        return prior;
    }
    let points: Vec<(f64, f64, f64)> = obs
        .iter()
        .map(|o| {
            let l = Lengths {
                n_prompt: o.n_prompt,
                n_gen: o.n_gen,
                depth: o.depth,
            };
            (
                work(&o.shape, o.phase, l),
                o.shape.n_layers as f64,
                1.0 / o.tokens_per_s,
            )
        })
        .collect();
    let (a, b) = fit_ab(&points, (prior.a, prior.b));
    let mut fit = Fit { a, b, ..prior };
    // Level factors: measured seconds ÷ fitted seconds, geometric mean.
    let mut logs: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for (o, &(x, l, y)) in obs.iter().zip(&points) {
        let r = y / fit.raw_seconds(x, l);
        if r.is_finite() && r > 0.0 {
            logs.entry(o.level.clone()).or_default().push(r.ln());
        }
    }
    let mut resid = Vec::new();
    for (level, v) in &logs {
        let m = v.iter().sum::<f64>() / v.len() as f64;
        fit.level_factor.insert(level.clone(), (m.exp(), v.len()));
        resid.extend(v.iter().map(|x| x - m));
    }
    fit.log_sd = if resid.len() > 1 {
        (resid.iter().map(|r| r * r).sum::<f64>() / (resid.len() - 1) as f64).sqrt()
    } else {
        0.0
    };
    fit.n_obs = obs.len();
    let mut runs: Vec<i64> = obs.iter().map(|o| o.run_id).collect();
    runs.sort_unstable();
    runs.dedup();
    fit.runs = runs;
    let mut models: Vec<String> = obs.iter().map(|o| o.model_sha256.clone()).collect();
    models.sort();
    models.dedup();
    fit.models = models;
    let mut threads: Vec<u32> = obs.iter().map(|o| o.threads).collect();
    threads.dedup();
    fit.threads = (threads.len() == 1).then(|| threads[0]);
    fit.disturbed = obs.iter().all(|o| o.disturbed);
    fit
}

/// A predicted rate with its interval, in tokens per second.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, ts_rs::TS)]
#[ts(rename = "PredictedRate")]
pub struct Estimate {
    pub tokens_per_s: f64,
    /// About an 80% interval: the fit's own scatter widened for what a new
    /// model or level adds (see [`predict_rate`]).
    pub low: f64,
    pub high: f64,
}

/// What a prediction rests on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct Basis {
    /// "machine" when fitted on this machine's runs, "prior" otherwise.
    pub source: String,
    /// Stored runs the fit used.
    pub runs: usize,
    /// Distinct model files among them.
    pub models: usize,
    /// Whether runs of the same level were among them.
    pub level_seen: bool,
    /// Whether runs of this very file were among them.
    pub model_seen: bool,
    /// In words: "from 12 runs of 2 models on this machine".
    pub text: String,
}

/// z for a two-sided 80% interval.
const Z80: f64 = 1.2816;

/// Predict the rate of `phase` for `shape` with `gpu_layers` of its layers
/// on the GPU (0: CPU only).
///
/// The interval is `exp(±z·h)` around the value, with `h² = s² + t²`: `s` is
/// the fit's scatter (at least 5%, since repeated runs on a shared machine
/// spread that much) and `t` is what carrying the fit elsewhere adds: 5% for
/// a file already measured, 12% for a new file of a measured level, 25% for
/// an unmeasured level. A prior alone gets `h` = 0.5 (decode) or 0.7
/// (prefill). `dyno predict --accuracy` checks these against what was
/// measured.
pub fn predict_rate(
    cal: &Calibration,
    shape: &ModelShape,
    sha256: Option<&str>,
    phase: Phase,
    lengths: Lengths,
    gpu_layers: u64,
) -> (Estimate, Basis) {
    let n_layers = shape.n_layers.max(1);
    let on_gpu = gpu_layers.min(n_layers);
    let share = on_gpu as f64 / n_layers as f64;
    let w = work(shape, phase, lengths);
    let mut seconds = 0.0;
    let mut parts = Vec::new();
    for (device, frac, layers) in [
        (Device::Gpu, share, on_gpu),
        (Device::Cpu, 1.0 - share, n_layers - on_gpu),
    ] {
        if frac <= 0.0 {
            continue;
        }
        let fit = cal.fit_for(device, phase);
        let factor = fit.level_factor.get(&shape.quant).map_or(1.0, |f| f.0);
        seconds += fit.raw_seconds(w * frac, layers as f64) * factor;
        parts.push(fit);
    }
    let calibrated = parts.iter().all(|f| f.n_obs > 0);
    let level_seen = parts
        .iter()
        .all(|f| f.level_factor.contains_key(&shape.quant));
    let model_seen = sha256.is_some_and(|s| parts.iter().all(|f| f.models.iter().any(|m| m == s)));
    let h = if calibrated {
        let s = parts.iter().map(|f| f.log_sd).fold(0.05f64, f64::max);
        let t = if model_seen && level_seen {
            0.05
        } else if level_seen {
            0.12
        } else {
            0.25
        };
        (s * s + t * t).sqrt()
    } else if phase == Phase::Decode {
        0.5
    } else {
        0.7
    };
    let rate = 1.0 / seconds.max(1e-12);
    let spread = (Z80 * h).exp();
    let mut runs: Vec<i64> = parts.iter().flat_map(|f| f.runs.clone()).collect();
    runs.sort_unstable();
    runs.dedup();
    let mut models: Vec<String> = parts.iter().flat_map(|f| f.models.clone()).collect();
    models.sort();
    models.dedup();
    let text = if calibrated {
        let mut t = format!(
            "from {} run{} of {} model{} on this machine",
            runs.len(),
            if runs.len() == 1 { "" } else { "s" },
            models.len(),
            if models.len() == 1 { "" } else { "s" },
        );
        if !level_seen {
            t.push_str(&format!(", none of them {}", shape.quant));
        }
        if parts.iter().any(|f| f.disturbed) {
            t.push_str(" (all disturbed by other programs: likely low)");
        }
        t
    } else {
        "prior only: no runs on this machine yet".to_string()
    };
    (
        Estimate {
            tokens_per_s: rate,
            low: rate / spread,
            high: rate * spread,
        },
        Basis {
            source: if calibrated { "machine" } else { "prior" }.into(),
            runs: runs.len(),
            models: models.len(),
            level_seen,
            model_seen,
            text,
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(quant: &str, bytes: u64, layers: u64) -> ModelShape {
        ModelShape {
            arch: "llama".into(),
            quant: quant.into(),
            n_params: bytes,
            n_active_params: bytes,
            n_layers: layers,
            n_embd: 512,
            n_vocab: 1000,
            n_expert: 0,
            n_expert_used: 0,
            context_length: None,
            weight_bytes: bytes,
            decode_bytes_per_token: bytes,
            kv_elements_per_token: 0,
            prefill_flops_per_token: 2 * bytes,
            attn_width: 0,
            tensor_types: vec![],
        }
    }

    fn obs(quant: &str, bytes: u64, layers: u64, phase: Phase, tps: f64) -> Observation {
        Observation {
            run_id: bytes as i64,
            model_sha256: format!("m{layers}"),
            level: quant.into(),
            threads: 2,
            device: Device::Cpu,
            phase,
            n_prompt: 0,
            n_gen: 0,
            depth: 0,
            tokens_per_s: tps,
            shape: shape(quant, bytes, layers),
            disturbed: false,
        }
    }

    fn priors() -> Priors {
        Priors {
            host_bandwidth: Some(30e9),
            gpu_bandwidth: None,
            threads: 2,
        }
    }

    #[test]
    fn a_ladder_recovers_bandwidth_and_per_layer_cost_and_carries_to_another_model() {
        // Made with 10 GB/s and 100 µs per layer, 30 layers.
        let truth = |bytes: f64, layers: f64| 1.0 / (bytes / 10e9 + layers * 100e-6);
        let ladder: Vec<Observation> = [("Q8_0", 140e6), ("Q4_K_M", 90e6), ("Q2_K", 60e6)]
            .iter()
            .map(|&(q, b)| obs(q, b as u64, 30, Phase::Decode, truth(b, 30.0)))
            .collect();
        let cal = Calibration::fit(&ladder, priors());
        let f = cal.fit_for(Device::Cpu, Phase::Decode);
        assert!((f.a * 10e9 - 1.0).abs() < 1e-6, "{}", f.a);
        assert!((f.b / 100e-6 - 1.0).abs() < 1e-6, "{}", f.b);
        // Another model, 18 layers, 250 MB, a level seen: within 1%.
        let other = shape("Q4_K_M", 250_000_000, 18);
        let l = Lengths {
            n_prompt: 0,
            n_gen: 0,
            depth: 0,
        };
        let (e, basis) = predict_rate(&cal, &other, Some("x"), Phase::Decode, l, 0);
        let want = truth(250e6, 18.0);
        assert!((e.tokens_per_s / want - 1.0).abs() < 0.01);
        assert!(e.low < want && want < e.high);
        assert_eq!(basis.source, "machine");
        assert!(basis.level_seen && !basis.model_seen);
        assert_eq!(basis.text, "from 3 runs of 1 model on this machine");
    }

    #[test]
    fn a_level_that_costs_more_per_byte_gets_its_own_factor() {
        let truth = |bytes: f64, slow: f64| 1.0 / (slow * bytes / 10e9 + 30.0 * 100e-6);
        let ladder = vec![
            obs("Q8_0", 140_000_000, 30, Phase::Decode, truth(140e6, 1.0)),
            obs("Q6_K", 110_000_000, 30, Phase::Decode, truth(110e6, 1.0)),
            obs("Q4_0", 80_000_000, 30, Phase::Decode, truth(80e6, 1.0)),
            obs("Q2_K", 60_000_000, 30, Phase::Decode, truth(60e6, 1.6)),
        ];
        let cal = Calibration::fit(&ladder, priors());
        let f = cal.fit_for(Device::Cpu, Phase::Decode);
        let q2 = f.level_factor["Q2_K"].0;
        let q8 = f.level_factor["Q8_0"].0;
        assert!(q2 > q8, "Q2_K {q2} Q8_0 {q8}");
        // The level's own run is predicted back closely.
        let l = Lengths {
            n_prompt: 0,
            n_gen: 0,
            depth: 0,
        };
        let (e, _) = predict_rate(
            &cal,
            &shape("Q2_K", 60_000_000, 30),
            None,
            Phase::Decode,
            l,
            0,
        );
        assert!((e.tokens_per_s / truth(60e6, 1.6) - 1.0).abs() < 0.02);
    }

    #[test]
    fn without_runs_the_prior_speaks_and_says_so() {
        let cal = Calibration::fit(&[], priors());
        let l = Lengths {
            n_prompt: 512,
            n_gen: 0,
            depth: 0,
        };
        let s = shape("Q4_K_M", 4_000_000_000, 32);
        let (d, basis) = predict_rate(&cal, &s, None, Phase::Decode, l, 0);
        // 4 GB at 45% of 30 GB/s plus 32 × 20 µs: about 3.3 t/s.
        assert!((d.tokens_per_s - 1.0 / (4e9 / 13.5e9 + 32.0 * 20e-6)).abs() < 1e-9);
        assert_eq!(basis.source, "prior");
        assert!(basis.text.starts_with("prior only"));
        assert!(d.high / d.low > 3.0, "a prior's interval is wide");
        let (p, _) = predict_rate(&cal, &s, None, Phase::Prefill, l, 0);
        assert!(p.tokens_per_s > d.tokens_per_s);
    }

    #[test]
    fn partial_offload_splits_the_work_between_devices() {
        let p = Priors {
            host_bandwidth: Some(20e9),
            gpu_bandwidth: Some(500e9),
            threads: 4,
        };
        let cal = Calibration::fit(&[], p);
        let s = shape("Q4_K_M", 8_000_000_000, 32);
        let l = Lengths {
            n_prompt: 0,
            n_gen: 128,
            depth: 0,
        };
        let rate = |ngl| {
            predict_rate(&cal, &s, None, Phase::Decode, l, ngl)
                .0
                .tokens_per_s
        };
        let (cpu, half, all) = (rate(0), rate(16), rate(32));
        assert!(cpu < half && half < all, "{cpu} {half} {all}");
        // Half the bytes on the CPU costs about half the CPU's time.
        let want = 1.0 / (4e9 / (0.45 * 20e9) + 16.0 * 20e-6 + 4e9 / (0.7 * 500e9) + 16.0 * 10e-6);
        assert!((half / want - 1.0).abs() < 1e-9);
    }

    #[test]
    fn observations_at_other_thread_counts_are_left_out_when_some_match() {
        let mut a = obs("Q8_0", 100_000_000, 30, Phase::Decode, 50.0);
        a.threads = 8;
        let b = obs("Q8_0", 100_000_000, 30, Phase::Decode, 20.0);
        let cal = Calibration::fit(&[a, b], priors());
        let f = cal.fit_for(Device::Cpu, Phase::Decode);
        assert_eq!(f.n_obs, 1);
        assert_eq!(f.threads, Some(2));
    }

    #[test]
    fn disturbed_observations_count_only_where_nothing_clean_exists() {
        let mut slow = obs("Q8_0", 100_000_000, 30, Phase::Decode, 10.0);
        slow.disturbed = true;
        let clean = obs("Q8_0", 100_000_000, 30, Phase::Decode, 20.0);
        let l = Lengths {
            n_prompt: 0,
            n_gen: 0,
            depth: 0,
        };
        let s = shape("Q8_0", 100_000_000, 30);
        let cal = Calibration::fit(&[slow.clone(), clean], priors());
        let (e, b) = predict_rate(&cal, &s, None, Phase::Decode, l, 0);
        assert!((e.tokens_per_s - 20.0).abs() < 1e-6);
        assert!(!b.text.contains("disturbed"));
        let cal = Calibration::fit(&[slow], priors());
        let (e, b) = predict_rate(&cal, &s, None, Phase::Decode, l, 0);
        assert!((e.tokens_per_s - 10.0).abs() < 1e-6);
        assert!(b.text.contains("disturbed"), "{}", b.text);
    }
}
