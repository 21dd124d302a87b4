//! Summary statistics over the repetitions of one test.
//!
//! Pure functions only, so they can be checked against values worked out by
//! hand. Every sample is kept in the store; these summaries are derived views
//! and can always be recomputed.

use serde::{Deserialize, Serialize};

/// Mean, spread and a confidence interval for a set of samples. It holds
/// no count: whoever keeps a summary keeps the samples it came from (as
/// [`crate::bench::figures::Figures`] does, flattening this into its JSON),
/// and their length is the count.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Summary {
    pub mean: f64,
    /// Sample standard deviation (Bessel's n−1); 0 for a single sample.
    pub stddev: f64,
    pub median: f64,
    pub min: f64,
    pub max: f64,
    /// Half-width of the two-sided 95% confidence interval of the mean
    /// (Student's t with n−1 degrees of freedom). `None` below two samples,
    /// where no interval exists.
    pub ci95: Option<f64>,
    /// Indices of samples flagged by the modified Z-score (see [`outliers`]).
    pub outliers: Vec<usize>,
}

/// Summarise samples. Returns `None` for an empty slice or non-finite values,
/// so garbage never turns into a figure.
pub fn summarize(samples: &[f64]) -> Option<Summary> {
    if samples.is_empty() || samples.iter().any(|x| !x.is_finite()) {
        return None;
    }
    let n = samples.len();
    let mean = mean(samples);
    let sd = stddev(samples, mean);
    let min = samples.iter().copied().fold(f64::INFINITY, f64::min);
    let max = samples.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    Some(Summary {
        mean,
        stddev: sd,
        median: median(samples),
        min,
        max,
        ci95: (n >= 2).then(|| t_critical_975(n - 1) * sd / (n as f64).sqrt()),
        outliers: outliers(samples),
    })
}

pub fn mean(samples: &[f64]) -> f64 {
    samples.iter().sum::<f64>() / samples.len() as f64
}

/// Sample standard deviation with Bessel's correction (n−1), as llama-bench
/// reports it.
pub fn stddev(samples: &[f64], mean: f64) -> f64 {
    if samples.len() < 2 {
        return 0.0;
    }
    let ss: f64 = samples.iter().map(|x| (x - mean).powi(2)).sum();
    (ss / (samples.len() - 1) as f64).sqrt()
}

pub fn median(samples: &[f64]) -> f64 {
    let mut v = samples.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Indices of outliers by the modified Z-score of Iglewicz and Hoaglin (1993):
/// `M_i = 0.6745 (x_i − median) / MAD`, flagged when `|M_i| > 3.5`.
///
/// The median and the median absolute deviation (MAD) are robust, so one wild
/// repetition (a background job, a frequency drop) cannot hide itself by
/// inflating the spread, as it would with a mean-based Z-score. With a MAD of
/// zero (most samples identical) nothing is flagged: the score is undefined.
pub fn outliers(samples: &[f64]) -> Vec<usize> {
    if samples.len() < 3 {
        return Vec::new();
    }
    let med = median(samples);
    let deviations: Vec<f64> = samples.iter().map(|x| (x - med).abs()).collect();
    let mad = median(&deviations);
    if mad == 0.0 {
        return Vec::new();
    }
    samples
        .iter()
        .enumerate()
        .filter(|(_, x)| (0.6745 * (*x - med) / mad).abs() > 3.5)
        .map(|(i, _)| i)
        .collect()
}

/// The 0.975 quantile of Student's t distribution with `df` degrees of
/// freedom, for a two-sided 95% interval.
///
/// Exact table values for df 1–30 (as printed in any statistics text); above
/// that, linear interpolation in 1/df between 30, 40, 60, 120 and infinity,
/// which is accurate to better than 0.001.
pub fn t_critical_975(df: usize) -> f64 {
    const TABLE: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
        2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
        2.052, 2.048, 2.045, 2.042,
    ];
    const TAIL: [(f64, f64); 5] = [
        (30.0, 2.042),
        (40.0, 2.021),
        (60.0, 2.000),
        (120.0, 1.980),
        (f64::INFINITY, 1.960),
    ];
    match df {
        0 => f64::NAN,
        1..=30 => TABLE[df - 1],
        _ => {
            let inv = 1.0 / df as f64;
            for w in TAIL.windows(2) {
                let (d0, t0) = w[0];
                let (d1, t1) = w[1];
                if (df as f64) <= d1 {
                    let (i0, i1) = (1.0 / d0, if d1.is_infinite() { 0.0 } else { 1.0 / d1 });
                    return t0 + (t1 - t0) * (i0 - inv) / (i0 - i1);
                }
            }
            1.960
        }
    }
}

