//! Sustained speed: what a machine decodes after minutes of work, not in
//! the first seconds. Laptops throttle: back-to-back trials on a MacBook Air
//! fell from 21.1 to 17.5 t/s, and a five-repetition benchmark sees only
//! the burst. `dyno bench --sustain MINUTES` decodes back to back for that
//! long; this module turns its repetitions, the telemetry read beside them
//! and what other programs used into a rate over time, the burst and
//! sustained rates, the moment of the drop and its likely cause.
//!
//! Pure functions over recorded series, so the rules can be checked on
//! series written by hand (a clock that falls, a program that starts).

use serde::{Deserialize, Serialize};

use super::disturbance::ProcessLoad;
use super::Reading;

/// The burst window: a benchmark of a few repetitions lasts about this long.
/// Fixed, not a share of the run: a fifth of a ten-minute run is two
/// minutes, and a laptop that throttles after one would show half its drop.
pub const BURST_S: f64 = 15.0;

/// A drop smaller than this share of the burst rate is the machine's noise,
/// not a drop (quiet runs here spread by up to 4%).
pub const DROP_PCT: f64 = 5.0;

/// Points of the series are at least this long: one a second, as a person
/// reads a rate, whatever the length of one repetition.
const BIN_S: f64 = 1.0;

/// A clock that fell by this share between the burst and the drop explains
/// a drop as throttling.
const CLOCK_FALL_PCT: f64 = 5.0;

/// Other programs taking this share of the cores in use more after the drop
/// than before explain it as contention.
const CONTENTION_SHARE: f64 = 0.25;

/// NVML throttle reasons that hold a GPU back for heat or power: software
/// power cap, hardware slowdown, software and hardware thermal, power brake.
const GPU_HELD_BACK_BITS: u64 = 0x4 | 0x8 | 0x20 | 0x40 | 0x80;

/// One repetition of the sustained decode: when it ended (seconds since
/// the timed phase began), the tokens it decoded and how long they took.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rep {
    pub end_s: f64,
    pub tokens: u32,
    pub decode_s: f64,
}

/// What other programs used over one window of the timed phase.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoadWindow {
    pub start_s: f64,
    pub end_s: f64,
    pub others_cpu_cores: f64,
    pub top: Vec<ProcessLoad>,
}

/// One second (or one repetition, when longer) of the sustained decode,
/// with the machine's state over it. Telemetry fields are null where the
/// machine does not expose them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct SustainPoint {
    /// Seconds since the timed phase began, at the end of the point.
    pub t_s: f64,
    pub tokens_per_s: f64,
    pub cpu_freq_mhz: Option<f64>,
    pub cpu_temp_c: Option<f64>,
    pub gpu_sm_clock_mhz: Option<f64>,
    pub gpu_temp_c: Option<f64>,
    pub gpu_power_w: Option<f64>,
    /// Cores other programs kept busy.
    pub others_cpu_cores: Option<f64>,
}

/// Why the rate fell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "snake_case")]
pub enum DropCause {
    /// Clocks fell, or the GPU reported thermal or power limits.
    Throttling,
    /// Other programs took the cores.
    Contention,
    /// Both at once.
    Both,
    /// Neither was seen: the machine exposes no clocks, or something else
    /// (memory, another guest on the host) slowed it.
    Unexplained,
}

/// A sustained decode, summarised.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Sustained {
    pub duration_s: f64,
    /// Median rate over the first [`BURST_S`] seconds (the first third of a
    /// shorter run): what a short benchmark reports, whatever the run's
    /// length, so a chip that throttles after a minute shows its whole drop.
    pub burst_tokens_per_s: f64,
    /// The seconds the burst is the median of.
    #[serde(default)]
    pub burst_window_s: f64,
    /// Median rate over the last third: what the machine keeps up.
    pub sustained_tokens_per_s: f64,
    /// How far the sustained rate is below the burst, in percent (negative
    /// when it rose).
    pub drop_pct: f64,
    /// Seconds until the rate fell half way from burst to sustained; null
    /// when it did not fall by [`DROP_PCT`].
    pub time_to_drop_s: Option<f64>,
    pub cause: Option<DropCause>,
    /// What was seen, one sentence each; empty without a drop.
    pub reasons: Vec<String>,
    pub series: Vec<SustainPoint>,
}

