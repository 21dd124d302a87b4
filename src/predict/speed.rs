//! The speed model: seconds per token from a model's shape, with rates
//! fitted on this machine's own stored runs.
//!
//! **Decode** reads every weight it uses once per token. On a GPU that is
//! bytes over bandwidth; on a CPU, and especially with few threads, the
//! unpacking of a quantised block costs more than reading it, and differs by
//! type (a Q4_K element costs less than an F16 one, but more than half of it).
//! So a decode step costs
//!
//! ```text
//! seconds = Σ_type elements(type) · c(type) + layers · b
//! ```
//!
//! with one cost per element for each ggml tensor type and a fixed cost per
//! layer. The costs are fitted on this machine's runs by least squares on
//! relative error, pulled towards priors (the type's bytes per element over
//! 45% of the measured bandwidth; 70% of a GPU's) so that a ladder of one
//! model, whose levels mix types, pins the types it holds without inventing
//! the others. A type no run has used takes its prior times the machine's
//! average fitted ÷ prior. This carries from one model to another because
//! the same types cost the same on the same machine, whatever model holds
//! them (measured in `scripts/bench/predict-accuracy.sh`). A file already
//! measured also gets its own factor, measured ÷ modelled.
//!
//! **Prefill** is compute: `seconds = a · operations + b · layers`, with a
//! factor per quantisation level (a K-quant's matrix products are slower
//! than Q8_0's), fitted the same way.
//!
//! Without runs, the priors stand alone and the prediction says so.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::model::shape::ModelShape;
pub use crate::vocab::prediction::{Basis, Estimate, Phase};

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
    /// Measured on a twin of `model_sha256` (its header, synthetic weights:
    /// `--shape-only`), not on the file itself.
    pub by_shape: bool,
    /// A synthetic file of a shape no downloaded file has (`dyno synth
    /// --shape`): a real timing of that shape, counted like any file's, but
    /// said wherever the fit is described, since its weights are made up.
    pub synthetic_shape: bool,
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
/// of its datasheet bandwidth, and a CPU core about 40 GFLOP/s of quantised
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
    /// The bandwidth a decode reaches by the priors: 45% of the host's
    /// measured read bandwidth, 70% of a GPU's datasheet figure.
    fn decode_bandwidth(&self, device: Device) -> f64 {
        match device {
            Device::Cpu => 0.45 * self.host_bandwidth.unwrap_or(20e9),
            Device::Gpu => 0.7 * self.gpu_bandwidth.unwrap_or(400e9),
        }
    }

    fn coefficients(&self, device: Device, phase: Phase) -> (f64, f64) {
        match (device, phase) {
            (Device::Cpu, Phase::Decode) => {
                (1.0 / (0.45 * self.host_bandwidth.unwrap_or(20e9)), 20e-6)
            }
            (Device::Gpu, Phase::Decode) => {
                (1.0 / (0.7 * self.gpu_bandwidth.unwrap_or(400e9)), 10e-6)
            }
            (Device::Cpu, Phase::Prefill) => (1.0 / (f64::from(self.threads.max(1)) * 40e9), 0.0),
            (Device::Gpu, Phase::Prefill) => (1.0 / 20e12, 0.0),
        }
    }
}

