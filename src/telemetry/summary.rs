//! Summaries of telemetry samples: pure functions, so energy arithmetic
//! (counter deltas, wrap-around, the fallback from power readings) can be
//! checked by hand.

use serde::{Deserialize, Serialize};

use super::Reading;

/// NVML throttle-reason bits that do not mean the GPU was held back: idle,
/// application clock setting, and sync boost (a multi-GPU clock pairing).
const BENIGN_THROTTLE_BITS: u64 = 0x1 | 0x2 | 0x10;

/// Energy between two readings of a counter that wraps at `range`
/// (RAPL's `max_energy_range_uj`); `None` for a counter that went backwards
/// without a known range (a reset), which says nothing about energy.
pub fn counter_delta(prev: u64, cur: u64, range: Option<u64>) -> Option<u64> {
    if cur >= prev {
        Some(cur - prev)
    } else {
        range.filter(|r| *r > prev).map(|r| r - prev + cur)
    }
}

/// How an energy figure was obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "snake_case")]
pub enum EnergyMethod {
    /// From hardware energy counters (RAPL, NVML total energy).
    Counter,
    /// Mean of instantaneous power readings times the timed duration: a
    /// fallback where no counter exists, less exact.
    PowerTimesTime,
}

/// What the machine did during one stretch of samples.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[cfg_attr(feature = "ts", ts(rename = "TimedWindow"))]
pub struct Window {
    pub samples: usize,
    pub cpu_util_mean_pct: Option<f64>,
    pub rss_peak_bytes: Option<u64>,
    pub ram_used_peak_bytes: Option<u64>,
    pub vram_peak_bytes: Option<u64>,
    pub cpu_temp_max_c: Option<f64>,
    pub gpu_temp_max_c: Option<f64>,
    pub gpu_util_mean_pct: Option<f64>,
    pub gpu_power_mean_w: Option<f64>,
    pub gpu_power_peak_w: Option<f64>,
    pub cpu_package_power_mean_w: Option<f64>,
    pub cpu_package_power_peak_w: Option<f64>,
    /// GPU throttle reasons seen (NVML bit mask, benign bits removed);
    /// `None` where no GPU reports them.
    pub gpu_throttle_reasons: Option<u64>,
    /// The GPU's streaming-multiprocessor and memory clocks over the window:
    /// a GPU figure taken at lowered clocks is not the card's speed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub gpu_sm_clock_mean_mhz: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub gpu_mem_clock_mean_mhz: Option<f64>,
}

fn mean(v: impl Iterator<Item = f64>) -> Option<f64> {
    let (s, n) = v.fold((0.0, 0usize), |(s, n), x| (s + x, n + 1));
    (n > 0).then(|| s / n as f64)
}

fn max_f(v: impl Iterator<Item = f64>) -> Option<f64> {
    v.fold(None, |m: Option<f64>, x| Some(m.map_or(x, |m| m.max(x))))
}

/// Power in watts between consecutive readings of an energy counter in
/// `unit_j` joules per count (1e-6 for RAPL µJ, 1e-3 for NVML mJ).
fn counter_powers(
    r: &[Reading],
    get: impl Fn(&Reading) -> Option<u64>,
    range: Option<u64>,
    unit_j: f64,
) -> Vec<f64> {
    r.windows(2)
        .filter_map(|w| {
            let (a, b) = (get(&w[0])?, get(&w[1])?);
            let dt_s = (w[1].t_ms - w[0].t_ms) / 1e3;
            let d = counter_delta(a, b, range)?;
            (dt_s > 0.0).then(|| d as f64 * unit_j / dt_s)
        })
        .collect()
}