/// Bin repetitions into points of at least [`BIN_S`]: tokens over decode
/// time within the bin, placed at the bin's end.
pub fn rate_series(reps: &[Rep]) -> Vec<(f64, f64)> {
    let mut out = Vec::new();
    let (mut tokens, mut secs, mut start) = (0u64, 0.0, 0.0);
    for r in reps {
        tokens += u64::from(r.tokens);
        secs += r.decode_s;
        if r.end_s - start >= BIN_S && secs > 0.0 {
            out.push((r.end_s, tokens as f64 / secs));
            tokens = 0;
            secs = 0.0;
            start = r.end_s;
        }
    }
    // A tail shorter than a bin is dropped unless it is all there is.
    if out.is_empty() && secs > 0.0 {
        if let Some(last) = reps.last() {
            out.push((last.end_s, tokens as f64 / secs));
        }
    }
    out
}

fn median(v: &mut [f64]) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

fn mean(v: impl Iterator<Item = f64>) -> Option<f64> {
    let (s, n) = v.fold((0.0, 0usize), |(s, n), x| (s + x, n + 1));
    (n > 0).then(|| s / n as f64)
}

/// The telemetry readings of the timed phase, on the timed phase's clock:
/// the first timed reading is its start (readings come every 100 ms, so
/// this is as close as they can place it).
fn timed_readings(readings: &[Reading]) -> Vec<(f64, &Reading)> {
    let timed: Vec<&Reading> = readings
        .iter()
        .filter(|r| r.phase == super::Phase::Timed)
        .collect();
    let Some(t0) = timed.first().map(|r| r.t_ms) else {
        return Vec::new();
    };
    timed
        .into_iter()
        .map(|r| ((r.t_ms - t0) / 1e3, r))
        .collect()
}

/// The state over `(a, b]`: mean of each source that gave readings.
fn state_over(readings: &[(f64, &Reading)], loads: &[LoadWindow], a: f64, b: f64) -> SustainPoint {
    let inside: Vec<&Reading> = readings
        .iter()
        .filter(|(t, _)| *t > a && *t <= b)
        .map(|(_, r)| *r)
        .collect();
    let f = |g: &dyn Fn(&Reading) -> Option<f64>| mean(inside.iter().filter_map(|r| g(r)));
    // Load windows overlapping the span, weighted by their overlap.
    let (mut w, mut sum) = (0.0, 0.0);
    for l in loads {
        let o = l.end_s.min(b) - l.start_s.max(a);
        if o > 0.0 {
            w += o;
            sum += o * l.others_cpu_cores;
        }
    }
    SustainPoint {
        t_s: b,
        tokens_per_s: 0.0,
        cpu_freq_mhz: f(&|r| r.cpu_freq_mhz.map(|v| v as f64)),
        cpu_temp_c: f(&|r| r.cpu_temp_c.map(f64::from)),
        gpu_sm_clock_mhz: f(&|r| r.gpu_sm_clock_mhz.map(f64::from)),
        gpu_temp_c: f(&|r| r.gpu_temp_c.map(f64::from)),
        gpu_power_w: f(&|r| r.gpu_power_mw.map(|v| v as f64 / 1e3)),
        others_cpu_cores: (w > 0.0).then(|| sum / w),
    }
}

