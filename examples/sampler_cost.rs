//! What the telemetry sampler costs the machine: run it alone for a few
//! seconds (sampling this process as the "worker") and report the CPU time
//! it used per second, as a share of the machine's cores. A direct measure
//! of its overhead, which an on/off tokens-per-second comparison cannot
//! resolve on a noisy machine.
//!
//! Run: cargo run --release --example sampler_cost [SECONDS]

use std::time::{Duration, Instant};

fn cpu_time_s() -> f64 {
    // SAFETY: rusage is a C struct of integers and timevals, for which
    // all-zero bytes are a valid value.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage writes one rusage into `ru`, a local of that type.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

fn main() {
    let secs: u64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(10);
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    let c0 = cpu_time_s();
    let t0 = Instant::now();
    let s = dyno::telemetry::Sampler::start(dyno::telemetry::INTERVAL);
    s.set_pid(std::process::id());
    s.set_phase(dyno::telemetry::Phase::Timed, Some(0));
    std::thread::sleep(Duration::from_secs(secs));
    let readings = s.stop();
    let wall = t0.elapsed().as_secs_f64();
    let cpu = cpu_time_s() - c0;
    println!(
        "{} readings in {wall:.1} s; sampler CPU {:.2} ms per second = {:.3}% of one core, {:.3}% of {cores} cores",
        readings.len(),
        cpu / wall * 1e3,
        cpu / wall * 100.0,
        cpu / wall * 100.0 / cores as f64
    );
    // What the last reading saw: on a GPU machine this shows NVML working.
    if let Some(r) = readings.last() {
        println!("last reading: {r:?}");
    }
}