/// Fitted coefficients for one device and phase.
#[derive(Debug, Clone, Serialize)]
pub struct Fit {
    /// Prefill: seconds per operation.
    pub a: f64,
    /// Seconds per layer per token.
    pub b: f64,
    /// Decode: seconds per element read, per tensor type ("Q4_K").
    pub type_cost: BTreeMap<String, f64>,
    /// Decode: the average fitted ÷ prior cost, for types no run used.
    pub type_scale: f64,
    /// Host or GPU bandwidth the decode priors come from, bytes/s, and the
    /// share of it a decode reaches.
    #[serde(skip)]
    pub prior_bandwidth: f64,
    /// Decode: file sha256 → (measured ÷ modelled, observations).
    pub file_factor: BTreeMap<String, (f64, usize)>,
    /// Decode: scatter of log(measured ÷ modelled) before file factors: what
    /// to expect for a file not yet measured.
    pub log_sd_model: f64,
    /// Level → (measured ÷ fitted, observations).
    pub level_factor: BTreeMap<String, (f64, usize)>,
    /// Standard deviation of log(measured ÷ predicted) over the
    /// observations, level factors applied: the noise the fit cannot explain.
    pub log_sd: f64,
    pub n_obs: usize,
    pub runs: Vec<i64>,
    pub models: Vec<String>,
    /// The files among `models` measured only by their shape (twins).
    pub by_shape: Vec<String>,
    /// The files among `models` that are synthetic shapes
    /// ([`Observation::synthetic_shape`]).
    pub synthetic: Vec<String>,
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
            type_cost: BTreeMap::new(),
            type_scale: 1.0,
            prior_bandwidth: p.decode_bandwidth(device),
            file_factor: BTreeMap::new(),
            log_sd_model: 0.0,
            level_factor: BTreeMap::new(),
            log_sd: 0.0,
            n_obs: 0,
            runs: Vec::new(),
            models: Vec::new(),
            by_shape: Vec::new(),
            synthetic: Vec::new(),
            threads: None,
            disturbed: false,
        }
    }

    fn raw_seconds(&self, work: f64, layers: f64) -> f64 {
        self.a * work + self.b * layers
    }

    /// The prior cost of one element of `ty`: its bytes at the prior share
    /// of the bandwidth.
    fn prior_cost(&self, ty: &str) -> f64 {
        bytes_per_element(ty) / self.prior_bandwidth
    }

    /// Seconds per element of `ty`: fitted, else prior times the machine's
    /// average ratio.
    fn cost(&self, ty: &str) -> f64 {
        self.type_cost
            .get(ty)
            .copied()
            .unwrap_or_else(|| self.prior_cost(ty) * self.type_scale)
    }

    /// Modelled decode seconds for a share `frac` of a model's weights and
    /// cache, over `layers` layers.
    fn decode_seconds(&self, shape: &ModelShape, depth: u64, frac: f64, layers: f64) -> f64 {
        let elems = decode_elements(shape, depth);
        let read: f64 = elems.iter().map(|(t, e)| e * self.cost(t)).sum();
        frac * read + self.b * layers
    }
}

/// Bytes per element of a ggml type by name (2 for an unknown one).
fn bytes_per_element(ty: &str) -> f64 {
    (0..64u32)
        .find(|&t| crate::model::gguf::ggml_type_name(t) == ty)
        .and_then(crate::model::gguf::ggml_type_block)
        .map_or(2.0, |(block, bytes)| bytes as f64 / block as f64)
}

/// Elements one decode step reads per type, with the f16 KV cache at `depth`
/// counted as F16. Shapes stored before the per-type counts were kept fall
/// back to their bytes per type.
fn decode_elements(shape: &ModelShape, depth: u64) -> Vec<(String, f64)> {
    let mut out: Vec<(String, f64)> = if shape.decode_elements.is_empty() {
        shape
            .tensor_types
            .iter()
            .map(|(t, b)| (t.clone(), *b as f64 / bytes_per_element(t)))
            .collect()
    } else {
        shape
            .decode_elements
            .iter()
            .map(|(t, e)| (t.clone(), *e as f64))
            .collect()
    };
    let kv = shape.kv_elements_per_token as f64 * depth as f64;
    if kv > 0.0 {
        match out.iter_mut().find(|(t, _)| t == "F16") {
            Some(f) => f.1 += kv,
            None => out.push(("F16".into(), kv)),
        }
    }
    out
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
                let fit = match phase {
                    Phase::Prefill => fit_one(&use_obs, prior),
                    Phase::Decode => fit_decode(&use_obs, prior),
                };
                fits.insert((device, phase), fit);
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
    fit.log_sd = sd(&resid);
    bookkeeping(&mut fit, obs);
    fit
}

/// How strongly the decode costs are pulled to their priors, relative to
/// one observation's squared relative error. Small: a ladder of seven
/// levels pins the types it holds; a type held by few elements stays near
/// its prior.
const RIDGE: f64 = 0.1;