/// Summarise a stretch of readings. `rapl_range` is the package counter's
/// wrap-around range.
pub fn window(r: &[Reading], rapl_range: Option<u64>) -> Window {
    let cpu_power = counter_powers(r, |x| x.cpu_energy_uj, rapl_range, 1e-6);
    let gpu_counter_power = counter_powers(r, |x| x.gpu_energy_mj, None, 1e-3);
    let gpu_power: Vec<f64> = if gpu_counter_power.is_empty() {
        r.iter()
            .filter_map(|x| x.gpu_power_mw.map(|p| p as f64 / 1e3))
            .collect()
    } else {
        gpu_counter_power
    };
    let throttle = r
        .iter()
        .filter_map(|x| x.gpu_throttle)
        .fold(None, |a: Option<u64>, b| Some(a.unwrap_or(0) | b));
    Window {
        samples: r.len(),
        cpu_util_mean_pct: mean(r.iter().filter_map(|x| x.cpu_util_pct.map(f64::from))),
        rss_peak_bytes: r.iter().filter_map(|x| x.worker_rss_bytes).max(),
        ram_used_peak_bytes: r.iter().filter_map(|x| x.ram_used_bytes).max(),
        vram_peak_bytes: r.iter().filter_map(|x| x.gpu_mem_used_bytes).max(),
        cpu_temp_max_c: max_f(r.iter().filter_map(|x| x.cpu_temp_c.map(f64::from))),
        gpu_temp_max_c: max_f(r.iter().filter_map(|x| x.gpu_temp_c.map(f64::from))),
        gpu_util_mean_pct: mean(r.iter().filter_map(|x| x.gpu_util_pct.map(f64::from))),
        gpu_power_mean_w: mean(gpu_power.iter().copied()),
        gpu_power_peak_w: max_f(gpu_power.iter().copied()),
        cpu_package_power_mean_w: mean(cpu_power.iter().copied()),
        cpu_package_power_peak_w: max_f(cpu_power.iter().copied()),
        gpu_throttle_reasons: throttle.map(|t| t & !BENIGN_THROTTLE_BITS),
        gpu_sm_clock_mean_mhz: mean(r.iter().filter_map(|x| x.gpu_sm_clock_mhz.map(f64::from))),
        gpu_mem_clock_mean_mhz: mean(r.iter().filter_map(|x| x.gpu_mem_clock_mhz.map(f64::from))),
    }
}

/// Energy of a timed region.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Energy {
    pub energy_j: f64,
    pub cpu_package_energy_j: Option<f64>,
    pub gpu_energy_j: Option<f64>,
    pub method: EnergyMethod,
    pub tokens_per_j: Option<f64>,
}

