//! What the machine was doing while a run was measured: a sampler thread in
//! the parent (never in the worker, so it cannot disturb the timed loop's
//! threads' state or crash with it) reads CPU, memory, the worker's RSS,
//! temperatures, RAPL package energy and NVIDIA GPUs every 100 ms.
//!
//! Every source is optional. A machine without RAPL, NVML or sensors gets
//! `None` for those fields, never an error.

pub mod bandwidth;
pub mod cooldown;
pub mod disturbance;
pub mod gpu;
pub mod power;
pub mod rapl;
pub mod summary;
pub mod sustain;

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU32, AtomicU8, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use sysinfo::{
    Components, CpuRefreshKind, MemoryRefreshKind, Pid, ProcessRefreshKind, ProcessesToUpdate,
    System,
};

/// The sampler's period.
pub const INTERVAL: Duration = Duration::from_millis(100);

/// What the worker was doing when a reading was taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// Starting up, between tests, or finishing.
    #[default]
    Idle,
    Load,
    Warmup,
    /// The timed repetitions of a test.
    Timed,
}

impl Phase {
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Idle => "idle",
            Phase::Load => "load",
            Phase::Warmup => "warmup",
            Phase::Timed => "timed",
        }
    }
    pub fn parse(s: &str) -> Phase {
        match s {
            "load" => Phase::Load,
            "warmup" => Phase::Warmup,
            "timed" => Phase::Timed,
            _ => Phase::Idle,
        }
    }
    fn from_u8(v: u8) -> Phase {
        [Phase::Idle, Phase::Load, Phase::Warmup, Phase::Timed]
            .get(v as usize)
            .copied()
            .unwrap_or_default()
    }
    fn to_u8(self) -> u8 {
        self as u8
    }
}

/// One reading. Units are in the names; `None` where the source is missing.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Reading {
    /// Milliseconds since the sampler started.
    pub t_ms: f64,
    pub phase: Phase,
    /// Index of the worker job (test) in progress.
    pub job: Option<u32>,
    pub cpu_util_pct: Option<f32>,
    /// Per-core use, one byte per core (0–100).
    pub core_util_pct: Vec<u8>,
    pub cpu_freq_mhz: Option<u64>,
    pub ram_used_bytes: Option<u64>,
    pub worker_rss_bytes: Option<u64>,
    pub cpu_temp_c: Option<f32>,
    /// Cumulative CPU package energy since the sampler started (never wraps).
    pub cpu_energy_uj: Option<u64>,
    pub gpu_util_pct: Option<f32>,
    pub gpu_mem_used_bytes: Option<u64>,
    pub gpu_power_mw: Option<u64>,
    /// NVML's total-energy counter (mJ since the driver loaded).
    pub gpu_energy_mj: Option<u64>,
    pub gpu_temp_c: Option<f32>,
    pub gpu_sm_clock_mhz: Option<u32>,
    pub gpu_mem_clock_mhz: Option<u32>,
    pub gpu_throttle: Option<u64>,
}

/// Which sources gave readings, for the one info line per run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[cfg_attr(feature = "ts", ts(rename = "TelemetrySources"))]
pub struct Sources {
    pub rapl: bool,
    pub nvml: bool,
    pub temperature: bool,
}

impl Sources {
    /// Names of the sources this machine lacks.
    pub fn missing(&self) -> Vec<&'static str> {
        let mut m = Vec::new();
        if !self.rapl {
            m.push("CPU package energy (RAPL not readable)");
        }
        if !self.nvml {
            m.push("GPU (no NVIDIA driver)");
        }
        if !self.temperature {
            m.push("temperatures (no sensors exposed)");
        }
        m
    }
}

/// Shared between the orchestrator, which knows the phase from the worker's
/// events, and the sampler thread, which stamps each reading with it.
#[derive(Default)]
struct Tag {
    phase: AtomicU8,
    /// -1 for none.
    job: AtomicI64,
    pid: AtomicU32,
    /// Every core runs a measuring thread on the CPU: readings are then
    /// spaced by their own cost ([`spaced`]).
    crowded: AtomicBool,
}

/// At most this share of the time goes to the sampler's own work when every
/// core is measuring.
const CROWDED_SHARE: f64 = 0.005;
/// The longest gap between readings, however costly they are.
const CROWDED_MAX: Duration = Duration::from_secs(2);