/// Solve `m · x = v` (a small symmetric system) by Gaussian elimination with
/// partial pivoting; `None` when it is singular.
fn solve(mut m: Vec<Vec<f64>>, mut v: Vec<f64>) -> Option<Vec<f64>> {
    let n = v.len();
    for i in 0..n {
        let p = (i..n).max_by(|&a, &b| m[a][i].abs().total_cmp(&m[b][i].abs()))?;
        if m[p][i].abs() < 1e-300 {
            return None;
        }
        m.swap(i, p);
        v.swap(i, p);
        let pivot = m[i].clone();
        for r in (0..n).filter(|&r| r != i) {
            let f = m[r][i] / pivot[i];
            if f != 0.0 {
                for (x, p) in m[r].iter_mut().zip(&pivot).skip(i) {
                    *x -= f * p;
                }
                v[r] -= f * v[i];
            }
        }
    }
    Some((0..n).map(|i| v[i] / m[i][i]).collect())
}

/// One decode observation: elements read per type, layers, seconds per token.
type DecodeRow = (Vec<(String, f64)>, f64, f64);

/// Fit the decode costs: one per tensor type in the observations and one
/// per layer, by relative least squares with a ridge towards the priors.
fn fit_decode(obs: &[&Observation], prior: Fit) -> Fit {
    if obs.is_empty() {
        return prior;
    }
    let rows: Vec<DecodeRow> = obs
        .iter()
        .map(|o| {
            (
                decode_elements(&o.shape, o.depth + o.n_gen / 2),
                o.shape.n_layers as f64,
                1.0 / o.tokens_per_s,
            )
        })
        .collect();
    let mut types: Vec<String> = rows
        .iter()
        .flat_map(|(e, _, _)| e.iter().filter(|(_, n)| *n > 0.0).map(|(t, _)| t.clone()))
        .collect();
    types.sort();
    types.dedup();
    let n = types.len() + 1;
    let pri: Vec<f64> = types
        .iter()
        .map(|t| prior.prior_cost(t))
        .chain([prior.b.max(1e-9)])
        .collect();
    // Unknowns scaled by their priors (x = c / p), so the ridge is relative
    // and the system well conditioned: minimise Σ (Σ_j u_ij x_j − 1)² +
    // RIDGE · Σ (x_j − 1)², with u_ij = feature_ij · p_j / y_i.
    let mut m = vec![vec![0.0; n]; n];
    let mut v = vec![0.0; n];
    for (elems, layers, y) in &rows {
        let mut u = vec![0.0; n];
        for (t, e) in elems {
            if let Some(j) = types.iter().position(|x| x == t) {
                u[j] += e * pri[j] / y;
            }
        }
        u[n - 1] = layers * pri[n - 1] / y;
        for i in 0..n {
            v[i] += u[i];
            for j in 0..n {
                m[i][j] += u[i] * u[j];
            }
        }
    }
    for i in 0..n {
        m[i][i] += RIDGE;
        v[i] += RIDGE;
    }
    let x = solve(m, v).unwrap_or_else(|| vec![1.0; n]);
    let mut fit = prior;
    // A cost is never below a tenth of its prior: a negative or vanishing
    // cost would let a type's elements come free.
    let x: Vec<f64> = x.iter().map(|v| v.max(0.1)).collect();
    for (j, t) in types.iter().enumerate() {
        fit.type_cost.insert(t.clone(), x[j] * pri[j]);
    }
    fit.b = x[n - 1] * pri[n - 1];
    // The machine's average ratio, weighted by how many elements pinned
    // each type, for types no run has used.
    let mut wsum = 0.0;
    let mut lsum = 0.0;
    for (j, t) in types.iter().enumerate() {
        let w: f64 = rows
            .iter()
            .flat_map(|(e, _, _)| e.iter().filter(|(x, _)| x == t).map(|(_, n)| *n))
            .sum();
        wsum += w;
        lsum += w * x[j].ln();
    }
    fit.type_scale = if wsum > 0.0 { (lsum / wsum).exp() } else { 1.0 };
    // Residuals: by the type model alone, then per file.
    let mut by_file: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    let mut all = Vec::new();
    for (o, (_, layers, y)) in obs.iter().zip(&rows) {
        let r = (y / fit.decode_seconds(&o.shape, o.depth + o.n_gen / 2, 1.0, *layers)).ln();
        if r.is_finite() {
            all.push(r);
            by_file.entry(o.model_sha256.clone()).or_default().push(r);
        }
    }
    fit.log_sd_model = sd(&all);
    let mut within = Vec::new();
    for (file, v) in &by_file {
        let m = v.iter().sum::<f64>() / v.len() as f64;
        fit.file_factor.insert(file.clone(), (m.exp(), v.len()));
        within.extend(v.iter().map(|x| x - m));
    }
    fit.log_sd = sd(&within);
    bookkeeping(&mut fit, obs);
    fit
}