/// Energy of a timed region lasting `timed_s` seconds (the sum of its
/// repetitions' clocks), from the readings taken during it. The counters
/// give mean power over the readings' span, which is scaled to the exact
/// timed duration, so the 100 ms sampling grid does not clip the ends.
/// `tokens` is how many tokens the region processed.
pub fn energy(r: &[Reading], rapl_range: Option<u64>, timed_s: f64, tokens: u64) -> Option<Energy> {
    let span =
        |get: &dyn Fn(&Reading) -> Option<u64>, range: Option<u64>, unit_j: f64| -> Option<f64> {
            let pts: Vec<(f64, u64)> = r
                .iter()
                .filter_map(|x| get(x).map(|v| (x.t_ms, v)))
                .collect();
            let (first, last) = (pts.first()?, pts.last()?);
            let dt_s = (last.0 - first.0) / 1e3;
            if dt_s <= 0.0 {
                return None;
            }
            // Sum deltas pairwise so a wrap in the middle is handled.
            let total: u64 = pts
                .windows(2)
                .map(|w| counter_delta(w[0].1, w[1].1, range))
                .sum::<Option<u64>>()?;
            Some(total as f64 * unit_j / dt_s * timed_s)
        };
    let cpu = span(&|x| x.cpu_energy_uj, rapl_range, 1e-6);
    let gpu_counter = span(&|x| x.gpu_energy_mj, None, 1e-3);
    let (gpu, gpu_method) = match gpu_counter {
        Some(g) => (Some(g), EnergyMethod::Counter),
        None => {
            let w = mean(
                r.iter()
                    .filter_map(|x| x.gpu_power_mw.map(|p| p as f64 / 1e3)),
            );
            (w.map(|w| w * timed_s), EnergyMethod::PowerTimesTime)
        }
    };
    let energy_j = match (cpu, gpu) {
        (None, None) => return None,
        (c, g) => c.unwrap_or(0.0) + g.unwrap_or(0.0),
    };
    let method = if gpu.is_some() && gpu_method == EnergyMethod::PowerTimesTime {
        EnergyMethod::PowerTimesTime
    } else {
        EnergyMethod::Counter
    };
    Some(Energy {
        energy_j,
        cpu_package_energy_j: cpu,
        gpu_energy_j: gpu,
        method,
        tokens_per_j: (energy_j > 0.0).then(|| tokens as f64 / energy_j),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(t_ms: f64) -> Reading {
        Reading {
            t_ms,
            ..Reading::default()
        }
    }

    #[test]
    fn counter_delta_handles_wrap_and_reset() {
        assert_eq!(counter_delta(100, 250, None), Some(150));
        // RAPL wraps at its range: 990 -> 40 with range 1000 is 50.
        assert_eq!(counter_delta(990, 40, Some(1000)), Some(50));
        // Backwards with no known range is a reset: no figure.
        assert_eq!(counter_delta(990, 40, None), None);
    }

    #[test]
    fn rapl_energy_is_counter_power_times_timed_duration() {
        // 10 W package: 1 J (1e6 µJ) every 100 ms, across a wrap at 2.5e6.
        let range = 2_500_000;
        let r: Vec<Reading> = (0..5)
            .map(|i| Reading {
                cpu_energy_uj: Some((i * 1_000_000) % range),
                ..at(i as f64 * 100.0)
            })
            .collect();
        let w = window(&r, Some(range));
        assert!((w.cpu_package_power_mean_w.unwrap() - 10.0).abs() < 1e-9);
        // Timed region of 2 s at 10 W = 20 J; 100 tokens -> 5 tokens/J.
        let e = energy(&r, Some(range), 2.0, 100).unwrap();
        assert!((e.energy_j - 20.0).abs() < 1e-9);
        assert_eq!(e.method, EnergyMethod::Counter);
        assert!((e.tokens_per_j.unwrap() - 5.0).abs() < 1e-9);
        assert!(e.gpu_energy_j.is_none());
    }

    #[test]
    fn gpu_power_readings_are_the_marked_fallback() {
        // No energy counter; 200 W and 300 W readings -> 250 W x 4 s = 1000 J.
        let r = vec![
            Reading {
                gpu_power_mw: Some(200_000),
                ..at(0.0)
            },
            Reading {
                gpu_power_mw: Some(300_000),
                ..at(100.0)
            },
        ];
        let e = energy(&r, None, 4.0, 500).unwrap();
        assert_eq!(e.method, EnergyMethod::PowerTimesTime);
        assert!((e.energy_j - 1000.0).abs() < 1e-9);
        assert!((e.tokens_per_j.unwrap() - 0.5).abs() < 1e-12);
    }

    #[test]
    fn nothing_readable_gives_none_not_zero() {
        let r = vec![at(0.0), at(100.0)];
        assert!(energy(&r, None, 1.0, 10).is_none());
        let w = window(&r, None);
        assert_eq!(w.samples, 2);
        assert!(
            w.cpu_package_power_mean_w.is_none()
                && w.vram_peak_bytes.is_none()
                && w.gpu_throttle_reasons.is_none()
        );
    }

    #[test]
    fn peaks_means_and_throttle_bits() {
        let r = vec![
            Reading {
                cpu_util_pct: Some(50.0),
                worker_rss_bytes: Some(10),
                gpu_throttle: Some(0x1),
                ..at(0.0)
            },
            Reading {
                cpu_util_pct: Some(100.0),
                worker_rss_bytes: Some(30),
                gpu_throttle: Some(0x40),
                ..at(100.0)
            },
        ];
        let w = window(&r, None);
        assert_eq!(w.cpu_util_mean_pct, Some(75.0));
        assert_eq!(w.rss_peak_bytes, Some(30));
        // Idle (0x1) is benign; HW thermal slowdown (0x40) is throttling.
        assert_eq!(w.gpu_throttle_reasons, Some(0x40));
    }
}