/// The gap to the next reading. On a machine whose every core runs a
/// measuring thread, each reading preempts one of them and the decode waits
/// for it at its next barrier: the H100 machine's 16 cores lost 5–15% of
/// CPU decode to readings that cost 3–9 ms each (NVML's calls most) every
/// 100 ms (docs/method.md, "Telemetry on a crowded CPU"). So there the gap
/// grows until the readings' cost, as measured, is `CROWDED_SHARE` of the
/// time; where a core is free, it stays `interval`.
fn spaced(interval: Duration, crowded: bool, cost: Duration) -> Duration {
    if !crowded {
        return interval;
    }
    cost.div_f64(CROWDED_SHARE)
        .clamp(interval, CROWDED_MAX.max(interval))
}

/// A running sampler; dropping it stops the thread.
pub struct Sampler {
    tag: Arc<Tag>,
    stop: Arc<AtomicBool>,
    rx: mpsc::Receiver<Reading>,
    handle: Option<JoinHandle<()>>,
    sources: Sources,
}

impl Sampler {
    /// Start sampling every `interval`.
    pub fn start(interval: Duration) -> Sampler {
        let tag = Arc::new(Tag {
            job: AtomicI64::new(-1),
            ..Tag::default()
        });
        let stop = Arc::new(AtomicBool::new(false));
        let (tx, rx) = mpsc::channel();
        let mut sources = Sources::default();
        let rapl = rapl::Rapl::open(Path::new("/sys/class/powercap"));
        sources.rapl = rapl.is_some();
        sources.nvml = gpu::read().is_some();
        let components = Components::new_with_refreshed_list();
        sources.temperature = components.iter().any(|c| c.temperature().is_some());
        let (t, s) = (tag.clone(), stop.clone());
        let handle = std::thread::Builder::new()
            .name("dyno-telemetry".into())
            .spawn(move || run(interval, t, s, tx, rapl, components))
            .ok();
        Sampler {
            tag,
            stop,
            rx,
            handle,
            sources,
        }
    }

    pub fn sources(&self) -> &Sources {
        &self.sources
    }

    /// The worker's process id, once known (its RSS is read from then on).
    pub fn set_pid(&self, pid: u32) {
        self.tag.pid.store(pid, Ordering::Relaxed);
    }

    pub fn set_phase(&self, phase: Phase, job: Option<u32>) {
        self.tag.phase.store(phase.to_u8(), Ordering::Relaxed);
        self.tag
            .job
            .store(job.map_or(-1, i64::from), Ordering::Relaxed);
    }

    /// Whether every core now runs a measuring thread on the CPU (see
    /// [`spaced`]).
    pub fn set_crowded(&self, crowded: bool) {
        self.tag.crowded.store(crowded, Ordering::Relaxed);
    }

    /// Readings taken since the last call.
    pub fn drain(&self) -> Vec<Reading> {
        self.rx.try_iter().collect()
    }

    /// Stop the thread and return what it read since the last drain.
    pub fn stop(mut self) -> Vec<Reading> {
        self.halt();
        self.drain()
    }

    fn halt(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            // The thread parks until its next reading is due; wake it so it
            // sees the stop now rather than up to one interval later.
            h.thread().unpark();
            let _ = h.join();
        }
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        self.halt();
    }
}

/// The parts of a reading, each timed: on a machine whose every core runs a
/// measuring thread, the sampler's own work preempts one of them, and the
/// parts differ by orders of magnitude in cost (an NVML call enters the
/// driver; a memory reading is one file).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Part {
    Cpu,
    Memory,
    Process,
    Temperature,
    Gpu,
    Energy,
}

impl Part {
    const ALL: [Part; 6] = [
        Part::Cpu,
        Part::Memory,
        Part::Process,
        Part::Temperature,
        Part::Gpu,
        Part::Energy,
    ];
    fn name(self) -> &'static str {
        match self {
            Part::Cpu => "cpu",
            Part::Memory => "memory",
            Part::Process => "process",
            Part::Temperature => "temperature",
            Part::Gpu => "gpu",
            Part::Energy => "energy",
        }
    }
}

/// Parts left out of every reading, from `DYNO_TELEMETRY_SKIP` (names
/// joined by ','): a diagnostic, to measure what each part costs the
/// measurement (scripts/gpu/cpu-decode.sh), not a setting for results.
fn skipped_parts() -> Vec<Part> {
    let v = std::env::var("DYNO_TELEMETRY_SKIP").unwrap_or_default();
    Part::ALL
        .into_iter()
        .filter(|p| v.split(',').any(|n| n.trim() == p.name()))
        .collect()
}

/// Time spent in each part over the sampler's life, logged when it stops
/// (`DYNO_LOG=dyno=debug`).
#[derive(Default)]
struct Costs {
    readings: u64,
    ns: [u64; 6],
}