/// Welch's t-test of two samples with unequal variances: the statistic,
/// the Welch–Satterthwaite degrees of freedom and the two-sided p-value.
/// `None` with fewer than two values on a side, or no variance at all.
pub fn welch(a: &[f64], b: &[f64]) -> Option<(f64, f64, f64)> {
    if a.len() < 2 || b.len() < 2 {
        return None;
    }
    let (ma, mb) = (mean(a), mean(b));
    let (va, vb) = (stddev(a, ma).powi(2), stddev(b, mb).powi(2));
    let (na, nb) = (a.len() as f64, b.len() as f64);
    let se2 = va / na + vb / nb;
    if se2 <= 0.0 || !se2.is_finite() {
        return None;
    }
    let t = (mb - ma) / se2.sqrt();
    let df = se2.powi(2) / ((va / na).powi(2) / (na - 1.0) + (vb / nb).powi(2) / (nb - 1.0));
    // Two-sided p of Student's t: I_{df/(df+t²)}(df/2, 1/2).
    let p = incomplete_beta(df / 2.0, 0.5, df / (df + t * t));
    Some((t, df, p.clamp(0.0, 1.0)))
}

/// Holm's step-down adjustment of p-values for testing several hypotheses
/// at once (Holm 1979, "A simple sequentially rejective multiple test
/// procedure"): sort the m p-values ascending, multiply the i-th smallest by
/// (m − i), carry the running maximum so the order is kept, cap at 1.
/// Comparing 20 tests at 5% each finds one "significant" difference by chance
/// alone; Holm keeps the chance of any false finding at 5%, and unlike
/// Bonferroni it loses little power. `None` entries (too few repetitions) are
/// not tests and do not count in m.
pub fn holm(p: &[Option<f64>]) -> Vec<Option<f64>> {
    let mut idx: Vec<usize> = (0..p.len()).filter(|&i| p[i].is_some()).collect();
    idx.sort_by(|&a, &b| p[a].unwrap().total_cmp(&p[b].unwrap()));
    let m = idx.len();
    let mut out = vec![None; p.len()];
    let mut running: f64 = 0.0;
    for (rank, &i) in idx.iter().enumerate() {
        let adj = (p[i].unwrap() * (m - rank) as f64).min(1.0);
        running = running.max(adj);
        out[i] = Some(running);
    }
    out
}

