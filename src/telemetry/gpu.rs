//! NVIDIA GPUs through NVML, loaded at run time. NVML is initialised lazily,
//! once per process; where it is missing (no driver, another vendor, no
//! permission) every reading is `None` and the reason is logged once.

use std::sync::OnceLock;

use nvml_wrapper::enum_wrappers::device::{Clock, TemperatureSensor};
use nvml_wrapper::Nvml;
use serde::{Deserialize, Serialize};

static NVML: OnceLock<Option<Nvml>> = OnceLock::new();

fn nvml() -> Option<&'static Nvml> {
    NVML.get_or_init(|| match Nvml::init() {
        Ok(n) => Some(n),
        Err(e) => {
            tracing::info!("no NVIDIA GPU telemetry: NVML is not available ({e})");
            None
        }
    })
    .as_ref()
}

/// One reading over all NVIDIA GPUs: sums for memory, power and energy,
/// the mean utilisation, the highest temperature, GPU 0's clocks, and the
/// union of throttle reasons.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GpuReading {
    pub util_pct: Option<f32>,
    pub mem_used_bytes: Option<u64>,
    pub power_mw: Option<u64>,
    pub energy_mj: Option<u64>,
    pub temp_c: Option<f32>,
    pub sm_clock_mhz: Option<u32>,
    pub mem_clock_mhz: Option<u32>,
    pub throttle: Option<u64>,
}

fn add<T: std::ops::Add<Output = T>>(a: Option<T>, b: Option<T>) -> Option<T> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a + b),
        (a, None) => a,
        (None, b) => b,
    }
}

/// Read every NVIDIA GPU; `None` when NVML is unavailable or sees none.
pub fn read() -> Option<GpuReading> {
    let n = nvml()?;
    let count = n.device_count().ok().filter(|c| *c > 0)?;
    let mut r = GpuReading::default();
    let mut util_sum = 0.0f32;
    let mut util_n = 0;
    for i in 0..count {
        let Ok(d) = n.device_by_index(i) else {
            continue;
        };
        if let Ok(u) = d.utilization_rates() {
            util_sum += u.gpu as f32;
            util_n += 1;
        }
        r.mem_used_bytes = add(r.mem_used_bytes, d.memory_info().ok().map(|m| m.used));
        r.power_mw = add(r.power_mw, d.power_usage().ok().map(u64::from));
        r.energy_mj = add(r.energy_mj, d.total_energy_consumption().ok());
        if let Ok(t) = d.temperature(TemperatureSensor::Gpu) {
            r.temp_c = Some(r.temp_c.map_or(t as f32, |m| m.max(t as f32)));
        }
        if i == 0 {
            r.sm_clock_mhz = d.clock_info(Clock::SM).ok();
            r.mem_clock_mhz = d.clock_info(Clock::Memory).ok();
        }
        if let Ok(t) = d.current_throttle_reasons() {
            r.throttle = Some(r.throttle.unwrap_or(0) | t.bits());
        }
    }
    r.util_pct = (util_n > 0).then(|| util_sum / util_n as f32);
    Some(r)
}

/// Free memory summed over every NVIDIA GPU; `None` without NVML or GPUs.
/// The memory check uses it before offloading layers.
pub fn free_vram_bytes() -> Option<u64> {
    let n = nvml()?;
    let count = n.device_count().ok().filter(|c| *c > 0)?;
    (0..count)
        .filter_map(|i| n.device_by_index(i).ok())
        .map(|d| d.memory_info().ok().map(|m| m.free))
        .sum()
}

/// A GPU as the hardware inventory describes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[cfg_attr(feature = "ts", ts(rename = "GpuInventory"))]
pub struct GpuInfo {
    pub name: String,
    pub memory_total_bytes: Option<u64>,
    pub driver: Option<String>,
    pub bus_width_bits: Option<u32>,
    pub mem_clock_max_mhz: Option<u32>,
    /// bus width × memory clock × 2 (double data rate): the datasheet
    /// ceiling, not a measurement.
    pub theoretical_bandwidth_bytes_per_s: Option<u64>,
}

/// Every NVIDIA GPU NVML sees; empty without NVML.
pub fn inventory() -> Vec<GpuInfo> {
    let Some(n) = nvml() else { return Vec::new() };
    let driver = n.sys_driver_version().ok();
    (0..n.device_count().unwrap_or(0))
        .filter_map(|i| n.device_by_index(i).ok())
        .map(|d| {
            let bus = d.memory_bus_width().ok();
            let clock = d.max_clock_info(Clock::Memory).ok();
            GpuInfo {
                name: d.name().unwrap_or_else(|_| "NVIDIA GPU".into()),
                memory_total_bytes: d.memory_info().ok().map(|m| m.total),
                driver: driver.clone(),
                bus_width_bits: bus,
                mem_clock_max_mhz: clock,
                theoretical_bandwidth_bytes_per_s: match (bus, clock) {
                    (Some(b), Some(c)) => Some(u64::from(b) / 8 * u64::from(c) * 1_000_000 * 2),
                    _ => None,
                },
            }
        })
        .collect()
}