impl Costs {
    fn time<T>(&mut self, part: Part, f: impl FnOnce() -> T) -> T {
        let t0 = Instant::now();
        let out = f();
        let i = Part::ALL.iter().position(|&p| p == part).unwrap_or(0);
        self.ns[i] += t0.elapsed().as_nanos() as u64;
        out
    }
    fn log(&self) {
        if self.readings == 0 {
            return;
        }
        let per = |ns: u64| ns as f64 / self.readings as f64 / 1e6;
        let parts: Vec<String> = Part::ALL
            .iter()
            .zip(self.ns)
            .map(|(p, ns)| format!("{} {:.3}", p.name(), per(ns)))
            .collect();
        tracing::debug!(
            "telemetry sampler: {} readings, ms per reading: {} (total {:.3})",
            self.readings,
            parts.join(", "),
            per(self.ns.iter().sum())
        );
    }
}

fn run(
    interval: Duration,
    tag: Arc<Tag>,
    stop: Arc<AtomicBool>,
    tx: mpsc::Sender<Reading>,
    rapl: Option<rapl::Rapl>,
    components: Components,
) {
    // The clock starts after the first CPU refresh, as sysinfo's CPU use
    // needs its minimum interval from that refresh.
    let mut reader = Reader::new(rapl, components);
    let start = Instant::now();
    reader.last_cpu = start;
    let mut next = start + interval;
    // A running mean of what one reading takes, for spacing them.
    let mut cost = Duration::ZERO;
    while !stop.load(Ordering::Relaxed) {
        let now = Instant::now();
        if now < next {
            // Parked until the reading is due (or `halt` unparks it): the
            // thread wakes once per reading, not on a short poll, because on
            // a machine with as many cores as measuring threads every
            // wake-up preempts one of them and the decode waits at its next
            // barrier (docs/method.md, "Fidelity").
            std::thread::park_timeout(next - now);
            continue;
        }
        let r = reader.read(now, start, &tag);
        if tx.send(r).is_err() {
            break;
        }
        let took = now.elapsed();
        cost = if cost.is_zero() {
            took
        } else {
            cost.mul_f64(0.8) + took.mul_f64(0.2)
        };
        next += spaced(interval, tag.crowded.load(Ordering::Relaxed), cost);
    }
    reader.costs.log();
}

/// What the sampler keeps between readings: sysinfo's state, the sensors,
/// the parts left out (DYNO_TELEMETRY_SKIP), what each part costs, and the
/// CPU use that stands between its refreshes.
struct Reader {
    sys: System,
    components: Components,
    rapl: Option<rapl::Rapl>,
    skip: Vec<Part>,
    costs: Costs,
    last_cpu: Instant,
    cpu_util: Option<f32>,
    cores: Vec<u8>,
}

impl Reader {
    fn new(rapl: Option<rapl::Rapl>, components: Components) -> Self {
        let mut sys = System::new();
        sys.refresh_cpu_specifics(CpuRefreshKind::nothing().with_cpu_usage().with_frequency());
        Reader {
            sys,
            components,
            rapl,
            skip: skipped_parts(),
            costs: Costs::default(),
            last_cpu: Instant::now(),
            cpu_util: None,
            cores: Vec::new(),
        }
    }

    fn on(&self, p: Part) -> bool {
        !self.skip.contains(&p)
    }