/// ln Γ(x) for x > 0 (Lanczos, g = 7, 9 terms; about 15 digits).
fn ln_gamma(x: f64) -> f64 {
    const C: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        // Reflection.
        let pi = std::f64::consts::PI;
        return (pi / (pi * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut a = C[0];
    let t = x + 7.5;
    for (i, c) in C.iter().enumerate().skip(1) {
        a += c / (x + i as f64);
    }
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + a.ln()
}

/// The regularized incomplete beta function I_x(a, b), by its continued
/// fraction (modified Lentz), using the symmetry that makes it converge.
fn incomplete_beta(a: f64, b: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let front =
        (ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (1.0 - x).ln()).exp();
    if x > (a + 1.0) / (a + b + 2.0) {
        return 1.0 - incomplete_beta(b, a, 1.0 - x);
    }
    let tiny = 1e-300;
    let (mut c, mut d) = (1.0, 1.0 - (a + b) * x / (a + 1.0));
    if d.abs() < tiny {
        d = tiny;
    }
    d = 1.0 / d;
    let mut f = d;
    for m in 1..300 {
        let m = m as f64;
        let num = m * (b - m) * x / ((a + 2.0 * m - 1.0) * (a + 2.0 * m));
        d = 1.0 + num * d;
        d = if d.abs() < tiny { 1.0 / tiny } else { 1.0 / d };
        c = 1.0 + num / c;
        if c.abs() < tiny {
            c = tiny;
        }
        f *= c * d;
        let num = -(a + m) * (a + b + m) * x / ((a + 2.0 * m) * (a + 2.0 * m + 1.0));
        d = 1.0 + num * d;
        d = if d.abs() < tiny { 1.0 / tiny } else { 1.0 / d };
        c = 1.0 + num / c;
        if c.abs() < tiny {
            c = tiny;
        }
        let delta = c * d;
        f *= delta;
        if (delta - 1.0).abs() < 1e-15 {
            break;
        }
    }
    front * f / a
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    #[test]
    fn summary_of_five_samples_matches_hand_computation() {
        // By hand: mean = 50/5 = 10; squared deviations 4,1,0,1,4 -> 10;
        // s = sqrt(10/4) = 1.5811; ci = 2.776 * 1.5811 / sqrt(5) = 1.9629.
        let s = summarize(&[8.0, 9.0, 10.0, 11.0, 12.0]).unwrap();
        assert!(close(s.mean, 10.0, 1e-12));
        assert!(close(s.stddev, 1.581_138_8, 1e-6));
        assert!(close(s.median, 10.0, 1e-12));
        assert_eq!((s.min, s.max), (8.0, 12.0));
        assert!(close(s.ci95.unwrap(), 1.962_9, 1e-4));
        assert!(s.outliers.is_empty());
    }

    #[test]
    fn even_count_median_is_mean_of_middle_pair() {
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), 2.5);
    }

    #[test]
    fn single_sample_has_no_interval_and_zero_spread() {
        let s = summarize(&[42.0]).unwrap();
        assert_eq!(s.stddev, 0.0);
        assert_eq!(s.ci95, None);
    }

    #[test]
    fn empty_or_non_finite_samples_give_no_summary() {
        assert!(summarize(&[]).is_none());
        assert!(summarize(&[1.0, f64::NAN]).is_none());
        assert!(summarize(&[1.0, f64::INFINITY]).is_none());
    }

    #[test]
    fn modified_z_flags_the_wild_repetition() {
        // median = 100, |dev| = 1,0,1,0,50 -> MAD = 1;
        // M(150) = 0.6745 * 50 / 1 = 33.7 > 3.5; M(101) = 0.67.
        let samples = [99.0, 100.0, 101.0, 100.0, 150.0];
        assert_eq!(outliers(&samples), vec![4]);
    }

    #[test]
    fn zero_mad_flags_nothing() {
        assert!(outliers(&[5.0, 5.0, 5.0, 9.0]).is_empty());
    }

    #[test]
    fn t_quantiles_match_tables() {
        assert_eq!(t_critical_975(1), 12.706);
        assert_eq!(t_critical_975(4), 2.776);
        assert_eq!(t_critical_975(30), 2.042);
        assert!(close(t_critical_975(40), 2.021, 1e-9));
        assert!(close(t_critical_975(60), 2.000, 1e-9));
        // Tabulated t(0.975, 50) = 2.009.
        assert!(close(t_critical_975(50), 2.009, 0.002));
        assert!(close(t_critical_975(100_000), 1.960, 0.001));
        assert!(t_critical_975(0).is_nan());
    }

    #[test]
    fn holm_adjusts_in_step_down_order() {
        // m = 4, ascending 0.01×4 = 0.04, 0.03×3 = 0.09, 0.04×2 = 0.08
        // (raised to 0.09 to keep the order), 0.2×1.
        let p = holm(&[Some(0.04), None, Some(0.01), Some(0.2), Some(0.03)]);
        let want = [Some(0.09), None, Some(0.04), Some(0.2), Some(0.09)];
        for (got, want) in p.iter().zip(want) {
            match (got, want) {
                (Some(g), Some(w)) => assert!((g - w).abs() < 1e-12, "{p:?}"),
                (g, w) => assert_eq!(*g, w),
            }
        }
        assert_eq!(holm(&[Some(0.6), Some(0.7)]), [Some(1.0), Some(1.0)]);
        assert!(holm(&[]).is_empty());
    }

    #[test]
    fn welch_matches_known_values() {
        // Equal variances and sizes: t = 5, df = 8, two-sided p = 0.0010528.
        let (t, df, p) = welch(&[1.0, 2.0, 3.0, 4.0, 5.0], &[6.0, 7.0, 8.0, 9.0, 10.0]).unwrap();
        assert!(
            (t - 5.0).abs() < 1e-12 && (df - 8.0).abs() < 1e-9,
            "{t} {df}"
        );
        assert!((p - 0.001_052_8).abs() < 2e-6, "{p}");
        // t = 1 with df = 1 (a Cauchy distribution): p = 0.5 exactly.
        assert!((incomplete_beta(0.5, 0.5, 0.5) - 0.5).abs() < 1e-12);
        // No difference, p = 1; too few values, no test.
        let (_, _, p) = welch(&[1.0, 2.0, 3.0], &[1.0, 2.0, 3.0]).unwrap();
        assert!((p - 1.0).abs() < 1e-12);
        assert!(welch(&[1.0], &[2.0, 3.0]).is_none());
        assert!(welch(&[1.0, 1.0], &[1.0, 1.0]).is_none());
    }
}
