//! Cool-down between tests (`--cooldown`). A laptop that has just decoded
//! for a minute starts the next level hot, with lower clocks, so levels
//! measured later in a sweep look slower than they are. Waiting until the
//! temperatures and clocks are back near what they were before the first
//! load puts every level on the same footing; the wait is recorded with the
//! run, so a reader sees it was taken.
//!
//! The reading and the rule are here; the waiting loop is the
//! orchestrator's, which knows about cancelling.

use serde::{Deserialize, Serialize};
use sysinfo::{Components, CpuRefreshKind, System};

/// Temperatures and clocks at one moment; `None` where the machine does not
/// expose them (many VMs show neither).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[cfg_attr(feature = "ts", ts(rename = "ThermalState"))]
pub struct Thermal {
    pub cpu_temp_c: Option<f64>,
    /// Mean clock over the cores.
    pub cpu_freq_mhz: Option<f64>,
    pub gpu_temp_c: Option<f64>,
    pub gpu_sm_clock_mhz: Option<f64>,
}

impl Thermal {
    /// Read now: the hottest sensor, the mean core clock, the first GPU.
    pub fn read() -> Thermal {
        let mut sys = System::new();
        sys.refresh_cpu_specifics(CpuRefreshKind::nothing().with_frequency());
        let components = Components::new_with_refreshed_list();
        let g = super::gpu::read().unwrap_or_default();
        Thermal {
            cpu_temp_c: super::hottest(&components).map(f64::from),
            cpu_freq_mhz: super::mean_freq_mhz(&sys),
            gpu_temp_c: g.temp_c.map(f64::from),
            gpu_sm_clock_mhz: g.sm_clock_mhz.map(f64::from),
        }
    }

    /// True when nothing could be read: there is nothing to wait for.
    pub fn is_empty(&self) -> bool {
        *self == Thermal::default()
    }
}

/// How close to idle is close enough.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Margins {
    /// Degrees above the idle temperature.
    pub temp_c: f64,
    /// Percent away from the idle clock, either way.
    pub clock_pct: f64,
}

impl Default for Margins {
    /// Sensors read in whole degrees and drift by one or two at idle; core
    /// clocks at idle wander by a few percent as the governor samples.
    fn default() -> Self {
        Margins {
            temp_c: 3.0,
            clock_pct: 5.0,
        }
    }
}

/// What is still away from idle, one phrase each; empty when settled.
/// Only what both readings have is compared.
pub fn still_warm(idle: &Thermal, now: &Thermal, m: &Margins) -> Vec<String> {
    let mut out = Vec::new();
    for (name, a, b) in [
        ("CPU", idle.cpu_temp_c, now.cpu_temp_c),
        ("GPU", idle.gpu_temp_c, now.gpu_temp_c),
    ] {
        if let (Some(a), Some(b)) = (a, b) {
            if b > a + m.temp_c {
                out.push(format!("{name} at {b:.0} °C (idle {a:.0} °C)"));
            }
        }
    }
    for (name, a, b) in [
        ("CPU clock", idle.cpu_freq_mhz, now.cpu_freq_mhz),
        ("GPU clock", idle.gpu_sm_clock_mhz, now.gpu_sm_clock_mhz),
    ] {
        if let (Some(a), Some(b)) = (a, b) {
            if a > 0.0 && ((b - a) / a * 100.0).abs() > m.clock_pct {
                out.push(format!("{name} at {b:.0} MHz (idle {a:.0} MHz)"));
            }
        }
    }
    out
}

/// How a wait ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "snake_case")]
pub enum CooldownEnd {
    /// Back within the margins of idle.
    Settled,
    /// Still warm when the time limit ran out: the run started anyway.
    TimeLimit,
    /// The machine exposes no temperature or clock to wait on.
    NothingToRead,
    /// The user cancelled while waiting.
    Cancelled,
}

/// One wait, kept with the runs of the worker that followed it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct CooldownRecord {
    pub waited_ms: f64,
    pub limit_s: u32,
    pub end: CooldownEnd,
    /// Read before the first model load of the benchmark.
    pub idle: Thermal,
    /// When the wait began, and when it ended.
    pub before: Thermal,
    pub after: Thermal,
    /// What was still away from idle when the limit ran out.
    pub still: Vec<String>,
}

impl CooldownRecord {
    /// One line for tables: "waited 42 s for the machine to cool (settled)".
    pub fn describe(&self) -> String {
        let waited = crate::units::human_duration(self.waited_ms / 1e3);
        match self.end {
            CooldownEnd::Settled => format!("cool-down: waited {waited}, back to idle"),
            CooldownEnd::TimeLimit => format!(
                "cool-down: still warm after the {} s limit ({}); measured anyway",
                self.limit_s,
                self.still.join(", ")
            ),
            CooldownEnd::NothingToRead => {
                "cool-down: no temperature or clock readable here; nothing to wait for".into()
            }
            CooldownEnd::Cancelled => format!("cool-down: cancelled after {waited}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(cpu: Option<f64>, mhz: Option<f64>) -> Thermal {
        Thermal {
            cpu_temp_c: cpu,
            cpu_freq_mhz: mhz,
            ..Thermal::default()
        }
    }

    #[test]
    fn warm_is_above_idle_by_the_margin_and_clocks_either_way() {
        let m = Margins::default();
        let idle = t(Some(45.0), Some(2000.0));
        assert!(still_warm(&idle, &t(Some(47.0), Some(2050.0)), &m).is_empty());
        let w = still_warm(&idle, &t(Some(70.0), Some(1500.0)), &m);
        assert_eq!(w.len(), 2, "{w:?}");
        assert!(w[0].contains("CPU at 70 °C (idle 45 °C)"));
        assert!(w[1].contains("CPU clock at 1500 MHz"));
        // A turbo clock held after the load is not idle either.
        assert_eq!(still_warm(&idle, &t(Some(45.0), Some(3000.0)), &m).len(), 1);
        // Cooler than idle is fine.
        assert!(still_warm(&idle, &t(Some(30.0), None), &m).is_empty());
    }

    #[test]
    fn only_what_both_readings_have_is_compared() {
        let m = Margins::default();
        assert!(still_warm(&t(None, Some(2000.0)), &t(Some(99.0), Some(2000.0)), &m).is_empty());
        assert!(Thermal::default().is_empty());
        assert!(!t(None, Some(1.0)).is_empty());
    }

    #[test]
    fn a_record_says_how_the_wait_ended() {
        let r = CooldownRecord {
            waited_ms: 120_000.0,
            limit_s: 120,
            end: CooldownEnd::TimeLimit,
            idle: t(Some(45.0), None),
            before: t(Some(80.0), None),
            after: t(Some(60.0), None),
            still: vec!["CPU at 60 °C (idle 45 °C)".into()],
        };
        assert_eq!(
            r.describe(),
            "cool-down: still warm after the 120 s limit (CPU at 60 °C (idle 45 °C)); measured anyway"
        );
    }
}