/// Summarise a sustained decode from its repetitions, the run's telemetry
/// (any phase; only timed readings are used) and what other programs used
/// in windows of the timed phase. `cores_in_use` is the test's threads.
/// `None` when there are no repetitions.
pub fn analyse(
    reps: &[Rep],
    readings: &[Reading],
    loads: &[LoadWindow],
    cores_in_use: u32,
) -> Option<Sustained> {
    let rates = rate_series(reps);
    let duration_s = reps.last()?.end_s;
    let timed = timed_readings(readings);
    let mut series = Vec::with_capacity(rates.len());
    let mut prev = 0.0;
    for &(t, rate) in &rates {
        series.push(SustainPoint {
            tokens_per_s: rate,
            ..state_over(&timed, loads, prev, t)
        });
        prev = t;
    }
    let burst_end = BURST_S.min(duration_s / 3.0);
    let last_third = duration_s * 2.0 / 3.0;
    let pick = |keep: &dyn Fn(usize, &SustainPoint) -> bool| {
        let mut v: Vec<f64> = series
            .iter()
            .enumerate()
            .filter(|(i, p)| keep(*i, p))
            .map(|(_, p)| p.tokens_per_s)
            .collect();
        median(&mut v)
    };
    // At least the first three points make the burst, so a short run or
    // long repetitions still have one.
    let burst = pick(&|i, p| p.t_s <= burst_end || i < 3)?;
    let sustained = pick(&|_, p| p.t_s > last_third).unwrap_or(burst);
    let drop_pct = if burst > 0.0 {
        (1.0 - sustained / burst) * 100.0
    } else {
        0.0
    };
    let mut out = Sustained {
        duration_s,
        burst_tokens_per_s: burst,
        burst_window_s: burst_end,
        sustained_tokens_per_s: sustained,
        drop_pct,
        time_to_drop_s: None,
        cause: None,
        reasons: Vec::new(),
        series,
    };
    if drop_pct < DROP_PCT {
        return Some(out);
    }
    // The drop is where a rolling median of three points first falls past
    // half way from burst to sustained, so one slow second is not a drop.
    let half = burst - (burst - sustained) / 2.0;
    // The point itself must be slow too, or the drop would be placed one
    // point early.
    let drop_at = (0..out.series.len()).find(|&i| {
        let mut w: Vec<f64> = out.series[i..(i + 3).min(out.series.len())]
            .iter()
            .map(|p| p.tokens_per_s)
            .collect();
        out.series[i].tokens_per_s < half && median(&mut w).is_some_and(|m| m < half)
    });
    let t_drop = drop_at.map(|i| {
        // The point's span began at the previous point's end.
        if i == 0 {
            0.0
        } else {
            out.series[i - 1].t_s
        }
    });
    out.time_to_drop_s = t_drop;
    let split = t_drop.unwrap_or(last_third);
    let before = state_over(&timed, loads, 0.0, split.max(burst_end));
    let after = state_over(&timed, loads, split, duration_s);
    let after_top = top_after(loads, split);
    let (cause, reasons) = attribute(&before, &after, &timed, split, &after_top, cores_in_use);
    out.cause = Some(cause);
    out.reasons = reasons;
    Some(out)
}

/// The busiest other programs after `from`, summed over the windows.
fn top_after(loads: &[LoadWindow], from: f64) -> Vec<ProcessLoad> {
    let mut by: Vec<ProcessLoad> = Vec::new();
    let mut span = 0.0;
    for l in loads.iter().filter(|l| l.end_s > from) {
        let w = l.end_s - l.start_s.max(from);
        span += w;
        for p in &l.top {
            match by.iter_mut().find(|q| q.name == p.name) {
                Some(q) => q.cpu_cores += p.cpu_cores * w,
                None => by.push(ProcessLoad {
                    name: p.name.clone(),
                    cpu_cores: p.cpu_cores * w,
                }),
            }
        }
    }
    if span > 0.0 {
        for p in &mut by {
            p.cpu_cores /= span;
        }
    }
    by.sort_by(|a, b| b.cpu_cores.total_cmp(&a.cpu_cores));
    by.truncate(3);
    by
}