/// Sample standard deviation about zero-mean residuals (0 for fewer than 2).
fn sd(resid: &[f64]) -> f64 {
    if resid.len() > 1 {
        let mean = resid.iter().sum::<f64>() / resid.len() as f64;
        (resid.iter().map(|r| (r - mean).powi(2)).sum::<f64>() / (resid.len() - 1) as f64).sqrt()
    } else {
        0.0
    }
}

/// The runs, files and threads a fit rests on.
fn bookkeeping(fit: &mut Fit, obs: &[&Observation]) {
    fit.n_obs = obs.len();
    let mut runs: Vec<i64> = obs.iter().map(|o| o.run_id).collect();
    runs.sort_unstable();
    runs.dedup();
    fit.runs = runs;
    let mut models: Vec<String> = obs.iter().map(|o| o.model_sha256.clone()).collect();
    models.sort();
    models.dedup();
    fit.by_shape = models
        .iter()
        .filter(|m| obs.iter().all(|o| &o.model_sha256 != *m || o.by_shape))
        .cloned()
        .collect();
    fit.synthetic = models
        .iter()
        .filter(|m| {
            obs.iter()
                .any(|o| &o.model_sha256 == *m && o.synthetic_shape)
        })
        .cloned()
        .collect();
    fit.models = models;
    let mut threads: Vec<u32> = obs.iter().map(|o| o.threads).collect();
    threads.dedup();
    fit.threads = (threads.len() == 1).then(|| threads[0]);
    fit.disturbed = obs.iter().all(|o| o.disturbed);
    let mut levels: BTreeMap<String, usize> = BTreeMap::new();
    for o in obs {
        *levels.entry(o.level.clone()).or_default() += 1;
    }
    for (l, n) in levels {
        fit.level_factor.entry(l).or_insert((1.0, n));
    }
}

/// z for a two-sided 80% interval.
const Z80: f64 = 1.2816;