    /// One reading of every part not left out, tagged with the job and
    /// phase the worker is in.
    fn read(&mut self, now: Instant, start: Instant, tag: &Tag) -> Reading {
        self.costs.readings += 1;
        // sysinfo's CPU use is only meaningful over at least its minimum
        // interval; between refreshes the last value stands.
        if self.on(Part::Cpu)
            && now.duration_since(self.last_cpu) >= sysinfo::MINIMUM_CPU_UPDATE_INTERVAL
        {
            let (sys, cpu_util, cores) = (&mut self.sys, &mut self.cpu_util, &mut self.cores);
            self.costs.time(Part::Cpu, || {
                sys.refresh_cpu_specifics(
                    CpuRefreshKind::nothing().with_cpu_usage().with_frequency(),
                );
                *cpu_util = Some(sys.global_cpu_usage());
                *cores = sys
                    .cpus()
                    .iter()
                    .map(|c| c.cpu_usage().round().clamp(0.0, 100.0) as u8)
                    .collect();
            });
            self.last_cpu = now;
        }
        if self.on(Part::Memory) {
            let sys = &mut self.sys;
            self.costs.time(Part::Memory, || {
                sys.refresh_memory_specifics(MemoryRefreshKind::nothing().with_ram())
            });
        }
        let pid = tag.pid.load(Ordering::Relaxed);
        let rss = if pid != 0 && self.on(Part::Process) {
            let sys = &mut self.sys;
            self.costs.time(Part::Process, || {
                let p = Pid::from_u32(pid);
                sys.refresh_processes_specifics(
                    ProcessesToUpdate::Some(&[p]),
                    true,
                    ProcessRefreshKind::nothing().with_memory(),
                );
                sys.process(p).map(|p| p.memory())
            })
        } else {
            None
        };
        let cpu_temp = if self.on(Part::Temperature) {
            let components = &mut self.components;
            self.costs.time(Part::Temperature, || {
                components.refresh(false);
                hottest(components)
            })
        } else {
            None
        };
        let g = if self.on(Part::Gpu) {
            self.costs.time(Part::Gpu, gpu::read).unwrap_or_default()
        } else {
            Default::default()
        };
        let energy_on = self.on(Part::Energy);
        let costs = &mut self.costs;
        let cpu_energy_uj = self
            .rapl
            .as_mut()
            .filter(|_| energy_on)
            .map(|r| costs.time(Part::Energy, || r.read()));
        let job = tag.job.load(Ordering::Relaxed);
        Reading {
            t_ms: now.duration_since(start).as_secs_f64() * 1e3,
            phase: Phase::from_u8(tag.phase.load(Ordering::Relaxed)),
            job: u32::try_from(job).ok(),
            cpu_util_pct: self.cpu_util,
            core_util_pct: self.cores.clone(),
            cpu_freq_mhz: mean_freq_mhz(&self.sys).map(|f| f as u64),
            ram_used_bytes: Some(self.sys.used_memory()),
            worker_rss_bytes: rss,
            cpu_temp_c: cpu_temp,
            cpu_energy_uj,
            gpu_util_pct: g.util_pct,
            gpu_mem_used_bytes: g.mem_used_bytes,
            gpu_power_mw: g.power_mw,
            gpu_energy_mj: g.energy_mj,
            gpu_temp_c: g.temp_c,
            gpu_sm_clock_mhz: g.sm_clock_mhz,
            gpu_mem_clock_mhz: g.mem_clock_mhz,
            gpu_throttle: g.throttle,
        }
    }
}

/// The hottest temperature sensor, in °C.
pub(crate) fn hottest(components: &Components) -> Option<f32> {
    components
        .iter()
        .filter_map(|c| c.temperature())
        .filter(|t| t.is_finite())
        .reduce(f32::max)
}

/// The mean clock over the cores that report one, in MHz.
pub(crate) fn mean_freq_mhz(sys: &System) -> Option<f64> {
    let freqs: Vec<u64> = sys
        .cpus()
        .iter()
        .map(|c| c.frequency())
        .filter(|f| *f > 0)
        .collect();
    (!freqs.is_empty()).then(|| freqs.iter().sum::<u64>() as f64 / freqs.len() as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sampler_tags_readings_with_the_phase_it_is_told() {
        let s = Sampler::start(Duration::from_millis(10));
        s.set_pid(std::process::id());
        s.set_phase(Phase::Timed, Some(3));
        // A second for three 10 ms readings: a loaded machine may starve
        // the sampler's thread for a while, and this checks tagging, not
        // the rate (the rate is a benchmark, never a timed test).
        std::thread::sleep(Duration::from_secs(1));
        let r = s.stop();
        assert!(r.len() >= 3, "{} readings", r.len());
        let last = r.last().unwrap();
        assert_eq!((last.phase, last.job), (Phase::Timed, Some(3)));
        assert!(last.ram_used_bytes.unwrap() > 0);
        assert!(
            last.worker_rss_bytes.unwrap() > 0,
            "reads the RSS of the pid it is given"
        );
        assert!(r.windows(2).all(|w| w[1].t_ms > w[0].t_ms));
    }

    #[test]
    fn readings_are_spaced_by_their_cost_only_when_every_core_measures() {
        let ms = Duration::from_millis;
        let i = ms(100);
        // A free core: the interval, however costly a reading.
        assert_eq!(spaced(i, false, ms(9)), i);
        // Every core busy: cheap readings keep the interval; 6 ms readings
        // come every 1.2 s (0.5% of the time); none waits past 2 s.
        assert_eq!(spaced(i, true, Duration::from_micros(300)), i);
        assert_eq!(spaced(i, true, ms(6)), ms(1200));
        assert_eq!(spaced(i, true, ms(50)), ms(2000));
    }

    #[test]
    fn phases_round_trip_through_their_names() {
        for p in [Phase::Idle, Phase::Load, Phase::Warmup, Phase::Timed] {
            assert_eq!(Phase::parse(p.as_str()), p);
            assert_eq!(Phase::from_u8(p.to_u8()), p);
        }
    }
}