/// The rules: a clock that fell or a GPU that reported heat or power
/// limits is throttling; other programs taking a quarter of the cores in
/// use more than before is contention.
fn attribute(
    before: &SustainPoint,
    after: &SustainPoint,
    timed: &[(f64, &Reading)],
    split: f64,
    top: &[ProcessLoad],
    cores_in_use: u32,
) -> (DropCause, Vec<String>) {
    let mut throttle = Vec::new();
    let fell = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (Some(a), Some(b)) if a > 0.0 && (1.0 - b / a) * 100.0 >= CLOCK_FALL_PCT => {
            Some((a, b, (1.0 - b / a) * 100.0))
        }
        _ => None,
    };
    if let Some((a, b, pct)) = fell(before.cpu_freq_mhz, after.cpu_freq_mhz) {
        let warm = match (before.cpu_temp_c, after.cpu_temp_c) {
            (Some(x), Some(y)) => format!(" while the CPU went from {x:.0} to {y:.0} °C"),
            _ => String::new(),
        };
        throttle.push(format!(
            "the CPU clock fell from {a:.0} to {b:.0} MHz (−{pct:.0}%){warm}"
        ));
    }
    if let Some((a, b, pct)) = fell(before.gpu_sm_clock_mhz, after.gpu_sm_clock_mhz) {
        throttle.push(format!(
            "the GPU clock fell from {a:.0} to {b:.0} MHz (−{pct:.0}%)"
        ));
    }
    let held_back = timed
        .iter()
        .filter(|(t, _)| *t > split)
        .filter_map(|(_, r)| r.gpu_throttle)
        .fold(0u64, |acc, b| acc | b)
        & GPU_HELD_BACK_BITS;
    if held_back != 0 {
        throttle.push(format!(
            "the GPU reported thermal or power limits (NVML reasons 0x{held_back:x})"
        ));
    }
    let mut contention = Vec::new();
    let cores = f64::from(cores_in_use.max(1));
    if let Some(b) = after.others_cpu_cores {
        let a = before.others_cpu_cores.unwrap_or(0.0);
        let names: Vec<String> = top
            .iter()
            .map(|p| format!("{} {:.2}", p.name, p.cpu_cores))
            .collect();
        let named = if names.is_empty() {
            String::new()
        } else {
            format!(" ({})", names.join(", "))
        };
        if b - a >= CONTENTION_SHARE * cores {
            contention.push(format!(
                "other programs went from {a:.2} to {b:.2} cores of the {cores_in_use} in use{named}"
            ));
        } else if b >= CONTENTION_SHARE * cores {
            // As busy before the drop as after: they may not have started it,
            // but the rates after it are not this machine's own either, and
            // the run's disturbance note names them, so the cause must too.
            contention.push(format!(
                "other programs kept {b:.2} of the {cores_in_use} cores in use busy after the drop ({a:.2} before it){named}"
            ));
        }
    }
    let cause = match (throttle.is_empty(), contention.is_empty()) {
        (false, false) => DropCause::Both,
        (false, true) => DropCause::Throttling,
        (true, false) => DropCause::Contention,
        (true, true) => DropCause::Unexplained,
    };
    let mut reasons = throttle;
    reasons.extend(contention);
    if reasons.is_empty() {
        // Say what was read, so "unexplained" is not taken for "not looked at".
        reasons.push(match (after.cpu_freq_mhz, after.others_cpu_cores) {
            (Some(mhz), Some(others)) => format!(
                "neither clocks nor other programs explain it: the CPU clock held near {mhz:.0} MHz and other programs kept {others:.2} cores busy, under a quarter of the {cores_in_use} in use"
            ),
            _ => "neither clocks nor other programs explain it (this machine may not expose its clocks or temperatures)".into(),
        });
    }
    (cause, reasons)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::telemetry::Phase;

    /// Repetitions of 0.25 s at `rate(t)` for `secs` seconds.
    fn reps(secs: f64, rate: impl Fn(f64) -> f64) -> Vec<Rep> {
        let mut out = Vec::new();
        let mut t = 0.0;
        while t < secs {
            let r = rate(t);
            let d = 32.0 / r;
            t += d;
            out.push(Rep {
                end_s: t,
                tokens: 32,
                decode_s: d,
            });
        }
        out
    }

    /// Timed readings every 100 ms with a CPU clock of `mhz(t)`.
    fn readings(secs: f64, mhz: impl Fn(f64) -> u64, temp: impl Fn(f64) -> f32) -> Vec<Reading> {
        let mut v = vec![Reading {
            t_ms: 500.0,
            phase: Phase::Warmup,
            cpu_freq_mhz: Some(9999),
            ..Reading::default()
        }];
        let mut t = 0.0;
        while t <= secs {
            v.push(Reading {
                t_ms: 1000.0 + t * 1e3,
                phase: Phase::Timed,
                cpu_freq_mhz: Some(mhz(t)),
                cpu_temp_c: Some(temp(t)),
                ..Reading::default()
            });
            t += 0.1;
        }
        v
    }

    fn quiet(secs: f64) -> Vec<LoadWindow> {
        (0..secs as usize)
            .map(|i| LoadWindow {
                start_s: i as f64,
                end_s: i as f64 + 1.0,
                others_cpu_cores: 0.02,
                top: vec![],
            })
            .collect()
    }

    #[test]
    fn repetitions_become_one_point_a_second() {
        let r = reps(10.0, |_| 128.0);
        let s = rate_series(&r);
        assert!((9..=10).contains(&s.len()), "{}", s.len());
        assert!(s.iter().all(|(_, v)| (v - 128.0).abs() < 1e-9));
        // One repetition longer than a second is a point of its own.
        let long = [
            Rep {
                end_s: 2.0,
                tokens: 32,
                decode_s: 2.0,
            },
            Rep {
                end_s: 4.0,
                tokens: 32,
                decode_s: 2.0,
            },
        ];
        assert_eq!(rate_series(&long), vec![(2.0, 16.0), (4.0, 16.0)]);
    }

    #[test]
    fn a_steady_run_has_no_drop() {
        let r = reps(60.0, |t| 100.0 + (t * 7.0).sin());
        let s = analyse(&r, &readings(60.0, |_| 3000, |_| 60.0), &quiet(60.0), 2).unwrap();
        assert!(s.drop_pct.abs() < 2.0, "{}", s.drop_pct);
        assert_eq!((s.time_to_drop_s, s.cause), (None, None));
        assert!(s.reasons.is_empty());
        assert_eq!(s.series[10].cpu_freq_mhz, Some(3000.0));
    }

    #[test]
    fn a_clock_that_falls_as_the_chip_warms_is_throttling() {
        // 100 t/s for 40 s, then the clock falls 20% and the rate with it.
        let r = reps(120.0, |t| if t < 40.0 { 100.0 } else { 80.0 });
        let rd = readings(
            120.0,
            |t| if t < 40.0 { 3000 } else { 2400 },
            |t| (60.0 + t.min(40.0)) as f32,
        );
        let s = analyse(&r, &rd, &quiet(120.0), 2).unwrap();
        assert!((s.burst_tokens_per_s - 100.0).abs() < 1e-6);
        assert!((s.sustained_tokens_per_s - 80.0).abs() < 1e-6);
        assert!((s.drop_pct - 20.0).abs() < 1e-6);
        let t = s.time_to_drop_s.unwrap();
        assert!((39.0..=41.5).contains(&t), "drop at {t}");
        assert_eq!(s.cause, Some(DropCause::Throttling));
        assert!(s.reasons[0].contains("from 3000 to 24"), "{:?}", s.reasons);
        assert!(s.reasons[0].contains("°C"), "{:?}", s.reasons);
    }

    /// Ten minutes that throttle after one: the burst is the first 15 s,
    /// not a fifth of the run (two minutes, half of them throttled).
    #[test]
    fn the_burst_is_a_fixed_early_window_whatever_the_length() {
        let r = reps(600.0, |t| if t < 60.0 { 100.0 } else { 50.0 });
        let rd = readings(600.0, |_| 3000, |_| 60.0);
        let s = analyse(&r, &rd, &quiet(600.0), 2).unwrap();
        assert!(
            (s.burst_tokens_per_s - 100.0).abs() < 1e-6,
            "{}",
            s.burst_tokens_per_s
        );
        assert_eq!(s.burst_window_s, BURST_S);
        assert!((s.drop_pct - 50.0).abs() < 1e-6);
    }

    #[test]
    fn a_program_that_starts_is_contention_and_is_named() {
        let r = reps(30.0, |t| if t < 12.0 { 100.0 } else { 55.0 });
        let mut loads = quiet(30.0);
        for l in loads.iter_mut().skip(12) {
            l.others_cpu_cores = 1.0;
            l.top = vec![ProcessLoad {
                name: "stress".into(),
                cpu_cores: 1.0,
            }];
        }
        let s = analyse(&r, &readings(30.0, |_| 3000, |_| 60.0), &loads, 2).unwrap();
        assert_eq!(s.cause, Some(DropCause::Contention));
        let t = s.time_to_drop_s.unwrap();
        assert!((11.0..=13.5).contains(&t), "drop at {t}");
        assert!(
            s.reasons[0].contains("(stress 0.9") || s.reasons[0].contains("(stress 1.00"),
            "{:?}",
            s.reasons
        );
        assert_eq!(s.series[20].others_cpu_cores, Some(1.0));
    }

    #[test]
    fn both_causes_and_neither_are_said() {
        let r = reps(30.0, |t| if t < 10.0 { 100.0 } else { 60.0 });
        let mut loads = quiet(30.0);
        for l in loads.iter_mut().skip(10) {
            l.others_cpu_cores = 0.9;
        }
        let rd = readings(30.0, |t| if t < 10.0 { 3000 } else { 2500 }, |_| 90.0);
        let s = analyse(&r, &rd, &loads, 2).unwrap();
        assert_eq!(s.cause, Some(DropCause::Both));
        assert_eq!(s.reasons.len(), 2);
        // Others as busy before the drop as after it: still named as the
        // cause, never "unexplained" beside a note that blames them.
        let mut steady = quiet(30.0);
        for l in &mut steady {
            l.others_cpu_cores = 0.6;
        }
        let s = analyse(&r, &readings(30.0, |_| 3000, |_| 60.0), &steady, 2).unwrap();
        assert_eq!(s.cause, Some(DropCause::Contention));
        assert!(
            s.reasons[0]
                .contains("kept 0.60 of the 2 cores in use busy after the drop (0.60 before it)"),
            "{:?}",
            s.reasons
        );
        // Clocks read and steady, others quiet: unexplained, saying what was read.
        let s = analyse(&r, &readings(30.0, |_| 3000, |_| 60.0), &quiet(30.0), 2).unwrap();
        assert_eq!(s.cause, Some(DropCause::Unexplained));
        assert!(
            s.reasons[0].contains("the CPU clock held near 3000 MHz"),
            "{:?}",
            s.reasons
        );
        // No clocks, no other load: the drop stands, unexplained.
        let s = analyse(&r, &[], &[], 2).unwrap();
        assert_eq!(s.cause, Some(DropCause::Unexplained));
        assert!(s.series.iter().all(|p| p.cpu_freq_mhz.is_none()));
    }

    #[test]
    fn gpu_limits_after_the_drop_are_throttling() {
        let r = reps(30.0, |t| if t < 10.0 { 100.0 } else { 70.0 });
        let mut rd = readings(30.0, |_| 3000, |_| 60.0);
        for x in rd.iter_mut().filter(|x| x.t_ms > 12_000.0) {
            x.gpu_throttle = Some(0x20 | 0x1);
        }
        let s = analyse(&r, &rd, &quiet(30.0), 2).unwrap();
        assert_eq!(s.cause, Some(DropCause::Throttling));
        assert!(s.reasons[0].contains("0x20"), "{:?}", s.reasons);
    }

    #[test]
    fn one_slow_second_is_not_the_drop() {
        let r = reps(60.0, |t| {
            if (5.0..6.0).contains(&t) {
                40.0
            } else if t < 30.0 {
                100.0
            } else {
                85.0
            }
        });
        let s = analyse(&r, &[], &[], 2).unwrap();
        let t = s.time_to_drop_s.unwrap();
        assert!(t > 28.0, "the blip at 5 s is not the drop: {t}");
    }
}