/// Predict the rate of `phase` for `shape` with `gpu_layers` of its layers
/// on the GPU (0: CPU only).
///
/// The interval is `exp(±z·h)` around the value, with `h² = s² + t²`: `s` is
/// the fit's scatter (at least 5%, since repeated runs on a shared machine
/// spread that much; for decode of a new file, the type model's scatter
/// before file factors) and `t` is what carrying the fit elsewhere adds: 5%
/// for a file already measured; for a new file 10% (decode, every type it
/// holds measured) or 12% (prefill, its level measured); 25% otherwise. A
/// prior alone gets `h` = 0.5 (decode) or 0.7 (prefill). `dyno predict
/// --accuracy` checks these against what was measured.
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
    let depth = lengths.depth + lengths.n_gen / 2;
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
        seconds += match phase {
            Phase::Prefill => {
                let factor = fit.level_factor.get(&shape.quant).map_or(1.0, |f| f.0);
                fit.raw_seconds(w * frac, layers as f64) * factor
            }
            Phase::Decode => {
                let factor = sha256
                    .and_then(|s| fit.file_factor.get(s))
                    .map_or(1.0, |f| f.0);
                fit.decode_seconds(shape, depth, frac, layers as f64) * factor
            }
        };
        parts.push(fit);
    }
    let calibrated = parts.iter().all(|f| f.n_obs > 0);
    let model_seen = sha256.is_some_and(|s| parts.iter().all(|f| f.models.iter().any(|m| m == s)));
    let by_shape = model_seen
        && sha256.is_some_and(|s| parts.iter().any(|f| f.by_shape.iter().any(|m| m == s)));
    // Decode: the types holding at least 1% of the elements read, without
    // a fitted cost.
    let unseen_types: Vec<String> = if phase == Phase::Decode && calibrated {
        unfitted_types(shape, &parts)
    } else {
        Vec::new()
    };
    let level_seen = match phase {
        Phase::Prefill => parts
            .iter()
            .all(|f| f.level_factor.contains_key(&shape.quant)),
        Phase::Decode => unseen_types.is_empty(),
    };
    let h = if calibrated {
        log_spread(&parts, phase, model_seen, level_seen)
    } else if phase == Phase::Decode {
        0.5
    } else {
        0.7
    };
    let rate = 1.0 / seconds.max(1e-12);
    let spread = (Z80 * h).exp();
    let runs = distinct(&parts, |f| &f.runs);
    let models = distinct(&parts, |f| &f.models);
    let synthetic = distinct(&parts, |f| &f.synthetic);
    let text = if calibrated {
        basis_text(
            &parts,
            runs.len(),
            (models.len(), synthetic.len()),
            &unseen_types,
            level_seen,
            &shape.quant,
            by_shape,
        )
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
            by_shape,
            text,
        },
    )
}

