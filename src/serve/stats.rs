//! Percentiles with confidence intervals, for latencies.
//!
//! Latencies are skewed and often multi-modal (a queue forms, a cache
//! hits), so their tails are reported as percentiles rather than a mean
//! and standard deviation. Each percentile carries a distribution-free 95%
//! interval from order statistics: the ranks between which the true
//! quantile lies with 95% confidence, from the binomial distribution of how
//! many samples fall below it (normal approximation, the usual one for
//! this). With too few samples the interval does not exist and is left
//! out, rather than invented: p99 needs hundreds of requests.

use serde::{Deserialize, Serialize};

/// One percentile and its 95% interval (both ends, or neither).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Percentile {
    pub value: f64,
    pub ci95_low: Option<f64>,
    pub ci95_high: Option<f64>,
}

/// p50, p90 and p99 of one measure, with the count and mean behind them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Percentiles {
    pub n: usize,
    pub mean: f64,
    pub p50: Percentile,
    pub p90: Percentile,
    pub p99: Percentile,
    /// The largest value: what a tail of fewer than ten values is.
    #[serde(default)]
    pub max: f64,
}

/// The `q`-quantile (0..=1) by linear interpolation between closest ranks
/// (the definition numpy and most benchmark tools use by default).
pub fn quantile(sorted: &[f64], q: f64) -> f64 {
    let n = sorted.len();
    if n == 1 {
        return sorted[0];
    }
    let h = q * (n - 1) as f64;
    let lo = h.floor() as usize;
    let hi = (lo + 1).min(n - 1);
    sorted[lo] + (h - lo as f64) * (sorted[hi] - sorted[lo])
}

/// The quantile with its order-statistic interval. The interval is
/// `[x(l), x(u)]` with l, u = nq ∓ 1.96·√(nq(1−q)) rounded outward
/// (1-based ranks); it exists only when both ranks fall inside the sample.
pub fn percentile(sorted: &[f64], q: f64) -> Percentile {
    let n = sorted.len() as f64;
    let half = 1.96 * (n * q * (1.0 - q)).sqrt();
    let l = (n * q - half).floor();
    let u = (n * q + half).ceil() + 1.0;
    let inside = l >= 1.0 && u <= n;
    Percentile {
        value: quantile(sorted, q),
        ci95_low: inside.then(|| sorted[l as usize - 1]),
        ci95_high: inside.then(|| sorted[u as usize - 1]),
    }
}

/// Percentiles of the finite values; `None` when there are none.
pub fn percentiles(values: &[f64]) -> Option<Percentiles> {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    Some(Percentiles {
        n: v.len(),
        mean: v.iter().sum::<f64>() / v.len() as f64,
        p50: percentile(&v, 0.5),
        p90: percentile(&v, 0.9),
        p99: percentile(&v, 0.99),
        max: v[v.len() - 1],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_interpolate_between_ranks() {
        let v = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(quantile(&v, 0.5), 2.5);
        assert_eq!(quantile(&v, 0.0), 1.0);
        assert_eq!(quantile(&v, 1.0), 4.0);
        assert!((quantile(&v, 0.9) - 3.7).abs() < 1e-12);
    }

    #[test]
    fn the_median_interval_of_100_samples_spans_the_expected_ranks() {
        // n=100, q=0.5: 50 ∓ 1.96·5 = 40.2..59.8 → ranks 40 and 61.
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        let p = percentile(&v, 0.5);
        assert_eq!(p.value, 50.5);
        assert_eq!((p.ci95_low, p.ci95_high), (Some(40.0), Some(61.0)));
        // The interval contains the estimate.
        assert!(p.ci95_low.unwrap() <= p.value && p.value <= p.ci95_high.unwrap());
    }

    #[test]
    fn a_tail_percentile_of_few_samples_has_no_interval() {
        let v: Vec<f64> = (1..=10).map(f64::from).collect();
        let p = percentile(&v, 0.99);
        assert_eq!((p.ci95_low, p.ci95_high), (None, None));
        assert!(p.value > 9.0 && p.value <= 10.0);
    }

    #[test]
    fn the_median_gets_an_interval_from_eight_samples() {
        // The app's table says so beside an empty interval.
        let seven: Vec<f64> = (1..=7).map(f64::from).collect();
        let eight: Vec<f64> = (1..=8).map(f64::from).collect();
        assert_eq!(percentile(&seven, 0.5).ci95_low, None);
        assert_eq!(percentile(&eight, 0.5).ci95_low, Some(1.0));
        assert_eq!(percentile(&eight, 0.5).ci95_high, Some(8.0));
    }

    #[test]
    fn non_finite_values_are_left_out() {
        let p = percentiles(&[f64::NAN, 2.0, f64::INFINITY, 4.0]).unwrap();
        assert_eq!(p.n, 2);
        assert_eq!(p.mean, 3.0);
        assert!(percentiles(&[f64::NAN]).is_none());
    }
}