/// The distinct entries of one list over the fits a prediction uses (the
/// GPU's and the CPU's may share runs and files).
fn distinct<'a, T: Ord + 'a>(parts: &[&'a Fit], list: impl Fn(&'a Fit) -> &'a [T]) -> Vec<&'a T> {
    let mut all: Vec<&T> = parts.iter().flat_map(|f| list(f)).collect();
    all.sort();
    all.dedup();
    all
}

/// The types holding at least 1% of the elements a decode step reads that
/// a fit has no cost for.
fn unfitted_types(shape: &ModelShape, parts: &[&Fit]) -> Vec<String> {
    let elems = decode_elements(shape, 0);
    let total: f64 = elems.iter().map(|(_, e)| e).sum();
    elems
        .into_iter()
        .filter(|(t, e)| *e > 0.01 * total && parts.iter().any(|f| !f.type_cost.contains_key(t)))
        .map(|(t, _)| t)
        .collect()
}

/// `h` of a calibrated prediction: the fit's scatter and what carrying it
/// to this file adds, together (see [`predict_rate`]).
fn log_spread(parts: &[&Fit], phase: Phase, model_seen: bool, level_seen: bool) -> f64 {
    let scatter = |f: &&Fit| match (phase, model_seen) {
        (Phase::Decode, false) => f.log_sd_model,
        _ => f.log_sd,
    };
    let s = parts.iter().map(scatter).fold(0.05f64, f64::max);
    let t = match (model_seen, level_seen, phase) {
        (true, true, _) => 0.05,
        (_, true, Phase::Decode) => 0.10,
        (_, true, Phase::Prefill) => 0.12,
        _ => 0.25,
    };
    (s * s + t * t).sqrt()
}

/// What a calibrated prediction rests on, in words.
fn basis_text(
    parts: &[&Fit],
    runs: usize,
    (models, synthetic): (usize, usize),
    unseen_types: &[String],
    level_seen: bool,
    quant: &str,
    by_shape: bool,
) -> String {
    let mut t = format!(
        "from {} run{} of {} model{} on this machine",
        runs,
        if runs == 1 { "" } else { "s" },
        models,
        if models == 1 { "" } else { "s" },
    );
    // Made-up weights of a made-up size: real timings, but the reader
    // should know that some of the "models" were never downloaded files.
    match (synthetic, models) {
        (0, _) => {}
        (1, 1) => t.push_str(" (a synthetic shape, dyno synth --shape)"),
        (n, m) if n == m => t.push_str(" (all synthetic shapes, dyno synth --shape)"),
        (1, _) => t.push_str(" (1 of them a synthetic shape, dyno synth --shape)"),
        (n, _) => t.push_str(&format!(
            " ({n} of them synthetic shapes, dyno synth --shape)"
        )),
    }
    if !unseen_types.is_empty() {
        t.push_str(&format!(
            ", none with {} tensors",
            unseen_types.join(" or ")
        ));
    } else if !level_seen {
        t.push_str(&format!(", none of them {quant}"));
    }
    if parts.iter().any(|f| f.disturbed) {
        t.push_str(" (all disturbed by other programs: likely low)");
    }
    if by_shape {
        t.push_str("; this file itself measured by its shape (synthetic weights), not downloaded");
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A model whose decode reads `mix` (type, elements) over `layers`
    /// layers; its prefill costs two operations per element.
    fn shape(quant: &str, mix: &[(&str, u64)], layers: u64) -> ModelShape {
        let elements: u64 = mix.iter().map(|(_, e)| e).sum();
        let bytes = |t: &str, e: u64| (e as f64 * bytes_per_element(t)) as u64;
        ModelShape {
            arch: "llama".into(),
            quant: quant.into(),
            n_params: elements,
            n_active_params: elements,
            n_layers: layers,
            n_embd: 512,
            n_vocab: 1000,
            n_expert: 0,
            n_expert_used: 0,
            context_length: None,
            weight_bytes: mix.iter().map(|(t, e)| bytes(t, *e)).sum(),
            decode_bytes_per_token: mix.iter().map(|(t, e)| bytes(t, *e)).sum(),
            kv_elements_per_token: 0,
            prefill_flops_per_token: 2 * elements,
            attn_width: 0,
            tensor_types: mix
                .iter()
                .map(|(t, e)| (t.to_string(), bytes(t, *e)))
                .collect(),
            decode_elements: mix.iter().map(|(t, e)| (t.to_string(), *e)).collect(),
        }
    }

    fn obs(file: &str, s: ModelShape, phase: Phase, tps: f64) -> Observation {
        Observation {
            run_id: file.len() as i64 * 1000 + s.weight_bytes as i64 % 997,
            model_sha256: file.into(),
            level: s.quant.clone(),
            threads: 2,
            device: Device::Cpu,
            phase,
            n_prompt: 0,
            n_gen: 0,
            depth: 0,
            tokens_per_s: tps,
            shape: s,
            disturbed: false,
            by_shape: false,
            synthetic_shape: false,
        }
    }

    fn priors() -> Priors {
        Priors {
            host_bandwidth: Some(30e9),
            gpu_bandwidth: None,
            threads: 2,
        }
    }

    const NONE: Lengths = Lengths {
        n_prompt: 0,
        n_gen: 0,
        depth: 0,
    };

    /// Seconds per element on the machine the tests pretend to measure.
    fn truth(t: &str) -> f64 {
        match t {
            "F16" => 60e-12,
            "Q8_0" => 48e-12,
            "Q6_K" => 52e-12,
            "Q4_K" => 36e-12,
            _ => 40e-12,
        }
    }

    fn true_rate(mix: &[(&str, u64)], layers: u64) -> f64 {
        1.0 / (mix.iter().map(|(t, e)| *e as f64 * truth(t)).sum::<f64>() + layers as f64 * 20e-6)
    }

    #[test]
    fn a_ladder_pins_each_types_cost_and_carries_to_another_model() {
        // One model, 30 layers, its embedding in Q8_0 or F16 and its layers
        // in each level's type.
        let ladder = [
            ("F16", vec![("F16", 100_000_000)]),
            ("Q8_0", vec![("Q8_0", 100_000_000)]),
            ("Q6_K", vec![("Q8_0", 30_000_000), ("Q6_K", 70_000_000)]),
            (
                "Q4_K_M",
                vec![
                    ("Q8_0", 30_000_000),
                    ("Q6_K", 10_000_000),
                    ("Q4_K", 60_000_000),
                ],
            ),
        ];
        let obs: Vec<Observation> = ladder
            .iter()
            .map(|(q, mix)| obs(q, shape(q, mix, 30), Phase::Decode, true_rate(mix, 30)))
            .collect();
        let cal = Calibration::fit(&obs, priors());
        let f = cal.fit_for(Device::Cpu, Phase::Decode);
        for t in ["F16", "Q8_0", "Q6_K", "Q4_K"] {
            let c = f.type_cost[t];
            assert!((c / truth(t) - 1.0).abs() < 0.15, "{t}: {c}");
        }
        // Another model: 18 layers, a vocabulary twice as wide, another mix.
        let mix = [("Q6_K", 170_000_000), ("Q4_K", 100_000_000)];
        let other = shape("Q4_K_M", &mix, 18);
        let (e, basis) = predict_rate(&cal, &other, Some("x"), Phase::Decode, NONE, 0);
        let want = true_rate(&mix, 18);
        assert!(
            (e.tokens_per_s / want - 1.0).abs() < 0.08,
            "{} vs {want}",
            e.tokens_per_s
        );
        assert!(e.low < want && want < e.high);
        assert_eq!(basis.source, "machine");
        assert!(basis.level_seen && !basis.model_seen);
        assert_eq!(basis.text, "from 4 runs of 4 models on this machine");
        // A file already measured is predicted back as measured.
        let (again, b) = predict_rate(&cal, &obs[3].shape, Some("Q4_K_M"), Phase::Decode, NONE, 0);
        assert!((again.tokens_per_s / obs[3].tokens_per_s - 1.0).abs() < 1e-9);
        assert!(b.model_seen);
        assert!(
            again.high / again.low < e.high / e.low,
            "a measured file is surer"
        );
        assert!(!b.by_shape && !b.text.contains("by its shape"));
        // Measured by its twin instead (`--shape-only`): the same figure, and
        // the basis says how it was measured.
        let mut twins = obs.clone();
        twins[3].by_shape = true;
        let cal = Calibration::fit(&twins, priors());
        let (shaped, b) = predict_rate(
            &cal,
            &twins[3].shape,
            Some("Q4_K_M"),
            Phase::Decode,
            NONE,
            0,
        );
        assert!((shaped.tokens_per_s / twins[3].tokens_per_s - 1.0).abs() < 1e-9);
        assert!(b.model_seen && b.by_shape, "{b:?}");
        assert!(
            b.text
                .ends_with("measured by its shape (synthetic weights), not downloaded"),
            "{}",
            b.text
        );
        // A synthetic shape (`dyno synth --shape`) counts, and is named.
        let mut shaped = obs.clone();
        shaped[1].synthetic_shape = true;
        let cal = Calibration::fit(&shaped, priors());
        let (_, b) = predict_rate(&cal, &other, Some("x"), Phase::Decode, NONE, 0);
        assert_eq!(
            b.text,
            "from 4 runs of 4 models on this machine (1 of them a synthetic shape, dyno synth --shape)"
        );
        assert_eq!(
            cal.fit_for(Device::Cpu, Phase::Decode).synthetic,
            [obs[1].model_sha256.clone()]
        );
    }

    #[test]
    fn a_type_no_run_used_takes_its_prior_times_the_machines_ratio_and_says_so() {
        let mix = [("F16", 100_000_000u64)];
        let obs = vec![obs(
            "a",
            shape("F16", &mix, 30),
            Phase::Decode,
            true_rate(&mix, 30),
        )];
        let cal = Calibration::fit(&obs, priors());
        let f = cal.fit_for(Device::Cpu, Phase::Decode);
        let q2 = shape("Q2_K", &[("Q2_K", 100_000_000)], 30);
        let (e, basis) = predict_rate(&cal, &q2, None, Phase::Decode, NONE, 0);
        let want = 1.0 / (100e6 * f.prior_cost("Q2_K") * f.type_scale + 30.0 * f.b);
        assert!((e.tokens_per_s / want - 1.0).abs() < 1e-9);
        assert!(!basis.level_seen);
        assert!(
            basis.text.ends_with(", none with Q2_K tensors"),
            "{}",
            basis.text
        );
    }

    #[test]
    fn a_prefill_level_that_computes_slower_gets_its_own_factor() {
        let truth = |ops: f64, slow: f64| 1.0 / (slow * ops / 40e9 + 30.0 * 10e-6);
        let ladder: Vec<Observation> = [
            ("Q8_0", 140_000_000u64, 1.0),
            ("Q6_K", 110_000_000, 1.0),
            ("Q4_0", 80_000_000, 1.0),
            ("Q2_K", 60_000_000, 1.6),
        ]
        .iter()
        .map(|&(q, e, slow)| {
            let s = shape(q, &[(q, e)], 30);
            let ops = s.prefill_flops_per_token as f64;
            obs(q, s, Phase::Prefill, truth(ops, slow))
        })
        .collect();
        let cal = Calibration::fit(&ladder, priors());
        let f = cal.fit_for(Device::Cpu, Phase::Prefill);
        let q2 = f.level_factor["Q2_K"].0;
        let q8 = f.level_factor["Q8_0"].0;
        assert!(q2 > q8, "Q2_K {q2} Q8_0 {q8}");
        // The level's own run is predicted back closely.
        let (e, _) = predict_rate(&cal, &ladder[3].shape, None, Phase::Prefill, NONE, 0);
        assert!((e.tokens_per_s / ladder[3].tokens_per_s - 1.0).abs() < 0.02);
    }

    #[test]
    fn without_runs_the_prior_speaks_and_says_so() {
        let cal = Calibration::fit(&[], priors());
        let l = Lengths {
            n_prompt: 512,
            n_gen: 0,
            depth: 0,
        };
        let s = shape("Q4_K_M", &[("Q4_K", 7_000_000_000)], 32);
        let (d, basis) = predict_rate(&cal, &s, None, Phase::Decode, l, 0);
        // 7 G elements of 0.5625 bytes at 45% of 30 GB/s, plus 32 × 20 µs.
        let want = 1.0 / (7e9 * 0.5625 / 13.5e9 + 32.0 * 20e-6);
        assert!((d.tokens_per_s / want - 1.0).abs() < 1e-9);
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
        let s = shape("Q4_K_M", &[("Q4_K", 14_000_000_000)], 32);
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
        let bytes = 14e9 * 0.5625;
        let want = 1.0
            / (bytes / 2.0 / (0.45 * 20e9)
                + 16.0 * 20e-6
                + bytes / 2.0 / (0.7 * 500e9)
                + 16.0 * 10e-6);
        assert!((half / want - 1.0).abs() < 1e-9);
    }

    #[test]
    fn observations_at_other_thread_counts_are_left_out_when_some_match() {
        let mix = [("Q8_0", 100_000_000u64)];
        let mut a = obs("a", shape("Q8_0", &mix, 30), Phase::Decode, 50.0);
        a.threads = 8;
        let b = obs("b", shape("Q8_0", &mix, 30), Phase::Decode, 20.0);
        let cal = Calibration::fit(&[a, b], priors());
        let f = cal.fit_for(Device::Cpu, Phase::Decode);
        assert_eq!(f.n_obs, 1);
        assert_eq!(f.threads, Some(2));
    }

    #[test]
    fn disturbed_observations_count_only_where_nothing_clean_exists() {
        let mix = [("Q8_0", 100_000_000u64)];
        let mut slow = obs("m", shape("Q8_0", &mix, 30), Phase::Decode, 10.0);
        slow.disturbed = true;
        let clean = obs("m", shape("Q8_0", &mix, 30), Phase::Decode, 20.0);
        let s = shape("Q8_0", &mix, 30);
        let cal = Calibration::fit(&[slow.clone(), clean], priors());
        let (e, b) = predict_rate(&cal, &s, Some("m"), Phase::Decode, NONE, 0);
        assert!((e.tokens_per_s - 20.0).abs() < 1e-6);
        assert!(!b.text.contains("disturbed"));
        let cal = Calibration::fit(&[slow], priors());
        let (e, b) = predict_rate(&cal, &s, Some("m"), Phase::Decode, NONE, 0);
        assert!((e.tokens_per_s - 10.0).abs() < 1e-6);
        assert!(b.text.contains("disturbed"), "{}", b.text);
    }
}
